"""The Python examples run against a real server: the quadratic walkthrough,
and the online-HPO PyTorch example in its quick mode, which must lower the
held-out loss by tuning (it exits 1 otherwise) and draw its plot."""
import os
import re
import subprocess
import sys


def run_example(source_dir, name, *args, timeout=120):
    path = os.path.join(source_dir, "examples", "python", name)
    r = subprocess.run([sys.executable, path] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_quadratic_example(server, source_dir):
    out = run_example(source_dir, "f2obo_quadratic.py", "--server=" + server.address)
    assert "skipped index refused" in out


def test_online_hpo_torch_quick_improves_held_out_loss(server, source_dir, tmp_path):
    plot = tmp_path / "online_hpo.png"
    out = run_example(source_dir, "online_hpo_torch.py", "--quick",
                      "--server=" + server.address, "--plot=%s" % plot, timeout=120)
    held_out = dict(re.findall(r"^\s+(untuned|tuned)\s+\(x [^)]*\)\s+(\S+)", out, re.M))
    assert float(held_out["tuned"]) < float(held_out["untuned"]), out
    assert "tuned logit adjustment per class" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
