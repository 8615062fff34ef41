#!/bin/sh
# clang-tidy with the profile in .clang-tidy (warnings are errors) over the C++ sources of
# src/ (tests and fuzz targets aside), through the compile commands of build directory $1.
#   scripts/tidy.sh BUILD            every source (about 14 min on 2 cores)
#   scripts/tidy.sh BUILD --changed  the sources the last commit touched (CI; every source if
#                                    the clone lacks the parent commit)
# Exits non-zero if any file has a finding.
set -e
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/tidy.sh BUILD [--changed]}
if [ "$2" = "--changed" ] && git rev-parse -q --verify HEAD~1 >/dev/null; then
  files=$(git diff --name-only --diff-filter=AM HEAD~1 -- 'src/*.cc')
else  # every source (also --changed in a clone without the parent commit)
  files=$(find src -name '*.cc')
fi
files=$(printf '%s\n' $files | grep -v -e '_test\.cc$' -e '^src/fuzz/' || true)
if [ -z "$files" ]; then
  echo "tidy: no sources to check"
  exit 0
fi
n=$(printf '%s\n' $files | wc -l)
echo "tidy: $n file(s)"
printf '%s\n' $files | xargs -P2 -n1 clang-tidy -p "$build" --quiet \
  --extra-arg=-Wno-unknown-warning-option 2>&1 | grep -v -e '^[0-9]* warnings\? generated' \
  -e '^Suppressed' -e '^Use -header-filter' -e '^[0-9]* warnings\? and [0-9]* errors\? generated' \
  -e '^Error while processing' > "$build/tidy.log" || true
if grep -q -e 'warning:' -e 'error:' "$build/tidy.log"; then
  cat "$build/tidy.log"
  echo "tidy: findings (above)"
  exit 1
fi
echo "tidy: clean"
