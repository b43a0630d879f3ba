# Sourced by scripts/gpu-check.sh and scripts/multi-gpu-check.sh: `step NAME COMMAND...` runs one
# check or benchmark, appends its output to "$log" between two ===== lines, prints one line of
# verdict and time, and sets status=1 if it failed. A program of the build that the bundle lacks
# is reported as skipped.
status=0
step() {
  local name=$1
  shift
  if [[ "$1" == */bin/* && ! -x "$1" ]]; then
    echo "===== $name: skipped, $1 is not in this bundle" >> "$log"
    printf '%-22s skipped (%s not in this bundle)\n' "$name" "$(basename "$1")"
    return
  fi
  local t0=$SECONDS
  echo "===== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  local rc=$?
  local verdict=ok
  [ $rc -eq 0 ] || { verdict="FAILED (exit $rc)"; status=1; }
  echo "===== $name: $verdict in $((SECONDS - t0)) s" >> "$log"
  printf '%-22s %s (%d s)\n' "$name" "$verdict" $((SECONDS - t0))
}
