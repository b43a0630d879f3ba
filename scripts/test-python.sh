#!/usr/bin/env bash
# The Python package as a user gets it: `pip install .` into a virtual environment (build/venv),
# then its tests (python/tests) with pytest. The build tools come from PyPI; the build folder
# (build/python-*) is kept, so a second run rebuilds only what changed. The CUDA module is left
# out here, where no GPU runs it (its cases skip): `pip install .` on a machine with nvcc builds
# it too, and the GPU cases run on the device (scripts/gpu-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.2" pytest hypothesis "numpy>=1.22" ml_dtypes \
  "dask[array]" distributed mpi4py  # the optional extras: xreduce.dask, xreduce.mpi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
  -C cmake.define.XREDUCE_ENABLE_CUDA=OFF .
# A first reduction from a folder with no source in it: the installed package, not the tree.
(cd /tmp && "$OLDPWD/$venv/bin/python" -c "import xreduce, numpy; print(xreduce.sum(numpy.ones(10)))")
cd python/tests
exec "../../$venv/bin/python" -m pytest -q "$@"
