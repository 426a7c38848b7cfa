#!/usr/bin/env bash
# The main job: setup, build, then `openclip demo` (Fashion-MNIST end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/openclip demo "$@"
