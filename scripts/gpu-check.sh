#!/usr/bin/env bash
# The GPU check of issue 28, one prepared call on a lent GPU machine (one H200, 16 cores;
# budget 8 minutes of the ~15 of device time): build with CUDA on all cores (or use the
# bundle scripts/gpu-carry.sh made on the dev machine), the `cuda`-labelled tests, then the
# figures: ViT-B-32 amp_bf16 training samples/s and MFU at batch 256 and 512, ViT-L-14 at
# batch 128, encode_image at batch 1024, and PyTorch + OpenCLIP on the same card (torch.compile
# off and on; bench/bench_open_clip_cuda.py). Writes one JSON. Every step has a timeout and
# the whole run a deadline: a step that would start past it is recorded as skipped, a failed
# step is recorded and the script goes on. First run on an H200: 2026-12-04 (docs/CUDA.md).
#
#   scripts/gpu-check.sh [OUT.json]     (default: $BUILD/gpu-check.json; on the device tool:
#                                        scripts/gpu-check.sh $OUT/gpu-check.json)
#   env: BUILD (build-gpu), DEADLINE_S (480), GPU_CHECK_QUICK=1 (tests only, no figures),
#        GPU_CHECK_PEERS=all|eager (eager: no torch.compile runs)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
OUT=${1:-$BUILD/gpu-check.json}
DEADLINE_S=${DEADLINE_S:-480}
JOBS=$(nproc)
LOG=$(dirname "$OUT")/gpu-check-logs
mkdir -p "$LOG" "$BUILD"
t0=$(date +%s)
results=()  # one JSON object per step

# step NAME TIMEOUT_S CMD...: runs CMD with a timeout (cut to the time left before the deadline),
# records rc, seconds and the log's tail; skipped when less than 15 s are left.
step() {
  local name=$1 tmo=$2
  shift 2
  local left=$((DEADLINE_S - ($(date +%s) - t0)))
  if ((left < 15)); then
    echo "[gpu-check] $name: skipped (deadline)" >&2
    results+=("{\"step\": \"$name\", \"rc\": null, \"skipped\": \"deadline of ${DEADLINE_S}s reached\"}")
    return 1
  fi
  ((tmo > left)) && tmo=$left
  local s=$(date +%s)
  timeout --kill-after=5 "$tmo" "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  local secs=$(($(date +%s) - s))
  echo "[gpu-check] $name: rc=$rc in ${secs}s" >&2
  results+=("$(python3 -c 'import json,sys; print(json.dumps({"step":sys.argv[1],"rc":int(sys.argv[2]),"seconds":int(sys.argv[3]),"log_tail":open(sys.argv[4],errors="replace").read()[-6000:]}))' "$name" "$rc" "$secs" "$LOG/$name.log")")
  return $rc
}

# 0. The card.
step nvidia_smi 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv

