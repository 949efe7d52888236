#!/usr/bin/env python3
"""Online hyperparameter tuning of a PyTorch model with an f2obo session.

A linear softmax classifier (torch.nn.Linear) is trained step by step on a
stream, while an f2obo session fed with the same stream tunes the
hyperparameters of its training loss online (the paper's Sec. 6 settings):

  --task=loss_tuning   (default) the logit adjustment (gamma_j, Delta_j) of
                       each class: training minimizes the cross-entropy of
                       gamma_j s_j + Delta_j (s the model's logits) on a
                       class-imbalanced stream (class i kept w.p. rho^i),
                       tuned for a class-balanced validation loss;
  --task=logistic_hpo  one L2 coefficient per input feature in [0, --box_hi],
                       with noisy training labels and pure-noise features.

Each step t the stream gives an upper batch (validation rows, clean labels)
and an inner batch (training rows); the session's step returns x_{t+1};
the torch model takes one SGD step on the inner batch with the current
decision x_t.  A twin model with the same initialization, the same batches
and the same optimizer trains with the untuned start x_1 throughout, so
the two differ only in their hyperparameters.  At the end both are scored
on held-out rows; the script prints the tuned decision and the comparison,
and plots the prequential accuracy (each upper batch scored before anyone
learns from it) and the session's BLReg (cumulative local regret).

Data: scikit-learn's digits (default, bundled) or Fashion-MNIST from the
Debian package dataset-fashion-mnist.  With a server running:

    ./build/server/f2obo-server --listen=127.0.0.1:50051 &
    ~/.venvs/f2obo/bin/python examples/python/online_hpo_torch.py --server=127.0.0.1:50051

--quick (250 steps, < 60 s) is what ctest runs: it exits 1 unless tuning
lowered the held-out cross-entropy below the untuned start's.  What we saw
(digits, seeds 1-4): loss_tuning with sf2obo lowers the held-out
cross-entropy by 7-12% and raises the balanced accuracy; logistic_hpo with
the first-order algorithms raises the penalties of the real features too
(their exact metrics show a hypergradient error several times the true
hypergradient's norm on these small batches), which hurts the SGD-trained
model, while aobo keeps x near 0: it is there to experiment with.
"""
import argparse
import ast
import collections
import copy
import gzip
import os
import sys
import time

import numpy as np
import torch

import f2obo

FASHION = "/usr/share/datasets/fashion-mnist"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="127.0.0.1:50051")
    ap.add_argument("--token", default=None, help="bearer token (server --token_file)")
    ap.add_argument("--task", choices=["loss_tuning", "logistic_hpo"], default="loss_tuning")
    ap.add_argument("--data", choices=["digits", "fashion-mnist"], default="digits")
    ap.add_argument("--algorithm", default="sf2obo", help="any of the server's algorithms")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--rows_per_step", type=int, default=256,
                    help="rows per step, split into upper (validation) and inner (training)")
    ap.add_argument("--upper_fraction", type=float, default=0.25)
    ap.add_argument("--label_noise", type=float, default=None,
                    help="share of training labels replaced by a random class "
                         "(default 0.4 for logistic_hpo, 0 for loss_tuning)")
    ap.add_argument("--noise_features", type=int, default=None,
                    help="pure-noise features appended (default: as many as real ones for "
                         "logistic_hpo, none for loss_tuning)")
    ap.add_argument("--imbalance", default=None,
                    help="class-imbalance phases rho,... (class i kept w.p. rho^i; default 0.7 "
                         "for loss_tuning)")
    ap.add_argument("--phase_steps", type=int, default=None)
    ap.add_argument("--pool_rows", type=int, default=1000,
                    help="rows the stream draws from (the rest is held out)")
    ap.add_argument("--box_hi", type=float, default=0.1, help="logistic_hpo: X = [0, box_hi]^d")
    ap.add_argument("--gamma", type=float, default=None, help="f2obo's upper step size")
    ap.add_argument("--lr", type=float, default=0.5, help="the torch model's SGD step size")
    ap.add_argument("--exact_every", type=int, default=5)
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="any other session option by its proto field name, e.g. "
                         "--option=lambda_max=50 --option=inner_steps=3 (repeatable)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plot", default="online_hpo_torch.png", help="'' for no plot")
    ap.add_argument("--quick", action="store_true",
                    help="a short run (ctest) that fails unless tuning helped")
    a = ap.parse_args(argv)
    hpo = a.task == "logistic_hpo"
    if a.label_noise is None:
        a.label_noise = 0.4 if hpo else 0.0
    if a.imbalance is None:
        a.imbalance = "" if hpo else "0.7"
    if a.gamma is None:
        a.gamma = 0.5 if hpo else 0.02
    if a.quick:
        a.steps = min(a.steps, 250)
    if a.phase_steps is None:
        a.phase_steps = max(1, a.steps // 3)
    return a


# ------------------------------------------------------------------ data

def read_idx(images, labels):
    with gzip.open(images) as f:
        raw = f.read()
    n, h, w = (int.from_bytes(raw[k:k + 4], "big") for k in (4, 8, 12))
    X = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, h * w) / 255.0
    with gzip.open(labels) as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    return X, y


