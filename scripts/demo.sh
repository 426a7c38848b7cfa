#!/usr/bin/env bash
# The main job on the embedded default: Fashion-MNIST end to end with the openclip CLI.
# Set-up and build, import the dataset into webdataset shards (once), train the small
# fmnist-S CLIP from scratch on the CPU, evaluate zero-shot top-1/top-5 on the 10,000 test
# images with prompts not used in training, and print the result as one JSON line.
# Knobs (environment): SAMPLES (per epoch, default 12800), EPOCHS (2), OUT (data/demo).
# (`openclip demo` with a tuned schedule and an HTML report is the next step: issue 8.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
B=build/openclip
OUT=${OUT:-data/demo}
SAMPLES=${SAMPLES:-12800}
EPOCHS=${EPOCHS:-2}
$B info
$B data fashion-mnist --out "$OUT/fmnist"
NAME="fmnist-$(date +%Y_%m_%d-%H_%M_%S)"
start=$(date +%s)
$B train --train-data "$OUT/fmnist/train/{00000..00029}.tar" --dataset-type webdataset \
  --train-num-samples "$SAMPLES" --batch-size 256 --epochs "$EPOCHS" --model fmnist-S \
  --lr 1e-3 --wd 0.1 --warmup 20 --beta2 0.98 --eps 1e-6 --workers 2 --precision fp32 \
  --logs "$OUT/logs" --name "$NAME" --report-to tensorboard --log-every-n-steps 10 \
  --zeroshot-data "$OUT/fmnist/test/{00000..00004}.tar" \
  --zeroshot-classnames "$OUT/fmnist/fashion_mnist_zeroshot.json" --zeroshot-frequency 1
secs=$(( $(date +%s) - start ))
RUN="$OUT/logs/$NAME"
last=$(tail -n 1 "$RUN/checkpoints/results.jsonl")
/usr/bin/python3 - "$last" "$secs" "$RUN" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print(json.dumps({"zeroshot_top1": r.get("fashion-mnist-zeroshot-top1"), "zeroshot_top5": r.get("fashion-mnist-zeroshot-top5"),
                  "train_seconds": int(sys.argv[2]), "run_dir": sys.argv[3]}))
PY
