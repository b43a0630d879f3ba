#!/usr/bin/env bash
# On a machine with two GPUs or more: the checks and benchmarks of several GPUs. The conformance
# suite over the CUDA backends (cuda.multi_gpu among them), the GPU tests (with every GPU
# visible, so cuda.multi_gpu runs in them too), xreduce::mpi on 1 to 3 ranks and xreduce::nccl on
# one rank a GPU;
# then the rates of pageable staging's pieces (xreduce_bench_staging), one host array over every
# GPU against one (xreduce_bench_multi_gpu: the ops, an exact sum, rows of 256) and device-resident shards through NCCL and MPI, f32
# and bf16, their sum and var (xreduce_bench_gpus).
#
#   scripts/multi-gpu-check.sh [BUILD_DIR] [OUT_DIR]     (defaults: build/release, bench/results/<gpu>-x<count>)
#
# XREDUCE_MULTI_STEPS picks the steps (default: conformance-multi-gpu conformance-cuda gpu-tests mpi-tests
# nccl-tests bench-staging bench-multi-gpu bench-gpus), XREDUCE_GPU_TESTS_ARGS are passed to the GPU tests
# (split at spaces: a doctest filter such as -tc=*statistic*), XREDUCE_BENCH_MULTI_OPS the ops of one host
# array over every GPU (default: sum var), XREDUCE_BENCH_GPUS_OPS the ops of the device-resident
# shards' benchmark (default: sum var) and XREDUCE_BENCH_GPUS_LOG2N its sizes a rank (default: 30),
# so that a run within the device tool's 10 minutes can check what a change touched.
#
# Writes OUT_DIR/logs/multi-gpu-checks-COMMIT.log, the benchmarks' json and md, staging.png and
# multi-gpu-host.png. Exits non-zero if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
out=${2:-bench/results/$gpu-x$gpus}
commit=${XREDUCE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$out/logs"
log="$out/logs/multi-gpu-checks-$commit.log"
{ date -u; echo "commit $commit, $gpus GPU(s)"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$log"
mpirun=(mpirun --allow-run-as-root --bind-to none --oversubscribe)

. scripts/check-steps.sh  # step NAME COMMAND...; status

steps=" ${XREDUCE_MULTI_STEPS-conformance-multi-gpu conformance-cuda gpu-tests mpi-tests nccl-tests bench-staging bench-multi-gpu bench-gpus} "
want() { [[ "$steps" == *" $1 "* ]]; }

want conformance-multi-gpu && step conformance-multi-gpu env XREDUCE_TEST_BACKENDS=cuda.multi_gpu "$build/bin/xreduce_conformance"
want conformance-cuda && step conformance-cuda env XREDUCE_TEST_BACKENDS='cuda.shuffle,cuda.single_pass,cub' "$build/bin/xreduce_conformance"
# shellcheck disable=SC2086  # the arguments, split as a shell would
want gpu-tests && step gpu-tests "$build/bin/xreduce_gpu_tests" ${XREDUCE_GPU_TESTS_ARGS-}
if want mpi-tests; then
  for n in 1 2 3; do step "mpi-tests-$n-ranks" "${mpirun[@]}" -n $n "$build/bin/xreduce_mpi_tests"; done
fi
want nccl-tests && step nccl-tests "${mpirun[@]}" -n "$gpus" "$build/bin/xreduce_nccl_tests"
want bench-staging && step bench-staging "$build/bin/xreduce_bench_staging" --gib 4 --repeat 3 --out "$out"
if want bench-multi-gpu; then
  for op in ${XREDUCE_BENCH_MULTI_OPS-sum var}; do
    step "bench-multi-gpu-$op" "$build/bin/xreduce_bench_multi_gpu" --log2n 30 --repeat 7 --op "$op" --out "$out"
  done
  # The exact sum (the same bits on one GPU and on all) and rows of host data.
  step bench-multi-gpu-exact-sum "$build/bin/xreduce_bench_multi_gpu" --log2n 30 --repeat 5 --op sum --accuracy exact --out "$out"
  step bench-multi-gpu-rows-sum "$build/bin/xreduce_bench_multi_gpu" --log2n 30 --repeat 5 --op sum --rows 256 --out "$out"
  step plot-multi-gpu-host python3 bench/plot_multi_gpu_host.py "$out"
fi
want bench-staging && step plot-staging python3 bench/plot_staging.py "$out"
if want bench-gpus; then
  for log2n in ${XREDUCE_BENCH_GPUS_LOG2N-30}; do
    for op in ${XREDUCE_BENCH_GPUS_OPS-sum var}; do
      for dtype in f32 bf16; do
        step "bench-gpus-$dtype-$op-2^$log2n" "${mpirun[@]}" -n "$gpus" "$build/bin/xreduce_bench_gpus" --log2n "$log2n" --dtype $dtype --op $op --out "$out"
      done
    done
  done
fi
exit $status
