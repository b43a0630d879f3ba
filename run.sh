#!/usr/bin/env bash
# The main job: install what is missing, build in Release, and run the xreduce tour.
# Arguments go to the xreduce command: ./run.sh list, ./run.sh validate --op sum --dtype f32 --n 134217728
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
scripts/build.sh release
exec build/release/bin/xreduce "$@"
