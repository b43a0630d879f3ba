#!/usr/bin/env bash
# Sums of each element type over the same bytes (1 GiB by default, host data), one thread
# (sequential) and every thread (openmp), median of 7: how far each type's rate is from f32's.
#
#   scripts/dtype-rates.sh [XREDUCE_BINARY] [BYTES]
set -euo pipefail
x=${1:-build/release/bin/xreduce}
bytes=${2:-1073741824}
for backend in sequential openmp; do
  for t in f32 f16 bf16 i16 u16 u8 i8 bool; do
    case $t in f32) size=4 ;; f16|bf16|i16|u16) size=2 ;; *) size=1 ;; esac
    echo "$backend $t n=$((bytes / size)) $("$x" run --op sum --dtype $t --n $((bytes / size)) --backend $backend --repeat 7 | grep time)"
  done
done