# 1. Binaries: the bundle carried from the dev machine (.gpu-bundle.tar.xz, scripts/gpu-carry.sh
# bundle) when there is one, else a build here (Release, CUDA on, sm_90 only, the targets
# the check runs). ccache is used when present.
if [[ -f .gpu-bundle.tar.xz ]]; then
  BUNDLE=/tmp/gpu-check-bundle
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu-bundle.tar.xz "$BUNDLE"
  BIN=$BUNDLE/.gpu-bundle/bin
  export LD_LIBRARY_PATH=$BUNDLE/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OPENCLIP_TEST_BINARY=$BIN/openclip OPENCLIP_DATA_DIR=$BUNDLE/.gpu-bundle/data
  echo "[gpu-check] using the carried bundle .gpu-bundle.tar.xz" >&2
  # The bundle leaves out CUDA's own libraries (cudart, cuBLASLt, NCCL: hundreds of MB): the
  # machine's CUDA may keep them outside the loader's path (PyTorch's pip packages under
  # /opt, a toolkit under /usr/local): add every folder that holds one.
  for d in $(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.1[0-9]' -o -name 'libnccl.so.2' \
    -o -name 'libcudart.so.1[0-9]' \) -printf '%h\n' 2>/dev/null | sort -u); do
    LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
  done
  export LD_LIBRARY_PATH
  step libs 20 bash -c "echo LD_LIBRARY_PATH=\$LD_LIBRARY_PATH; ldd $BIN/openclip $BIN/test_dist | grep -E 'not found|cuda|cublas|nccl|mpi'; command -v mpirun || echo 'no mpirun'; cat /etc/os-release | head -2; ldd --version | head -1"
else
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  step configure 90 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPENCLIP_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DOPENCLIP_PYTHON=OFF "${launcher[@]}"
  step build 240 cmake --build "$BUILD" -j"$JOBS" --target openclip_cli test_ops test_model test_train test_dist
  BIN=$PWD/$BUILD
fi

# 2. The machine as openclip sees it, then the cuda tests: the op suite on cuda against ref
# and the memory tests first (ops_cuda), then the step-level ones (model_cuda, train_cuda,
# dist_cuda), each with a JUnit file.
step info 30 "$BIN/openclip" info
step test_ops_cuda 200 "$BIN/test_ops" --gtest_filter='*/cuda_*:CudaBackend.*:CudaOnGpu.*' \
  --gtest_output=xml:"$LOG/test_ops_cuda.xml"
step test_model_cuda 60 "$BIN/test_model" --gtest_filter='CudaStep.*' --gtest_output=xml:"$LOG/test_model_cuda.xml"
# The attention as batched GEMMs (src/ops/cuda/attention_gemm.cpp, opt-in until this passes):
# the attention cases of the op suite, then the whole step, on that path.
step test_ops_cuda_gemmattn 60 env OPENCLIP_CUDA_ATTENTION=gemm "$BIN/test_ops" \
  --gtest_filter='*/cuda_*attention*:*/cuda_*attn*' --gtest_output=xml:"$LOG/test_ops_cuda_gemmattn.xml"
step test_model_cuda_gemmattn 60 env OPENCLIP_CUDA_ATTENTION=gemm "$BIN/test_model" --gtest_filter='CudaStep.*' \
  --gtest_output=xml:"$LOG/test_model_cuda_gemmattn.xml"

# 3. Figures, ours: bench train (amp_bf16; samples/s, MFU) and bench infer (encode_image).
if [[ ${GPU_CHECK_QUICK:-0} != 1 ]]; then
  for B in 256 512; do
    step "ours_train_vitb32_b$B" 60 "$BIN/openclip" bench train --device cuda --model ViT-B-32 --precision amp_bf16 \
      --batch-size "$B" --steps 10 --warmup-steps 3 --json
  done
  step ours_train_vitl14_b128 60 "$BIN/openclip" bench train --device cuda --model ViT-L-14 --precision amp_bf16 \
    --batch-size 128 --steps 5 --warmup-steps 2 --json
  step ours_infer_vitb32_b1024 40 "$BIN/openclip" bench infer --device cuda --model ViT-B-32 --precision amp_bf16 \
    --batch-size 1024 --steps 5 --warmup-steps 2 --json
  # The attention A/B: the batched-GEMM path against the default one-block-per-head kernels.
  step ours_train_vitb32_b256_gemmattn 60 env OPENCLIP_CUDA_ATTENTION=gemm "$BIN/openclip" bench train \
    --device cuda --model ViT-B-32 --precision amp_bf16 --batch-size 256 --steps 10 --warmup-steps 3 --json
  step ours_train_vitl14_b128_gemmattn 60 env OPENCLIP_CUDA_ATTENTION=gemm "$BIN/openclip" bench train \
    --device cuda --model ViT-L-14 --precision amp_bf16 --batch-size 128 --steps 5 --warmup-steps 2 --json
  step ours_infer_vitb32_b1024_gemmattn 40 env OPENCLIP_CUDA_ATTENTION=gemm "$BIN/openclip" bench infer \
    --device cuda --model ViT-B-32 --precision amp_bf16 --batch-size 1024 --steps 5 --warmup-steps 2 --json
  # Where the device's time goes: extra runs with every profile scope synchronised
  # (OPENCLIP_PROFILE_SYNC=1, cli/cmd_bench.cpp); the timed figures of these steps stay unsynced.
  step prof_train_vitb32_b256 60 env OPENCLIP_PROFILE_SYNC=1 "$BIN/openclip" bench train --device cuda \
    --model ViT-B-32 --precision amp_bf16 --batch-size 256 --steps 3 --warmup-steps 2 --json
  step prof_train_vitl14_b128 60 env OPENCLIP_PROFILE_SYNC=1 "$BIN/openclip" bench train --device cuda \
    --model ViT-L-14 --precision amp_bf16 --batch-size 128 --steps 2 --warmup-steps 1 --json
  step prof_infer_vitb32_b1024 40 env OPENCLIP_PROFILE_SYNC=1 "$BIN/openclip" bench infer --device cuda \
    --model ViT-B-32 --precision amp_bf16 --batch-size 1024 --steps 3 --warmup-steps 1 --json

  # 4. The peer on the same card: python3 there has PyTorch; open_clip from carried wheels
  # (.whl/, scripts/gpu-carry.sh) when it is not installed.
  if ! python3 -c 'import open_clip' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      >"$LOG/pip.log" 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  peer=(python3 bench/bench_open_clip_cuda.py)
  for B in 256 512; do step "peer_train_vitb32_b$B" 60 "${peer[@]}" train --model ViT-B-32 --batch-size "$B"; done
  step peer_image_vitb32_b1024 40 "${peer[@]}" image --model ViT-B-32 --batch-size 1024
  step peer_train_vitl14_b128 60 "${peer[@]}" train --model ViT-L-14 --batch-size 128 --steps 5
  if [[ ${GPU_CHECK_PEERS:-all} == all ]]; then  # eager: the torch.compile runs (~2 minutes) left out
    step peer_train_vitb32_b256_compile 120 "${peer[@]}" train --model ViT-B-32 --batch-size 256 --compile
    step peer_image_vitb32_b1024_compile 60 "${peer[@]}" image --model ViT-B-32 --batch-size 1024 --compile
  fi
fi

# 5. The slower step-level tests last: what the deadline leaves.
step test_train_cuda 150 "$BIN/test_train" --gtest_filter='CudaTrain.*' --gtest_output=xml:"$LOG/test_train_cuda.xml"
step test_dist_cuda 60 "$BIN/test_dist" --gtest_filter='CudaDist.*' --gtest_output=xml:"$LOG/test_dist_cuda.xml"

# 6. One JSON: the steps (bench lines parsed), the tests from the JUnit files, the figures
# side by side (ours / the peer's best), wall time.
python3 - "$OUT" "$LOG" "$(($(date +%s) - t0))" "${results[@]}" <<'PY'
import glob, json, os, sys, xml.etree.ElementTree as ET
out, logdir, wall, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), [json.loads(s) for s in sys.argv[4:]]
tests = {"passed": 0, "failed": [], "skipped": []}
for f in sorted(glob.glob(os.path.join(logdir, "*.xml"))):
    try: cases = list(ET.parse(f).iter("testcase"))
    except ET.ParseError: continue
    for tc in cases:
        name = tc.get("classname", "") + "." + tc.get("name", "")
        if tc.find("failure") is not None: tests["failed"].append(name)
        elif tc.find("skipped") is not None or tc.get("result") == "skipped": tests["skipped"].append(name)
        else: tests["passed"] += 1
