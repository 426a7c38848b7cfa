#!/usr/bin/env bash
# The figures of docs/BENCHMARKS.md, ours and the PyTorch peer (tests/reference/bench_torch.py,
# the same model in Debian's torch 1.13 with OpenBLAS) measured in one run on this machine.
# Prints one JSON line per measurement; `scripts/bench.sh quick` runs the short set.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build/openclip
PY="/usr/bin/python3 tests/reference/bench_torch.py"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { echo "\$ $*" >&2; "$@" --json 2>/dev/null || echo "{\"failed\": \"$*\"}"; }
run $B bench train --model ViT-B-32 --batch-size 32 --precision fp32 --steps 2
run $PY --model ViT-B-32 --mode train --batch-size 32 --precision fp32 --steps 2 --threads 2
run $B bench train --model ViT-B-32 --batch-size 32 --precision amp_bf16 --steps 2
run $B bench infer --model ViT-B-32 --batch-size 64 --precision fp32 --steps 2
run $B bench infer --model ViT-B-32 --batch-size 64 --precision amp_bf16 --steps 2
run $PY --model ViT-B-32 --mode infer_image --batch-size 64 --precision fp32 --steps 2 --threads 2
run $PY --model ViT-B-32 --mode infer_text --batch-size 64 --precision fp32 --steps 2 --threads 2
[[ ${1:-} == quick ]] && exit 0
run $B bench train --model ViT-B-32 --batch-size 128 --precision amp_bf16 --steps 2
run $B bench train --model ViT-B-32 --batch-size 128 --precision fp32 --steps 2
run $B bench zeroshot --model ViT-B-32 --precision amp_bf16 --classes 1000 --templates 80 --images 256
run $PY --model ViT-B-32 --mode zeroshot --precision fp32 --classes 10 --templates 80 --images 128 --batch-size 64 --threads 2
run $B bench train --model fmnist-S --batch-size 128 --precision fp32 --steps 10 --text-len 12
