#!/usr/bin/python3
"""A real Prometheus scrapes a real f2obo-server with deploy/'s config.

check_metric_names.py checks the PromQL text against /metrics; this test
runs the queries.  It starts f2obo-server (loopback, free ports), streams a
session with exact metrics every step, then starts Debian's `prometheus`
with deploy/prometheus/prometheus.yml -- the same rule files and job name,
only the target rewritten to the server's loopback metrics port and the
intervals shortened to 1 s -- and checks through the HTTP API that:
  - the f2obo target is up (the exposition parses for Prometheus itself),
  - the session's BLReg and a multi-task session's regret of F as Prometheus
    stored them equal the server's values,
  - every recording and alerting rule of the deploy rules evaluated without
    error (health "ok"), so no rule is broken PromQL against real series,
  - the per-session recording rule produced a series for the session, and
    for the multi-task session (regret of F / t).
Polling with a deadline is the synchronization: Prometheus scrapes and
evaluates on its own clock.
Usage: prometheus_scrape_test.py --server=BIN --cli=BIN --deploy=DIR --prometheus=BIN
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_metric_names import (cli, scrape, start_server, value_of,  # noqa: E402
                                write_toy_csv)

DEADLINE_S = 90


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, path, **params):
    url = "http://127.0.0.1:%d/api/v1/%s" % (port, path)
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.loads(r.read().decode())
    if body.get("status") != "success":
        raise RuntimeError("%s: %s" % (url, body))
    return body["data"]


def poll(what, probe):
    """Calls probe() until it returns a true value or the deadline passes."""
    deadline = time.monotonic() + DEADLINE_S
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except (OSError, RuntimeError, ValueError) as e:  # not up yet
            last = e
        else:
            if last:
                return last
        time.sleep(0.2)
    sys.exit("timed out after %d s waiting for %s (last: %r)" % (DEADLINE_S, what, last))


def prometheus_config(deploy, metrics_port):
    """deploy's prometheus.yml with the f2obo target on loopback, 1 s intervals."""
    with open(os.path.join(deploy, "prometheus", "prometheus.yml")) as f:
        config = yaml.safe_load(f)
    config["global"]["scrape_interval"] = "1s"
    config["global"]["evaluation_interval"] = "1s"
    # Relative rule paths resolve against the config file, which moves.
    config["rule_files"] = [os.path.abspath(os.path.join(deploy, "prometheus", r))
                            for r in config["rule_files"]]
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "f2obo"]
    if len(jobs) != 1:
        sys.exit("deploy/prometheus/prometheus.yml has no single job 'f2obo'")
    jobs[0]["static_configs"] = [{"targets": ["127.0.0.1:%d" % metrics_port]}]
    config["scrape_configs"] = jobs  # the self-scrape job would need a fixed port
    return config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--deploy", required=True)
    ap.add_argument("--prometheus", required=True)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="f2obo-prom-")
    server, port, mport = start_server(a.server, work)
    prom = None
    failures = []
    try:
        target = "--server=127.0.0.1:%d" % port
        csv = write_toy_csv(os.path.join(work, "toy.csv"), rows=400, features=5, classes=3,
                            seed=11)
        sid = "promscrape"
        cli([a.cli, "create", target, "--id=" + sid, "--family=logistic_hpo",
             "--dataset=" + csv, "--algorithm=sf2obo", "--exact_every=1"])
        cli([a.cli, "stream", target, "--session=" + sid, "--data=" + csv, "--steps=10",
             "--rows_per_step=40"])
        mt = "promscrapemt"
        cli([a.cli, "stream", target, "--create", "--id=" + mt, "--data=" + csv, "--tasks=5",
             "--tasks_per_step=2", "--algorithm=rsvrb", "--exact_every=1", "--steps=6",
             "--rows_per_step=30"])
        # The server's own values once the last steps' exact metrics are published.
        def server_blreg():
            text = scrape(mport)
            if ((value_of(text, "f2obo_session_step", sid) or 0) < 10
                    or (value_of(text, "f2obo_session_step", mt) or 0) < 6):
                return None
            return value_of(text, "f2obo_session_blreg", sid)
        blreg = poll("step 10's metrics on /metrics", server_blreg)
        mt_regret = value_of(scrape(mport), "f2obo_multitask_session_regret", mt)

        config_path = os.path.join(work, "prometheus.yml")
        with open(config_path, "w") as f:
            yaml.safe_dump(prometheus_config(a.deploy, mport), f)
        pport = free_port()
        prom = subprocess.Popen(
            [a.prometheus, "--config.file=" + config_path,
             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % pport],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))

        def target_up():
            if prom.poll() is not None:
                sys.exit("prometheus exited %d; log in %s" % (prom.returncode, work))
            active = api(pport, "targets")["activeTargets"]
            return [t for t in active if t["labels"].get("job") == "f2obo" and t["health"] == "up"]
        up = poll("the f2obo target to be up", target_up)
        print("target up: %s (last scrape %s)" % (up[0]["scrapeUrl"], up[0]["lastScrapeDuration"]))

        def stored_blreg():
            r = api(pport, "query", query='f2obo_session_blreg{job="f2obo",session_id="%s"}' % sid)
            return r["result"]
        series = poll("BLReg in Prometheus", stored_blreg)
        got = float(series[0]["value"][1])
        print("BLReg: server %r, Prometheus %r" % (blreg, got))
        if got != blreg:
            failures.append("Prometheus stored BLReg %r, the server exported %r" % (got, blreg))

        mt_stored = poll("the multi-task regret in Prometheus",
                         lambda: api(pport, "query",
                                     query='f2obo_multitask_session_regret{session_id="%s"}'
                                     % mt)["result"])
        got = float(mt_stored[0]["value"][1])
        print("multi-task regret: server %r, Prometheus %r" % (mt_regret, got))
        if mt_regret is None or got != mt_regret:
            failures.append("Prometheus stored the multi-task regret %r, the server exported %r"
                            % (got, mt_regret))

        def all_rules_evaluated():
            groups = api(pport, "rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if not rules or any(r.get("lastEvaluation", "").startswith("0001") for r in rules):
                return None
            return rules
        rules = poll("every rule evaluated once", all_rules_evaluated)
        with open(os.path.join(a.deploy, "prometheus", "rules", "f2obo-alerts.yml")) as f:
            declared = [r.get("alert") or r.get("record")
                        for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        names = [r["name"] for r in rules]
        if sorted(names) != sorted(declared):
            failures.append("Prometheus loaded rules %s, the file declares %s" % (names, declared))
        for r in rules:
            if r.get("health") != "ok":
                failures.append("rule %s: health %s: %s" % (r["name"], r.get("health"),
                                                             r.get("lastError")))
        print("%d rules evaluated" % len(rules))

        lifetime = poll("f2obo:session_regret_per_step:lifetime for the session",
                        lambda: api(pport, "query",
                                    query='f2obo:session_regret_per_step:lifetime{session_id="%s"}'
                                    % sid)["result"])
        per_step = float(lifetime[0]["value"][1])
        print("lifetime regret per step: %r" % per_step)
        if not per_step >= 0:
            failures.append("regret per step %r is not a non-negative number" % per_step)
        mt_lifetime = poll("f2obo:session_regret_per_step:lifetime for the multi-task session",
                           lambda: api(pport, "query",
                                       query='f2obo:session_regret_per_step:lifetime'
                                       '{session_id="%s"}' % mt)["result"])
        mt_per_step = float(mt_lifetime[0]["value"][1])
        print("multi-task lifetime regret per step: %r" % mt_per_step)
        if mt_regret is not None and abs(mt_per_step - mt_regret / 6) > 1e-9 * (1 + mt_regret):
            failures.append("multi-task regret per step %r is not regret %r / 6 steps"
                            % (mt_per_step, mt_regret))
    finally:
        for p in (prom, server):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
    for f in failures:
        print("FAIL:", f)
    if failures:
        print("prometheus log and server stderr kept in", work)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
