#!/usr/bin/python3
"""The paper's Sec. 6 experiments, reproduced through f2obo-cli.

Starts its own f2obo-server (in memory, loopback, a free port), then for
each experiment and seed creates one side-by-side group (`create-group`,
one member per algorithm), streams the drifting Fashion-MNIST stream into
it once per step (`stream --group`), saves every member's per-step metrics
(`metrics`) and scores the final decisions on held-out data (`evaluate`).
Writes CSVs and a summary table (summary.csv, tables.md) into --out.

Experiments (see bench/EXPERIMENTS.md for the settings and deviations):
  a    Sec. 6.1 parametric loss tuning (loss_tuning), imbalanced drifting
       stream, four phases rho = 0.6 .. 0.9: F2OBO, F2OBO-SL, AF2OBO,
       SF2OBO, OBBO, SOBOW, AOBO, FSOBO.
  b    Sec. 6.2 online hyperparameter optimization (logistic_hpo, one L2
       coefficient per pixel in [0, 0.1]^784), label noise 5/10/15% from
       1/4, 1/2, 3/4 of the run: SOBBO, SOGD, SF2OBO, PZOBO-S (and SVRB if
       the server accepts it at this size; its refusal is recorded).
  b49  The same as b on 7x7 average-pooled images (d = 49), small enough
       for SVRB's explicit matrices.

--quick runs experiment b for 300 steps and one seed and exits non-zero
unless every algorithm's training loss decreased (ctest uses this).

Only the Python standard library is needed (numpy speeds up the pooled
dataset of b49 when present).  Run with Debian's /usr/bin/python3.
"""
import argparse
import csv
import gzip
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

FMNIST = "/usr/share/datasets/fashion-mnist"
TRAIN = f"{FMNIST}/train-images-idx3-ubyte.gz,{FMNIST}/train-labels-idx1-ubyte.gz"
TEST = f"{FMNIST}/t10k-images-idx3-ubyte.gz,{FMNIST}/t10k-labels-idx1-ubyte.gz"

# Member name -> (algorithm, per-member options).  Shared options are flags.
EXP_A = {
    "f2obo": ("f2obo", ""),
    "f2obo_sl": ("f2obo_sl", "tau=0.3333333333333333"),
    "af2obo": ("af2obo", "max_inner_iterations=30"),
    "sf2obo": ("sf2obo", ""),
    "obbo": ("obbo", ""),
    "sobow": ("sobow", "linear_system_step=0.01"),
    "aobo": ("aobo", "max_inner_iterations=30,linear_system_step=0.01"),
    "fsobo": ("fsobo", "linear_system_step=0.01"),
}
EXP_B = {
    "sobbo": ("sobbo", ""),
    "sogd": ("sogd", "linear_system_step=0.01"),
    "sf2obo": ("sf2obo", ""),
    "pzobo_s": ("pzobo_s", ""),
    "svrb": ("svrb", "max_explicit_dim=2048"),
}


