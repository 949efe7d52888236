#!/usr/bin/python3
"""Checks deploy/ manifests and the Dockerfile against the real binaries.

  - every manifest parses as YAML (deploy/k8s/*.yaml, docker-compose.yml,
    Grafana provisioning) and every Kubernetes object has a kind and a name;
  - every f2obo-server flag they pass exists (`f2obo-server --help`), and
    the ports they declare, probe, publish and scrape are the ones those
    flags make the server listen on;
  - the Kubernetes flag file (ConfigMap), with its addresses moved to free
    loopback ports and its paths to a temporary directory, starts a real
    server; the liveness probe's and the Dockerfile HEALTHCHECK's
    f2obo-cli commands then succeed against it, and /metrics reports the
    file's --max_sessions as f2obo_sessions_limit;
  - Envoy hashes on the header the C++ client sends (client/session_routing.h)
    over exactly the StatefulSet's replicas, by stable hostname;
  - the runbook's rebalance Jobs run f2obo-cli rebalance over exactly those
    replicas with the server's token file (step 4 through a sidecar Envoy
    with the ConfigMap's ring, step 6 through the front Service), and each
    Job's command, pointed at the real server, authenticates and completes;
  - the Dockerfile copies the binaries from where CMake builds them, and its
    runtime packages provide every shared library the binaries load.
Usage: check_manifests.py --server=BIN --cli=BIN --source=DIR --binary_dir=DIR
"""
import argparse
import glob
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import urllib.request

import yaml

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond


def flag_names(server):
    out = subprocess.run([server, "--helpfull"], capture_output=True, text=True, timeout=30)
    names = set(re.findall(r"^\s+--?([A-Za-z_][A-Za-z0-9_]*) \(", out.stdout + out.stderr, re.M))
    if "listen" not in names or "flagfile" not in names:
        sys.exit("could not read the flags from f2obo-server --helpfull:\n" + out.stdout[:2000])
    return names


