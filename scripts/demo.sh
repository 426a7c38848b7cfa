#!/usr/bin/env bash
# The main job on the embedded default: Fashion-MNIST end to end (README "The main job").
# Set-up and build (idempotent), then `openclip demo`: import the dataset into webdataset
# shards (once), train the fmnist-S CLIP from scratch with the fixed recipe (about 9 minutes of
# training on an idle 2-core machine; the same model on every run) on the CPU,
# evaluate zero-shot top-1/top-5 on the 10,000 test images with prompts not used in
# training, write the HTML report, and print one JSON line. Arguments go to `openclip demo`
# (e.g. scripts/demo.sh --minutes 3 --out /tmp/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/openclip info
exec build/openclip demo "$@"