class Server:
    """f2obo-server on 127.0.0.1 with a free port; the banner names it."""

    def __init__(self, build, workdir, nice):
        self.log = open(os.path.join(workdir, "server.err"), "w")
        self.proc = subprocess.Popen(
            ["nice", "-n", str(nice), f"{build}/server/f2obo-server", "--listen=127.0.0.1:0",
             "--metrics_listen=127.0.0.1:0", "--data_dir=", "--durability=none",
             "--max_pending_metrics=100000", "--metrics_threads=1"],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        banner = self.proc.stdout.readline()  # blocks until the server listens
        if "listening on" not in banner:
            raise RuntimeError(f"f2obo-server did not start: {banner!r}")
        self.target = banner.split("listening on ")[1].split(",")[0].strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


class Cli:
    def __init__(self, build, target, log, nice):
        self.nice = nice
        self.exe = f"{build}/client/f2obo-cli"
        self.target = target
        self.log = log

    def __call__(self, *args, check=True):
        cmd = ["nice", "-n", str(self.nice), self.exe, *args, f"--server={self.target}"]
        self.log.write("$ " + " ".join(cmd[3:]) + "\n")
        self.log.flush()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.log.write(r.stdout + r.stderr)
        self.log.flush()
        if check and r.returncode != 0:
            raise RuntimeError(f"f2obo-cli {args[0]} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def spawn(self, *args):
        """Starts the CLI in the background; finish() waits for it."""
        cmd = ["nice", "-n", str(self.nice), self.exe, *args, f"--server={self.target}"]
        self.log.write("$ " + " ".join(cmd[3:]) + " &\n")
        self.log.flush()
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, proc):
        out, err = proc.communicate()
        self.log.write(out + err)
        self.log.flush()
        if proc.returncode != 0:
            raise RuntimeError(f"f2obo-cli failed ({proc.returncode}): {err.strip()}")


def pooled_dataset(workdir, k):
    """Fashion-MNIST average-pooled k x k (as IDX files); returns (train, test) specs."""
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        with gzip.open(f"{FMNIST}/{prefix}-images-idx3-ubyte.gz") as f:
            raw = f.read()
        n, rows, cols = struct.unpack(">III", raw[4:16])
        side = rows // k
        try:
            import numpy as np
            img = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows, cols)
            img = img[:, :side * k, :side * k].reshape(n, side, k, side, k).mean(axis=(2, 4))
            pooled = np.rint(img).astype(np.uint8).tobytes()
        except ImportError:
            pooled = bytearray()
            for i in range(n):
                base = 16 + i * rows * cols
                for r in range(side):
                    for c in range(side):
                        s = sum(raw[base + (r * k + a) * cols + c * k + b]
                                for a in range(k) for b in range(k))
                        pooled.append(round(s / (k * k)))
            pooled = bytes(pooled)
        path = os.path.join(workdir, f"{split}-pooled{k}-images-idx3-ubyte")
        with open(path, "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, side, side) + pooled)
        out[split] = f"{path},{FMNIST}/{prefix}-labels-idx1-ubyte.gz"
    return out["train"], out["test"]


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def run_group(cli, exp, seed, members, shared, steps, stream_args, outdir, train, test,
              eval_rows):
    """One group (all algorithms) on one seed; returns {member: result dict}."""
    group = f"{exp}s{seed}"
    # A member the server (or the CLI's local check) refuses, e.g. SVRB above
    # its size limit, is recorded with the error and left out.
    accepted, refused = dict(members), {}
    member_flags = [f"--member={n}:{a}" + (f":{o}" if o else "") for n, (a, o) in accepted.items()]
    r = cli("create-group", f"--group={group}", *shared, *member_flags, check=False)
    while r.returncode != 0:
        # Find the member the server (or the local check) names and drop it.
        bad = next((n for n in accepted if f"'{n}'" in r.stderr or f"({n})" in r.stderr), None)
        if bad is None:
            raise RuntimeError(f"create-group failed: {r.stderr.strip()}")
        refused[bad] = r.stderr.strip()
        del accepted[bad]
        member_flags = [f"--member={n}:{a}" + (f":{o}" if o else "")
                        for n, (a, o) in accepted.items()]
        r = cli("create-group", f"--group={group}", *shared, *member_flags, check=False)
    # The server buffers a session's last 1024 per-step messages, so each
    # member's metrics are written by a watcher running during the stream.
    watchers = {name: cli.spawn("metrics", f"--session={group}.{name}", f"--until={steps}",
                                "--out=" + os.path.join(outdir, f"{exp}_seed{seed}_{name}_metrics.csv"))
                for name in accepted}
    t0 = time.time()
    cli("stream", f"--group={group}", f"--seed={seed}", f"--steps={steps}", *stream_args)
    wall = time.time() - t0
    results = {}
    for name, proc in watchers.items():
        cli.finish(proc)
        rows = read_csv(os.path.join(outdir, f"{exp}_seed{seed}_{name}_metrics.csv"))
        if [int(r["t"]) for r in rows] != list(range(1, steps + 1)):
            raise RuntimeError(f"{group}.{name}: the metrics CSV does not hold steps 1..{steps}")
        results[name] = {"metrics": rows}
    eval_path = os.path.join(outdir, f"{exp}_seed{seed}_evaluate.csv")
    cli("evaluate", f"--group={group}", f"--test_data={test}", f"--train_data={train}",
        f"--eval_rows={eval_rows}", f"--out={eval_path}")
    for row in read_csv(eval_path):
        results[row["session"].split(".", 1)[1]]["eval"] = row
    cli("delete", f"--group={group}")  # the group and every member
    return results, refused, wall


def mean_std(values):
    values = [v for v in values if v == v]  # drop NaN (e.g. BLReg without exact metrics)
    if not values:
        return float("nan"), float("nan")
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def first_last_loss(metrics, n=50):
    losses = [float(m["upper_loss_before"]) for m in metrics]
    return statistics.mean(losses[:n]), statistics.mean(losses[-n:])


def summarize(exp, per_seed, refused_all, outdir):
    names = []
    for res, _, _ in per_seed:
        for n in res:
            if n not in names:
                names.append(n)
    rows = []
    for n in names:
        runs = [res[n] for res, _, _ in per_seed if n in res]
        ev = [r["eval"] for r in runs]
        f = lambda key: [float(e[key]) for e in ev]
        blreg = [float(next((m["blreg"] for m in reversed(r["metrics"]) if m["blreg"]), "nan"))
                 for r in runs]
        secs = [sum(float(m["round_seconds"]) for m in r["metrics"]) for r in runs]
        late = [first_last_loss(r["metrics"])[1] for r in runs]
        rows.append({
            "experiment": exp, "algorithm": n, "seeds": len(runs),
            "train_loss": mean_std(f("train_loss")), "train_accuracy": mean_std(f("train_accuracy")),
            "test_loss": mean_std(f("test_loss")), "test_accuracy": mean_std(f("test_accuracy")),
            "test_balanced_accuracy": mean_std(f("test_balanced_accuracy")),
            "final_blreg": mean_std(blreg), "round_seconds": mean_std(secs),
            "prequential_loss_last50": mean_std(late),
        })
    with open(os.path.join(outdir, f"{exp}_summary.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        keys = [k for k in rows[0] if k not in ("experiment", "algorithm", "seeds")] if rows else []
        w.writerow(["experiment", "algorithm", "seeds"] +
                   [f"{k}_{s}" for k in keys for s in ("mean", "std")])
        for r in rows:
            w.writerow([r["experiment"], r["algorithm"], r["seeds"]] +
                       [f"{v:.6g}" for k in keys for v in r[k]])
    with open(os.path.join(outdir, f"{exp}_refused.txt"), "w") as fh:
        for n, msg in refused_all.items():
            fh.write(f"{n}: {msg}\n")
    return rows


def fmt(ms, digits=4):
    return f"{ms[0]:.{digits}f} ± {ms[1]:.{digits}f}"


def markdown(exp, rows, refused, walls):
    lines = [f"### Experiment {exp}", ""]
    if exp == "a":
        lines += ["| algorithm | final BLReg (every 20th step) | training loss | balanced test accuracy | test accuracy | round time (s) |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['algorithm']} | {fmt(r['final_blreg'], 1)} | {fmt(r['train_loss'])} | "
                         f"{fmt(r['test_balanced_accuracy'])} | {fmt(r['test_accuracy'])} | "
                         f"{fmt(r['round_seconds'], 1)} |")
    else:
        lines += ["| algorithm | training loss | test accuracy | running time (s) | prequential loss, last 50 steps |",
                  "|---|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['algorithm']} | {fmt(r['train_loss'])} | {fmt(r['test_accuracy'])} | "
                         f"{fmt(r['round_seconds'], 2)} | {fmt(r['prequential_loss_last50'])} |")
    for n, msg in refused.items():
        lines.append(f"\n**{n} refused**: `{msg}`")
    lines.append(f"\nWall time per seed (s): {', '.join(f'{w:.0f}' for w in walls)}\n")
    return "\n".join(lines)


def write_tables(outdir):
    """tables.md: every experiment's table present in `outdir`, in order."""
    parts = []
    for exp in ("a", "b", "b49"):
        path = os.path.join(outdir, f"{exp}_table.md")
        if os.path.exists(path):
            with open(path) as fh:
                parts.append(fh.read().strip())
    with open(os.path.join(outdir, "tables.md"), "w") as fh:
        fh.write("\n\n".join(parts) + "\n")


def resummarize(outdir, exp):
    """Rebuilds <exp>'s summary and table from the CSVs a run left in `outdir`."""
    seeds = {}
    for name in sorted(os.listdir(outdir)):
        if name.startswith(f"{exp}_seed") and name.endswith("_evaluate.csv"):
            seed = int(name[len(exp) + 5:-len("_evaluate.csv")])
            res = {}
            for row in read_csv(os.path.join(outdir, name)):
                member = row["session"].split(".", 1)[1]
                res[member] = {"eval": row, "metrics": read_csv(
                    os.path.join(outdir, f"{exp}_seed{seed}_{member}_metrics.csv"))}
            seeds[seed] = res
    refused = {}
    path = os.path.join(outdir, f"{exp}_refused.txt")
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                if ": " in line:
                    n, msg = line.rstrip("\n").split(": ", 1)
                    refused[n] = msg
    walls = []
    path = os.path.join(outdir, f"{exp}_walls.txt")
    if os.path.exists(path):
        with open(path) as fh:
            walls = [float(w) for w in fh.read().split()]
    per_seed = [(seeds[k], {}, 0.0) for k in sorted(seeds)]
    rows = summarize(exp, per_seed, refused, outdir)
    with open(os.path.join(outdir, f"{exp}_table.md"), "w") as fh:
        fh.write(markdown(exp, rows, refused, walls) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.environ.get("F2OBO_BUILD", os.path.join(here, "../../build")),
                   help="CMake build directory holding server/f2obo-server and client/f2obo-cli")
    p.add_argument("--out", default=os.path.join(here, "results"))
    p.add_argument("--experiments", default="a,b,b49")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps_a", type=int, default=400)
    # Defaults: the settings of bench/EXPERIMENTS.md, scaled to ~45 minutes on
    # a shared 2-core machine (the paper's b is 10,000 steps).
    p.add_argument("--steps_b", type=int, default=5000)
    p.add_argument("--seeds_b49", type=int, default=3)
    p.add_argument("--steps_b49", type=int, default=1000)
    p.add_argument("--eval_rows", type=int, default=10000,
                   help="rows of the training set scored for the training loss")
    p.add_argument("--nice", type=int, default=None,
                   help="niceness of the server and the CLI (default 10; 0 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="experiment b, 300 steps, 1 seed; fail unless every training loss fell")
    p.add_argument("--summarize_only", action="store_true",
                   help="rebuild the summaries and tables of --experiments from the CSVs in --out")
    args = p.parse_args()
    if args.summarize_only:
        for exp in args.experiments.split(","):
            resummarize(args.out, exp)
        write_tables(args.out)
        return 0
    build = os.path.abspath(args.build)
    if args.quick:
        args.experiments, args.seeds, args.steps_b = "b", 1, 300
    if args.nice is None:
        args.nice = 0 if args.quick else 10
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="f2obo_exp_")
    log = open(os.path.join(args.out, "commands.log"), "a")
    server = Server(build, work, args.nice)
    cli = Cli(build, server.target, log, args.nice)
    report = []
    ok = True
    try:
        for exp in args.experiments.split(","):
            t0 = time.time()
            if exp == "a":
                members, steps, seeds = EXP_A, args.steps_a, args.seeds
                train, test = TRAIN, TEST
                shared = ["--family=loss_tuning", "--dataset=" + TRAIN, "--x0=1*10,0*10",
                          "--alpha=0.01", "--beta=0.01", "--gamma=0.01", "--exact_every=20"]
                phase = max(1, steps // 4)
                stream = ["--data=" + TRAIN, "--rows_per_step=256",
                          "--imbalance=0.6,0.7,0.8,0.9", f"--phase_steps={phase}",
                          "--print_every=50"]
            else:
                members = EXP_B
                steps = args.steps_b
                seeds = args.seeds
                if exp == "b49":
                    steps = args.steps_b49
                    seeds = args.seeds_b49
                    train, test = pooled_dataset(work, 4)  # 28x28 -> 7x7
                else:
                    train, test = TRAIN, TEST
                q = steps // 4
                shared = ["--family=logistic_hpo", "--dataset=" + train, "--box=0,0.1",
                          "--alpha=0.01", "--beta=0.01", "--gamma=0.1", "--exact_every=0"]
                stream = ["--data=" + train, "--rows_per_step=512",
                          "--imbalance=", f"--label_noise={q + 1}:0.05,{2 * q + 1}:0.10,{3 * q + 1}:0.15",
                          "--print_every=500"]
            per_seed, refused_all = [], {}
            for seed in range(1, seeds + 1):
                res, refused, wall = run_group(cli, exp, seed, members, shared, steps, stream,
                                               args.out, train, test, args.eval_rows)
                refused_all.update(refused)
                per_seed.append((res, refused, wall))
                print(f"[{exp}] seed {seed}: {len(res)} algorithms, {wall:.0f} s", flush=True)
            walls = [w for _, _, w in per_seed]
            with open(os.path.join(args.out, f"{exp}_walls.txt"), "w") as fh:
                fh.write(" ".join(f"{w:.1f}" for w in walls) + "\n")
            rows = summarize(exp, per_seed, refused_all, args.out)
            report.append(markdown(exp, rows, refused_all, walls))
            with open(os.path.join(args.out, f"{exp}_table.md"), "w") as fh:
                fh.write(report[-1] + "\n")
            write_tables(args.out)
            print(f"[{exp}] done in {time.time() - t0:.0f} s", flush=True)
            if args.quick:
                for res, _, _ in per_seed:
                    for name, r in res.items():
                        first, last = first_last_loss(r["metrics"])
                        fell = last < first
                        ok &= fell
                        print(f"{name}: mean upper loss first 50 steps {first:.4f}, "
                              f"last 50 steps {last:.4f}: {'decreased' if fell else 'DID NOT DECREASE'}")
                    expected = [n for n in members if n not in refused_all]
                    if sorted(res) != sorted(expected) or len(res) < 3:
                        print(f"ran {sorted(res)}, expected {sorted(expected)}")
                        ok = False
        print("\n\n".join(report))
    finally:
        server.stop()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
