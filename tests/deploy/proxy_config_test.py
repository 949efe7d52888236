#!/usr/bin/python3
"""The generated proxy configurations cannot drift from deploy/replicas.yaml.

1. The committed files equal the generator's output (gen --check).
2. The check notices a change: a replica added to a copy of replicas.yaml
   makes every generated file stale.
3. statefulset.yaml runs as many replicas as replicas.yaml lists.
4. nginx accepts a generated standalone config (nginx -t).
5. docker-compose.scaleout.yml runs exactly the replicas of replicas.yaml,
   each with its own --replica_name, volume and port, behind the generated
   nginx config.
6. The shared store's nginx config (--shared_store: what the failover tests
   under tests/server/store/postgres run, and what docs/operations.md gives)
   is accepted by nginx, fails over (grpc_next_upstream error timeout,
   max_fails=1), and its upstream and location directives are the committed
   deploy/nginx/nginx.shared.conf's, which docker-compose.shared.yml runs.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(SOURCE, "deploy", "proxy", "gen_proxy_config.py")
PY = "/usr/bin/python3"


def run(*args):
    return subprocess.run([PY, GEN, *args], capture_output=True, text=True)


def routing(config):
    """The directives that route and fail over: the upstream's and the
    location's, without addresses, paths and comments."""
    out = []
    for line in config.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("server ") and line.endswith(";"):
            server = "server ADDRESS " + " ".join(line.split()[2:])
            if server not in out:  # one per ring member: the ring differs
                out.append(server)
        elif line.startswith(("grpc_", "hash ", "keepalive", "error_page", "max_fails")):
            out.append(line)
    return out


def shared_store_config(standalone):
    """The --shared_store config as the tests run it against the committed
    one compose runs: the same failover."""
    failures = []
    committed = open(os.path.join(SOURCE, "deploy", "nginx", "nginx.shared.conf")).read()
    if routing(standalone) != routing(committed):
        failures.append("the tests' --shared_store nginx config routes unlike "
                        "deploy/nginx/nginx.shared.conf:\n%s\n%s"
                        % (routing(standalone), routing(committed)))
    for want in ("grpc_next_upstream error timeout;", "max_fails=1 fail_timeout=10s;"):
        if want not in standalone:
            failures.append("--shared_store config has no '%s'" % want)
    if "grpc_next_upstream off;" not in open(os.path.join(SOURCE, "deploy", "nginx",
                                                          "nginx.conf")).read():
        failures.append("the embedded store's nginx.conf retries on another replica")
    docs = open(os.path.join(SOURCE, "docs", "operations.md")).read()
    if "deploy/proxy/gen_proxy_config.py nginx --shared_store" not in docs or \
            "deploy/nginx/nginx.shared.conf" not in docs:
        failures.append("docs/operations.md does not give the --shared_store config")
    compose = yaml.safe_load(open(os.path.join(SOURCE, "deploy", "docker-compose.shared.yml")))
    if "./nginx/nginx.shared.conf:/etc/nginx/nginx.conf:ro" not in \
            compose["services"]["proxy"]["volumes"]:
        failures.append("docker-compose.shared.yml's proxy does not run nginx.shared.conf")
    return failures


def main():
    failures = []
    r = run("--check")
    if r.returncode != 0:
        failures.append("committed files differ from the generator:\n" + r.stdout + r.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        spec = yaml.safe_load(open(os.path.join(SOURCE, "deploy", "replicas.yaml")))
        spec["replicas"].append("f2obo-extra")
        changed = os.path.join(tmp, "replicas.yaml")
        yaml.safe_dump(spec, open(changed, "w"))
        r = run("--check", "--replicas=" + changed)
        if r.returncode == 0 or r.stdout.count("+++ generated") != 7 or "f2obo-extra" not in r.stdout:
            failures.append("--check did not report all 7 files stale after adding a replica:\n"
                            + r.stdout + r.stderr)

        sts = [d for d in yaml.safe_load_all(open(os.path.join(SOURCE, "deploy", "k8s",
                                                                "statefulset.yaml")))
               if d and d.get("kind") == "StatefulSet"]
        listed = yaml.safe_load(open(os.path.join(SOURCE, "deploy", "replicas.yaml")))
        want = len(listed["replicas"]) + len(listed.get("leaving") or [])
        if not sts or sts[0]["spec"]["replicas"] != want:
            failures.append("statefulset.yaml spec.replicas != %d replicas (ring and leaving) "
                            "in replicas.yaml" % want)
        # A leaving replica is out of the ring but still rebalanced from.
        spec["replicas"].remove("f2obo-extra")
        spec["leaving"] = [spec["replicas"].pop()]
        yaml.safe_dump(spec, open(changed, "w"))
        out = os.path.join(tmp, "out")
        shutil.copytree(os.path.join(SOURCE, "deploy"), out)
        subprocess.run([PY, GEN, "--replicas=" + changed, "--out_dir=" + out], check=True)
        envoy = open(os.path.join(out, "k8s", "envoy.yaml")).read()
        job = open(os.path.join(out, "k8s", "rebalance-job.yaml")).read()
        gone = spec["leaving"][0]
        if "hostname: " + gone in envoy or "--replicas=" not in job or gone + "=" not in job:
            failures.append("a leaving replica is in the Envoy ring or missing from the "
                            "rebalance Job's --replicas")

        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        for mode in ([], ["--shared_store"]):
            r = run("nginx", "--listen=127.0.0.1:1", "--prefix=" + tmp,
                    "--replica=a=127.0.0.1:2", "--replica=b=127.0.0.1:3", *mode,
                    *(["--user=root"] if os.geteuid() == 0 else []))
            conf = os.path.join(tmp, "nginx.conf")
            open(conf, "w").write(r.stdout)
            t = subprocess.run([nginx, "-t", "-p", tmp, "-c", conf, "-e", tmp + "/error.log"],
                               capture_output=True, text=True)
            if r.returncode != 0 or t.returncode != 0 or \
                    "hash $http_x_f2obo_session consistent;" not in r.stdout:
                failures.append("nginx -t refused the generated config %s:\n%s%s"
                                % (mode, r.stderr, t.stderr))
        failures += shared_store_config(r.stdout)

    compose = yaml.safe_load(open(os.path.join(SOURCE, "deploy", "docker-compose.scaleout.yml")))
    names = yaml.safe_load(open(os.path.join(SOURCE, "deploy", "replicas.yaml")))["replicas"]
    services = compose["services"]
    if sorted(n for n in services if n != "proxy") != sorted(names):
        failures.append("docker-compose.scaleout.yml replicas %s != replicas.yaml %s"
                        % (sorted(services), names))
    volumes, ports = set(), set()
    for n in names:
        svc = services.get(n, {})
        cmd = svc.get("command", [])
        if "--replica_name=%s" % n not in cmd or "--listen=0.0.0.0:50051" not in cmd:
            failures.append("compose %s: --replica_name=%s / --listen missing" % (n, n))
        volumes.update(svc.get("volumes", []))
        ports.update(svc.get("ports", []))
    if len(volumes) != len(names) or len(ports) != len(names):
        failures.append("compose replicas must not share volumes or ports")
    if "./nginx/nginx.conf:/etc/nginx/nginx.conf:ro" not in services["proxy"]["volumes"]:
        failures.append("compose proxy does not run the generated deploy/nginx/nginx.conf")

    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else "%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
