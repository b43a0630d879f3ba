#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/: the .npy reader, the config reader, the plugin-table
# checks, --shape and --axis) longer than the tests do, one after another, under ASan and UBSan.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (defaults: 600 seconds each; npy config plugin_table view_args)
#
# New inputs go to build/fuzz/long-<target>/ (the committed corpus, tests/fuzz/corpus/<target>/, is
# only read); a crash, leak or timeout leaves its input in build/fuzz/crashes-<target>/ and stops that
# target. Put such an input into tests/fuzz/corpus/<target>/ once it is fixed: the tests run the
# corpus on every ./test.sh. To add what a long run learnt to the corpus:
#   build/fuzz/bin/xreduce_fuzz_<target> -merge=1 tests/fuzz/corpus/<target> build/fuzz/long-<target>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy config plugin_table view_args)
scripts/install-deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
status=0
for t in "${targets[@]}"; do
  mkdir -p "build/fuzz/long-$t" "build/fuzz/crashes-$t"
  echo "fuzz.sh: $t for $seconds s"
  if ! "build/fuzz/bin/xreduce_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix="build/fuzz/crashes-$t/" "build/fuzz/long-$t" "tests/fuzz/corpus/$t"; then
    echo "fuzz.sh: $t FAILED: its input is in build/fuzz/crashes-$t/"
    status=1
  fi
done
exit $status
