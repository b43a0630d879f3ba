#!/usr/bin/env bash
# The whole test suite: the Release build, then the same tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer (the conformance suite's quick set of cases there: XREDUCE_TEST_QUICK
# in CMakePresets.json, the release run draws the full set; line tables only, -g1, which is what
# a sanitizer's report needs and compiles in 0.6 of the time of -g; the two CPU kernel tables at
# -O0, core/CMakeLists.txt says why; no benchmarks, whose smoke runs are the release build's),
# then the fuzzers (clang, libFuzzer) for a few seconds each from their committed corpus, then
# the Python package (its repaired wheel installed into build/venv, tested with pytest), then the
# documentation site (built with warnings as errors, opened in headless Chromium). Every part runs
# whatever an earlier one says; the exit status is non-zero if any failed, and each says how long it took.
# ctest runs a preset's tests on every core, the conformance suite in shards (tests/CMakeLists.txt).
# GPU cases say they are skipped on a machine without a GPU.
set -uo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh || exit 1
status=0
part() {  # part NAME COMMAND...: run one part and say how it went
  local name=$1 started=$SECONDS
  shift
  if "$@"; then
    echo "test.sh: $name: passed ($((SECONDS - started)) s)"
  else
    echo "test.sh: $name: FAILED ($((SECONDS - started)) s)"
    status=1
  fi
}
preset() { scripts/build.sh "$1" && ctest --preset "$1" -j "$(nproc)"; }  # build a preset, run its tests on every core
part release preset release
part asan preset asan
part fuzz preset fuzz
part python scripts/test-python.sh
part docs scripts/test-docs.sh
exit $status
