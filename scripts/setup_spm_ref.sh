#!/usr/bin/env bash
# The SentencePiece test references: a project-local venv (.spmref/, git-ignored) made with
# Debian's /usr/bin/python3, holding Google's `sentencepiece` and Hugging Face's `tokenizers`
# (the Rust library transformers' T5TokenizerFast runs, which OpenCLIP 2.24's HFTokenizer uses
# for the SigLIP configs) and ftfy (OpenCLIP's basic_clean), all pinned. Used only by
# tests/reference/spm_ref.py to (re)generate tests/text/data/spm/ and by the test that
# regenerates and compares; the C++ tests themselves read the committed files. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.spmref
PY=$VENV/bin/python
PKGS=(sentencepiece==0.2.0 tokenizers==0.19.1 ftfy==6.1.3 wcwidth==0.2.13)
check() {
  [[ -x $PY ]] && $PY -c 'import sentencepiece as s, tokenizers as t, ftfy
assert s.__version__ == "0.2.0" and t.__version__ == "0.19.1"' 2>/dev/null
}
if check; then echo "setup_spm_ref: ok ($VENV)"; exit 0; fi
[[ -x $PY ]] || /usr/bin/python3 -m venv "$VENV"
# --no-deps: tokenizers would pull huggingface_hub (for from_pretrained), unused here.
$PY -m pip install -q --disable-pip-version-check --no-deps "${PKGS[@]}"
check || { echo "setup_spm_ref: $VENV does not import sentencepiece 0.2.0 / tokenizers 0.19.1" >&2; exit 1; }
echo "setup_spm_ref: ok ($VENV)"
