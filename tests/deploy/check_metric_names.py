#!/usr/bin/python3
"""Checks deploy/'s PromQL against what a real f2obo-server exports.

Starts f2obo-server on loopback (free ports), creates sessions with
f2obo-cli (bilevel, simple bilevel and multi-task), streams a few steps
(Steps and unary Step), provokes one RPC error, waits until the sessions'
exact metrics reach /metrics, then checks
every PromQL expression of the Grafana dashboard (panels and template
variables) and of the alert rules:
  - every f2obo_* metric name is exported (histograms as _bucket/_sum/_count),
  - every recorded name (with ':') is defined by a recording rule,
  - label matchers name labels the metric has, and literal values/regexes
    match a value the server exports for that label,
  - by (...) labels exist on a metric of the expression,
  - per-session dashboard queries filter by the $session variable,
  - panels use the provisioned datasource, and up{job=...} names the job
    of deploy/prometheus/prometheus.yml.
Usage: check_metric_names.py --server=BIN --cli=BIN --deploy=DIR
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
NAME = re.compile(r'(?<![A-Za-z0-9_:$.])([A-Za-z_:][A-Za-z0-9_:]*)')
SELECTOR = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}')
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUPING = re.compile(r'\b(?:by|without)\s*\(([^)]*)\)')
TARGET_LABELS = {"job", "instance", "namespace", "pod"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def start_server(server, work):
    proc = subprocess.Popen(
        [server, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
         "--data_dir=" + os.path.join(work, "data"), "--max_sessions=7"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "server.err"), "w"), text=True)
    line = proc.stdout.readline()  # the banner; the server prints it once started
    m = re.search(r"listening on [^ ]+:(\d+), metrics on [^ ]+:(\d+)/metrics", line)
    if not m:
        proc.kill()
        sys.exit("no banner from f2obo-server: %r (stderr in %s)" % (line, work))
    return proc, int(m.group(1)), int(m.group(2))


def cli(args, expect=0):
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode != expect:
        sys.exit("%s: exit %d (expected %d)\n%s%s" % (" ".join(args), r.returncode, expect,
                                                       r.stdout, r.stderr))
    return r.stdout


def parse_exposition(text):
    """name -> list of {label: value} for every sample line."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+\S+', line)
        if not m:
            fail("unparsable /metrics line: " + line)
            continue
        labels = dict((k, v) for k, _, v in MATCHER.findall(m.group(3) or ""))
        series.setdefault(m.group(1), []).append(labels)
    return series


