#!/usr/bin/python3
"""Every round beside its roof, and beside PyTorch, in one command.

  /usr/bin/python3 bench/round_roofline_table.py [build_dir]

runs, in this order and in one process tree:
  round_benchmark:        BM_Shape/{small,medium}_fixed (F2OBO rounds, K = 5),
                          BM_GemmRoof/{small,medium} (the 38 dense products of
                          such a round as Eigen GEMMs), BM_Round/f2obo_csr100k
                          and BM_SpmmRoof (its 38 sparse-times-dense products);
  simple_step_benchmark:  GradientPass/csr100k, SimpleStep/ir_scg/csr100k,
                          CutProjection/l1/d100000 (AGM-BiO's projection);
  small shapes of the other classes: round_benchmark's
                          BM_Multitask/* (mt_f2obo, 4 tasks a step) with
                          BM_MultitaskQuadraticRoof, simple_step_benchmark's
                          SimpleStep/*/small with GradientPass/small and
                          GemvRoof/small;
  PyTorch:                bench/torch_round.py's hand-written and autograd
                          rounds at the small and medium shapes;
and prints the rows with the ratios taken within this run.

All times are CPU time (Google Benchmark's cpu_time, medians of 3
repetitions; time.process_time for PyTorch, one thread), so that the other
engineers' builds on the shared machine inflate neither side.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_round  # noqa: E402  (sets torch to one thread, float64)


def gbench(binary, pattern, min_time="0.5"):
    out = subprocess.run(
        [binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
         f"--benchmark_min_time={min_time}", "--benchmark_repetitions=3",
         "--benchmark_report_aggregates_only=true"],
        check=True, capture_output=True, text=True).stdout
    unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            times[b["run_name"]] = b["cpu_time"] * unit[b["time_unit"]]  # microseconds
    return times


def torch_cpu_us(fn, d, c, rows, seconds=2.0, repeats=3):
    ring = torch_round.make_ring(d, c, rows, seed=d + rows)
    runs = []
    for _ in range(repeats):
        s = torch_round.State(d, c)
        for step in ring:  # warm-up
            fn(s, step)
        n, start = 0, time.process_time()
        while time.process_time() - start < seconds / repeats:
            fn(s, ring[n % len(ring)])
            n += 1
        runs.append((time.process_time() - start) / n)
    runs.sort()
    return 1e6 * runs[len(runs) // 2]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    r = gbench(f"{build}/bench/round_benchmark",
               "BM_Shape/(small|medium)_fixed$|BM_GemmRoof/(small|medium)$|"
               "BM_Round/f2obo_csr100k$|BM_SpmmRoof|BM_Multitask")
    s = gbench(f"{build}/bench/simple_step_benchmark",
               "GradientPass/csr100k$|SimpleStep/ir_scg/csr100k$|CutProjection/l1/d100000$|"
               "/small$",
               min_time="0.3")
    t = {}
    for name, (d, c, rows) in torch_round.SHAPES.items():
        t[name] = (torch_cpu_us(torch_round.round_hand, d, c, rows),
                   torch_cpu_us(torch_round.round_autograd, d, c, rows))
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.2f}, torch {torch_round.torch.__version__}; CPU time, us")
    rows = []
    for name in ("small", "medium"):
        ours = r[f"BM_Shape/{name}_fixed"]
        roof = r[f"BM_GemmRoof/{name}"]
        hand, auto = t[name]
        rows.append((f"{name} round vs PyTorch hand / autograd",
                     f"{ours:.1f} vs {hand:.0f} / {auto:.0f}",
                     f"{hand / ours:.0f}x / {auto / ours:.0f}x"))
        rows.append((f"{name} round vs its GEMM roof", f"{ours:.1f} vs {roof:.1f}",
                     f"{100 * roof / ours:.0f}%"))
    csr, spmm = r["BM_Round/f2obo_csr100k"], r["BM_SpmmRoof"]
    rows.append(("CSR d = 100,000 round vs its SpMM roof", f"{csr:.0f} vs {spmm:.0f}",
                 f"{100 * spmm / csr:.0f}%"))
    scg, grad = s["SimpleStep/ir_scg/csr100k"], s["GradientPass/csr100k"]
    rows.append(("IR-SCG step, CSR d = 100,000 vs one gradient pass", f"{scg:.0f} vs {grad:.0f}",
                 f"{scg / grad:.1f}x"))
    cut = s["CutProjection/l1/d100000"]
    rows.append(("AGM-BiO's l1-ball-and-halfspace projection, d = 100,000", f"{cut:.0f}",
                 f"{cut / 1000:.2f} ms"))
    # Item 3: the other classes' small shapes.
    tasks = 4
    mt, mtt = r["BM_Multitask/logistic_small"], r["BM_Multitask/logistic_small_tempered"]
    roof4 = tasks * r["BM_GemmRoof/small"]
    hand4 = tasks * t["small"][0]
    rows.append(("multi-task logistic small (4 tasks) vs 4 x GEMM roof",
                 f"{mt:.1f} vs {roof4:.1f}", f"{100 * roof4 / mt:.0f}%"))
    rows.append(("multi-task logistic small vs 4 x PyTorch hand round", f"{mt:.1f} vs {hand4:.0f}",
                 f"{hand4 / mt:.0f}x"))
    rows.append(("multi-task logistic small, tempered tasks vs untempered", f"{mtt:.1f} vs {mt:.1f}",
                 f"{mtt / mt:.2f}x"))
    mq, mqr = r["BM_Multitask/quadratic_small"], r["BM_MultitaskQuadraticRoof"]
    rows.append(("multi-task quadratic small (4 tasks) vs its GEMV roof", f"{mq:.1f} vs {mqr:.2f}",
                 f"{100 * mqr / mq:.0f}%"))
    gp, gemv = s["GradientPass/small"], s["GemvRoof/small"]
    rows.append(("simple small: one gradient pass (family) vs its GEMV roof",
                 f"{gp:.2f} vs {gemv:.2f}", f"{100 * gemv / gp:.0f}%"))
    for name in sorted(k for k in s if k.startswith("SimpleStep/") and k.endswith("/small")):
        step = s[name]
        rows.append((f"simple small: {name.split('/')[1]} step vs one gradient pass",
                     f"{step:.2f} vs {gp:.2f}", f"{step / gp:.1f}x"))
    width = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"{a:<{width}}  {b:>22}  {c:>12}")


if __name__ == "__main__":
    main()
