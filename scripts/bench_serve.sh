#!/usr/bin/env bash
# `openclip serve` under load on loopback (docs/BENCHMARKS.md, "Serve"; docs/SERVE.md): wrk at
# concurrency 16, 64 and 256 for text and image embedding (requests/s, p50/p99, socket
# errors, the server's peak RSS), next to `openclip bench infer`; with BEFORE=<older
# openclip> the concurrency-16 runs also against it, interleaved with ours so both see the
# same load; then the hostile clients of scripts/serve_hostile.py. Random ViT-B-32 weights
# (speed only). The machine may be shared: every figure is printed with the load average.
# Every wrk run gets a fresh server: requests a previous run left queued would hold places
# in --max-queue and turn the next run's first requests into 503s.
# Usage: scripts/bench_serve.sh [build/openclip]   (env: MODEL, DUR, PORT, CONC, BEFORE, INFER=0, HOSTILE=0)
set -euo pipefail
BIN=${1:-build/openclip}
MODEL=${MODEL:-ViT-B-32}
DUR=${DUR:-20s}
PORT=${PORT:-18080}
CONC=${CONC:-16 64 256}
BEFORE=${BEFORE:-}
work=$(mktemp -d)
srv=""
trap '[[ -n $srv ]] && kill $srv 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc $(nproc)  duration $DUR per run"
if [[ ${INFER:-1} == 1 ]]; then
  echo "== bench infer (batch 32, fp32)   load: $(cat /proc/loadavg)"
  "$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 2>&1 | grep -E 'images/s'
  # Like for like for the text requests: the request text below is 11 tokens with start and end.
  echo "== bench infer (batch 32, fp32, 11-token texts as the requests)   load: $(cat /proc/loadavg)"
  "$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 --text-len 11 2>&1 | grep -E 'texts/s'
fi

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

start() {  # start BIN: a server on $PORT
  rm -f "$work/serve.log"  # not the last server's "listening"
  "$1" serve --model "$MODEL" --random-init --port "$PORT" --max-batch 32 --max-wait-ms 5 >"$work/serve.log" 2>&1 &
  srv=$!
  until grep -qs listening "$work/serve.log"; do sleep 0.5; kill -0 $srv; done
}
stop() { kill $srv; wait $srv || true; srv=""; }
peak() { echo "server peak RSS $(awk '/VmHWM/ {printf "%.0f MB", $2/1024}' /proc/$srv/status)"; }
bench() {  # label kind concurrency
  echo "== $1 $2  concurrency $3  load: $(cat /proc/loadavg)"
  wrk -t $(( $3 < 2 ? 1 : 2 )) -c "$3" -d "$DUR" --timeout 60s --latency -s "$work/$2.lua" \
      "http://127.0.0.1:$PORT/v1/embed/$2" >"$work/wrk.out"
  grep -E 'Requests/sec|  50%|  99%|Non-2xx' "$work/wrk.out"
  grep -q 'Socket errors' "$work/wrk.out" && grep 'Socket errors' "$work/wrk.out" || echo "  Socket errors: none"
}

if [[ -n $BEFORE ]]; then  # concurrency 16, before and after, alternating
  for kind in text image; do
    for round in 1 2; do
      for who in before after; do
        start "$([[ $who == before ]] && echo "$BEFORE" || echo "$BIN")"
        bench "$who (round $round)" $kind 16
        stop
      done
    done
  done
fi
for kind in text image; do
  for c in $CONC; do
    start "$BIN"
    bench after $kind "$c"
    peak
    curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^openclip_batch_size_(sum|count)|^openclip_queue_rejected' | tr '\n' ' '
    echo
    stop
  done
done
[[ ${HOSTILE:-1} == 1 ]] && /usr/bin/python3 "$(dirname "$0")/serve_hostile.py" "$BIN"
exit 0
