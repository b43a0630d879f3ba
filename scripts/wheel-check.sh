#!/usr/bin/env bash
# On a GPU machine (the device tool's): the repaired wheel alone, as a user installs it. A fresh
# virtual environment (seeing the machine's own torch, CuPy and numpy) gets the wheel carried in .whl/ (built here for CPython 3.12 with the CUDA module inside, then
# `auditwheel repair`; see scripts/test-python.sh) and the test dependencies carried in .whl/deps
# (`pip download`: pytest, hypothesis, array-api-strict, ml_dtypes, dask, distributed and theirs; no index there),
# then runs the Python tests, GPU cases included. Nothing of the build tree is on any path (the
# machine's own packages are named by a .pth file, below). Arguments go to pytest. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
unset XREDUCE_PLUGIN_PATH
echo "PYTHONPATH=${PYTHONPATH:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} (the machine's own)"
venv=/tmp/xreduce-wheel-venv
rm -rf "$venv" && python3 -m venv "$venv" || exit 1
# The machine's torch, CuPy and numpy sit in its user site, which a virtual environment leaves
# out (--system-site-packages too): a .pth file names their folder.
machine_site=$(python3 -c "import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))") || exit 1
"$venv/bin/python" -c "import site; print(site.getsitepackages()[0])" | xargs -I{} sh -c "echo '$machine_site' > {}/machine.pth"
wheel=$(ls .whl/xreduce-*manylinux*.whl | head -1)
echo "wheel-check: $wheel on $(python3 --version)" | tee "$out/wheel-check.log"
# Every carried wheel, unresolved: pip does not count the machine's own numpy towards the
# requirements of the carried ones, and there is no index to fetch another from.
"$venv/bin/python" -m pip install -q --no-index --no-deps --disable-pip-version-check "$wheel" .whl/deps/*.whl \
  2>&1 | tee -a "$out/wheel-check.log" || exit 1
nvidia-smi -L | tee -a "$out/wheel-check.log"
(cd /tmp && "$venv/bin/python" -c "import xreduce; import numpy; print(xreduce.__version__, xreduce.__file__, numpy.__file__); print([b.name for b in xreduce.backends() if b.available])") 2>&1 | tee -a "$out/wheel-check.log"
(cd python/tests && "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$@") 2>&1 | tee "$out/pytest.log"
exit "${PIPESTATUS[0]}"
