#!/usr/bin/env bash
# openclip-cpp's encoders against ONNX Runtime and OpenVINO (the engines CPU users deploy):
# ViT-B-32, ViT-B-16 and RN50 encode_image at fp32 / bf16 / int8, batch 64 and 1, and ViT-B-32's
# encode_text at batch 64, alternating ours and theirs in the same rounds (bench/compare_peers.py).
#   bench/compare_peers.sh [--rounds N] [--only REGEX] [--quick] [--list] [--threads N]
# (bench/compare.sh --peers ... runs this too.)
# Its environment (.venv-bench/peers/, git-ignored) is made once from PyPI: onnx, onnxruntime,
# openvino, nncf (OpenVINO's int8 post-training quantization), numpy. The ONNX models are
# OpenCLIP's encoders exported once each (build/peers/MODEL-TOWER.onnx) with torch.onnx.export
# by a Python with torch and open_clip (OPENCLIP_EXPORT_PYTHON, default .pyref/bin/python:
# open_clip 2.24 on torch 1.13, the same module graphs as 3.3's, which needs torch 2).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPENCLIP_PEERS_VENV:-.venv-bench/peers}
if [[ ! -f $VENV/.ok ]]; then
  echo "compare_peers: creating $VENV from PyPI (once)" >&2
  [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet onnx onnxruntime openvino nncf numpy \
    || { echo "compare_peers: pip install from PyPI failed: onnx onnxruntime openvino nncf numpy" >&2; exit 1; }
  touch "$VENV/.ok"
fi
exec "$VENV/bin/python" bench/compare_peers.py "$@"
