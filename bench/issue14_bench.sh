#!/usr/bin/env bash
# Issue 14's figures, ours and the PyTorch peer back to back (docs/BENCHMARKS.md, "Compute
# core v2"). Prints one JSON line per measurement with the load average before it.
# Usage: bench/issue14_bench.sh [BINARY]   (default build/openclip)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/openclip}
PY="/usr/bin/python3 tests/reference/bench_torch.py"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) $(nproc) cores"
run() { echo "# load $(cut -d' ' -f1-3 /proc/loadavg): $*"; "$@" --json 2>/dev/null || echo "{\"failed\": \"$*\"}"; }
run $B bench train --model ViT-B-32 --batch-size 64 --precision amp_bf16 --steps 3
run $PY --model ViT-B-32 --mode train --batch-size 64 --precision pure_bf16 --steps 2 --threads 2
run $B bench infer --model ViT-B-32 --batch-size 64 --precision amp_bf16 --steps 3
run $PY --model ViT-B-32 --mode infer_image --batch-size 64 --precision pure_bf16 --steps 2 --threads 2
run $B bench train --model ViT-B-32 --batch-size 32 --precision fp32 --steps 2
run $PY --model ViT-B-32 --mode train --batch-size 32 --precision fp32 --steps 2 --threads 2
echo "# load $(cut -d' ' -f1-3 /proc/loadavg): end"
