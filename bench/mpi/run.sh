#!/usr/bin/env bash
# The MPI benchmark's configurations on one host, then the summary:
#   bench/mpi/run.sh BUILD_BIN OUT_PREFIX [LOG2N]
# latency at 2, 4 and 8 ranks (within the host's cores), and one f32 sum of 2^LOG2N (default 30)
# as ranks x threads for every split of the host's cores into powers of two. Writes
# OUT_PREFIX.jsonl (the runs) and OUT_PREFIX.{json,md,png} (bench/mpi/summarize.py).
set -euo pipefail
bin=$1
out=$2
log2n=${3:-30}
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
rm -f "$out.jsonl"
# Threads are placed by the operating system: a rank's T threads are not pinned to one core.
run() { mpirun --bind-to none --oversubscribe -n "$1" "$bin/xreduce_bench_mpi" --log2n "$log2n" --threads "$2" --out "$out.jsonl"; }
for ((ranks = 1; ranks <= cores; ranks *= 2)); do
  run "$ranks" $((cores / ranks))
done
python3 "$(dirname "$0")/summarize.py" "$out.jsonl" "$out"
