#!/usr/bin/env bash
# `openclip serve` under load on loopback (docs/BENCHMARKS.md, "Serve"): wrk at concurrency
# 1, 16 and 64 for text and image embedding, next to `openclip bench infer`; search latency
# on a 100,000-vector index; index build images/s. Random ViT-B-32 weights (speed only).
# Usage: scripts/bench_serve.sh [build/openclip]   (env: MODEL, DUR, PORT)
set -euo pipefail
BIN=${1:-build/openclip}
MODEL=${MODEL:-ViT-B-32}
DUR=${DUR:-20s}
PORT=${PORT:-18080}
work=$(mktemp -d)
srv=""
trap '[[ -n $srv ]] && kill $srv 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc $(nproc)"
echo "== bench infer (batch 32, fp32)   load: $(cat /proc/loadavg)"
"$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 2>&1 | grep -E 'images/s'
# Like for like for the text requests: the request text below is 11 tokens with start and end.
echo "== bench infer (batch 32, fp32, 11-token texts as the requests)   load: $(cat /proc/loadavg)"
"$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 --text-len 11 2>&1 | grep -E 'texts/s'

/usr/bin/python3 - "$work" <<'PY'
import base64, io, json, sys
from PIL import Image
import numpy as np
work = sys.argv[1]
img = Image.fromarray((np.random.default_rng(0).random((256, 320, 3)) * 255).astype('uint8'))
buf = io.BytesIO(); img.save(buf, 'JPEG', quality=90)
open(f'{work}/image.json', 'w').write(json.dumps({'image': base64.b64encode(buf.getvalue()).decode()}))
open(f'{work}/text.json', 'w').write(json.dumps({'text': 'a photo of a dog playing in the snow'}))
PY
for kind in text image; do
  cat > "$work/$kind.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/$kind.json"); wrk.body = f:read("*a"); f:close()
LUA
done

"$BIN" serve --model "$MODEL" --random-init --port "$PORT" --max-batch 32 --max-wait-ms 5 >"$work/serve.log" 2>&1 &
srv=$!
until grep -q listening "$work/serve.log"; do sleep 0.5; kill -0 $srv; done
for kind in text image; do
  for c in 1 16 64; do
    echo "== $kind  concurrency $c  load: $(cat /proc/loadavg)"
    wrk -t $(( c < 2 ? 1 : 2 )) -c $c -d "$DUR" --timeout 60s --latency -s "$work/$kind.lua" \
        "http://127.0.0.1:$PORT/v1/embed/$kind" | grep -E 'Requests/sec|  50%|  99%|Non-2xx|Socket errors'
  done
done
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^openclip_batch_size_(sum|count)'
kill $srv; wait $srv || true