by = {}
for s in steps:  # the bench steps print one JSON line: keep it parsed
    for line in (s.get("log_tail") or "").splitlines()[::-1]:
        if line.startswith("{"):
            try: s["result"] = json.loads(line); break
            except ValueError: pass
    if "result" in s: by[s["step"]] = s["result"]
figures = {}
for key, ours, peers in [("train_vitb32_b256", "ours_train_vitb32_b256", ["peer_train_vitb32_b256", "peer_train_vitb32_b256_compile"]),
                         ("train_vitb32_b512", "ours_train_vitb32_b512", ["peer_train_vitb32_b512"]),
                         ("train_vitl14_b128", "ours_train_vitl14_b128", ["peer_train_vitl14_b128"]),
                         ("encode_image_vitb32_b1024", "ours_infer_vitb32_b1024", ["peer_image_vitb32_b1024", "peer_image_vitb32_b1024_compile"]),
                         ("train_vitb32_b256_gemmattn", "ours_train_vitb32_b256_gemmattn", ["peer_train_vitb32_b256", "peer_train_vitb32_b256_compile"]),
                         ("train_vitl14_b128_gemmattn", "ours_train_vitl14_b128_gemmattn", ["peer_train_vitl14_b128"]),
                         ("encode_image_vitb32_b1024_gemmattn", "ours_infer_vitb32_b1024_gemmattn", ["peer_image_vitb32_b1024", "peer_image_vitb32_b1024_compile"])]:
    o = by.get(ours, {})
    sps = o.get("samples_per_second", o.get("encode_image_per_second"))
    best = max([by[p]["samples_per_second"] for p in peers if p in by] or [None], key=lambda x: x or 0)
    f = {"ours_samples_per_second": sps, "peer_best_samples_per_second": best,
         "ratio": (sps / best) if sps and best else None, "mfu": o.get("mfu")}
    if best and o.get("gflop_per_sample") and o.get("gpu_bf16_peak_tflops"):
        f["peer_mfu"] = best * o["gflop_per_sample"] / 1000.0 / o["gpu_bf16_peak_tflops"]
    figures[key] = f
json.dump({"wall_seconds": wall, "figures": figures, "tests": tests, "steps": steps}, open(out, "w"), indent=1)
print(f"[gpu-check] wrote {out}: {tests['passed']} passed, {len(tests['failed'])} failed, "
      f"{len(tests['skipped'])} skipped, {wall} s", file=sys.stderr)
for k, f in figures.items(): print(f"[gpu-check] {k}: {f}", file=sys.stderr)
PY
