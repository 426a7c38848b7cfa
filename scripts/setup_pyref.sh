#!/usr/bin/env bash
# OpenCLIP 2.24.0 itself as a test reference: a project-local venv (.pyref/, git-ignored) made
# with Debian's /usr/bin/python3 on top of Debian's torch 1.13 and torchvision 0.14
# (--system-site-packages), holding open-clip-torch and what it imports at module load, all
# pinned and installed with --no-deps so pip never pulls a second torch. Idempotent: does
# nothing when the venv already imports open_clip 2.24.0. Tests that need it skip with the
# reason when .pyref/ is missing (tests/test_util.h: have_open_clip()).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.pyref
PY=$VENV/bin/python
check() { [[ -x $PY ]] && $PY -c 'import open_clip, open_clip.version as v, torch, webdataset, ftfy; assert v.__version__ == "2.24.0"' 2>/dev/null; }
if check; then echo "setup_pyref: ok ($VENV)"; exit 0; fi
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
  { echo "setup_pyref: needs Debian's python3-torch and python3-torchvision (scripts/setup.sh)" >&2; exit 1; }
[[ -x $PY ]] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
# open_clip imports ftfy, regex, tqdm, huggingface_hub, timm (and safetensors through timm) when
# it loads; its training code adds webdataset and braceexpand. Versions of early 2024 (the
# 2.24.0 release), which still support torch 1.13.
PKGS=(open-clip-torch==2.24.0 ftfy==6.1.3 wcwidth==0.2.13 tqdm==4.66.2 huggingface-hub==0.20.3
      filelock==3.13.1 fsspec==2024.2.0 packaging==23.2 timm==0.9.16 safetensors==0.4.2
      webdataset==0.2.86 braceexpand==0.1.7)
$PY -m pip install -q --disable-pip-version-check --no-deps "${PKGS[@]}"
check || { echo "setup_pyref: $VENV does not import open_clip 2.24.0 with Debian's torch" >&2; exit 1; }
echo "setup_pyref: ok ($VENV: open_clip $($PY -c 'import open_clip; import open_clip.version as v; print(v.__version__)'), torch $($PY -c 'import torch; print(torch.__version__)'))"
