#!/usr/bin/env bash
# OpenAI's Python SDK (the `openai` package from PyPI) as a test client of `openclip serve`'s
# /v1/embeddings: a venv at $1 (default build/venv-openai, git-ignored) made with Debian's
# /usr/bin/python3 and --system-site-packages (numpy from Debian; the SDK decodes base64
# embeddings with it). Idempotent: does nothing when the venv already imports openai.
# Exit 0 and print the venv's python on success; exit 77 (the tests' "skip") with the reason
# when it cannot be made (no network to PyPI, no venv module).
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-build/venv-openai}
PY=$VENV/bin/python
check() { [[ -x $PY ]] && $PY -c 'import openai, numpy' 2>/dev/null; }
if check; then echo "$PY"; exit 0; fi
[[ -x /usr/bin/python3 ]] || { echo "setup_openai_venv: no /usr/bin/python3" >&2; exit 77; }
[[ -x $PY ]] || /usr/bin/python3 -m venv --system-site-packages "$VENV" >&2 ||
  { echo "setup_openai_venv: python3 -m venv failed (python3-venv missing?)" >&2; exit 77; }
# openai 1.x pinned: the request shape the tests check is the one this version sends.
$PY -m pip install -q --disable-pip-version-check --timeout 30 'openai==1.57.0' >&2 ||
  { echo "setup_openai_venv: pip install openai failed (no access to PyPI?)" >&2; exit 77; }
check || { echo "setup_openai_venv: $VENV does not import openai" >&2; exit 77; }
echo "$PY"
