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
CPU each, against a fraction of a second for the file itself.  So the files
with the same flags are parsed together, as one translation unit that
includes them all (the analysis is per function: each function of each file
and of every server/ header is analyzed as in a file of its own): one pass
over 55 files costs ~10 s of CPU, the whole check ~50 s instead of ~140
file by file.  A file that cannot share a unit
(it defines a file-local name another file defines too: clang says
"redefinition") is checked on its own, and when the unit reports a
thread-safety error every file of it is checked on its own, so that the
failure names its files exactly as before.
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


ERROR = re.compile(r"^(.+?):\d+:\d+: error: (.*)$", re.M)


def run(clang, args, directory, files):
    """clang over `files` (one file, or one unit including them all)."""
    if len(files) == 1:
        target = files[0]
    else:
        fd, target = tempfile.mkstemp(suffix=".cc")
        with os.fdopen(fd, "w") as f:
            f.writelines('#include "%s"\n' % name for name in files)
    try:
        r = subprocess.run([clang] + FLAGS + ["-ferror-limit=0"] + list(args) + [target],
                           cwd=directory, capture_output=True, text=True)
    finally:
        if target not in files:
            os.unlink(target)
    return r.returncode, r.stderr


def check_group(clang, pool, directory, args, files):
    """[(file, returncode, stderr)] for one group of files with the same flags."""
    together, alone = list(files), []
    while len(together) > 1:
        rc, err = run(clang, args, directory, together)
        if rc == 0:
            break
        errors = ERROR.findall(err)
        # Files that cannot share the unit: an error that is not the
        # analysis's, in a file of the group (a header's: every file alone).
        clashes = {f for f, msg in errors if "thread-safety" not in msg and f in together}
        if any("thread-safety" in msg for _, msg in errors) or not clashes or \
                len(clashes) < len({f for f, msg in errors if "thread-safety" not in msg}):
            alone += together
            together = []
        else:
            alone += sorted(clashes)
            together = [f for f in together if f not in clashes]
    if len(together) == 1:
        alone += together
        together = []
    results = [(f, 0, "") for f in together]
    return results + list(pool.map(
        lambda f: (f,) + run(clang, args, directory, [f]), alone))


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
    groups = {}
    for entry in entries:
        groups.setdefault((entry["directory"], tuple(clang_args(entry))), []).append(entry["file"])
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool, \
            concurrent.futures.ThreadPoolExecutor(jobs) as files_pool:
        results = [r for rs in pool.map(
            lambda item: check_group(clang, files_pool, item[0][0], item[0][1], item[1]),
            groups.items()) for r in rs]
    bad = [(f, err) for f, rc, err in results if rc != 0]
    for f, err in bad:
        sys.stderr.write("%s\n%s\n" % (os.path.relpath(f, source), err))
    if bad:
        sys.exit("check_thread_safety: %d of %d server/ files fail the analysis"
                 % (len(bad), len(entries)))
    print("check_thread_safety: %d server/ files pass clang -Wthread-safety (%d unit(s) of "
          "files with the same flags)" % (len(entries), len(groups)))


if __name__ == "__main__":
    main()
