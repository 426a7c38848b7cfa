#!/usr/bin/env bash
# lizard (a C/C++ function parser from PyPI) for the function-length check
# (scripts/function_lengths.py, ctest `function_lengths`): a project-local venv (.lizard/,
# git-ignored) made with Debian's /usr/bin/python3, holding lizard and its two dependencies,
# pinned and installed with --no-deps. Idempotent: does nothing when the venv already imports
# lizard at the pinned version. The check skips with the reason when .lizard/ is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.lizard
PY=$VENV/bin/python
VERSION=1.24.3
check() { [[ -x $PY ]] && $PY -c "import lizard; assert lizard.version == '$VERSION'" 2>/dev/null; }
if check; then echo "setup_lizard: ok ($VENV)"; exit 0; fi
[[ -x $PY ]] || /usr/bin/python3 -m venv "$VENV"
$PY -m pip install -q --disable-pip-version-check --no-deps lizard==$VERSION pathspec==1.1.1 Pygments==2.21.0
check || { echo "setup_lizard: $VENV does not import lizard $VERSION" >&2; exit 1; }
echo "setup_lizard: ok ($VENV: lizard $VERSION)"
