#!/usr/bin/env bash
# The whole test suite: the Release build, then the same tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer. GPU cases say they are skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
scripts/build.sh release
ctest --preset release
scripts/build.sh asan
ctest --preset asan
