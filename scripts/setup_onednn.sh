#!/usr/bin/env bash
# oneDNN 3 for the CPU GEMMs, from PyPI into the project-local prefix .deps/onednn (git-ignored),
# where CMake finds it (CMakeLists.txt). Sourced by scripts/setup.sh; runnable alone. Idempotent.
#
# Which build: Intel's `onednn-cpu-gomp` wheels (oneDNN 3.2.0, CPU only, threaded with GNU
# OpenMP), so the process has one OpenMP runtime, libgomp, shared with our own -fopenmp code and
# its nested-region rule (a GEMM called inside a parallel region runs single-threaded). The newer
# `onednn` wheels (2024.0 .. 2026.1 = oneDNN 3.4 .. 3.13) are SYCL builds threaded with TBB: their
# libdnnl.so needs libtbb, libsycl, libOpenCL and Intel's compiler runtime (libimf, libsvml,
# libintlc; the dpcpp-cpp-rt and intel-opencl-rt wheels), a second thread pool beside OpenMP
# (measured with readelf -d on each wheel's libdnnl.so: docs/BENCHMARKS.md, "oneDNN 3").
#
# Another oneDNN 3 (a source build, a distribution package): cmake -Ddnnl_DIR=<prefix>/lib/cmake/dnnl
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ONEDNN_WHEEL_VERSION=2023.2.0  # = oneDNN 3.2.0 (.deps/onednn/include/oneapi/dnnl/dnnl_version.h)
ONEDNN_PREFIX=.deps/onednn
# sha256 of the two wheels (py2.py3-none-manylinux1_x86_64), as PyPI served them on 2026-12-02.
declare -A ONEDNN_SHA=(
  [onednn-cpu-gomp]=2f22a54d6a890ed14bfa185d42a4be65d8b5b1df85dc1f0f3a9abe31620416fb
  [onednn-devel-cpu-gomp]=9763c69e8c907e119056bd52ad918ca84ac9ba939d130a99dfa95ccca3e5e284
)
ONEDNN_STAMP=$ONEDNN_PREFIX/.installed-$ONEDNN_WHEEL_VERSION

onednn_fail() {
  echo "setup: oneDNN 3: $1" >&2
  echo "setup: install oneDNN >= 3 yourself and configure with" >&2
  echo "         cmake -Ddnnl_DIR=<its prefix>/lib/cmake/dnnl ..." >&2
  exit 1
}

onednn_pip() {
  local py
  for py in python3 /usr/bin/python3; do
    if "$py" -m pip --version >/dev/null 2>&1; then "$py" -m pip "$@"; return; fi
  done
  onednn_fail "no python3 with pip to download the wheels from PyPI"
}

onednn_install() {
  local tmp wheel name
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "setup: fetching oneDNN 3.2.0 (PyPI onednn-cpu-gomp $ONEDNN_WHEEL_VERSION)"
  for name in "${!ONEDNN_SHA[@]}"; do
    onednn_pip download --quiet --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
      --python-version 3 --implementation py --dest "$tmp/whl" "$name==$ONEDNN_WHEEL_VERSION" \
      || onednn_fail "pip could not download $name==$ONEDNN_WHEEL_VERSION from PyPI"
    wheel=$(ls "$tmp"/whl/"${name//-/_}"-"$ONEDNN_WHEEL_VERSION"-*.whl)
    [[ $(sha256sum "$wheel" | cut -d' ' -f1) == "${ONEDNN_SHA[$name]}" ]] \
      || onednn_fail "$(basename "$wheel") does not have the pinned sha256 ${ONEDNN_SHA[$name]}"
    python3 -m zipfile -e "$wheel" "$tmp/x" || onednn_fail "could not unpack $(basename "$wheel")"
  done
  rm -rf "$ONEDNN_PREFIX.tmp"
  mkdir -p "$ONEDNN_PREFIX.tmp"
  cp -r "$tmp"/x/*.data/data/* "$ONEDNN_PREFIX.tmp/"
  # A wheel (zip) stores the library's symlinks as three full copies: keep one, link the others.
  (cd "$ONEDNN_PREFIX.tmp/lib" && rm -f libdnnl.so libdnnl.so.3 && ln -s libdnnl.so.3.2 libdnnl.so.3 &&
    ln -s libdnnl.so.3 libdnnl.so && chmod 755 libdnnl.so.3.2)
  grep -q '^#define DNNL_CPU_RUNTIME DNNL_RUNTIME_OMP' "$ONEDNN_PREFIX.tmp/include/oneapi/dnnl/dnnl_config.h" \
    || onednn_fail "the unpacked oneDNN is not an OpenMP build"
  rm -rf "$ONEDNN_PREFIX"
  mv "$ONEDNN_PREFIX.tmp" "$ONEDNN_PREFIX"
  touch "$ONEDNN_STAMP"
}

[[ -f $ONEDNN_STAMP ]] || onednn_install
