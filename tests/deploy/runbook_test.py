#!/usr/bin/python3
"""The scale-out runbook of deploy/README.md, run as written.

Real processes on loopback: three f2obo-server replicas behind a live nginx
started from a generated standalone config (README step 0), 24 named
sessions streamed through it, a fourth replica started with the README's
step-1 command line, then deploy/rebalance_nginx.sh (steps 3-6). Checks:
  - the script exits 0 and moves sessions (the fourth replica holds some);
  - the live nginx was reloaded, not restarted (same master pid), and now
    routes by the new ring: every session continues through it from its
    next_t (no "moved", no NOT_FOUND), each stored on exactly one replica;
  - the tombstones are gone: a further lift run lifts nothing;
  - rerunning the script moves nothing.
Usage: runbook_test.py --server=BIN --cli=BIN --nginx=BIN --deploy=DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_metric_names import write_toy_csv  # noqa: E402

SESSIONS = 24
STEPS = 3


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit("%s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout


def start_replica(server, work, name):
    """The README's step 1: its own data dir and --replica_name (loopback,
    a free port here)."""
    data = os.path.join(work, name)
    proc = subprocess.Popen(
        [server, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
         "--data_dir=" + data, "--replica_name=" + name],
        stdout=subprocess.PIPE, stderr=open(data + ".err", "w"), text=True)
    line = proc.stdout.readline()  # the banner, printed once serving
    m = re.search(r"listening on [^ ]+:(\d+)", line)
    if not m:
        proc.kill()
        sys.exit("no banner from %s: %r" % (name, line))
    return proc, "127.0.0.1:%s" % m.group(1)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sessions_on(cli, addr):
    out = run([cli, "sessions", "--server=" + addr])
    return {m.group(1) for m in re.finditer(r"^(rb\d+)\s", out, re.M)}


def wait_for(what, probe, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.1)
    sys.exit("timed out waiting for " + what)


def main():
    p = argparse.ArgumentParser()
    for flag in ("server", "cli", "nginx", "deploy"):
        p.add_argument("--" + flag, required=True)
    a = p.parse_args()
    gen = ["/usr/bin/python3", os.path.join(a.deploy, "proxy", "gen_proxy_config.py"), "nginx"]
    work = tempfile.mkdtemp(prefix="f2obo-runbook-")
    procs = []
    nginx = None
    try:
        replicas = {}
        for i in range(3):
            proc, addr = start_replica(a.server, work, "f2obo-%d" % i)
            procs.append(proc)
            replicas["f2obo-%d" % i] = addr
        # Step 0 (the live proxy): a generated standalone config, run from
        # its own prefix.
        live = os.path.join(work, "live")
        os.makedirs(live)
        listen = "127.0.0.1:%d" % free_port()
        conf = run(gen + ["--listen=" + listen, "--prefix=" + live] +
                   ["--replica=%s=%s" % kv for kv in replicas.items()])
        with open(os.path.join(live, "nginx.conf"), "w") as f:
            f.write(conf)
        nginx = subprocess.Popen([a.nginx, "-p", live, "-c", os.path.join(live, "nginx.conf"),
                                  "-e", os.path.join(live, "error.log")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nginx)
        pid_file = os.path.join(live, "nginx.pid")
        wait_for("the live nginx's pid file", lambda: os.path.exists(pid_file))
        master = open(pid_file).read().strip()
        csv = write_toy_csv(os.path.join(work, "toy.csv"), 200, 6, 3, seed=5)
        for k in range(SESSIONS):
            run([a.cli, "stream", "--server=" + listen, "--create", "--session=rb%d" % k,
                 "--family=logistic_hpo", "--algorithm=f2obo", "--data=" + csv,
                 "--steps=%d" % STEPS, "--rows_per_step=16"])

        # Step 1: the new replica.
        proc, addr = start_replica(a.server, work, "f2obo-3")
        procs.append(proc)
        replicas["f2obo-3"] = addr
        ring = ",".join("%s=%s" % kv for kv in replicas.items())
        script = os.path.join(a.deploy, "rebalance_nginx.sh")
        spare = "--spare_listen=127.0.0.1:%d" % free_port()
        out = run(["bash", script, "--live_prefix=" + live, "--ring=" + ring, "--cli=" + a.cli,
                   "--nginx=" + a.nginx, spare])
        print(out)
        moved = [int(m.group(1)) for m in re.finditer(r"^moved (\d+),", out, re.M)]
        if not moved or moved[0] < 1:
            sys.exit("the runbook moved no session:\n" + out)
        if open(pid_file).read().strip() != master:
            sys.exit("the live nginx was restarted, not reloaded")

        held = {name: sessions_on(a.cli, addr) for name, addr in replicas.items()}
        if not held["f2obo-3"]:
            sys.exit("the new replica holds no session after the runbook: %r" % held)
        everywhere = [s for names in held.values() for s in names]
        if sorted(everywhere) != sorted("rb%d" % k for k in range(SESSIONS)):
            sys.exit("each session must be on exactly one replica: %r" % held)
        # Every session continues through the live proxy from its next_t.
        for k in range(SESSIONS):
            out = run([a.cli, "stream", "--server=" + listen, "--session=rb%d" % k,
                       "--data=" + csv, "--steps=2", "--rows_per_step=16",
                       "--moved_retry_seconds=0", "--max_attempts=1"])
            if "next_t = %d" % (STEPS + 3) not in out:
                sys.exit("rb%d did not continue from its next_t:\n%s" % (k, out))
        lift = run([a.cli, "rebalance", "--proxy=" + listen, "--replicas=" + ring,
                    "--lift_tombstones"])
        if "moved 0, undone 0, tombstones lifted 0" not in lift:
            sys.exit("tombstones or misplaced keys left after the runbook:\n" + lift)
        again = run(["bash", script, "--live_prefix=" + live, "--ring=" + ring, "--cli=" + a.cli,
                     "--nginx=" + a.nginx, spare])
        if not re.search(r"^moved 0, undone 0", again, re.M):
            sys.exit("a second run of the runbook moved sessions:\n" + again)
        print("runbook: %d of %d sessions moved to f2obo-3; live nginx reloaded in place"
              % (len(held["f2obo-3"]), SESSIONS))
    finally:
        # nginx's master stops its workers on SIGTERM (after a SIGKILL they
        # would run on); the servers are simply killed.
        for proc in reversed(procs):
            if proc is nginx:
                proc.terminate()
            else:
                proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
