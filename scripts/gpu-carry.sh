#!/usr/bin/env bash
# What scripts/gpu-check.sh needs carried to the lent GPU machine, which reaches no network
# (docs/CUDA.md, "First run on a GPU"). Run here, then name the outputs in the device tool's
# `carry`; both are git-ignored through .git/info/exclude.
#
#   scripts/gpu-carry.sh wheels          .whl/: open-clip-torch 3.3.0 (bench/compare.sh's version),
#                                        ftfy and wcwidth, pure-Python wheels for its Python 3.12
#   scripts/gpu-carry.sh bundle [BUILD]  .gpu-bundle.tar.xz: a CUDA build's openclip and cuda test
#                                        binaries with the shared libraries they load (not CUDA's:
#                                        the machine has them; not glibc/libstdc++), the vocabulary;
#                                        for when the machine lacks the build's -dev packages
set -euo pipefail
cd "$(dirname "$0")/.."
exclude() {  # git-ignore $1 locally (in a worktree: the repository's shared info/exclude)
  local f
  f=$(git rev-parse --git-path info/exclude)
  grep -qxF "$1" "$f" 2>/dev/null || echo "$1" >>"$f"
}

case ${1:-} in
wheels)
  exclude /.whl/
  mkdir -p .whl
  for w in open-clip-torch==3.3.0 ftfy==6.3.1 wcwidth==0.2.13; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$w"
  done
  ls -la .whl
  ;;
bundle)
  BUILD=${2:-build}
  exclude /.gpu-bundle.tar.xz
  [[ -f $BUILD/libopenclip_ops_cuda.a ]] || { echo "gpu-carry: $BUILD is not a CUDA build" >&2; exit 1; }
  tmp=$(mktemp -d)
  mkdir -p "$tmp/.gpu-bundle/bin" "$tmp/.gpu-bundle/lib" "$tmp/.gpu-bundle/data"
  bins=(openclip test_ops test_model test_train test_dist)
  for b in "${bins[@]}"; do cp "$BUILD/$b" "$tmp/.gpu-bundle/bin/"; done
  for b in "${bins[@]}"; do ldd "$BUILD/$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '^/usr/local/cuda|/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' |
    while read -r lib; do cp -L "$lib" "$tmp/.gpu-bundle/lib/"; done
  cp data/bpe_simple_vocab_16e6.txt.gz data/imagenet_zeroshot.json "$tmp/.gpu-bundle/data/" 2>/dev/null || true
  XZ_OPT="-T0 -6" tar -C "$tmp" -cJf .gpu-bundle.tar.xz .gpu-bundle
  rm -rf "$tmp"
  size=$(stat -c %s .gpu-bundle.tar.xz)
  echo "gpu-carry: .gpu-bundle.tar.xz $((size >> 20)) MiB (the device tool carries 64 MiB in all)"
  ((size < 60 << 20)) || echo "gpu-carry: WARNING: too large to carry with the tree" >&2
  ;;
*)
  sed -n '2,13p' "$0"
  exit 2
  ;;
esac
