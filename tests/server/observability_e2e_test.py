#!/usr/bin/python3
"""Server reflection and the --per_session_labels switch, on a real server.

Reflection: a generic client (no reflection stubs are packaged in Debian;
the two messages used are encoded by hand below, see
grpc/reflection/v1alpha/reflection.proto) asks the real f2obo-server to
list its services and for the file defining f2obo.v1.F2obo; the returned
FileDescriptorProto must declare every rpc of proto/f2obo/v1/f2obo.proto,
so tools such as grpcurl can call the service without our .proto.

Labels: with --per_session_labels=false a streamed session leaves no
session_id label anywhere on /metrics while the server-wide series count
its steps (each step once; the stream's opening apart, as "StepsOpen");
with the default, the session's series carry its id.
Usage: observability_e2e_test.py --server=BIN --cli=BIN --proto=FILE
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import grpc
from google.protobuf import descriptor_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy"))
from check_metric_names import cli, scrape, write_toy_csv  # noqa: E402

REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# --- just enough of the protobuf wire format for two reflection messages ---
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string_field(number, value):
    data = value.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def fields(buf):
    """(number, bytes) of every length-delimited field; other types skipped."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = read_varint(buf, i)
        elif wire == 2:
            n, i = read_varint(buf, i)
            yield number, buf[i:i + n]
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("unexpected wire type %d" % wire)


def read_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def reflect(port, request):
    """One ServerReflectionRequest (raw bytes) -> its ServerReflectionResponse."""
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        call = channel.stream_stream(REFLECTION, request_serializer=lambda b: b,
                                     response_deserializer=lambda b: b)
        return next(iter(call(iter([request]), timeout=30)))


def start(server, work, *flags):
    proc = subprocess.Popen(
        [server, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0", "--data_dir="] +
        list(flags), stdout=subprocess.PIPE, stderr=open(os.path.join(work, "server.err"), "a"),
        text=True)
    m = re.search(r"listening on [^ ]+:(\d+), metrics on [^ ]+:(\d+)/metrics",
                  proc.stdout.readline())
    if not m:
        proc.kill()
        sys.exit("no banner from f2obo-server (stderr in %s)" % work)
    return proc, int(m.group(1)), int(m.group(2))


def check_reflection(port, proto_path):
    with open(proto_path) as f:
        declared = set(re.findall(r"^\s*rpc\s+(\w+)\s*\(", f.read(), re.M))
    # ServerReflectionRequest.list_services = 7 -> list_services_response = 6
    # { repeated ServiceResponse service = 1 { string name = 1 } }.
    reply = reflect(port, string_field(7, "*"))
    services = set()
    for number, body in fields(reply):
        if number == 6:
            for _, service in fields(body):
                services |= {name.decode() for n, name in fields(service) if n == 1}
    print("reflection lists:", sorted(services))
    for want in ("f2obo.v1.F2obo", "grpc.health.v1.Health"):
        if want not in services:
            fail("reflection does not list %s" % want)
    # file_containing_symbol = 4 -> file_descriptor_response = 4
    # { repeated bytes file_descriptor_proto = 1 }.
    reply = reflect(port, string_field(4, "f2obo.v1.F2obo"))
    methods = set()
    for number, body in fields(reply):
        if number == 4:
            for _, raw in fields(body):
                fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
                for s in fd.service:
                    if fd.package == "f2obo.v1" and s.name == "F2obo":
                        methods |= {m.name for m in s.method}
    print("reflection: F2obo has %d methods, the proto %d" % (len(methods), len(declared)))
    if not declared:
        fail("no rpc found in %s" % proto_path)
    if methods != declared:
        fail("reflected methods %s differ from the proto's %s" % (sorted(methods),
                                                                 sorted(declared)))


def stream_session(cli_bin, port, work, sid):
    csv = write_toy_csv(os.path.join(work, "toy.csv"), rows=200, features=4, classes=2, seed=3)
    target = "--server=127.0.0.1:%d" % port
    cli([cli_bin, "create", target, "--id=" + sid, "--family=logistic_hpo",
         "--dataset=" + csv, "--algorithm=f2obo", "--exact_every=0"])
    cli([cli_bin, "stream", target, "--session=" + sid, "--data=" + csv, "--steps=5",
         "--rows_per_step=20"])


def requests_counted(text, method):
    """f2obo_rpc_requests_total of `method` (0 when absent)."""
    m = re.search(r'^f2obo_rpc_requests_total\{method="%s"\} (\S+)$' % method, text, re.M)
    return float(m.group(1)) if m else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--proto", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="f2obo-obs-")
    for labels in (False, True):
        proc, port, mport = start(a.server, work, "--per_session_labels=%s" % str(labels).lower())
        try:
            if not labels:
                check_reflection(port, a.proto)
            sid = "labelled" if labels else "unlabelled"
            stream_session(a.cli, port, work, sid)
            text = scrape(mport)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        with_id = [l for l in text.splitlines() if 'session_id="' in l and not l.startswith("#")]
        steps, opens = requests_counted(text, "Steps"), requests_counted(text, "StepsOpen")
        print("per_session_labels=%s: %d series with session_id; Steps %g, StepsOpen %g" %
              (labels, len(with_id), steps, opens))
        # One stream of 5 steps: 5 step requests (what the latency histogram
        # of method="Steps" times), the stream's opening counted apart.
        if (steps, opens) != (5, 1):
            fail("per_session_labels=%s: f2obo_rpc_requests_total counted Steps %g and StepsOpen "
                 "%g for one stream of 5 steps (want 5 and 1)" % (labels, steps, opens))
        if labels and not any('session_id="%s"' % sid in l for l in with_id):
            fail("per_session_labels=true: no series carries session_id=\"%s\"" % sid)
        if not labels and with_id:
            fail("per_session_labels=false: series still carry session_id: %s" % with_id[:3])
    if failures:
        print("%d failure(s); server stderr in %s" % (len(failures), work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
