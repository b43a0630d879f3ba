#!/usr/bin/env bash
# On the device: restores .device-build/bin and lib from the archive that
# `XREDUCE_BUNDLE_PACK=1 scripts/device-bundle.sh` made (Python's tarfile: the device image may
# lack xz).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .device-build/bundle.tar.xz ] || { echo "device-unpack: no .device-build/bundle.tar.xz" >&2; exit 1; }
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device-build/bundle.tar.xz .device-build
du -sh .device-build/bin .device-build/lib
