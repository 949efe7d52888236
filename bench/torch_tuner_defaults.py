#!/usr/bin/python3
"""The torch Tuner with no step size given, on two architectures.

For an MLP (64-64-10, tanh) and a small CNN (3x3 conv with 8 channels,
ReLU, 2x2 max-pool, linear) on scikit-learn's digits under the
class-imbalance drift of examples/python/tune_torch_mlp.py (its stream,
losses and frozen twin: the same session with the hyperparameters held at
their start), each seed runs f2obo.torch.Tuner with every step size
automatic (no alpha, beta or gamma given) and reports held-out
cross-entropy and balanced accuracy of the tuned network and of its frozen
twin.  Prints the bench/RESULTS.md table.

    /usr/bin/python3 bench/torch_tuner_defaults.py --server_binary=build/server/f2obo-server
"""
import argparse
import os
import platform
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "python"))
import tune_torch_mlp as example  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server_binary", default="build/server/f2obo-server")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--models", default="mlp,cnn")
    a = ap.parse_args()
    torch.set_num_threads(1)
    proc, data_dir, client = example.start_server(a.server_binary)
    rows, wins = [], {}
    try:
        for model in a.models.split(","):
            for seed in [int(s) for s in a.seeds.split(",")]:
                args = example.parse_args(["--model", model, "--seed", str(seed),
                                           "--steps", str(a.steps), "--alpha=0", "--beta=0",
                                           "--gamma=0"])
                out = example.compare(args, client)
                s = out["scores"]
                win = s["tuned"][0] < s["untuned"][0]
                wins.setdefault(model, []).append(win)
                rows.append("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.0f |" % (
                    model, seed, s["init"][0], s["untuned"][0], s["tuned"][0],
                    s["untuned"][2], s["tuned"][2], "yes" if win else "**no**",
                    out["seconds"]))
                print(rows[-1], flush=True)
    finally:
        client.close()
        proc.terminate()
        proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
    print()
    print("| model | seed | CE init | CE frozen start | CE tuned | bal. acc. frozen "
          "| bal. acc. tuned | tuned beats frozen | s (both) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("%s, %d steps, %s, %s" % (time.strftime("%Y-%m-%d"), a.steps, platform.machine(),
                                    ", ".join("%s %d/%d" % (m, sum(w), len(w))
                                              for m, w in wins.items())))
    return 0 if all(all(w) for w in wins.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