def write_toy_csv(path, rows, features, classes, seed):
    """A small classification CSV (features, then the label), generated here:
    feature j leans towards the label j % classes.  Returns `path`."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            label = rng.randrange(classes)
            row = [rng.gauss(label * 0.5 * (j % classes == label), 1.0) for j in range(features)]
            f.write(",".join("%.5f" % v for v in row) + ",%d\n" % label)
    return path


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode()


def value_of(text, name, session):
    m = re.search(r'^%s\{session_id="%s"\} (\S+)$' % (name, session), text, re.M)
    return float(m.group(1)) if m else None


def check_expr(where, expr, live, recorded, all_values):
    body = STRING.sub('""', expr)
    names = set(NAME.findall(body))
    metric_names = {n for n in names if n.startswith("f2obo_") or n.startswith("f2obo:")}
    if not metric_names and "up" not in names:
        fail("%s: no f2obo metric in %r" % (where, expr))
    for n in metric_names:
        if ":" in n:
            if n not in recorded:
                fail("%s: %s is not a recording rule of the alert rules" % (where, n))
        elif n not in live:
            fail("%s: %s is not exported by f2obo-server" % (where, n))
    expr_labels = set(TARGET_LABELS) | {"le"}
    for n in metric_names:
        for labels in live.get(n, []):
            expr_labels |= set(labels)
    for metric, inner in SELECTOR.findall(expr):
        if not (metric.startswith("f2obo_")) or metric not in live:
            continue
        have = set().union(*[set(l) for l in live[metric]]) | TARGET_LABELS
        for label, op, value in MATCHER.findall(inner):
            if label not in have:
                fail("%s: %s has no label %s (has %s)" % (where, metric, label, sorted(have)))
                continue
            if label in TARGET_LABELS or "$" in value or op.startswith("!"):
                continue
            pattern = re.compile(value if op == "=~" else re.escape(value))
            if not any(pattern.fullmatch(v) for v in all_values.get(label, ())):
                fail("%s: %s{%s%s\"%s\"} matches no exported %s value (%s)" %
                     (where, metric, label, op, value, label,
                      sorted(all_values.get(label, ()))))
    for group in GROUPING.findall(body):
        for label in [l.strip() for l in group.split(",") if l.strip()]:
            if label not in expr_labels:
                fail("%s: grouping label %s is on no metric of %r" % (where, label, expr))
    return metric_names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--deploy", required=True)
    a = ap.parse_args()

    with open(os.path.join(a.deploy, "prometheus", "prometheus.yml")) as f:
        prom = yaml.safe_load(f)
    jobs = [j["job_name"] for j in prom["scrape_configs"]]
    rules_files = [os.path.join(a.deploy, "prometheus", r) for r in prom["rule_files"]]
    rules = []
    for path in rules_files:
        with open(path) as f:
            for g in yaml.safe_load(f)["groups"]:
                rules += g["rules"]
    recorded = {r["record"] for r in rules if "record" in r}
    with open(os.path.join(a.deploy, "grafana", "dashboards", "f2obo.json")) as f:
        dash = json.load(f)
    with open(os.path.join(a.deploy, "grafana", "provisioning", "datasources",
                           "prometheus.yml")) as f:
        ds_uids = {d["uid"] for d in yaml.safe_load(f)["datasources"]}

    work = tempfile.mkdtemp(prefix="f2obo-deploy-")
    proc, port, mport = start_server(a.server, work)
    try:
        target = "--server=127.0.0.1:%d" % port
        csv = write_toy_csv(os.path.join(work, "toy.csv"), rows=600, features=6, classes=3,
                            seed=7)
        sid = "deploycheck"
        cli([a.cli, "create", target, "--id=" + sid, "--family=logistic_hpo",
             "--dataset=" + csv, "--algorithm=af2obo", "--exact_every=1"])
        cli([a.cli, "stream", target, "--session=" + sid, "--data=" + csv, "--steps=6",
             "--rows_per_step=60"])
        cli([a.cli, "stream", target, "--session=" + sid, "--data=" + csv, "--steps=2",
             "--rows_per_step=60", "--mode=unary"])
        cli([a.cli, "decision", target, "--session=no-such-session"], expect=1)  # NOT_FOUND
        # A simple bilevel session for the f2obo_simple_session_* series.
        simple = "deploysimple"
        cli([a.cli, "create", target, "--id=" + simple, "--family=least_squares",
             "--dataset=" + csv, "--algorithm=ir_scg", "--constraint=l1_ball:5",
             "--exact_every=1"])
        cli([a.cli, "stream", target, "--session=" + simple, "--data=" + csv, "--steps=4",
             "--rows_per_step=60"])
        # A multi-task session (4 tasks: every task has per-task series) for
        # the f2obo_multitask_* series.
        multitask = "deploymultitask"
        cli([a.cli, "stream", target, "--create", "--id=" + multitask, "--data=" + csv,
             "--tasks=4", "--tasks_per_step=2", "--algorithm=rsvrb", "--exact_every=1",
             "--steps=4", "--rows_per_step=40"])

        # Exact metrics run off the request path: poll until step 8's land.
        deadline = time.monotonic() + 60
        while True:
            text = scrape(mport)
            step = value_of(text, "f2obo_session_step", sid)
            if (step is not None and step >= 8
                    and value_of(text, "f2obo_session_blreg", sid) is not None
                    and value_of(text, "f2obo_simple_session_inner_gap", simple) is not None
                    and (value_of(text, "f2obo_session_step", multitask) or 0) >= 4
                    and value_of(text, "f2obo_multitask_session_regret", multitask)
                    is not None):
                break
            if time.monotonic() > deadline:
                sys.exit("session metrics did not reach /metrics in 60 s:\n" + text)
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    live = parse_exposition(text)
    all_values = {}
    for series in live.values():
        for labels in series:
            for k, v in labels.items():
                all_values.setdefault(k, set()).add(v)
    print("live /metrics: %d metric names" % len(live))
    if value_of(text, "f2obo_session_blreg", sid) is None:
        fail("no per-session BLReg series")
    m = re.search(r"^f2obo_sessions_limit (\S+)$", text, re.M)
    if not m or float(m.group(1)) != 7:
        fail("f2obo_sessions_limit does not report --max_sessions=7")

    used = set()
    # Alert and recording rules.
    for r in rules:
        name = r.get("alert") or r.get("record")
        used |= check_expr("rule " + name, r["expr"], live, recorded, all_values)
        for job in re.findall(r'job\s*=\s*"([^"]*)"', r["expr"]):
            if job not in jobs:
                fail("rule %s: job %r is not a scrape job of prometheus.yml %s" % (name, job, jobs))

    # Dashboard.
    if not dash.get("uid") or not dash.get("title"):
        fail("dashboard has no uid/title")
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    if "session" not in variables:
        fail("dashboard has no 'session' template variable")
    else:
        q = variables["session"]["query"]
        q = q["query"] if isinstance(q, dict) else q
        m = re.fullmatch(r'label_values\((.*),\s*session_id\)', q)
        if not m:
            fail("session variable query %r is not label_values(..., session_id)" % q)
        else:
            check_expr("variable session", m.group(1), live, recorded, all_values)
    n_targets = 0
    for p in dash["panels"]:
        if p["type"] == "row":
            continue
        if p.get("datasource", {}).get("uid") not in ds_uids:
            fail("panel %r: datasource %r is not provisioned (%s)" % (p["title"], p.get("datasource"), ds_uids))
        if not p.get("targets"):
            fail("panel %r has no query" % p["title"])
        for t in p.get("targets", []):
            n_targets += 1
            expr = t["expr"]
            used |= check_expr("panel %r" % p["title"], expr, live, recorded, all_values)
            for job in re.findall(r'job\s*=\s*"([^"]*)"', expr):
                if job not in jobs:
                    fail("panel %r: job %r is not a scrape job %s" % (p["title"], job, jobs))
            if "f2obo_session_" in expr and "$session" not in expr:
                fail("panel %r: per-session query ignores $session: %s" % (p["title"], expr))
    print("checked %d rules and %d dashboard queries; metrics used: %s" %
          (len(rules), n_targets, ", ".join(sorted(used))))
    required = {"f2obo_session_blreg", "f2obo_session_variation_estimate",
                "f2obo_session_drift_estimate", "f2obo_session_lambda",
                "f2obo_session_inner_iterations", "f2obo_rpc_duration_seconds_bucket",
                "f2obo_rpc_errors_total", "f2obo_sessions", "f2obo_sessions_limit",
                "f2obo_multitask_session_regret", "f2obo_multitask_session_gradient_norm",
                "f2obo_multitask_session_tasks_touched", "f2obo_multitask_session_exact_seconds",
                "f2obo_multitask_task_regret"}
    if not required <= used:
        fail("never queried: %s" % sorted(required - used))
    heatmaps = [p for p in dash["panels"] if p["type"] == "heatmap"]
    if not any("_bucket" in t["expr"] and t.get("format") == "heatmap"
               for p in heatmaps for t in p["targets"]):
        fail("no latency heatmap over a _bucket series")
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
