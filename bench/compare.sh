#!/usr/bin/env bash
# The one source of every published ratio: openclip-cpp against OpenCLIP on PyTorch 2.x, on this
# machine, in one run, alternating ours and theirs (A B A B ...), median and spread per figure:
# ViT-B-32 (training, encode_image/text, latency), RN50, ViT-B-16-SigLIP, ConvNeXt-B and EVA02-B-16
# (training with their losses, encode_image), the tokenizer and the data loader.
# Prints a markdown table (CPU model, ISA flags, load average, date) and writes it into
# docs/BENCHMARKS.md and the README, one section per CPU kind between markers, replaced on each run.
#
#   bench/compare.sh [--quick] [--rounds N] [--only REGEX] [--no-write] [--fresh]
#   bench/compare.sh --peers [--quick] [--rounds N] [--only REGEX] [--list]
#
#   --peers     instead: ours against the engines CPU users deploy, ONNX Runtime and OpenVINO
#               (fp32/bf16/int8, ViT-B-32, ViT-B-16, RN50 images, ViT-B-32 texts), in their own
#               environment: bench/compare_peers.sh with the flags that follow (its --only takes
#               its row ids, e.g. 'vit-b-32/image_int8'); prints its table, writes no docs
#
#   --quick     a few seconds per figure, 1 round, torch.compile skipped, nothing written
#               (ctest -L long runs it so the script cannot rot)
#   --rounds N  rounds of A B per figure (default 3)
#   --only RE   measure only the figures whose id matches RE (e.g. 'train|image_b64', 'rn50');
#               the section is still rewritten whole: the other rows keep their earlier
#               measurements, and every row says when and at which commit it was measured
#   --fresh     forget the earlier measurements of the figures measured (default: resume an
#               interrupted run)
#
# Their side runs in a project-local environment made once from PyPI (.venv-bench/, git-ignored):
# torch 2.15.0 (with the CUDA wheels it names: it does not import without them), torchvision
# 0.29.2, open-clip-torch 3.3.0. Ours is build/openclip
# (OPENCLIP_BINARY to pick another). Measurements go to build/compare/<kind>/results.jsonl, so a
# run that is stopped resumes where it was (one JSON line per measurement).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --peers ]]; then
  shift
  exec bench/compare_peers.sh "$@"
fi

VENV=${OPENCLIP_BENCH_VENV:-.venv-bench/torch2}
PIP_PKGS=(torch==2.15.0 torchvision==0.29.2 open-clip-torch==3.3.0 timm==1.0.31
  numpy pillow regex ftfy wcwidth tqdm safetensors pyyaml filelock fsspec packaging
  requests idna certifi charset-normalizer urllib3 typing-extensions sympy mpmath networkx jinja2 markupsafe)
PIP_WITH_DEPS=(huggingface-hub==2.4.0 "setuptools>=77.0.3")  # no torch among their requirements

# The environment: created once. torch, torchvision, open_clip and their Python requirements go in
# with --no-deps (the list above); then the CUDA wheels torch names (nvidia-*, cuda-toolkit; ~3 GB),
# because PyPI's Linux torch does not import without them (2.15.0: libtorch needs libcufile.so.0),
# and triton is left out (a GPU compiler; torch.compile on a CPU does not use it).
ensure_env() {
  [[ -f $VENV/.ok ]] && return
  echo "compare: creating $VENV from PyPI (once)" >&2
  command -v python3 >/dev/null || { echo "compare: python3 not found" >&2; exit 1; }
  # An interrupted creation is resumed: pip skips what is already installed.
  [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV" \
    || { echo "compare: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
  "$VENV/bin/python" -m pip install --quiet --no-deps "${PIP_PKGS[@]}" \
    || { echo "compare: pip install from PyPI failed: ${PIP_PKGS[*]}" >&2; exit 1; }
  "$VENV/bin/python" -m pip install --quiet "${PIP_WITH_DEPS[@]}" \
    || { echo "compare: pip install from PyPI failed: ${PIP_WITH_DEPS[*]}" >&2; exit 1; }
  "$VENV/bin/python" - >"$VENV/cuda-reqs.txt" <<'PY' || { echo "compare: could not read torch's requirements" >&2; exit 1; }
import importlib.metadata as m
from packaging.requirements import Requirement
for r in m.requires("torch") or []:
    q = Requirement(r)
    if q.name.startswith(("nvidia", "cuda")) and (q.marker is None or q.marker.evaluate()):
        print(str(q).split(";")[0].strip())
PY
  "$VENV/bin/python" -m pip install --quiet -r "$VENV/cuda-reqs.txt" \
    || { echo "compare: pip install of torch's CUDA wheels failed: $(tr '\n' ' ' <"$VENV/cuda-reqs.txt")" >&2; exit 1; }
  "$VENV/bin/python" -c 'import torch, open_clip; torch.ones(2) @ torch.ones(2)' \
    || { echo "compare: the environment does not import torch and open_clip" >&2; exit 1; }
  touch "$VENV/.ok"
}

ensure_env
exec "$VENV/bin/python" bench/compare.py "$@"
