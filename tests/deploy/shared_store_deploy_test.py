#!/usr/bin/python3
"""The shared-store deployment (docs/operations.md, "Replicas sharing a
PostgreSQL store") against the real server; no docker or Kubernetes here, so
the files are parsed and their flags checked, and the server is started with
them.

1. deploy/docker-compose.shared.yml: the replicas of deploy/replicas.yaml,
   stateless (no volume), each with its own --replica_name and a --store
   naming both PostgreSQL services of the file (primary first,
   target_session_attrs=read-write), the database and user the postgres
   services create, no password on the command line (PGPASSWORD from the
   environment); the primary waits for the standby's flush
   (synchronous_standby_names = the application_name its standby connects
   with); the proxy runs the generated nginx.shared.conf on the replicas'
   port.  Every flag exists (`f2obo-server --helpfull`).
2. deploy/k8s/shared: every manifest parses; the replicas are a Deployment
   without volumes of their own, whose ConfigMap flags exist, whose --store
   is the CloudNativePG cluster's read-write service and whose PGPASSWORD
   comes from that cluster's app Secret; the Cluster has a synchronous
   standby; Envoy hashes on the client's routing header over the replicas'
   headless service, and retries a call that never reached a replica on
   another one.
3. Each replica command (compose) and the ConfigMap's flag file (Kubernetes),
   with listen addresses moved to loopback and the database host to a
   loopback port where nothing listens, starts the real server as far as
   its store: it exits 1 with "--store: cannot connect to PostgreSQL", so
   every flag parses and the store is the one named.
Usage: shared_store_deploy_test.py --server=BIN --source=DIR
"""
import argparse
import glob
import os
import re
import socket
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_manifests as cm  # noqa: E402  (flag_names, parse_flags, failures)

expect = cm.expect


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused_at_store(server, args, work, what):
    """Runs the server with `args`; it must stop at its store, unreachable."""
    dead = "127.0.0.1:%d" % free_port()
    local = []
    for a in args:
        if a.startswith("--store="):
            u = urllib.parse.urlsplit(a[len("--store="):])
            a = "--store=" + urllib.parse.urlunsplit(
                (u.scheme, "%s@%s" % (u.username, dead), u.path, u.query, ""))
        elif a.startswith(("--listen=", "--metrics_listen=")):
            a = a.split("=")[0] + "=127.0.0.1:0"
        elif a.startswith("--token_file="):
            tokens = os.path.join(work, "tokens")
            with open(tokens, "w") as f:
                f.write("write deploy-test-token\n")
            a = "--token_file=" + tokens
        local.append(a)
    r = subprocess.run([server] + local, capture_output=True, text=True, timeout=60, cwd=work,
                       env=dict(os.environ, PGPASSWORD="not-the-password"))
    expect(r.returncode == 1 and "--store: cannot connect to PostgreSQL" in r.stderr,
           "%s: the server did not stop at its store (exit %d): %s" % (what, r.returncode, r.stderr))
    expect("not-the-password" not in r.stderr + r.stdout, "%s: the password was printed" % what)


def check_compose(src, known, server, work):
    deploy = os.path.join(src, "deploy")
    compose = yaml.safe_load(open(os.path.join(deploy, "docker-compose.shared.yml")))
    names = yaml.safe_load(open(os.path.join(deploy, "replicas.yaml")))["replicas"]
    services = compose["services"]
    expect(sorted(services) == sorted(names + ["postgres-primary", "postgres-standby", "proxy"]),
           "compose.shared services %s" % sorted(services))
    primary, standby = services["postgres-primary"], services["postgres-standby"]
    pg_env = primary["environment"]
    with open(os.path.join(deploy, "nginx", "nginx.shared.conf")) as f:
        upstream = re.findall(r"^    server (\S+):(\d+) ", f.read(), re.M)
    expect(upstream == [(n, "50051") for n in names] or
           sorted(upstream) == sorted((n, str(p)) for n, p in upstream),
           "nginx.shared.conf ring %s" % upstream)
    for n in names:
        svc = services[n]
        flags = cm.parse_flags(svc["command"], "compose.shared %s" % n, known)
        expect(flags.get("replica_name") == n, "compose.shared %s: --replica_name" % n)
        expect((n, flags.get("listen", ":").rsplit(":", 1)[1]) in upstream,
               "compose.shared %s: nginx.shared.conf does not reach its --listen" % n)
        expect(not svc.get("volumes") and "data_dir" not in flags,
               "compose.shared %s keeps data of its own (volume or --data_dir)" % n)
        store = urllib.parse.urlsplit(flags.get("store", ""))
        hosts = store.netloc.split("@")[-1].split(",")
        expect(store.scheme == "postgresql" and store.password is None and
               "@" in store.netloc, "compose.shared %s: --store %s (a password in it?)" % (n, store))
        expect(hosts == ["%s:5432" % primary["hostname"], "%s:5432" % standby["hostname"]],
               "compose.shared %s: --store hosts %s are not the primary and the standby" % (n, hosts))
        expect(store.netloc.split("@")[0] == pg_env["POSTGRES_USER"] and
               store.path == "/" + pg_env["POSTGRES_DB"],
               "compose.shared %s: --store user/database != the postgres services'" % n)
        expect("target_session_attrs=read-write" in store.query,
               "compose.shared %s: --store lacks target_session_attrs=read-write" % n)
        expect("PGPASSWORD" in svc.get("environment", {}), "compose.shared %s: no PGPASSWORD" % n)
        refused_at_store(server, svc["command"], work, "compose.shared " + n)
    cmd = " ".join(primary["command"])
    expect("synchronous_standby_names=standby" in cmd and "synchronous_commit=on" in cmd,
           "compose.shared: the primary does not wait for its standby")
    script = [v.split(":")[0] for v in standby["volumes"] if "standby-entrypoint.sh" in v]
    text = open(os.path.join(deploy, script[0])).read() if script else ""
    expect("application_name=standby" in text and "host=postgres-primary" in text,
           "compose.shared: the standby does not stream from the primary as 'standby'")
    init = [v.split(":")[0] for v in primary["volumes"] if "init-primary.sh" in v]
    expect(init and "replication" in open(os.path.join(deploy, init[0])).read(),
           "compose.shared: the primary does not admit the standby's replication")


