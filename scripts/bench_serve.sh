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
#
# FIGURE=1: instead, serve's image throughput against `bench infer` at the same batch and
# precision (issue 35's goal: serve --precision int8 within 10% of bench infer), both from one
# run, ROUNDS times alternated: bench infer --tower image --batch-size BATCH, then a server with
# --max-batch BATCH fed by FIGURE_CONC (3) keep-alive clients (scripts/serve_throughput.py: the
# rate between the first and the last answer), each request carrying BATCH IMAGE_SIZE-pixel
# JPEGs ({"images": [...]}, one full batch per request; a warm-up request first), so a batch is
# always waiting while one runs. Prints images/s of both and their ratio, the CPU seconds per
# batch of both (bench infer's; the server process's over the window), the server's mean batch. The server's figure includes what bench infer leaves
# out: HTTP, base64 and JPEG decoding, preprocessing and the reply, on the same cores.
#   FIGURE=1 [PRECISION=int8] [BATCH=64] [DUR=60s] [ROUNDS=1] [IMAGE_SIZE=224] scripts/bench_serve.sh [BIN]
set -euo pipefail
BIN=${1:-build/openclip}
MODEL=${MODEL:-ViT-B-32}
DUR=${DUR:-$([[ ${FIGURE:-0} == 1 ]] && echo 60s || echo 20s)}  # FIGURE=1: a request is ~1 s of work
PORT=${PORT:-18080}
CONC=${CONC:-16 64 256}
BEFORE=${BEFORE:-}
work=$(mktemp -d)
srv=""
trap '[[ -n $srv ]] && kill $srv 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc $(nproc)  duration $DUR per run"
MAXB=32   # the servers' --max-batch (FIGURE=1: BATCH)
SERVE_FLAGS=()
if [[ ${FIGURE:-0} == 1 ]]; then
  MAXB=${BATCH:-64}
  SERVE_FLAGS=(--precision "${PRECISION:-int8}")
  INFER=0
fi
if [[ ${INFER:-1} == 1 ]]; then
  echo "== bench infer (batch 32, fp32)   load: $(cat /proc/loadavg)"
  "$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 2>&1 | grep -E 'images/s'
  # Like for like for the text requests: the request text below is 11 tokens with start and end.
  echo "== bench infer (batch 32, fp32, 11-token texts as the requests)   load: $(cat /proc/loadavg)"
  "$BIN" bench infer --model "$MODEL" --batch-size 32 --precision fp32 --text-len 11 2>&1 | grep -E 'texts/s'
fi

/usr/bin/python3 - "$work" "$MAXB" "${IMAGE_SIZE:-224}" <<'PY'
import base64, io, json, sys
from PIL import Image
import numpy as np
work, batch, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
img = Image.fromarray((np.random.default_rng(0).random((256, 320, 3)) * 255).astype('uint8'))
buf = io.BytesIO(); img.save(buf, 'JPEG', quality=90)
open(f'{work}/image.json', 'w').write(json.dumps({'image': base64.b64encode(buf.getvalue()).decode()}))
open(f'{work}/text.json', 'w').write(json.dumps({'text': 'a photo of a dog playing in the snow'}))
# FIGURE=1: one request = one full batch of distinct photo-like JPEGs (smooth, not noise) at the
# model's input size, so the server's preprocessing is a decode and a normalisation.
rng, imgs = np.random.default_rng(1), []
for _ in range(batch):
    small = Image.fromarray((rng.random((28, 28, 3)) * 255).astype('uint8'))
    b = io.BytesIO(); small.resize((size, size), Image.BILINEAR).save(b, 'JPEG', quality=90)
    imgs.append(base64.b64encode(b.getvalue()).decode())
open(f'{work}/batch.json', 'w').write(json.dumps({'images': imgs}))
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
  "$1" serve --model "$MODEL" --random-init --port "$PORT" --max-batch "$MAXB" --max-wait-ms 5 "${SERVE_FLAGS[@]}" \
    >"$work/serve.log" 2>&1 &
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

# FIGURE=1: bench infer and serve alternated, ROUNDS times; images/s of each and their ratio.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$srv/stat"; }  # the server's user + system time
figure() {
  local prec=${PRECISION:-int8} conc=${FIGURE_CONC:-3} infer tp mean cpu0 cpu1
  echo "== serve vs bench infer: $MODEL $prec batch $MAXB, images of ${IMAGE_SIZE:-224} px, $conc connections"
  for round in $(seq "${ROUNDS:-1}"); do
    local l0; l0=$(cut -d' ' -f1 /proc/loadavg)
    infer=$("$BIN" bench infer --model "$MODEL" --tower image --precision "$prec" --batch-size "$MAXB" \
      --steps "${STEPS:-5}" --json | tail -1)
    start "$BIN"
    curl -sf -o /dev/null -H 'Content-Type: application/json' --data-binary "@$work/batch.json" \
      "http://127.0.0.1:$PORT/v1/embed/image" || { echo "bench_serve: the warm-up request failed" >&2; exit 1; }
    cpu0=$(cpu_ticks)
    tp=$(/usr/bin/python3 "$(dirname "$0")/serve_throughput.py" "http://127.0.0.1:$PORT/v1/embed/image" \
      "$work/batch.json" "$MAXB" "$conc" "${DUR%s}")
    cpu1=$(cpu_ticks)
    mean=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^openclip_batch_size_sum/ {s=$2} /^openclip_batch_size_count/ {c=$2}
      END {if (c > 0) printf "%.1f", s / c; else print "?"}')
    stop
    # CPU seconds per batch, the steadier figure on a shared machine: bench infer's own, and
    # the server process's (everything it did for the requests) over the throughput window.
    /usr/bin/python3 -c 'import json, os, sys
i, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
s, n, secs, err = t["inputs_per_second"], t["requests"], t["seconds"], t["errors"]
ips, icpu, b = i["encode_image_per_second"], i["encode_image_cpu_seconds_per_batch"], int(sys.argv[7])
scpu = (int(sys.argv[9]) - int(sys.argv[8])) / os.sysconf("SC_CLK_TCK") / max(1, n)
print(f"round {sys.argv[3]}: bench infer {ips:.1f} images/s   serve {s:.1f} images/s ({n} requests of {b} in {secs:.1f} s, "
      f"{err} errors)   serve / infer {s / ips:.3f}   mean server batch {sys.argv[4]}   load {sys.argv[5]} -> {sys.argv[6]}")
print(f"  CPU s per batch: bench infer {icpu:.2f}, server {scpu:.2f} (infer / serve {icpu / scpu:.3f})")' \
      "$infer" "$tp" "$round" "$mean" "$l0" "$(cut -d' ' -f1 /proc/loadavg)" "$MAXB" "$cpu0" "$cpu1"
  done
}
if [[ ${FIGURE:-0} == 1 ]]; then
  figure
  exit 0
fi

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
