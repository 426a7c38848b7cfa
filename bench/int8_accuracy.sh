#!/usr/bin/env bash
# The int8 accuracy gate on a Fashion-MNIST demo run (issue 35): zero-shot top-1 and retrieval
# R@1 of `openclip eval` at fp32 and int8 on the 10,000 test images, and the per-image cosine
# between the fp32 and int8 image embeddings (`openclip embed`).
#   bench/int8_accuracy.sh RUN_DIR DATA_DIR   (RUN_DIR: logs/<name> of `openclip demo --out DATA_DIR`)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=$1 DATA=$2
BIN=${OPENCLIP_BINARY:-build/openclip}
CKPT=$(ls -t "$RUN"/checkpoints/*.safetensors "$RUN"/checkpoints/*.pt 2>/dev/null | head -1 || true)
TEST=$(ls "$DATA"/fmnist/test/*.tar | sort | sed -n "1p;\$p" | tr "\n" " ")
first=$(basename $(echo $TEST | cut -d' ' -f1) .tar) last=$(basename $(echo $TEST | cut -d' ' -f2) .tar)
SHARDS="$DATA/fmnist/test/{$first..$last}.tar"
OUT=${OUT:-build/int8_accuracy}
IMGS=${IMGS:-$OUT/test-images}  # the test shards' images, for embed (which reads files, not shards)
mkdir -p "$OUT" "$IMGS"
[[ -n $(ls "$IMGS") ]] || for t in "$DATA"/fmnist/test/*.tar; do tar xf "$t" -C "$IMGS" --wildcards '*.png'; done
for p in fp32 int8; do
  "$BIN" eval --model fmnist-S --pretrained "$CKPT" --val-data "$SHARDS" --dataset-type webdataset \
    --zeroshot-data "$SHARDS" --zeroshot-classnames "$DATA/fmnist/fashion_mnist_zeroshot.json" \
    --precision $p --batch-size 250 >"$OUT/eval_$p.txt" 2>&1 || { tail -5 "$OUT/eval_$p.txt"; exit 1; }
  "$BIN" embed --model fmnist-S --pretrained "$CKPT" --images "$IMGS" --precision $p --out "$OUT/img_$p.npy" \
    >"$OUT/embed_$p.txt" 2>&1 || { tail -5 "$OUT/embed_$p.txt"; exit 1; }
done
grep -h -o "zeroshot[^|]*top1[^,|]*\|image_to_text_R@1.*\|text_to_image_R@1.*" "$OUT"/eval_fp32.txt | sed 's/^/fp32 /' || true
grep -h -o "zeroshot[^|]*top1[^,|]*\|image_to_text_R@1.*\|text_to_image_R@1.*" "$OUT"/eval_int8.txt | sed 's/^/int8 /' || true
"${PYTHON:-.venv-bench/peers/bin/python}" - "$OUT" <<'PY'
import sys, numpy as np
d = sys.argv[1]
a, b = np.load(f"{d}/img_fp32.npy"), np.load(f"{d}/img_int8.npy")
c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
print(f"images {len(c)}  cosine int8 vs fp32: min {c.min():.5f}  mean {c.mean():.5f}  p1 {np.percentile(c, 1):.5f}  below 0.99: {(c < 0.99).sum()}")
PY
