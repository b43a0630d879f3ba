#!/usr/bin/env bash
# On a GPU machine (the device tool's): the repaired wheel alone, as a user installs it. A fresh
# virtual environment (seeing the machine's own torch, CuPy, numpy and pytest: --system-site-packages)
# gets the wheel carried in .whl/ (built here for CPython 3.12 with the CUDA module inside, then
# `auditwheel repair`; see scripts/test-python.sh) and the test dependencies carried in .whl/deps
# (`pip download`, no index there), then runs the Python tests, GPU cases included. Nothing of the
# build tree is on any path: no LD_LIBRARY_PATH, no XREDUCE_PLUGIN_PATH. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
unset LD_LIBRARY_PATH XREDUCE_PLUGIN_PATH PYTHONPATH
venv=/tmp/xreduce-wheel-venv
rm -rf "$venv" && python3 -m venv --system-site-packages "$venv" || exit 1
wheel=$(ls .whl/xreduce-*manylinux*.whl | head -1)
echo "wheel-check: $wheel on $(python3 --version)" | tee "$out/wheel-check.log"
"$venv/bin/python" -m pip install -q --no-index --find-links .whl/deps --disable-pip-version-check "$wheel" \
  hypothesis "dask[array]" distributed 2>&1 | tee -a "$out/wheel-check.log" || exit 1
nvidia-smi -L | tee -a "$out/wheel-check.log"
(cd /tmp && "$venv/bin/python" -c "import xreduce; print(xreduce.__version__, xreduce.__file__); print([b.name for b in xreduce.backends() if b.available])") 2>&1 | tee -a "$out/wheel-check.log"
(cd python/tests && "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider) 2>&1 | tee "$out/pytest.log"
exit "${PIPESTATUS[0]}"
