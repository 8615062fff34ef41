#!/bin/sh
# Checks that every C and C++ file git tracks is formatted as .clang-format says (clang-format
# 14, Debian's clang-format package); prints the files that are not. `make format` fixes them.
set -e
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
files=$(git ls-files '*.cc' '*.h' '*.c')
bad=""
for f in $files; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "not formatted (run make format):"
  for f in $bad; do echo "  $f"; done
  exit 1
fi
echo "format ok: $(echo "$files" | wc -w) files"
