#!/usr/bin/env bash
# The test command: setup, build, then the default test suite (ctest). Long runs carry the
# ctest label "long" and are excluded here: run them with `ctest --test-dir build -L long`.
# Under CI=true (set by .ci/run), or with OPENCLIP_CHECK=1, it then runs scripts/check.sh:
# the ASan+UBSan build of the parser modules' tests and every fuzz target for 30 s
# (OPENCLIP_CHECK_SECONDS to change).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -LE long -j 2 --timeout 900 "$@"
if [[ ${CI:-} == true || ${OPENCLIP_CHECK:-0} == 1 ]]; then
  OPENCLIP_CHECK_TESTS=parsers scripts/check.sh "${OPENCLIP_CHECK_SECONDS:-30}"
fi
