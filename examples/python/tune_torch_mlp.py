#!/usr/bin/python3
"""Tune a PyTorch MLP's hyperparameters online with f2obo.torch.

The network (an MLP 64-64-10 on scikit-learn's digits, or 784-64-10 on
Fashion-MNIST; with --model=cnn a small CNN, 3x3 convolution with 8
channels, ReLU, 2x2 max-pooling, a linear layer) is the session's y; its
hyperparameters are the session's x:
  * one weight decay per layer (box [0, 0.01]),
  * one loss weight per class (box [0.5, 2]).
The training stream drifts in class imbalance: in the first half class i
is kept with probability rho^i, in the second with rho^(C-1-i) (the rare
classes become the frequent ones); the validation batches (f) and the
held-out rows are class-balanced.  So the weights that help change
mid-stream, which an online tuner can follow.

    g(model, hp, (X, y)) = mean_i cw[y_i] CE(model(X_i), y_i)
                           + 1/2 sum_l wd_l ||W_l||^2 + 1/2 mu0 ||params||^2
    f(model, hp, (X, y)) = mean_i CE(model(X_i), y_i)

The untuned start is the same session with its hyperparameters frozen at
their start (a box lo = hi = x_1): the same algorithm, batches, steps and
initial network, differing only in the hyperparameters.  Both are scored
on the held-out rows at the end.

One command (starts a server on a free loopback port, or use --server):

    /usr/bin/python3 examples/python/tune_torch_mlp.py --server_binary=build/server/f2obo-server

No step size is given by default (--alpha, --beta, --gamma = 0: automatic):
alpha, beta (the inner loops', from gradient differences,
core/bilevel/hypergradients/secant_steps.h) and gamma (the upper step's,
coin betting); bench/torch_tuner_defaults.py runs it so on the MLP and
the CNN, 3 seeds each, and the tuned network beats its frozen start in
every one (bench/RESULTS.md, "The torch Tuner with no step size").
Explicit values (e.g. --alpha=0.5 --beta=0.5 --gamma=0.0005, this
example's defaults before the steps were automatic) are used as given.

--quick (ctest) runs fewer steps and exits 1 unless the tuned network's
held-out cross-entropy is below the untuned one's.

What we saw with the automatic steps (digits, 400 steps, seeds 1-3, MLP):
held-out cross-entropy frozen start 0.448 / 0.435 / 0.574, tuned 0.221 /
0.165 / 0.257; balanced accuracy 0.863 / 0.855 / 0.805 frozen, 0.925 /
0.943 / 0.901 tuned.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import f2obo
import f2obo.torch

FASHION = "/usr/share/datasets/fashion-mnist"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=None, help="a running server; else one is started")
    ap.add_argument("--server_binary", default="build/server/f2obo-server")
    ap.add_argument("--data", choices=["digits", "fashion-mnist"], default="digits")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rows", type=int, default=64, help="rows per batch (train and validation)")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--rho", type=float, default=0.6, help="class i kept w.p. rho^i")
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--algorithm", default="f2obo")
    ap.add_argument("--alpha", type=float, default=0.0, help="0: automatic")
    ap.add_argument("--beta", type=float, default=0.0, help="0: automatic")
    ap.add_argument("--gamma", type=float, default=0.0, help="0: automatic")
    ap.add_argument("--inner_steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="short run; exit 1 unless tuning helped")
    a = ap.parse_args(argv)
    if a.quick:
        a.steps = min(a.steps, 200)
    return a


# ------------------------------------------------------------------ data

def load(name, rng):
    if name == "digits":
        from sklearn.datasets import load_digits
        d = load_digits()
        X, y = d.data / 16.0, d.target.astype(np.int64)
    else:
        def idx(images, labels):
            with gzip.open(os.path.join(FASHION, images)) as f:
                raw = f.read()
            X = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 784) / 255.0
            with gzip.open(os.path.join(FASHION, labels)) as f:
                y = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
            return X, y
        X, y = idx("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
        pick = rng.permutation(len(y))[:6000]
        X, y = X[pick], y[pick]
    order = rng.permutation(len(y))
    n = len(y)
    train, val, test = order[:n // 2], order[n // 2:3 * n // 4], order[3 * n // 4:]
    return (X[train], y[train]), (X[val], y[val]), (X[test], y[test])


class Stream:
    """Step t: a class-balanced validation batch and a training batch whose
    class i has weight rho^i (first half) or rho^(C-1-i) (second half)."""

    def __init__(self, train, val, rows, rho, steps, seed):
        self.train, self.val, self.rows, self.steps = train, val, rows, steps
        C = int(train[1].max()) + 1
        self.p = []
        for phase in range(2):
            w = rho ** np.arange(C) if phase == 0 else rho ** np.arange(C)[::-1]
            p = w[train[1]]
            self.p.append(p / p.sum())
        self.seed = seed

    def __getitem__(self, t):
        rng = np.random.default_rng((self.seed, t))
        phase = 0 if t <= self.steps // 2 else 1
        i = rng.choice(len(self.train[1]), self.rows, p=self.p[phase])
        j = rng.choice(len(self.val[1]), self.rows)
        return tensors(self.val, j), tensors(self.train, i)


def tensors(data, rows=None):
    X, y = data if rows is None else (data[0][rows], data[1][rows])
    return torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(y)


# ------------------------------------------------------------ the model

def mlp(d, hidden, classes, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, hidden), torch.nn.Tanh(),
                               torch.nn.Linear(hidden, classes)).double()


class SmallCNN(torch.nn.Module):
    """conv 3x3 (8 channels) - ReLU - max-pool 2x2 - linear, on side x side images."""

    def __init__(self, side, classes, channels=8):
        super().__init__()
        self.side = side
        self.conv = torch.nn.Conv2d(1, channels, 3, padding=1)
        self.fc = torch.nn.Linear(channels * (side // 2) ** 2, classes)

    def forward(self, X):
        h = torch.relu(self.conv(X.reshape(-1, 1, self.side, self.side)))
        return self.fc(torch.nn.functional.max_pool2d(h, 2).flatten(1))


def network(kind, d, hidden, classes, seed):
    if kind == "mlp":
        return mlp(d, hidden, classes, seed)
    torch.manual_seed(seed)
    return SmallCNN(int(round(d ** 0.5)), classes).double()


MU0 = 1e-4


def train_loss(model, hp, batch):
    X, y = batch
    ce = torch.nn.functional.cross_entropy(model(X), y, reduction="none")
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    decay = sum(hp["weight_decay"][l] * (w * w).sum() for l, w in enumerate(weights))
    ridge = sum((p * p).sum() for p in model.parameters())
    return (hp["class_weight"][y] * ce).mean() + 0.5 * decay + 0.5 * MU0 * ridge


def val_loss(model, hp, batch):
    X, y = batch
    return torch.nn.functional.cross_entropy(model(X), y)


def scores(model, data):
    X, y = tensors(data)
    with torch.no_grad():
        logits = model(X)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        pred = logits.argmax(dim=1)
    acc = (pred == y).double().mean().item()
    recalls = [(pred[y == c] == c).double().mean().item() for c in range(logits.shape[1])]
    return loss, acc, float(np.mean(recalls))


# ------------------------------------------------------------------ run

def start_server(binary):
    """A server on a free loopback port (it prints the port it got) with a
    temporary data directory."""
    data = tempfile.mkdtemp(prefix="f2obo-example-")
    proc = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                             "--data_dir=" + data, "--durability=none"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"listening on [^ ]+:(\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("%s did not start" % binary)
    return proc, data, f2obo.Client("127.0.0.1:" + m.group(1))


def compare(args, client):
    """Runs the tuned session and its frozen twin on one stream; returns
    {"init"|"untuned"|"tuned": (cross-entropy, accuracy, balanced accuracy)}
    on the held-out rows, the tuned hyperparameters and the seconds taken."""
    rng = np.random.default_rng(args.seed)
    train, val, test = load(args.data, rng)
    d, C = train[0].shape[1], int(train[1].max()) + 1
    stream = Stream(train, val, args.rows, args.rho, args.steps, args.seed)
    hp0 = {"weight_decay": torch.full((2,), 5e-3, dtype=torch.float64),
           "class_weight": torch.ones(C, dtype=torch.float64)}
    common = dict(algorithm=args.algorithm, seed=args.seed)
    common.update({k: v for k, v in (("alpha", args.alpha), ("beta", args.beta),
                                     ("gamma", args.gamma)) if v > 0.0})
    if args.algorithm != "af2obo":  # it runs its loops to tolerances: no K to set
        common["inner_steps"] = args.inner_steps
    tuned = f2obo.torch.Tuner(
        client, network(args.model, d, args.hidden, C, args.seed),
        {"weight_decay": f2obo.torch.Hyperparameter(hp0["weight_decay"], box=(0.0, 0.01)),
         "class_weight": f2obo.torch.Hyperparameter(hp0["class_weight"], box=(0.5, 2.0))},
        train_loss, val_loss, sync_every=0, **common)
    frozen = f2obo.torch.Tuner(
        client, network(args.model, d, args.hidden, C, args.seed),
        {k: f2obo.torch.Hyperparameter(v, box=(v, v)) for k, v in hp0.items()},
        train_loss, val_loss, sync_every=0, **common)
    start = scores(tuned.model, test)
    began = time.time()
    for t in range(1, args.steps + 1):
        upper, inner = stream[t]
        tuned.step(upper, inner)
        frozen.step(upper, inner)
    seconds = time.time() - began
    tuned.sync()
    frozen.sync()
    hp = {k: v.numpy().copy() for k, v in tuned.hparams.items()}
    scored = {"init": start, "untuned": scores(frozen.model, test),
              "tuned": scores(tuned.model, test)}
    session_id = tuned.session.id
    tuned.close()
    frozen.close()
    return dict(scores=scored, hparams=hp, seconds=seconds, session=session_id,
                test_rows=len(test[1]))


def run(args):
    proc = data_dir = None
    if args.server:
        client = f2obo.Client(args.server)
    else:
        proc, data_dir, client = start_server(args.server_binary)
    try:
        out = compare(args, client)
    finally:
        client.close()
        if proc is not None:
            proc.terminate()
            proc.wait()
            shutil.rmtree(data_dir, ignore_errors=True)
    hp, rows = out["hparams"], out["scores"]
    print("tuned weight decay per layer:", np.round(hp["weight_decay"], 5))
    print("tuned class weights:         ", np.round(hp["class_weight"], 3))
    print("%d steps of %s (K = %d, %s) for both sessions in %.1f s; session %s"
          % (args.steps, args.algorithm, args.inner_steps, args.model, out["seconds"],
             out["session"]))
    print("held-out rows: %d (class-balanced)" % out["test_rows"])
    print("%-10s %12s %10s %18s" % ("", "cross-ent.", "accuracy", "balanced accuracy"))
    for name in ("init", "untuned", "tuned"):
        loss, acc, bal = rows[name]
        print("%-10s %12.4f %10.4f %18.4f" % (name, loss, acc, bal))
    better = rows["tuned"][0] < rows["untuned"][0]
    print("tuned beats untuned on held-out cross-entropy:", "yes" if better else "NO")
    return 0 if better or not args.quick else 1


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(run(parse_args()))
