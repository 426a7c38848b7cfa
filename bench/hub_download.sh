#!/usr/bin/env bash
# Hub download figures (docs/BENCHMARKS.md, "Hugging Face hub downloads"): a ViT-B-32 with random
# weights saved by OpenCLIP (open_clip_config.json + open_clip_model.safetensors, 605 MB) served
# by bench/hub_server.py on 127.0.0.1; per round, in alternation, a cold download by
# `openclip embed --pretrained hf-hub:bench/vitb32` (its "downloaded ... MB/s" line) and by
# huggingface_hub.hf_hub_download (.pyref), each into an empty cache; then the time from
# `openclip embed --pretrained hf-hub:bench/vitb32` to its first embedding (one image) with the
# cache warm (the server still up: one HEAD per file, as huggingface_hub makes). Prints Markdown rows.
#   bench/hub_download.sh [ROUNDS]   (OPENCLIP_BINARY: default build/openclip)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
BIN=${OPENCLIP_BINARY:-build/openclip}
PY=.pyref/bin/python
W=$(mktemp -d /tmp/hub_bench.XXXXXX)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$W"' EXIT
$PY - "$W" <<'PYEOF'
import os, sys, json, torch, numpy as np, safetensors.torch, open_clip
from PIL import Image
d = sys.argv[1]
os.makedirs(f"{d}/repo")
torch.manual_seed(0)
m = open_clip.create_model("ViT-B-32")
safetensors.torch.save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{d}/repo/open_clip_model.safetensors")
cfg = json.load(open(os.path.join(os.path.dirname(open_clip.__file__), "model_configs", "ViT-B-32.json")))
json.dump({"model_cfg": cfg, "preprocess_cfg": {}}, open(f"{d}/repo/open_clip_config.json", "w"))
Image.fromarray(np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(f"{d}/one.png")
PYEOF
PORT=$((20000 + RANDOM % 20000))
$PY bench/hub_server.py $PORT bench/vitb32 "$W/repo" &
SERVER=$!
sleep 1
export HF_ENDPOINT=http://127.0.0.1:$PORT
SIZE=$(stat -c %s "$W/repo/open_clip_model.safetensors")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; file $SIZE bytes; $($BIN --version 2>/dev/null | head -1)"
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$W/c1" "$W/c2"
  t0=$(date +%s.%N)
  HF_HUB_CACHE=$W/c1 $BIN embed --pretrained hf-hub:bench/vitb32 --images "$W/one.png" --out "$W/e.npy" >"$W/log" 2>&1
  t1=$(date +%s.%N)
  ours=$(grep -o 'downloaded bench/vitb32/open_clip_model.safetensors: .*' "$W/log" | sed 's/.*(\(.*\) MB\/s)/\1/')
  theirs=$(HF_HUB_CACHE=$W/c2 HF_HUB_DISABLE_PROGRESS_BARS=1 $PY -c "
import time; from huggingface_hub import hf_hub_download
t = time.perf_counter(); p = hf_hub_download('bench/vitb32', 'open_clip_model.safetensors'); dt = time.perf_counter() - t
import os; print(f'{os.path.getsize(p) / 1e6 / dt:.1f}')")
  echo "| round $r | ours $ours MB/s | huggingface_hub $theirs MB/s | ours embed incl. download $(echo "$t1 - $t0" | bc) s | load $(cut -d' ' -f1 /proc/loadavg) |"
done
for r in $(seq 1 "$ROUNDS"); do
  t0=$(date +%s.%N)
  HF_HUB_CACHE=$W/c1 $BIN embed --pretrained hf-hub:bench/vitb32 --images "$W/one.png" --out "$W/e.npy" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "| warm round $r | embed to first embedding $(echo "$t1 - $t0" | bc) s | load $(cut -d' ' -f1 /proc/loadavg) |"
done
