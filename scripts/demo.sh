#!/usr/bin/env bash
# The main job on the embedded default: Fashion-MNIST end to end (README "The main job").
# Set-up (only the packages the job needs; idempotent) and a build of the `openclip` binary
# alone, then `openclip demo`: import the dataset into webdataset shards (once), train the
# fmnist-RN-S CLIP (a small ModifiedResNet image tower) from scratch with the fixed recipe of
# configs/recipes/fmnist-demo-v3.json on the CPU (the same model on every run), evaluate
# zero-shot top-1/top-5 on the 10,000 test images with prompts not used in training, write the
# HTML report, and print one JSON line. Arguments go to `openclip demo` (e.g. scripts/demo.sh
# --minutes 3 --out /tmp/demo; --recipe fmnist-demo-v1 for the previous ViT recipe).
#
# The binary: build/openclip when scripts/test.sh has configured build/ (everything is built
# there; only the binary is brought up to date here), else build-demo/openclip, configured by
# CMakePresets.json's `demo` preset without the tests, the Python module and the CUDA backend
# (OPENCLIP_CUDA=ON in the environment adds CUDA), so a fresh clone compiles only what the job runs.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
scripts/setup.sh --demo
t1=$SECONDS
if [[ -f build/build.ninja ]]; then
  dir=build
else
  dir=build-demo
  # CMakePresets.json's `demo` (the test demo_build_is_minimal checks what it builds).
  [[ -f $dir/build.ninja ]] || cmake --preset demo -DOPENCLIP_CUDA="${OPENCLIP_CUDA:-OFF}"
fi
cmake --build $dir --target openclip_cli -j "$(nproc)"
t2=$SECONDS
echo "demo: set-up $((t1 - t0)) s, build $((t2 - t1)) s ($dir/openclip)"
$dir/openclip info
exec $dir/openclip demo "$@"
