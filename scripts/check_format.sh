#!/usr/bin/env bash
# Fails (naming the files) when a C++ file of the tree differs from what
# clang-format makes of it under the committed .clang-format (Google style,
# 100 columns).  Run by ctest (test "format"); fix with:
#   git ls-files '*.cc' '*.h' | xargs clang-format-14 -i
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
  echo "check_format: clang-format-14 is not installed (scripts/deps.sh --test installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find core server client proto apps bench tests fuzz -name '*.cc' -o -name '*.h')
fi
# One call for the whole tree; its warnings start with the file's name.
mapfile -t bad < <("$format" --dry-run --Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) not clang-formatted:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
