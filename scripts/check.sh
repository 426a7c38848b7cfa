#!/usr/bin/env bash
# Sanitizer and fuzz check: builds build-fuzz/ with clang (ASan + UBSan everywhere, libFuzzer
# coverage on every module), runs the fast tests in it, then every fuzz target (each
# tests/fuzz/fuzz_*.cpp: CMake's glob builds them all, this loop runs them all) for SECONDS
# each (default 60) from its committed seeds (tests/fuzz/corpus/<target>, kept unchanged; new
# inputs go to build-fuzz/corpus/<target>). One line per target; exits non-zero when a test
# fails, a sanitizer reports, or a fuzz target crashes, leaks, times out or runs out of memory.
#   scripts/check.sh [SECONDS]       OPENCLIP_CHECK_TESTS=parsers: only the parser modules'
#                                    tests (core io text image data download), as CI runs them
# A crash leaves its input in build-fuzz/artifacts/<target>/; replay: build-fuzz/<target> FILE
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
BUILD=build-fuzz
JOBS=${JOBS:-$(nproc)}
fail=0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0

t0=$(date +%s)
if [[ ! -f $BUILD/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPENCLIP_FUZZ=ON -DOPENCLIP_CUDA=OFF >/dev/null || exit 1
fi
cmake --build $BUILD -j "$JOBS" || exit 1
t_build=$(( $(date +%s) - t0 ))

# The tests (the CLI they run is the sanitized one too). Browser: Chromium, not ours.
t0=$(date +%s)
if [[ ${OPENCLIP_CHECK_TESTS:-fast} == parsers ]]; then
  labels=(-L '^(core|io|text|image|data|download)$')
else
  labels=(-LE '^(long|browser)$')
fi
ctest --test-dir $BUILD --output-on-failure "${labels[@]}" -j "$JOBS" --timeout 1800 || fail=1
t_tests=$(( $(date +%s) - t0 ))

printf '%-20s %12s %10s %8s %10s %8s\n' target executions exec/s crashes new_inputs cov
for bin in $BUILD/fuzz_*; do
  [[ -x $bin && -f $bin ]] || continue
  t=$(basename "$bin")
  seeds=tests/fuzz/corpus/$t
  work=$BUILD/corpus/$t
  art=$BUILD/artifacts/$t
  mkdir -p "$work" "$art"
  log=$BUILD/fuzz_logs/$t.log
  mkdir -p "$(dirname "$log")"
  touch "$log.start"
  # A fixed seed and a fresh work corpus make the run a prefix of the same sequence on every
  # machine: whatever CI's 30 s can reach, a longer run with the same seed has reached first.
  "$bin" -seed="${OPENCLIP_FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  new=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(find "$art" -type f -newer "$log.start" | wc -l)  # crash-*, leak-*, oom-*, timeout-*
  if (( rc != 0 )); then
    fail=1
    (( crashes == 0 )) && crashes=1
  fi
  printf '%-20s %12s %10s %8s %10s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes" "${new:-?}" "${cov:-?}"
  (( rc != 0 )) && { echo "  $t failed (rc $rc): $log"; grep -m3 -E 'ERROR|SUMMARY|Assertion|==[0-9]+==' "$log" | sed 's/^/  /'; }
done
echo "check: build ${t_build}s, tests ${t_tests}s, fuzz ${SECONDS_PER_TARGET}s per target; $( ((fail)) && echo FAILED || echo ok)"
exit $fail
