#!/usr/bin/env bash
# Runs the `cpu` suite (the CPU backends on all threads and on one, against read probes over the
# same bytes, N = 2^10 .. 2^28) on this machine and writes its results, with the plot, under
# bench/results/<machine>/, named after the CPU model and thread count. Arguments go to the suite:
#   scripts/bench-cpu.sh --max-log2 27 --repeat 10
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z')
out="bench/results/${model:-cpu}-$(nproc)-threads"
XREDUCE_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) build/release/bin/xreduce bench cpu --out "$out" "$@"
/usr/bin/python3 bench/plot_suites.py "$out/cpu.json" "$out/cpu.png"
echo "results: $out/cpu.{json,md,png}"
