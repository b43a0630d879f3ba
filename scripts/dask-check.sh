#!/usr/bin/env bash
# On the GPU machine (the device tool's): xreduce.dask's tests (CuPy chunks included) and its
# benchmark against dask's own reductions on a LocalCluster of the host's cores. Needs the wheel
# (built here for that machine's Python 3.12: `pip wheel . -w .whl`), dask, distributed and their
# dependencies as wheels in .whl/deps (`pip download "dask[array]" distributed hypothesis
# --python-version 3.12 --only-binary=:all: -d .whl/deps`, less numpy), and the bundle's shared
# libraries and CUDA module (scripts/device-bundle.sh). Results go to $OUT (default: bench-out/);
# SWEEP=tbb,sequential adds each named backend's chunk sums to the benchmark, LOG2N its size.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
[ -f .device-build/bundle.tar.xz ] && scripts/device-unpack.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/deps/*.whl .whl/xreduce-*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/.device-build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XREDUCE_PLUGIN_PATH=${XREDUCE_PLUGIN_PATH:-$PWD/.device-build/lib}
nvidia-smi -L
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$out/host.txt"
python3 -c "import xreduce, dask; print(xreduce.__file__, dask.__version__, [b.name for b in xreduce.backends() if b.available])"
status=0
if [ "${TESTS:-1}" = 1 ]; then  # TESTS=0: the benchmark alone
  (cd python/tests && python3 -m pytest -q -rs -p no:cacheprovider test_dask.py) 2>&1 | tee "$out/pytest-dask.log" || status=1
fi
python3 bench/python/bench_dask.py "$out/dask${SUFFIX:-}" --log2n "${LOG2N:-30}" --workers 4 --threads 4 \
  --commit "${XREDUCE_COMMIT:-unknown}" ${SWEEP:+--sweep "$SWEEP"} ${INTERLEAVE:+--interleave "$INTERLEAVE"} 2>&1 | grep -v "distributed\.\|INFO" | tee "$out/bench-dask.log" || status=1
exit $status
