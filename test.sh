#!/usr/bin/env bash
# The whole test suite: the Release build, then the same tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer, then the fuzzers (clang, libFuzzer) for a few seconds each from their
# committed corpus. Every part runs whatever an earlier one says; the exit status is non-zero if
# any failed. GPU cases say they are skipped on a machine without a GPU.
set -uo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh || exit 1
status=0
half() {  # half NAME: build the preset and run its tests
  if scripts/build.sh "$1" && ctest --preset "$1"; then
    echo "test.sh: $1: passed"
  else
    echo "test.sh: $1: FAILED"
    status=1
  fi
}
half release
half asan
half fuzz
exit $status
