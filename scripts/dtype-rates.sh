#!/usr/bin/env bash
# Sums of each element type over the same 1 GiB, host data: one thread (sequential) and all (openmp).
x=${1:-.device-build/bin/xreduce}
for backend in sequential openmp; do
  for spec in f32:268435456 f16:536870912 bf16:536870912 u8:1073741824 i8:1073741824 bool:1073741824 i16:536870912; do
    t=${spec%%:*}; n=${spec##*:}
    echo "== $backend $t n=$n"
    $x run --op sum --dtype $t --n $n --backend $backend --repeat 7 2>&1 | grep -E "time|sum "
  done
done
