#!/usr/bin/env bash
# The test command: setup, build, then the default test suite (ctest). Long runs carry the
# ctest label "long" and are excluded here: run them with `ctest --test-dir build -L long`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -LE long -j 2 --timeout 900 "$@"