def load(args, rng):
    """(X_pool, y_pool), (X_test, y_test): the stream's rows and held-out rows."""
    if args.data == "digits":
        from sklearn.datasets import load_digits
        digits = load_digits()
        X, y = digits.data / 16.0, digits.target.astype(np.int64)
        order = rng.permutation(len(y))
        pool, test = order[:args.pool_rows], order[args.pool_rows:]
        (Xp, yp), (Xt, yt) = (X[pool], y[pool]), (X[test], y[test])
    else:
        Xp, yp = read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz"),
                          os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
        Xt, yt = read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"),
                          os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"))
        pick = rng.permutation(len(yp))[:args.pool_rows]
        Xp, yp = Xp[pick], yp[pick]
    extra = args.noise_features
    if extra is None:
        extra = Xp.shape[1] if args.task == "logistic_hpo" else 0
    if extra:  # features that carry no signal, on the scale of the real ones
        Xp = np.hstack([Xp, rng.random((len(yp), extra)) * Xp.max()])
        Xt = np.hstack([Xt, rng.random((len(yt), extra)) * Xp.max()])
    return (Xp, yp), (Xt, yt), extra


# ------------------------------------------------------------ the model

class Task:
    """The training loss of the torch model for a decision x, matching the
    f2obo family's inner objective g (core/bilevel/families/<task>.h)."""

    def __init__(self, name, classes, mu0):
        self.name, self.classes, self.mu0 = name, classes, mu0

    def loss(self, model, X, y, x):
        logits = model(X)
        w, b = model.weight, model.bias  # w: C x d, so feature i's weights are w[:, i]
        ridge = 0.5 * self.mu0 * ((w ** 2).sum() + (b ** 2).sum())
        if self.name == "logistic_hpo":
            penalty = 0.5 * (x * (w ** 2).sum(dim=0)).sum()
            return torch.nn.functional.cross_entropy(logits, y) + ridge + penalty
        gamma, delta = x[:self.classes], x[self.classes:]
        return torch.nn.functional.cross_entropy(gamma * logits + delta, y) + ridge


def scores(model, X, y, classes):
    """Cross-entropy of the plain logits, accuracy, balanced accuracy."""
    with torch.no_grad():
        logits = model(X)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        pred = logits.argmax(dim=1)
    acc = (pred == y).double().mean().item()
    recalls = [(pred[y == c] == c).double().mean().item() for c in range(classes)
               if (y == c).any()]
    return loss, acc, float(np.mean(recalls))


def tensors(batch):
    X, y = batch
    return torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(y, dtype=torch.int64)


# ------------------------------------------------------------------ run

