#!/usr/bin/env bash
# On a machine with a GPU: the conformance suite over the CUDA backends, the device-memory and
# concurrency tests, the user-defined reductions of xreduce/cuda.cuh, then the conformance suite,
# the device-resident records and the user-defined reductions again under compute-sanitizer
# (memcheck, racecheck, synccheck; quick mode, since every access is checked). The benchmarks and their plots run before the
# sanitizers, which are the slow part.
#
#   scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]      (defaults: build/release, bench/results/<gpu>)
#
# XREDUCE_CHECK_TESTS picks the test programs (default: conformance gpu-tests gpu-custom-tests example-gpu),
# XREDUCE_CHECK_SUITES the benchmarks (default: gpu-reduce host progression exact segments stats dtypes; also
# statistics and views (device rows only), with torch's beside them; empty: none),
# XREDUCE_SANITIZERS the sanitizer tools (default: memcheck racecheck synccheck; empty: none) and
# XREDUCE_SANITIZE the programs under them (default: conformance dtypes records exact segments stats custom; also
# statistics and views), so that a run
# within the device tool's 10 minutes can check what a change touched. Under racecheck the
# conformance suite takes over 5 minutes (its 16-threads case alone over 2, all backends).
#
# Writes OUT_DIR/logs/checks-COMMIT.log (every log, in order), logs/device-COMMIT.txt, gpu-reduce.{json,md,png},
# host-reduce.{json,md}, progression.{json,md,png} and exact.{json,md,png} (the device tool carries 64 MiB:
# scripts/device-bundle.sh says which programs fit together). A program missing from the bundle
# is reported as skipped.
# Exits non-zero if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
out=${2:-bench/results/$gpu}
export XREDUCE_TEST_BACKENDS='cuda.*,cub,thrust,hybrid'
export XREDUCE_COMMIT=${XREDUCE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$out/logs"
log="$out/logs/checks-$XREDUCE_COMMIT.log"
: > "$log"
{ date -u; echo "commit $XREDUCE_COMMIT"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; } > "$out/logs/device-$XREDUCE_COMMIT.txt"

. scripts/check-steps.sh  # step NAME COMMAND...; status

for check in ${XREDUCE_CHECK_TESTS-conformance gpu-tests gpu-custom-tests example-gpu}; do
  case $check in
    conformance) step conformance "$build/bin/xreduce_conformance" ;;
    gpu-tests) step gpu-tests "$build/bin/xreduce_gpu_tests" ;;
    gpu-custom-tests) step gpu-custom-tests "$build/bin/xreduce_gpu_custom_tests" ;;
    example-gpu) step example-gpu "$build/bin/xreduce_example_farthest_point_gpu" ;;
  esac
done
for suite in ${XREDUCE_CHECK_SUITES-gpu-reduce host progression exact segments stats dtypes}; do
  case $suite in
    gpu-reduce)
      step benchmark "$build/bin/xreduce_bench" gpu-reduce --out "$out" ${XREDUCE_BENCH_ARGS:-}
      [ -f "$out/gpu-reduce.json" ] && step plot python3 bench/plot_gpu.py "$out/gpu-reduce.json" "$out/gpu-reduce.png" ;;
    host) step benchmark-host "$build/bin/xreduce_bench_gpu_host" --out "$out" ${XREDUCE_BENCH_HOST_ARGS:-} ;;
    statistics)
      step statistics "$build/bin/xreduce_bench" statistics --out "$out"
      # numpy's statistics of the same host data and torch's of the same device data, in the same
      # session, then the plot of all
      step statistics-numpy python3 bench/python/bench_statistics_numpy.py "$out"
      step statistics-torch python3 bench/python/bench_statistics_torch.py "$out"
      [ -f "$out/statistics.json" ] && step plot-statistics python3 bench/plot_statistics.py "$out/statistics.json" "$out/statistics.png" ;;
    views)
      # torch's and CuPy's axis sums of the same shapes, in the same session, then the three side by side
      step views "$build/bin/xreduce_bench" views --device-only --out "$out"
      step views-torch python3 bench/python/bench_views_torch.py "$out" ;;
    progression|exact|segments|stats|dtypes)
      step "$suite" "$build/bin/xreduce_bench" "$suite" --out "$out"
      [ -f "$out/$suite.json" ] && step "plot-$suite" python3 bench/plot_suites.py "$out/$suite.json" "$out/$suite.png"
      # torch's own sums of the same kinds of data, in the same session
      [ "$suite" = dtypes ] && step dtypes-torch python3 bench/python/bench_dtypes_torch.py "$out" ;;
  esac
done
for tool in ${XREDUCE_SANITIZERS-memcheck racecheck synccheck}; do
  sanitize() {
    timeout "${XREDUCE_SANITIZER_TIMEOUT:-1200}" env XREDUCE_TEST_QUICK=1 \
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$@"
  }
  for what in ${XREDUCE_SANITIZE:-conformance dtypes records exact segments stats custom}; do
    case $what in
      conformance) step "sanitizer-$tool" sanitize "$build/bin/xreduce_conformance" ;;
      dtypes) step "sanitizer-$tool-dtypes" sanitize "$build/bin/xreduce_gpu_tests" -tc="*every dtype*" ;;
      records|exact|segments) step "sanitizer-$tool-$what" sanitize "$build/bin/xreduce_gpu_tests" -tc="*$what*" ;;
      views) step "sanitizer-$tool-views" sanitize "$build/bin/xreduce_gpu_tests" -tc="*N-D views*" ;;
      stats) step "sanitizer-$tool-stats" sanitize "$build/bin/xreduce_gpu_tests" -tc="*several ops*" ;;
      statistics) step "sanitizer-$tool-statistics" sanitize "$build/bin/xreduce_gpu_tests" -tc="*GPU statistics*" ;;
      custom) step "sanitizer-$tool-custom" sanitize "$build/bin/xreduce_gpu_custom_tests" ;;
    esac
  done
done
grep -E "test cases:|ERROR SUMMARY|skipping|FAILED" "$log" | sort | uniq -c | head -40
[ -f "$out/gpu-reduce.md" ] && cat "$out/gpu-reduce.md"
[ -f "$out/host-reduce.md" ] && cat "$out/host-reduce.md"
[ -f "$out/progression.md" ] && cat "$out/progression.md"
[ -f "$out/exact.md" ] && cat "$out/exact.md"
[ -f "$out/segments.md" ] && cat "$out/segments.md"
[ -f "$out/stats.md" ] && cat "$out/stats.md"
[ -f "$out/dtypes.md" ] && cat "$out/dtypes.md"
[ -f "$out/dtypes-torch.md" ] && cat "$out/dtypes-torch.md"
[ -f "$out/statistics-gpu-torch.md" ] && cat "$out/statistics-gpu-torch.md"
exit $status
