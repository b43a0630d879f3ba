#!/usr/bin/env bash
# A CPU reduction never touches the GPU's driver, even with the CUDA module loaded: with a
# stand-in driver (fake_driver.c) first on the library path, these commands must leave its log
# empty, and those that do need the driver must fill it (so the stand-in is known to be seen).
# Usage: no_driver_test.sh XREDUCE FAKE_DRIVER_DIR
set -uo pipefail
xreduce=$1
export LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XREDUCE_FAKE_DRIVER_LOG
XREDUCE_FAKE_DRIVER_LOG=$(mktemp)
pinned_threshold=$(mktemp --suffix=.toml)
trap 'rm -f "$XREDUCE_FAKE_DRIVER_LOG" "$pinned_threshold"' EXIT
# A threshold for pinned data (as the H200 host's default row has) makes auto ask where host data
# lives; with the driver not started nothing can be pinned, and the answer must not start it.
printf '[dispatch]\ncpu_gpu_min_count_pinned = 4096\n' >"$pinned_threshold"
status=0
loads() {  # loads EXPECTED ARGS...: run the command, then compare the driver's loads with EXPECTED (0 or more)
  local expected=$1
  shift
  : >"$XREDUCE_FAKE_DRIVER_LOG"
  local output
  if ! output=$("$xreduce" "$@" 2>&1) && [ "$expected" = 0 ]; then
    echo "no_driver_test: xreduce $* failed: $output" >&2
    status=1
  fi
  local n
  n=$(wc -l <"$XREDUCE_FAKE_DRIVER_LOG")
  if { [ "$expected" = 0 ] && [ "$n" != 0 ]; } || { [ "$expected" != 0 ] && [ "$n" = 0 ]; }; then
    echo "no_driver_test: xreduce $*: the driver was loaded $n times, expected $expected" >&2
    status=1
  fi
}
# No driver for host data on the CPU: named backends, auto below any GPU threshold, and auto above
# a threshold for pinned data.
loads 0 run --backend sequential --op sum --dtype f32 --n 1000
loads 0 run --backend openmp --op argmax --dtype f64 --n 100000
loads 0 run --op sum --dtype f32 --n 1000
loads 0 run --op sum --dtype f32 --n 4194304 --accuracy exact
loads 0 run --op max --dtype i32 --n 3000 --width 3
XREDUCE_CONFIG=$pinned_threshold loads 0 run --op sum --dtype f32 --n 100000
# The driver where a GPU is asked for: availability, a GPU backend.
loads 1 list
loads 1 run --backend cuda.shuffle --op sum --dtype f32 --n 1000
[ $status = 0 ] && echo "no_driver_test: passed"
exit $status