def run(args):
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    (Xp, yp), (Xt, yt), extra = load(args, rng)
    d, C = Xp.shape[1], int(yp.max()) + 1
    imbalance = [float(v) for v in args.imbalance.split(",") if v]
    stream = f2obo.DriftingStream(Xp, yp, rows_per_step=args.rows_per_step,
                                  upper_fraction=args.upper_fraction, imbalance=imbalance,
                                  phase_steps=args.phase_steps,
                                  label_noise={1: args.label_noise} if args.label_noise else None,
                                  seed=args.seed)
    client = f2obo.Client(args.server, token=args.token)
    # Step sizes: automatic, the server's default (alpha = beta = 0); an
    # option the algorithm does not read would be refused (e.g. beta_auto
    # for a baseline), so only gamma, which every bilevel algorithm reads.
    options = dict(family=args.task, features=d, classes=C, algorithm=args.algorithm,
                   gamma=args.gamma, exact_every=args.exact_every, seed=args.seed)
    for item in args.option:
        name, _, value = item.partition("=")
        try:
            options[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[name] = value  # a string option, e.g. beta_scaling=fixed
    if args.task == "logistic_hpo":
        options.update(box=(0.0, args.box_hi))            # x_1 = 0: no penalty
    else:
        options.update(x0=[1.0] * C + [0.0] * C)          # x_1: the plain cross-entropy
    session = client.create_session(**options)
    info = session.info()
    x_start = session.decision().x
    task = Task(args.task, C, info.spec.family.mu0)
    print("session %s: %s on %s, d = %d features (%d noise), C = %d, x_dim = %d, %s"
          % (session.id, args.algorithm, args.data, d, extra, C, info.x_dim, args.task))

    base = torch.nn.Linear(d, C).double()
    models = {"tuned": base, "untuned": copy.deepcopy(base)}
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=args.lr) for k, m in models.items()}
    x_fixed = torch.as_tensor(x_start)
    x_now = x_fixed.clone()

    sent = collections.deque()

    def steps():
        for t in range(1, args.steps + 1):
            upper, inner = stream[t]
            sent.append((t, upper, inner))
            yield upper, inner

    log = collections.defaultdict(list)
    start = time.monotonic()
    for result in session.stream(steps()):
        t, upper, inner = sent.popleft()
        assert t == result.t
        Xu, yu = tensors(upper)
        for name, model in models.items():  # prequential: score before learning
            log["preq_" + name].append(scores(model, Xu, yu, C)[1])
        log["preq_f2obo"].append(result.accuracy_before)
        Xi, yi = tensors(inner)
        for name, model in models.items():
            optimizers[name].zero_grad()
            task.loss(model, Xi, yi, x_now if name == "tuned" else x_fixed).backward()
            optimizers[name].step()
        x_now = torch.as_tensor(result.x)  # the decision for the next step
        if result.latest_exact is not None:
            log["blreg"].append((result.latest_exact.t, result.latest_exact.running.blreg))
        if t % max(1, args.steps // 10) == 0:
            print("step %4d  preq.acc tuned %.3f untuned %.3f (last 20)  lambda %.1f  %s"
                  % (t, np.mean(log["preq_tuned"][-20:]), np.mean(log["preq_untuned"][-20:]),
                     result.lambda_, "BLReg %.4g" % log["blreg"][-1][1] if log["blreg"] else ""))
    seconds = time.monotonic() - start
    # The exact metrics of the last steps are computed off the request path.
    last = log["blreg"][-1][0] if log["blreg"] else 0
    if args.exact_every and last < args.steps:
        for m in session.metrics(after_t=last, until_t=args.steps, timeout=120):
            if m.exact is not None:
                log["blreg"].append((m.t, m.exact.running.blreg))

    x_final = session.decision().x
    Xt_, yt_ = tensors((Xt, yt))
    held_out = {name: scores(m, Xt_, yt_, C) for name, m in models.items()}
    report(args, x_start, x_final, d, extra, C, held_out, seconds)
    if args.plot:
        plot(args, log, held_out)
    session.delete()
    client.close()
    return held_out


def report(args, x_start, x_final, d, extra, C, held_out, seconds):
    print("\n%d steps in %.1f s (%.0f steps/s)" % (args.steps, seconds, args.steps / seconds))
    if args.task == "logistic_hpo":
        real, noise = x_final[:d - extra], x_final[d - extra:]
        print("tuned L2 coefficients x (box [0, %g]): mean %.4f on the %d real features, "
              "%.4f on the %d noise features" % (args.box_hi, real.mean(), len(real),
                                                 noise.mean() if extra else float("nan"), extra))
        print("  at the upper bound: %d real, %d noise features"
              % ((real >= 0.99 * args.box_hi).sum(), (noise >= 0.99 * args.box_hi).sum()))
    else:
        print("tuned logit adjustment per class (gamma_j, Delta_j):")
        for j in range(C):
            print("  class %d: gamma %.3f  Delta %+.3f" % (j, x_final[j], x_final[C + j]))
    print("\nheld-out (%s)      cross-entropy  accuracy  balanced acc." % args.data)
    for name in ("untuned", "tuned"):
        loss, acc, bal = held_out[name]
        print("  %-8s (x %s)  %12.4f  %8.4f  %12.4f"
              % (name, "fixed at x_1" if name == "untuned" else "from f2obo ", loss, acc, bal))
    change = held_out["tuned"][0] - held_out["untuned"][0]
    print("  tuning changed the held-out cross-entropy by %+.4f (%+.1f%%)"
          % (change, 100 * change / held_out["untuned"][0]))


def plot(args, log, held_out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def smooth(v, k=20):
        v = np.asarray(v, dtype=float)
        return np.convolve(v, np.ones(k) / k, mode="valid") if len(v) >= k else v
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, style in (("preq_tuned", "-"), ("preq_untuned", "--"), ("preq_f2obo", ":")):
        label = {"preq_tuned": "torch model, x from f2obo", "preq_untuned":
                 "torch model, x fixed at x_1", "preq_f2obo": "f2obo's inner model"}[name]
        ax1.plot(np.arange(len(smooth(log[name]))) + 1, smooth(log[name]), style, label=label)
    ax1.set_xlabel("step t")
    ax1.set_ylabel("prequential accuracy (mean of 20 steps)")
    ax1.set_title("%s on %s" % (args.task, args.data))
    ax1.legend()
    if log["blreg"]:
        t, blreg = zip(*log["blreg"])
        ax2.plot(t, blreg)
    ax2.set_xlabel("step t")
    ax2.set_ylabel("BLReg (cumulative local regret)")
    ax2.set_title("session: %s, exact metrics every %d steps" % (args.algorithm, args.exact_every))
    fig.tight_layout()
    fig.savefig(args.plot, dpi=100)
    print("plot: %s" % args.plot)


def main(argv=None):
    args = parse_args(argv)
    held_out = run(args)
    if args.quick and not held_out["tuned"][0] < held_out["untuned"][0]:
        print("FAIL: tuning did not lower the held-out loss")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
