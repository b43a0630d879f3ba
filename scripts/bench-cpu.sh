#!/usr/bin/env bash
# Runs the `cpu` suite (the CPU backends on all threads and on one, against read probes over the
# same bytes, N = 2^10 .. 2^28) on this machine and writes its results under
# bench/results/<machine>/ (the suite's own default), with the plot. Arguments go to the suite:
#   scripts/bench-cpu.sh --max-log2 27 --repeat 10
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
export XREDUCE_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
build/release/bin/xreduce bench cpu "$@" | tee /dev/stderr | tail -0
out=$(ls -td bench/results/*/cpu.json | head -1)
/usr/bin/python3 bench/plot_suites.py "$out" "${out%.json}.png"
echo "results: ${out%.json}.{json,md,png}"
