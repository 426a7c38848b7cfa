#!/usr/bin/env bash
# One GPU check for a short loan of a GPU machine (issue 15): configure and build with CUDA on
# all cores, run the `cuda`-labelled tests (the op suite on the cuda backend against ref, the
# device memory tests), `openclip info`, and `bench train` / `bench infer --device cuda` for
# ViT-B-32; write one JSON of results. Budget: 8 minutes on a 16-core machine with one H200
# (each step has its own timeout so a hang cannot eat the loan; a failed step is recorded and
# the script goes on). NOT YET RUN ON A GPU: written on a machine without one (docs/CUDA.md).
#
#   scripts/gpu-check.sh [OUT.json]     (default: gpu-check.json in the build folder)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
OUT=${1:-$BUILD/gpu-check.json}
JOBS=$(nproc)
LOG=$BUILD/gpu-check-logs
mkdir -p "$LOG"
t0=$(date +%s)
results=()  # one JSON object per step

# step NAME TIMEOUT_S CMD...: runs CMD with a timeout, records rc, seconds and the log's tail.
step() {
  local name=$1 tmo=$2
  shift 2
  local s=$(date +%s)
  timeout --kill-after=10 "$tmo" "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  local secs=$(($(date +%s) - s))
  echo "[gpu-check] $name: rc=$rc in ${secs}s" >&2
  results+=("$(python3 -c 'import json,sys; print(json.dumps({"step":sys.argv[1],"rc":int(sys.argv[2]),"seconds":int(sys.argv[3]),"log_tail":open(sys.argv[4],errors="replace").read()[-3000:]}))' "$name" "$rc" "$secs" "$LOG/$name.log")")
  return $rc
}

# 1. Configure and build (Release, CUDA on; sm_80/sm_90 + PTX). Only what the check needs.
step configure 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPENCLIP_CUDA=ON -DOPENCLIP_PYTHON=OFF
step build 300 cmake --build "$BUILD" -j"$JOBS" --target test_ops openclip_cli

# 2. The machine, then the cuda tests (op suite vs ref + memory), with a JUnit file.
step info 30 "$BUILD/openclip" info --json
step info_table 30 "$BUILD/openclip" info
step cuda_tests 240 "$BUILD/test_ops" --gtest_filter='*/cuda_*:CudaBackend.*:CudaOnGpu.*' \
  --gtest_output=xml:"$LOG/cuda_tests.xml"

# 3. Benchmarks (ViT-B-32, synthetic data): amp_bf16 and fp32 training, bf16 inference.
for prec in amp_bf16 fp32; do
  step "bench_train_${prec}" 90 "$BUILD/openclip" bench train --device cuda --model ViT-B-32 --precision "$prec" \
    --batch-size 256 --steps 5 --warmup-steps 2 --json
done
step bench_infer_amp_bf16 60 "$BUILD/openclip" bench infer --device cuda --model ViT-B-32 --precision amp_bf16 \
  --batch-size 1024 --steps 5 --warmup-steps 2 --json

# 4. One JSON: the steps, the failed/skipped test names from the JUnit file, wall time.
python3 - "$OUT" "$LOG/cuda_tests.xml" "$(($(date +%s) - t0))" "${results[@]}" <<'PY'
import json, sys, os, xml.etree.ElementTree as ET
out, junit, wall, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), [json.loads(s) for s in sys.argv[4:]]
tests = {"passed": 0, "failed": [], "skipped": 0}
if os.path.exists(junit):
    for tc in ET.parse(junit).iter("testcase"):
        name = tc.get("classname", "") + "." + tc.get("name", "")
        if tc.find("failure") is not None: tests["failed"].append(name)
        elif tc.find("skipped") is not None or tc.get("result") == "skipped": tests["skipped"] += 1
        else: tests["passed"] += 1
for s in steps:  # the bench steps print one JSON line: keep it parsed
    for line in s["log_tail"].splitlines()[::-1]:
        if line.startswith("{"):
            try: s["result"] = json.loads(line); break
            except ValueError: pass
json.dump({"wall_seconds": wall, "steps": steps, "cuda_tests": tests}, open(out, "w"), indent=1)
print(f"[gpu-check] wrote {out}: {tests['passed']} passed, {len(tests['failed'])} failed, "
      f"{tests['skipped']} skipped, {wall} s", file=sys.stderr)
PY