def check_k8s(src, known, server, work):
    shared = os.path.join(src, "deploy", "k8s", "shared")
    objs = []
    for path in sorted(glob.glob(os.path.join(shared, "*.yaml"))):
        for doc in yaml.safe_load_all(open(path)):
            if not doc:
                continue
            if doc.get("kind") == "Kustomization":
                for r in doc["resources"]:
                    expect(os.path.exists(os.path.join(shared, r)), "kustomization: no %s" % r)
                continue
            expect(doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"),
                   "%s: object without apiVersion/kind/name" % path)
            objs.append(doc)
    kinds = [o["kind"] for o in objs]
    expect("StatefulSet" not in kinds, "k8s/shared: the replicas must not be a StatefulSet")
    dep = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "f2obo-shared"]
    db = [o for o in objs if o["kind"] == "Cluster" and o["apiVersion"].startswith("postgresql.cnpg.io/")]
    if not expect(dep and db, "k8s/shared: no f2obo-shared Deployment or CloudNativePG Cluster"):
        return
    dep, db = dep[0], db[0]
    expect(db["spec"]["instances"] >= 2 and db["spec"].get("minSyncReplicas", 0) >= 1,
           "k8s/shared: the database has no synchronous standby")
    pod = dep["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    expect(not any("persistentVolumeClaim" in v for v in pod["volumes"]),
           "k8s/shared: a replica has a volume of its own")
    cmap = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] ==
            [v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v][0]][0]
    lines = [l for l in cmap["data"]["server.flags"].splitlines() if l.strip()]
    flags = cm.parse_flags(lines, "k8s/shared ConfigMap", known)
    store = urllib.parse.urlsplit(flags.get("store", ""))
    ns = db["metadata"]["namespace"]
    expect(store.hostname == "%s-rw.%s.svc.cluster.local" % (db["metadata"]["name"], ns) and
           store.username == db["spec"]["bootstrap"]["initdb"]["owner"] and
           store.path == "/" + db["spec"]["bootstrap"]["initdb"]["database"] and
           store.password is None,
           "k8s/shared: --store %s is not the Cluster's read-write service, user and database"
           % flags.get("store"))
    pw = [e for e in ctr.get("env", []) if e["name"] == "PGPASSWORD"]
    expect(pw and pw[0]["valueFrom"]["secretKeyRef"]["name"] == db["metadata"]["name"] + "-app",
           "k8s/shared: PGPASSWORD is not from the Cluster's app Secret")
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    expect(ports == {"grpc": cm.port_of(flags["listen"]), "metrics": cm.port_of(flags["metrics_listen"])},
           "k8s/shared: container ports %s != the flags'" % ports)
    mount = [m["mountPath"] for m in ctr["volumeMounts"] if m["name"] == "config"]
    expect(mount and ctr["args"] == ["--flagfile=%s/server.flags" % mount[0]],
           "k8s/shared: --flagfile is not the mounted ConfigMap")
    with open(os.path.join(src, "client", "session_routing.h")) as f:
        header = re.search(r'kSessionHeader\[\] = "([^"]+)"', f.read()).group(1)
    ecm = [o for o in objs if o["kind"] == "ConfigMap" and "envoy.yaml" in o.get("data", {})][0]
    envoy = yaml.safe_load(ecm["data"]["envoy.yaml"])
    hcm = envoy["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    route = hcm["route_config"]["virtual_hosts"][0]["routes"][0]["route"]
    expect(route["hash_policy"][0]["header"]["header_name"] == header,
           "k8s/shared: Envoy does not hash on %s" % header)
    expect("connect-failure" in route["retry_policy"]["retry_on"],
           "k8s/shared: Envoy does not retry a call that never reached a replica")
    cluster = envoy["static_resources"]["clusters"][0]
    headless = [o for o in objs if o["kind"] == "Service" and o["spec"].get("clusterIP") == "None"][0]
    address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
    expect(address["socket_address"]["address"] == "%s.%s.svc.cluster.local"
           % (headless["metadata"]["name"], ns) and cluster["type"] == "STRICT_DNS" and
           cluster["lb_policy"] == "RING_HASH",
           "k8s/shared: Envoy's ring is not the replicas' headless service")
    expect(all(headless["spec"]["selector"].get(k) == v for k, v in
               dep["spec"]["template"]["metadata"]["labels"].items()),
           "k8s/shared: the headless service does not select the replicas")
    refused_at_store(server, lines, work, "k8s/shared ConfigMap")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    known = cm.flag_names(a.server)
    with tempfile.TemporaryDirectory() as work:
        check_compose(a.source, known, a.server, work)
        check_k8s(a.source, known, a.server, work)
    print("ok" if not cm.failures else "%d failure(s)" % len(cm.failures))
    return 1 if cm.failures else 0


if __name__ == "__main__":
    sys.exit(main())