def parse_flags(args, where, known):
    """--name=value list -> dict; fails on unknown names."""
    flags = {}
    for arg in args:
        m = re.fullmatch(r"--([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?", arg.strip())
        if not expect(m, "%s: %r is not a --flag=value" % (where, arg)):
            continue
        expect(m.group(1) in known, "%s: f2obo-server has no flag --%s" % (where, m.group(1)))
        flags[m.group(1)] = m.group(2) if m.group(2) is not None else "true"
    return flags


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def load_k8s(source):
    objs = []
    for path in sorted(glob.glob(os.path.join(source, "deploy", "k8s", "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                if doc.get("kind") == "Kustomization":
                    for r in doc["resources"]:
                        expect(os.path.exists(os.path.join(os.path.dirname(path), r)),
                               "kustomization lists missing %s" % r)
                    continue
                expect(doc.get("apiVersion") and doc.get("kind") and
                       doc.get("metadata", {}).get("name"),
                       "%s: object without apiVersion/kind/name" % path)
                objs.append(doc)
    return objs


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        sys.exit("expected one %s %s in deploy/k8s, found %d" % (kind, name or "", len(found)))
    return found[0]


def start(server, flagfile, work):
    err = open(os.path.join(work, "server.err"), "w")
    proc = subprocess.Popen([server, "--flagfile=" + flagfile], stdout=subprocess.PIPE,
                            stderr=err, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [^ ]+:(\d+), metrics on [^ ]+:(\d+)/metrics", line)
    if not m:
        proc.kill()
        proc.wait()
        with open(os.path.join(work, "server.err")) as f:
            sys.exit("the ConfigMap's flag file did not start f2obo-server: %r\n%s" % (line, f.read()))
    return proc, int(m.group(1)), int(m.group(2))


def run_probe(cli, command, port, what):
    """Runs a probe command (f2obo-cli ...) with the built f2obo-cli and its
    server moved to `port`."""
    expect(command[0] == "f2obo-cli", "%s does not run f2obo-cli: %s" % (what, command))
    cmd = [cli] + [re.sub(r"--server=127\.0\.0\.1:\d+", "--server=127.0.0.1:%d" % port, c) for c in command[1:]]
    expect(cmd[1:] != list(command[1:]), "%s: no --server=127.0.0.1:<port> in %s" % (what, command))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0 and "SERVING" in r.stdout,
           "%s %s: exit %d %s%s" % (what, cmd, r.returncode, r.stdout, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--binary_dir", required=True)
    a = ap.parse_args()
    src = a.source
    known = flag_names(a.server)

    # ------------------------------------------------------------ Kubernetes
    objs = load_k8s(src)
    sts = one(objs, "StatefulSet")
    cm = one(objs, "ConfigMap", "f2obo-server-flags")
    pod = sts["spec"]["template"]["spec"]
    ctr = [c for c in pod["containers"] if c["name"] == "f2obo-server"][0]
    mounts = {m["name"]: m["mountPath"] for m in ctr["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    flagfile_text = cm["data"]["server.flags"]
    flags = parse_flags([l for l in flagfile_text.splitlines() if l.strip()], "ConfigMap", known)
    grpc_port, metrics_port = port_of(flags["listen"]), port_of(flags["metrics_listen"])
    expect(flags["listen"].startswith("0.0.0.0:") and flags["metrics_listen"].startswith("0.0.0.0:"),
           "ConfigMap: the pod must listen on all interfaces")
    expect(ctr["command"] == ["f2obo-server"], "StatefulSet command is not f2obo-server")
    args = parse_flags(ctr["args"], "StatefulSet args", known)
    cfg_vol = [n for n, v in volumes.items() if v.get("configMap", {}).get("name") == "f2obo-server-flags"]
    expect(cfg_vol and args.get("flagfile") == mounts[cfg_vol[0]] + "/server.flags",
           "StatefulSet: --flagfile %r is not the mounted ConfigMap" % args.get("flagfile"))
    tok_vol = [n for n, v in volumes.items() if "secret" in v]
    expect(tok_vol and os.path.dirname(flags.get("token_file", "")) == mounts[tok_vol[0]],
           "StatefulSet: --token_file is not in the mounted Secret")
    claims = [c["metadata"]["name"] for c in sts["spec"].get("volumeClaimTemplates", [])]
    expect(claims and flags["data_dir"].startswith(mounts.get(claims[0], "?") + "/"),
           "StatefulSet: --data_dir %r is not on a volumeClaimTemplate volume" % flags["data_dir"])
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    expect(ports == {"grpc": grpc_port, "metrics": metrics_port},
           "StatefulSet ports %s != the flags' %d/%d" % (ports, grpc_port, metrics_port))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = ctr.get(probe)
        if not expect(p, "StatefulSet has no %s" % probe):
            continue
        if "grpc" in p:
            expect(p["grpc"]["port"] == grpc_port, "%s probes port %s" % (probe, p["grpc"]["port"]))
        else:
            cmd = p["exec"]["command"]
            expect(cmd[0] == "f2obo-cli" and cmd[1] == "health" and
                   "--server=127.0.0.1:%d" % grpc_port in cmd, "%s: %s" % (probe, cmd))
    ann = sts["spec"]["template"]["metadata"].get("annotations", {})
    expect(ann.get("prometheus.io/scrape") == "true" and
           ann.get("prometheus.io/port") == str(metrics_port) and
           ann.get("prometheus.io/path") == "/metrics", "scrape annotations %s" % ann)
    sec = pod["securityContext"]
    expect(sec.get("runAsNonRoot") and sec.get("runAsUser") not in (None, 0), "pod may run as root")

    headless = one(objs, "Service", sts["spec"]["serviceName"])
    expect(headless["spec"].get("clusterIP") == "None", "the StatefulSet's service is not headless")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    expect(all(labels.get(k) == v for k, v in headless["spec"]["selector"].items()),
           "headless service selector does not select the pods")
    for p in headless["spec"]["ports"]:
        expect(p["targetPort"] in ports and p["port"] == ports[p["targetPort"]],
               "headless service port %s" % p)
    sm = one(objs, "ServiceMonitor")
    expect(sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in headless["spec"]["ports"]],
           "ServiceMonitor port is not a service port")
    expect(all(headless["metadata"]["labels"].get(k) == v
               for k, v in sm["spec"]["selector"]["matchLabels"].items()),
           "ServiceMonitor does not select the headless service")
    expect(headless["metadata"]["labels"].get(sm["spec"]["jobLabel"]) == "f2obo",
           "ServiceMonitor job label is not 'f2obo' (the rules' job)")

    # Envoy: hash on the client's header over the replicas' stable names.
    with open(os.path.join(src, "client", "session_routing.h")) as f:
        header = re.search(r'kSessionHeader\[\] = "([^"]+)"', f.read()).group(1)
    ecm = one(objs, "ConfigMap", "f2obo-envoy")
    envoy = yaml.safe_load(ecm["data"]["envoy.yaml"])
    lst = envoy["static_resources"]["listeners"][0]
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    expect(all(r["route"]["hash_policy"][0]["header"]["header_name"] == header for r in routes),
           "Envoy does not hash on %s" % header)
    cluster = envoy["static_resources"]["clusters"][0]
    expect(all(r["route"]["cluster"] == cluster["name"] for r in routes), "route cluster")
    expect(cluster["lb_policy"] == "RING_HASH", "Envoy cluster is not RING_HASH")
    expect(cluster["common_lb_config"]["consistent_hashing_lb_config"]["use_hostname_for_hashing"],
           "Envoy hashes pod IPs (they change on restart), not hostnames")
    expect("http2_protocol_options" in json.dumps(cluster), "Envoy upstream is not HTTP/2 (gRPC)")
    eps = [e["endpoint"] for e in cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]]
    ns, name, svc = sts["metadata"]["namespace"], sts["metadata"]["name"], headless["metadata"]["name"]
    want = ["%s-%d.%s.%s.svc.cluster.local" % (name, i, svc, ns) for i in range(sts["spec"]["replicas"])]
    expect([e["address"]["socket_address"]["address"] for e in eps] == want,
           "Envoy endpoints are not the %d replicas %s" % (sts["spec"]["replicas"], want))
    expect(all(e["address"]["socket_address"]["port_value"] == grpc_port for e in eps),
           "Envoy endpoints do not use the gRPC port %d" % grpc_port)
    expect(all(e.get("hostname") for e in eps), "Envoy endpoints without hostname")
    dep = one(objs, "Deployment", "f2obo-envoy")
    ectr = dep["spec"]["template"]["spec"]["containers"][0]
    eports = {p["name"]: p["containerPort"] for p in ectr["ports"]}
    expect(eports.get("grpc") == lst["address"]["socket_address"]["port_value"],
           "Envoy container port != listener port")
    evol = [v for v in dep["spec"]["template"]["spec"]["volumes"] if v.get("configMap", {}).get("name") == "f2obo-envoy"]
    emount = [m["mountPath"] for m in ectr["volumeMounts"] if evol and m["name"] == evol[0]["name"]]
    expect(emount and ectr["args"][-1] == emount[0] + "/envoy.yaml", "Envoy -c is not the ConfigMap")
    front = one(objs, "Service", "f2obo")
    expect(all(front["spec"]["selector"].get(k) == v
               for k, v in dep["spec"]["template"]["metadata"]["labels"].items()) and
           front["spec"]["ports"][0]["targetPort"] in eports, "front Service does not reach Envoy")

    # The runbook's rebalance Jobs: f2obo-cli rebalance over exactly the
    # StatefulSet's pods (by the names they report: their host names), with
    # the server's token file from its Secret; step 4 asks a sidecar Envoy
    # with the ConfigMap's (new) ring, step 6 the live front Service.
    secret_mounts = {}
    for v in sts["spec"]["template"]["spec"]["volumes"]:
        if "secret" in v:
            secret_mounts[v["secret"]["secretName"]] = [
                m["mountPath"] for m in ctr["volumeMounts"] if m["name"] == v["name"]][0]
    jobs = {}
    for job_name in ("f2obo-rebalance", "f2obo-lift-tombstones"):
        job = one(objs, "Job", job_name)
        jpod = job["spec"]["template"]["spec"]
        jctr = jpod["containers"][0]
        expect(jctr["command"] == ["f2obo-cli", "rebalance"], "%s: not f2obo-cli rebalance" % job_name)
        jargs = dict(x.split("=", 1) if "=" in x else (x, "true") for x in jctr["args"])
        jobs[job_name] = jctr["command"] + jctr["args"]
        want_replicas = ",".join("%s-%d=%s-%d.%s.%s.svc.cluster.local:%d" % (
            name, i, name, i, svc, ns, grpc_port) for i in range(sts["spec"]["replicas"]))
        expect(jargs.get("--replicas") == want_replicas,
               "%s: --replicas %s != the StatefulSet's pods %s"
               % (job_name, jargs.get("--replicas"), want_replicas))
        jvols = {v["name"]: v for v in jpod["volumes"]}
        tmount = [m["mountPath"] for m in jctr["volumeMounts"]
                  if jvols[m["name"]].get("secret", {}).get("secretName") == "f2obo-tokens"]
        expect(tmount and secret_mounts.get("f2obo-tokens") and
               jargs.get("--token_file") == tmount[0] + flags["token_file"][
                   len(secret_mounts["f2obo-tokens"]):],
               "%s: --token_file %s is not the server's token file from Secret f2obo-tokens"
               % (job_name, jargs.get("--token_file")))
        if job_name == "f2obo-rebalance":
            side = jpod["initContainers"][0]
            expect(side.get("restartPolicy") == "Always", "rebalance Job: Envoy is not a sidecar")
            expect(jargs.get("--proxy") == "127.0.0.1:%d"
                   % lst["address"]["socket_address"]["port_value"],
                   "rebalance Job: --proxy is not its sidecar Envoy's listener")
            smount = [m["mountPath"] for m in side["volumeMounts"]
                      if jvols[m["name"]].get("configMap", {}).get("name") == "f2obo-envoy"]
            expect(smount and side["args"][-1] == smount[0] + "/envoy.yaml",
                   "rebalance Job: its Envoy does not run the f2obo-envoy ConfigMap")
        else:
            expect(jargs.get("--proxy") == "%s.%s.svc.cluster.local:%d" % (
                front["metadata"]["name"], ns, front["spec"]["ports"][0]["port"]),
                   "lift Job: --proxy is not the front Service")
            expect("--lift_tombstones" in jargs, "lift Job: no --lift_tombstones")

    # ------------------------------------------------ compose and Prometheus
    deploy = os.path.join(src, "deploy")
    with open(os.path.join(deploy, "docker-compose.yml")) as f:
        compose = yaml.safe_load(f)
    f2 = compose["services"]["f2obo"]
    cflags = parse_flags(f2["command"], "compose", known)
    cgrpc, cmetrics = port_of(cflags["listen"]), port_of(cflags["metrics_listen"])
    expect(any(str(p).endswith(":%d" % cgrpc) for p in f2["ports"]), "compose does not publish gRPC")
    expect(str(cmetrics) in [str(p) for p in f2.get("expose", [])], "compose does not expose metrics")
    expect(cflags["data_dir"].startswith(f2["volumes"][0].split(":")[1] + "/"),
           "compose --data_dir is not on the volume")
    with open(os.path.join(deploy, "prometheus", "prometheus.yml")) as f:
        prom = yaml.safe_load(f)
    job = [j for j in prom["scrape_configs"] if j["job_name"] == "f2obo"][0]
    expect(job["static_configs"][0]["targets"] == ["f2obo:%d" % cmetrics],
           "prometheus.yml target %s != compose service f2obo:%d" % (job["static_configs"], cmetrics))
    for svc_name, wanted in (("prometheus", "./prometheus"), ("grafana", "./grafana/provisioning"),
                             ("grafana", "./grafana/dashboards")):
        vols = [v for v in compose["services"][svc_name]["volumes"] if v.startswith(wanted + ":")]
        expect(vols and os.path.isdir(os.path.join(deploy, wanted)), "%s mounts %s" % (svc_name, wanted))
    with open(os.path.join(deploy, "grafana", "provisioning", "dashboards", "f2obo.yml")) as f:
        provider = yaml.safe_load(f)["providers"][0]
    dash_mount = [v.split(":")[1] for v in compose["services"]["grafana"]["volumes"]
                  if v.startswith("./grafana/dashboards:")]
    expect(dash_mount == [provider["options"]["path"]], "Grafana provider path %s != mount %s" %
           (provider["options"]["path"], dash_mount))
    with open(os.path.join(deploy, "grafana", "provisioning", "datasources", "prometheus.yml")) as f:
        url = yaml.safe_load(f)["datasources"][0]["url"]
    expect(url == "http://prometheus:9090" and "prometheus" in compose["services"],
           "Grafana datasource %s is not the compose prometheus" % url)

    # ------------------------------------------------------------ Dockerfile
    with open(os.path.join(src, "Dockerfile")) as f:
        dockerfile = f.read()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", dockerfile, re.M).group(1))
    expect(entry == ["f2obo-server"], "ENTRYPOINT %s" % entry)
    dflags = parse_flags(cmd, "Dockerfile CMD", known)
    exposed = {int(p) for p in re.search(r"^EXPOSE (.*)$", dockerfile, re.M).group(1).split()}
    expect(exposed == {port_of(dflags["listen"]), port_of(dflags["metrics_listen"])},
           "EXPOSE %s != the CMD's ports" % exposed)
    expect(exposed == {grpc_port, metrics_port} == {cgrpc, cmetrics},
           "Dockerfile, compose and Kubernetes disagree on ports")
    user = re.search(r"^USER (\S+)$", dockerfile, re.M).group(1)
    uid = re.search(r"useradd [^\n]*--uid (\d+)[^\n]* %s\b" % user, dockerfile)
    expect(user != "root" and uid and int(uid.group(1)) == sec["runAsUser"],
           "image user %s (uid %s) != pod runAsUser %s" % (user, uid and uid.group(1), sec["runAsUser"]))
    health = json.loads(re.search(r"^HEALTHCHECK .*CMD (\[.*\])$", dockerfile, re.M).group(1))
    copied = re.search(r"^COPY --from=build (.*) /usr/local/bin/$", dockerfile, re.M).group(1).split()
    build_dir = re.search(r"cmake -S \. -B (\S+)", dockerfile).group(1)
    for binary in (a.server, a.cli):
        rel = os.path.relpath(binary, a.binary_dir)
        expect(build_dir + "/" + rel in copied, "Dockerfile does not copy %s (%s)" % (rel, copied))
        expect(re.search(r"--target[^\n]*\b%s\b" % os.path.basename(binary), dockerfile),
               "Dockerfile does not build %s" % os.path.basename(binary))
    # Runtime packages: every shared library the binaries load comes from a
    # listed package, one of its dependencies, or the debian:12 base image.
    m = re.search(r"FROM debian:12\s*\nRUN apt-get update[^\n]*\n(?:.*\\\n)*?.*install[^\n]*\\\n((?:\s+[^\n]*\\\n)+)",
                  dockerfile)
    runtime = set(re.findall(r"([a-z0-9][a-z0-9.+-]+)", m.group(1).split("&&")[0])) if m else set()
    expect(runtime, "could not read the runtime packages of the Dockerfile")
    closure = set()
    if runtime:
        dep = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                              "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"]
                             + sorted(runtime), capture_output=True, text=True)
        closure = {l.strip().split(":")[-1].strip().strip("<>") for l in dep.stdout.splitlines()}
        closure = {c.split(":")[0] for c in closure if c}
    base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
    libs = {b: re.findall(r"=> (/\S+)", subprocess.run(["ldd", b], capture_output=True,
                                                        text=True).stdout)
            for b in (a.server, a.cli)}
    # One dpkg -S for every path (each call reads the whole package database,
    # ~0.5 s on a machine with the test packages): the real path, and the
    # path as loaded for /lib -> /usr/lib merged paths.
    paths = sorted({p for ls in libs.values() for lib in ls for p in (lib, os.path.realpath(lib))})
    owners = {}
    for line in subprocess.run(["dpkg", "-S"] + paths, capture_output=True,
                               text=True).stdout.splitlines():
        pkg, _, path = line.partition(": ")
        owners[path.strip()] = pkg.split(":")[0].strip()
    for binary in (a.server, a.cli):
        for lib in libs[binary]:
            pkg = owners.get(os.path.realpath(lib)) or owners.get(lib, "")
            expect(pkg and (pkg in runtime or pkg in closure or pkg in base),
                   "%s loads %s from package %r, not installed by the Dockerfile's runtime stage"
                   % (os.path.basename(binary), lib, pkg))

    # -------------------------- a real server from the ConfigMap's flag file
    work = tempfile.mkdtemp(prefix="f2obo-manifests-")
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write("write deploy-test-token\n")
    local = (flagfile_text.replace(flags["listen"], "127.0.0.1:0")
             .replace(flags["metrics_listen"], "127.0.0.1:0")
             .replace(flags["data_dir"], os.path.join(work, "data"))
             .replace(flags["token_file"], tokens))
    path = os.path.join(work, "server.flags")
    with open(path, "w") as f:
        f.write(local)
    proc, port, mport = start(a.server, path, work)
    try:
        run_probe(a.cli, ctr["livenessProbe"]["exec"]["command"], port, "liveness probe")
        run_probe(a.cli, health, port, "Dockerfile HEALTHCHECK")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as r:
            text = r.read().decode()
        m = re.search(r"^f2obo_sessions_limit (\S+)$", text, re.M)
        expect(m and float(m.group(1)) == float(flags["max_sessions"]),
               "server from the flag file: f2obo_sessions_limit %s != --max_sessions %s"
               % (m and m.group(1), flags["max_sessions"]))
        # Each Job's command, pointed at this server as its own proxy and
        # only replica, authenticates with the token file and completes.
        for job_name, command in jobs.items():
            cmd = [a.cli] + [
                "--proxy=127.0.0.1:%d" % port if c.startswith("--proxy=") else
                "--replicas=%s=127.0.0.1:%d" % (socket.gethostname(), port)
                if c.startswith("--replicas=") else
                "--token_file=" + tokens if c.startswith("--token_file=") else c
                for c in command[1:]]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            expect(r.returncode == 0 and "moved 0, undone 0" in r.stdout,
                   "%s's command %s: exit %d %s%s" % (job_name, cmd, r.returncode, r.stdout,
                                                      r.stderr))
        # The token file took effect: an unauthenticated write is refused.
        r = subprocess.run([a.cli, "delete", "--server=127.0.0.1:%d" % port, "--session=x"],
                           capture_output=True, text=True, timeout=60)
        expect(r.returncode == 1 and "UNAUTHENTICATED" in r.stderr,
               "server from the flag file did not enforce --token_file: %s" % r.stderr)
    finally:
        proc.terminate()
        expect(proc.wait(timeout=30) == 0, "server from the flag file did not exit 0 on SIGTERM")

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("OK: k8s (%d objects), compose, Dockerfile, Envoy; flags %s" %
          (len(objs), ", ".join(sorted(set(flags) | set(cflags) | set(dflags)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
