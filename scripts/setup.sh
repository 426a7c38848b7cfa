#!/usr/bin/env bash
# Installs what openclip-cpp needs, idempotently: Debian packages, the BPE vocabulary and the
# zero-shot metadata (into data/, which git ignores). Safe to run again; does nothing twice.
# `setup.sh --demo` installs only what the main job needs (scripts/demo.sh: the `openclip`
# binary and Fashion-MNIST); without it, everything the test suite needs as well.
set -euo pipefail
cd "$(dirname "$0")/.."
FOR_DEMO=0
[[ ${1:-} == --demo ]] && FOR_DEMO=1

# The `openclip` binary's build and Fashion-MNIST (oneDNN comes from PyPI: below).
PKGS=(cmake ninja-build g++ pkg-config libfmt-dev
      nlohmann-json3-dev zlib1g-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libzstd-dev
      libsnappy-dev libcurl4-openssl-dev libopenmpi-dev openmpi-bin dataset-fashion-mnist
      libfaiss-dev libssl-dev  # index (faiss, OpenSSL SHA-256)
      libsentencepiece-dev  # text: SentencePiece models (SigLIP's spiece.model)
      python3-pip python3-venv)  # PyPI: oneDNN 3 and vocabulary wheels (and the test and bench venvs)
# The test suite, benchmarks and checks on top.
((FOR_DEMO)) || PKGS+=(libgtest-dev libbenchmark-dev libcpp-httplib-dev  # httplib: the serve tests' client
      python3-torch python3-torchvision python3-regex python3-pil python3-numpy  # reference tests
      wrk  # serve benchmark
      pybind11-dev python3-dev  # the Python module openclip_cpp (python/)
      libopenblas0-pthread   # OpenBLAS: the PyTorch peer in benchmarks, not netlib's reference BLAS
      clang libclang-rt-dev libomp-dev llvm)  # scripts/check.sh: sanitizers, libFuzzer, llvm-symbolizer
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
# Headless Chromium renders the HTML report in the `browser` test; without the recommends
# (cups, avahi, udev helpers ...) it is a third of the download.
BROWSER_PKGS=(chromium fonts-liberation)
((FOR_DEMO)) && BROWSER_PKGS=()
missing=()
for p in "${BROWSER_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  [[ -n $(find /var/lib/apt/lists -name '*Packages*' -print -quit 2>/dev/null) ]] || $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The vocabulary: ../shared/data, else the PyPI wheel open-clip-torch 3.3.0 (a zip that carries
# open_clip/bpe_simple_vocab_16e6.txt.gz; downloaded alone, without torch). Verified by the
# sha256 of the 48,894 merge lines OpenCLIP uses (lines 2..48895), which both sources share.
mkdir -p data
VOCAB=data/bpe_simple_vocab_16e6.txt.gz
MERGES_SHA=d308b7377a8ceaa9707a21614fe8c831b9196e197b7aeb69833359362907af02
check_vocab() { [[ -f $1 ]] && [[ $(zcat "$1" | sed -n '2,48895p' | sha256sum | cut -d' ' -f1) == "$MERGES_SHA" ]]; }
if ! check_vocab "$VOCAB"; then
  for cand in ../shared/data/bpe_simple_vocab_16e6.txt.gz ../../shared/data/bpe_simple_vocab_16e6.txt.gz; do
    if check_vocab "$cand"; then cp "$cand" "$VOCAB.tmp" && mv "$VOCAB.tmp" "$VOCAB"; break; fi
  done
fi
if ! check_vocab "$VOCAB"; then
  echo "setup: fetching the vocabulary from PyPI (open-clip-torch 3.3.0)"
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" open-clip-torch==3.3.0 \
    || { rm -rf "$tmp"; echo "setup: pip could not download open-clip-torch==3.3.0 from PyPI (the vocabulary)" >&2; exit 1; }
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("open_clip/bpe_simple_vocab_16e6.txt.gz"))' \
    "$tmp"/open_clip_torch-3.3.0-*.whl > "$VOCAB.tmp"
  rm -rf "$tmp"
  check_vocab "$VOCAB.tmp" || { rm -f "$VOCAB.tmp"; echo "setup: vocabulary from PyPI failed its sha256 check" >&2; exit 1; }
  mv "$VOCAB.tmp" "$VOCAB"
fi

# oneDNN 3 (the CPU GEMMs) from PyPI into .deps/onednn: its own script.
bash scripts/setup_onednn.sh

if [[ ! -f data/imagenet_zeroshot.json ]]; then
  for cand in ../shared/data/imagenet_zeroshot.json ../../shared/data/imagenet_zeroshot.json; do
    [[ -f $cand ]] && { cp "$cand" data/imagenet_zeroshot.json; break; }
  done
fi
[[ -f data/imagenet_zeroshot.json ]] || echo "setup: warning: imagenet_zeroshot.json not found (ImageNet zero-shot needs it)"
((FOR_DEMO)) || scripts/setup_lizard.sh || echo "setup: warning: lizard venv (.lizard) not made; the test function_lengths skips"
((FOR_DEMO)) || scripts/setup_pyref.sh || echo "setup: warning: OpenCLIP 2.24 reference venv (.pyref) not made; tests that call OpenCLIP skip"
((FOR_DEMO)) || scripts/setup_spm_ref.sh || echo "setup: warning: SentencePiece reference venv (.spmref) not made; the test that regenerates its golden files skips"
echo "setup: ok"
