#!/usr/bin/env bash
# xreduce run|validate --distributed over 1 to 4 ranks against one process: generated data, a slice
# of one file, one file per rank, and a rank that fails. Usage: cli_test.sh XREDUCE MPIEXEC
set -euo pipefail
xreduce=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { grep -o -m1 "\"$1\":[^,}]*"; }  # one field of a JSON line (it appears once)
fail() { echo "cli_test: $*" >&2; exit 1; }

want_sum=$("$xreduce" run --op sum --dtype f64 --n 100003 --seed 7 --accuracy exact --json | field value)
want_arg=$("$xreduce" run --op argmax --dtype f32 --n 100003 --seed 7 --json | field index)
want_half=$("$xreduce" run --op sum --dtype bf16 --n 100003 --seed 7 --accuracy exact --result-dtype f32 --json | field value)
head -c 400000 /dev/urandom >"$work/whole.u32"
want_file=$("$xreduce" run --op sum --dtype u32 --input "$work/whole.u32" --json | field value)
for ranks in 1 2 3 4; do
  run() { "$mpiexec" -n "$ranks" "$xreduce" "$@"; }
  got=$(run run --distributed --op sum --dtype f64 --n 100003 --seed 7 --accuracy exact --json | field value)
  [ "$got" = "$want_sum" ] || fail "$ranks ranks: exact sum $got, one process $want_sum"
  got=$(run run --distributed --op sum --dtype bf16 --n 100003 --seed 7 --accuracy exact --result-dtype f32 --json | field value)
  [ "$got" = "$want_half" ] || fail "$ranks ranks: exact bf16 sum as f32 $got, one process $want_half"
  got=$(run run --distributed --op argmax --dtype f32 --n 100003 --seed 7 --json | field index)
  [ "$got" = "$want_arg" ] || fail "$ranks ranks: argmax $got, one process $want_arg"
  got=$(run run --distributed --op sum --dtype u32 --input "$work/whole.u32" --json | field value)
  [ "$got" = "$want_file" ] || fail "$ranks ranks, slices of one file: $got, one process $want_file"
  # One file per rank: cut the whole into $ranks pieces of uneven (whole-element) sizes, the last maybe empty.
  rm -f "$work"/shard*.u32
  at=0
  for ((r = 0; r < ranks; r++)); do
    take=$(( r == ranks - 1 ? 100000 - at : (100000 - at) * (r + 1) / (ranks + 1) ))
    dd if="$work/whole.u32" of="$work/shard$r.u32" bs=4 skip="$at" count="$take" status=none
    at=$((at + take))
  done
  got=$(run run --distributed --op sum --dtype u32 --input "$work/shard{rank}.u32" --json | field value)
  [ "$got" = "$want_file" ] || fail "$ranks ranks, a file each: $got, one process $want_file"
  run validate --distributed --op max --dtype u32 --input "$work/shard{rank}.u32" >/dev/null ||
    fail "$ranks ranks: validate of a file each failed"
  run validate --distributed --op sum --dtype f32 --n 54321 --accuracy exact >/dev/null ||
    fail "$ranks ranks: validate --accuracy exact failed"
  # One rank's file missing: every rank stops, one message names that rank; no hang.
  if [ "$ranks" -gt 1 ]; then
    rm "$work/shard1.u32"
    set +e
    message=$(run run --distributed --op sum --dtype u32 --input "$work/shard{rank}.u32" 2>&1 >/dev/null)
    status=$?
    set -e
    [ "$status" = 2 ] || fail "$ranks ranks, rank 1's file missing: exit $status"
    grep -q 'xreduce: error: rank 1: .*shard1.u32' <<<"$message" || fail "$ranks ranks, rank 1's file missing: $message"
  fi
  # A rank that cannot run: one message (rank 0's), naming the rank and the reason; no hang.
  set +e
  message=$(run run --distributed --op sum --dtype f32 --input "$work/missing{rank}.u32" 2>&1 >/dev/null)
  status=$?
  set -e
  [ "$status" = 2 ] || fail "$ranks ranks, missing files: exit $status"
  [ "$(grep -c 'xreduce: error: rank 0: ' <<<"$message")" = 1 ] || fail "$ranks ranks, missing files: $message"
done
echo "cli_test: passed"
