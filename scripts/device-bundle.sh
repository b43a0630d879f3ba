#!/usr/bin/env bash
# Gathers what scripts/gpu-check.sh needs on another machine into .device-build/ (bin/ and lib/,
# with the build's $ORIGIN-relative run paths): the test and benchmark binaries, the libraries
# and plugins, and the shared libraries such a machine may lack (oneTBB, toml++, libgomp, and MPFR
# and GMP, the exact sums' reference in the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
# The device tool carries at most 64 MiB, and each benchmark program holds the kernels (about
# 18 MB): by default, what scripts/gpu-check.sh runs (xreduce_bench for its GPU suites, the host
# benchmark); name others after the build folder (scripts/device-bundle.sh build/release xreduce xreduce_bench),
# or pack them (XREDUCE_BUNDLE_PACK=1, below).
build=${1:-build/release}
shift || true
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(xreduce xreduce_conformance xreduce_gpu_tests xreduce_gpu_custom_tests
  xreduce_example_farthest_point_gpu xreduce_bench xreduce_bench_gpu_host)
rm -rf .device-build
mkdir -p .device-build/bin .device-build/lib
for p in "${programs[@]}"; do cp "$build/bin/$p" .device-build/bin/; done
cp -P "$build"/lib/libxreduce*.so* .device-build/lib/  # the core, the CUDA module, xreduce_mpi: those built
known=$(ldconfig -p)  # read whole: a reader that stops early would make pipefail end the script
for lib in libtbb.so.12 libtomlplusplus.so.3 libgomp.so.1 libmpfr.so.6 libgmp.so.10; do
  path=$(awk -v l="$lib" '$1 == l { print $NF; exit }' <<<"$known")
  if [ -n "$path" ]; then cp -L "$path" .device-build/lib/; else echo "device-bundle: $lib not found here" >&2; fi
done
strip --strip-unneeded .device-build/bin/* .device-build/lib/* 2>/dev/null || true
# XREDUCE_BUNDLE_PACK=1: one xz archive instead; scripts/device-unpack.sh restores bin/ and lib/
# on the device, with Python alone. The kernels compress about sevenfold, and the benchmark
# programs hold the same kernels as the CUDA module, byte for byte: a dictionary larger than one
# of them (256 MiB; xz's presets stop at 64) stores them once. The module, the tests and
# xreduce_bench: 40 MB at xz -5, 22 MB so, which leaves the working tree room beside them in the
# device tool's 64 MiB. Compressing takes about 2.7 GB of memory and two minutes.
if [ "${XREDUCE_BUNDLE_PACK:-0}" = 1 ]; then
  tar -C .device-build -cf - lib bin | xz -T1 --lzma2=preset=6,dict=256MiB > .device-build/bundle.tar.xz
  rm -rf .device-build/bin .device-build/lib
fi
du -sh .device-build
