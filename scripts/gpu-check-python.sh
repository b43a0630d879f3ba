#!/usr/bin/env bash
# On a GPU machine (the device tool's): installs the wheel carried in .whl/ (built here with
# `pip wheel . -w .whl`, for that machine's Python 3.12; with the CUDA module inside, or without it and
# the bundle's found through XREDUCE_PLUGIN_PATH) into /tmp/site, then runs the Python tests, GPU
# cases included, and the Python benchmark (and, if the bundle has xreduce_bench, the CPU suite at
# 2^30 for the host's read probe). The shared libraries the wheel needs and the machine
# may lack (oneTBB, toml++) come from .device-build/lib (scripts/device-bundle.sh). Logs and
# results go to $OUT (default: bench-out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/xreduce-*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/.device-build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A wheel built without nvcc (-C cmake.define.XREDUCE_ENABLE_CUDA=OFF: no CUDA build here twice)
# finds the bundle's CUDA module through the plugin path.
export XREDUCE_PLUGIN_PATH=${XREDUCE_PLUGIN_PATH:-$PWD/.device-build/lib}
nvidia-smi -L
python3 -c "import xreduce; print(xreduce.__file__); print([b.name for b in xreduce.backends() if b.available])"
status=0
(cd python/tests && python3 -m pytest -q -rs -p no:cacheprovider) 2>&1 | tee "$out/pytest.log" || status=1
python3 bench/python/bench_python.py "$out/python" --commit "${XREDUCE_COMMIT:-unknown}" 2>&1 | tee "$out/bench.log" || status=1
# The host's ceiling at the largest size, in the same session: the read probe and the CPU backends.
if [ -x .device-build/bin/xreduce_bench ]; then
  .device-build/bin/xreduce_bench cpu --min-log2 30 --max-log2 30 --out "$out/cpu-2^30" 2>&1 | tail -20 | tee -a "$out/bench.log"
fi
exit $status
