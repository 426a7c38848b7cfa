#!/usr/bin/env bash
# openclip-cpp's encode_image against ONNX Runtime and OpenVINO (the engines CPU users deploy),
# fp32 / bf16 / int8 at batch 64 and 1, alternating ours and theirs in the same rounds.
#   bench/compare_peers.sh [--rounds N] [--only REGEX] [--quick]
# Its environment (.venv-bench/peers/, git-ignored) is made once from PyPI: onnx, onnxruntime,
# openvino, nncf (OpenVINO's int8 post-training quantization), numpy. The ONNX model is OpenCLIP's
# ViT-B-32 image encoder exported once with torch.onnx.export by a Python with torch and open_clip
# (OPENCLIP_EXPORT_PYTHON, default .pyref/bin/python: open_clip 2.24, the same ViT-B-32 graph as 3.3).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPENCLIP_PEERS_VENV:-.venv-bench/peers}
if [[ ! -f $VENV/.ok ]]; then
  echo "compare_peers: creating $VENV from PyPI (once)" >&2
  [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet onnx onnxruntime openvino nncf numpy
  touch "$VENV/.ok"
fi
ONNX=build/peers/ViT-B-32.onnx
if [[ ! -f $ONNX ]]; then
  mkdir -p build/peers
  "${OPENCLIP_EXPORT_PYTHON:-.pyref/bin/python}" bench/peers_export.py "$ONNX" ViT-B-32
fi
exec "$VENV/bin/python" bench/compare_peers.py --onnx "$ONNX" "$@"
