#!/usr/bin/env bash
# Builds step_fuzzer (clang-14, libFuzzer + ASan + UBSan) in its own build
# directory, generates the seed corpus and fuzzes for a bounded time.
# Exits non-zero on any crash, sanitizer report, leak, timeout or OOM.
#
#   fuzz/run_fuzz.sh [build dir] [seconds] [extra libFuzzer flags...]
#
# Defaults: build dir ./build-fuzz, 60 seconds.  ctest runs it with the
# main build's <build>/fuzz-build and 60 (label `fuzz`).  New inputs the
# fuzzer finds accumulate in <build dir>/corpus across runs; crashes are
# written to <build dir>/artifacts/.  See fuzz/README.md for long runs.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$src/build-fuzz}"
seconds="${2:-60}"
shift $(( $# > 2 ? 2 : $# ))
jobs="${F2OBO_FUZZ_BUILD_JOBS:-2}"

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || {
    echo "run_fuzz.sh: $tool not found (Debian packages clang-14 libclang-rt-14-dev; scripts/deps.sh --test)" >&2
    exit 1
  }
done

mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$src" -B "$build" -DF2OBO_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=Fuzz >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
fi
start=$(date +%s)
cmake --build "$build" --target fuzz_programs -j "$jobs" >"$build/build.log" 2>&1 ||
  { tail -n 60 "$build/build.log" >&2; exit 1; }
echo "run_fuzz.sh: fuzzer built in $(( $(date +%s) - start )) s"

# Seeds: valid requests of every family x algorithm (and a few refused
# ones), regenerated from the current code; plus the checked-in inputs of
# past findings in fuzz/corpus (they must keep passing).
rm -rf "$build/seeds"
mkdir -p "$build/seeds" "$build/corpus" "$build/artifacts"
"$build/make_corpus" "$build/seeds"

export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
log="$build/fuzz.log"
set +e
"$build/step_fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$@" \
  "$build/corpus" "$build/seeds" "$src/fuzz/corpus" >"$log" 2>&1
rc=$?
set -e
grep -E '^(stat::|Done )' "$log" || true
echo "run_fuzz.sh: corpus $(ls "$build/corpus" | wc -l) files (+ $(ls "$build/seeds" | wc -l) seeds, $(ls "$src/fuzz/corpus" | wc -l) checked in)"
if [ "$rc" -ne 0 ] || grep -qE 'runtime error:|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|INVARIANT FAILED' "$log"; then
  echo "run_fuzz.sh: FAILED (exit $rc); the report:" >&2
  grep -v -E '^#[0-9]+' "$log" | tail -n 80 >&2
  ls -l "$build/artifacts" >&2
  exit 1
fi
echo "run_fuzz.sh: ${seconds} s, no crash, no sanitizer report"
