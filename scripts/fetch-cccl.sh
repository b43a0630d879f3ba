#!/usr/bin/env bash
# Fetches CCCL headers newer than the CUDA toolkit's, for the exact benchmark's CUB determinism
# columns (CUB's gpu_to_gpu needs CCCL 3.1 or later; CUDA 13.0 ships 3.0.1): the nvidia-cuda-cccl
# wheel from PyPI, unpacked under BUILD_DIR/cccl. Prints the include folder to configure with:
#
#   scripts/fetch-cccl.sh [BUILD_DIR] [VERSION]     (defaults: build/release, 13.3.5.0.6)
#   cmake -S . -B build/release -DXREDUCE_CCCL_INCLUDE="$(scripts/fetch-cccl.sh)"
#
# Nothing of the library is built against these headers: only bench/suites/gpu_cub_determinism.cu.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
version=${2:-13.3.5.0.6}
dest="$build/cccl/$version"
include="$dest/nvidia/cu13/include/cccl"
if [ ! -f "$include/cub/device/device_reduce.cuh" ]; then
  mkdir -p "$dest"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dest" "nvidia-cuda-cccl==$version" >&2
  python3 -m zipfile -e "$dest"/nvidia_cuda_cccl-*.whl "$dest"
fi
[ -f "$include/cub/device/device_reduce.cuh" ] || { echo "fetch-cccl: no CUB headers in the wheel at $include" >&2; exit 1; }
realpath "$include"
