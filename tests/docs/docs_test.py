#!/usr/bin/python3
"""The user docs, run as written: README.md and docs/*.md.

1. Every fenced block marked runnable (a line `<!-- runnable -->` right
   before a ```sh or ```python fence) runs against the build: one real
   f2obo-server per page on free loopback ports (its data in a temporary
   directory), the page's blocks in order in one working directory that
   has `build` linked to the build tree, the documented addresses
   127.0.0.1:50051 and 127.0.0.1:9464 replaced by the server's.  Shell
   blocks run under `bash -e`, Python blocks under /usr/bin/python3 with the
   build's f2obo package.  A block must exit 0; the server must then stop
   gracefully (exit 0 on SIGTERM).
2. Every relative link in the repository's Markdown files resolves: the
   file or directory exists, and an #anchor into a Markdown file names one
   of its headings (GitHub's slugs).
3. The README holds the test command CI runs (.ci/run's last line).

The README's Python install and example are run by
tests/client/python/test_readme_quickstart.py (in a fresh virtual
environment), so they carry their own markers instead.
Usage: docs_test.py --source=DIR --build=DIR --python_dir=DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ADDRESS = "127.0.0.1:50051"
METRICS = "127.0.0.1:9464"
RUNNABLE = re.compile(r"^<!-- runnable -->\n```(sh|python)\n(.*?)^```", re.M | re.S)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$", re.M)
BLOCK_SECONDS = 90


def fail(message):
    sys.exit("docs_test: " + message)


def pages(source):
    docs = os.path.join(source, "docs")
    return [os.path.join(source, "README.md")] + sorted(
        os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))


def markdown_files(source):
    """Every Markdown file of the source tree but build and tool output."""
    out = []
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
        out += [os.path.join(root, f) for f in files if f.endswith(".md")]
    return sorted(out)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped (but
    '-' and '_'), spaces to '-'."""
    text = re.sub(r"`|\*\*|\*", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    seen, out = {}, set()
    for h in HEADING.findall(text):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def check_links(source):
    broken, count = [], 0
    for path in markdown_files(source):
        text = FENCE.sub("", open(path, encoding="utf-8").read())
        text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            count += 1
            file, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            rel = os.path.relpath(path, source)
            if not os.path.exists(where):
                broken.append("%s: %s (no such file)" % (rel, target))
            elif anchor and where.endswith(".md") and anchor not in anchors(where):
                broken.append("%s: %s (no heading with that anchor)" % (rel, target))
    if broken:
        fail("broken links:\n  " + "\n  ".join(broken))
    return count


class Server:
    def __init__(self, binary, data_dir):
        self.proc = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
             "--data_dir=" + data_dir], stdout=subprocess.PIPE,
            stderr=open(data_dir + ".err", "w"), text=True)
        self.err = data_dir + ".err"
        line = self.proc.stdout.readline()  # the banner, printed once serving
        m = re.search(r"listening on ([\d.]+:\d+), metrics on ([\d.]+:\d+)/", line)
        if not m:
            self.proc.kill()
            fail("no banner from the server: %r\n%s" % (line, open(self.err).read()))
        self.address, self.metrics = m.group(1), m.group(2)

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=60)
        if code != 0:
            fail("the server exited %d on SIGTERM:\n%s" % (code, open(self.err).read()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_page(page, blocks, a, work):
    os.makedirs(work)
    os.symlink(os.path.abspath(a.build), os.path.join(work, "build"))
    server = Server(os.path.join(a.build, "server", "f2obo-server"), os.path.join(work, "data"))
    env = dict(os.environ, PYTHONPATH=a.python_dir, PYTHONDONTWRITEBYTECODE="1")
    try:
        for i, (language, code) in enumerate(blocks):
            code = code.replace(ADDRESS, server.address).replace(METRICS, server.metrics)
            args = ["bash", "-e", "-c", code] if language == "sh" else \
                ["/usr/bin/python3", "-c", code]
            started = time.monotonic()
            r = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True,
                               timeout=BLOCK_SECONDS)
            seconds = time.monotonic() - started
            print("%s block %d (%s): exit %d in %.1f s" % (page, i + 1, language, r.returncode,
                                                           seconds))
            if r.returncode != 0:
                fail("%s: runnable block %d failed (exit %d):\n%s\n--- stdout\n%s--- stderr\n%s"
                     % (page, i + 1, r.returncode, code, r.stdout, r.stderr))
        server.stop()
    finally:
        server.kill()


def main():
    p = argparse.ArgumentParser()
    for flag in ("source", "build", "python_dir"):
        p.add_argument("--" + flag, required=True)
    a = p.parse_args()

    ci = [l for l in open(os.path.join(a.source, ".ci", "run")).read().splitlines()
          if l.strip() and not l.startswith("#")]
    readme = open(os.path.join(a.source, "README.md")).read()
    if ci[-1].strip() not in readme:
        fail("README.md does not hold CI's test command %r" % ci[-1].strip())

    links = check_links(a.source)
    print("%d relative links resolve" % links)

    work = tempfile.mkdtemp(prefix="f2obo-docs-")
    total = 0
    try:
        for path in pages(a.source):
            blocks = RUNNABLE.findall(open(path, encoding="utf-8").read())
            if not blocks:
                continue
            total += len(blocks)
            page = os.path.relpath(path, a.source)
            run_page(page, blocks, a, os.path.join(work, page.replace("/", "_")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if total == 0:
        fail("no runnable block in README.md or docs/*.md")
    print("%d runnable blocks ran" % total)


if __name__ == "__main__":
    main()
