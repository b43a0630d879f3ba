#!/usr/bin/env bash
# Runs the CPU benchmark (2^27 f32 sum) on this machine and writes its results under
# bench/results/<machine>/, named after the CPU model and thread count.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z')
machine="${model:-cpu}-$(nproc)-threads"
out="bench/results/$machine"
XREDUCE_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
  build/release/bin/xreduce_bench_cpu --out "$out" "$@"
echo "results: $out"
