#!/usr/bin/python3
"""Compiles server/ with clang's thread-safety analysis as errors.

Every server/ translation unit of the build (from its compile_commands.json)
is parsed by clang++-14 -fsyntax-only -Wthread-safety -Werror: a member
declared ABSL_GUARDED_BY(mu) read or written without mu held, a function
marked ABSL_EXCLUSIVE_LOCKS_REQUIRED called without the lock, locks taken
against an ABSL_ACQUIRED_BEFORE order (-Wthread-safety-beta)... fail the
check, naming the line.
The analysis sees absl::Mutex (annotated), not std::mutex: server/ code
under it uses absl::Mutex, absl::MutexLock and absl::CondVar.

First a self-test: a snippet that reads a guarded member without its lock
must be refused, so a clang that silently skips the analysis cannot pass.

Most of a file's parse is the headers it shares with the others (gRPC,
protobuf, the generated messages, Abseil, Eigen through core/): ~2-4 s of
CPU each, against a fraction of a second for the file itself.  Files with
the same flags therefore share one precompiled header of every header they
include from outside server/ (clang -include-pch).  Only server/ code is
under the analysis (core/, proto/ and client/ take no absl::Mutex), and
server/ headers are never precompiled: each file's own code and every
server/ header it includes are still parsed, and analyzed, in full.  A
group whose precompiled header does not build is checked without one.
Run by ctest (test "thread_safety"); usage: check_thread_safety.py BUILD_DIR
"""
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# -Wthread-safety-beta adds the lock-order checks (ABSL_ACQUIRED_BEFORE/AFTER).
FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Wthread-safety-beta", "-Werror=thread-safety",
         "-Wno-unknown-warning-option"]
SELF_TEST = """
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
class Counter {
 public:
  int Read() { return n_; }  // no lock held: the analysis must refuse this
 private:
  absl::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};
class Ordered {
 public:
  void Backwards() {  // b_ before a_: the lock-order check must refuse this
    absl::MutexLock b(&b_);
    absl::MutexLock a(&a_);
  }
 private:
  absl::Mutex a_;
  absl::Mutex b_ ABSL_ACQUIRED_AFTER(a_);
};
int main() { Ordered().Backwards(); return Counter().Read(); }
"""


def clang_args(entry):
    """The entry's compiler arguments without the compiler, -o and -c."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-c"):
            skip = True
        elif a == "-Werror":
            # The build's -Werror (F2OBO_WERROR) is for the build's compiler;
            # here only the analysis decides (FLAGS), not clang's other warnings.
            continue
        elif a != "ccache" and not a.endswith("/ccache"):
            out.append(a)
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]+[>"])', re.M)


def outside_includes(source, files):
    """The #include lines of `files` and of the server/ headers they include,
    transitively, that name a header outside server/ (in first-seen order)."""
    seen, out, todo = set(), [], list(files)
    while todo:
        path = todo.pop(0)
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        with open(path, errors="replace") as f:
            for name in INCLUDE.findall(f.read()):
                if name.startswith('"server/'):
                    todo.append(os.path.join(source, name[1:-1]))
                elif name not in out:
                    out.append(name)
    return out


def build_pch(clang, source, tmp, index, item):
    """A precompiled header for one group of files with the same flags, or
    None when it does not build (the group is then checked without it)."""
    (directory, args), group = item
    names = outside_includes(source, [e["file"] for e in group])
    if len(group) < 2 or not names:
        return None
    header = os.path.join(tmp, "group%d.h" % index)
    with open(header, "w") as f:
        # System headers first: a project header may rely on one included before it.
        for name in sorted(names, key=lambda n: n[0] != "<"):
            f.write("#include %s\n" % name)
    pch = header + ".pch"
    r = subprocess.run([clang] + FLAGS[1:] + list(args) + ["-x", "c++-header", header, "-o", pch],
                       cwd=directory, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("check_thread_safety: no precompiled header for %d files (%s); "
                         "they are checked without one\n" % (len(group), r.stderr[:400]))
        return None
    return pch


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    clang = shutil.which("clang++-14") or shutil.which("clang++")
    if not clang:
        sys.exit("check_thread_safety: clang++-14 is not installed (scripts/deps.sh --test)")
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f)
                   if os.path.abspath(e["file"]).startswith(os.path.join(source, "server") + os.sep)]
    if not entries:
        sys.exit("check_thread_safety: no server/ sources in %s/compile_commands.json" % build)
    # Self-test, with the include paths of a server source.
    with tempfile.TemporaryDirectory() as tmp:
        snippet = os.path.join(tmp, "unguarded.cc")
        with open(snippet, "w") as f:
            f.write(SELF_TEST)
        includes = [a for a in clang_args(entries[0]) if a.startswith(("-I", "-isystem", "-std"))]
        r = subprocess.run([clang] + FLAGS + includes + [snippet], capture_output=True, text=True)
        if r.returncode == 0 or "requires holding mutex" not in r.stderr:
            sys.exit("check_thread_safety: clang did not refuse an unguarded read; the analysis "
                     "is not running:\n" + r.stderr)
        if "must be acquired before" not in r.stderr:
            sys.exit("check_thread_safety: clang did not refuse locks taken against their "
                     "ABSL_ACQUIRED_AFTER order; the lock-order check is not running:\n" + r.stderr)

    jobs = max(1, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as tmp:
        groups = {}
        for entry in entries:
            groups.setdefault((entry["directory"], tuple(clang_args(entry))), []).append(entry)
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            pchs = dict(zip(groups, pool.map(
                lambda item: build_pch(clang, source, tmp, *item), enumerate(groups.items()))))

            def check(entry):
                key = (entry["directory"], tuple(clang_args(entry)))
                pch = ["-include-pch", pchs[key]] if pchs[key] else []
                r = subprocess.run([clang] + FLAGS + pch + list(key[1]) + [entry["file"]],
                                   cwd=entry["directory"], capture_output=True, text=True)
                return entry["file"], r.returncode, r.stderr

            results = list(pool.map(check, entries))
        shared = sum(len(groups[k]) for k in groups if pchs[k])
    bad = [(f, err) for f, rc, err in results if rc != 0]
    for f, err in bad:
        sys.stderr.write("%s\n%s\n" % (os.path.relpath(f, source), err))
    if bad:
        sys.exit("check_thread_safety: %d of %d server/ files fail the analysis"
                 % (len(bad), len(entries)))
    print("check_thread_safety: %d server/ files pass clang -Wthread-safety (%d of them over "
          "%d precompiled header(s))" % (len(entries), shared, sum(1 for k in pchs if pchs[k])))


if __name__ == "__main__":
    main()
