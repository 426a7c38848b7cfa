#!/usr/bin/env bash
# The issue-22 rows of docs/RELIABILITY.md's hostile-input table (flags and files): runs each
# hostile command line through the binary under /usr/bin/time and prints one Markdown row per
# case with the exit status, the first error line, the wall time and the peak RSS.
# Usage: tests/cli/hostile_flags_figures.sh [BUILD_DIR]   (default: build)
set -u
BIN=${1:-build}/openclip
[ -x "$BIN" ] || { echo "no $BIN (build openclip_cli first)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OPENCLIP_DATA_DIR=${OPENCLIP_DATA_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/data}
head -c 209715200 /dev/zero | gzip -1 > "$TMP/bomb.gz"
mkdir -p "$TMP/logs"
TRAIN="train --dataset-type synthetic --model test-tiny --train-num-samples 8 --batch-size 4 --epochs 1 --workers 0 --logs $TMP/logs"

row() {  # row INPUT SHOWN_COMMAND COMMAND...
  local input=$1 shown=$2
  shift 2
  ( ulimit -v 4000000; timeout 60 /usr/bin/time -f '%e %M' -o "$TMP/time" "$@" ) > "$TMP/out" 2>&1 < /dev/null
  local rc=$?
  read -r secs kb < <(tail -n 1 "$TMP/time")  # the first line may be "Command exited with ..."
  local msg
  msg=$(grep -v '^Command exited' "$TMP/out" | grep -m1 -E 'error|usage:|embed:' | sed "s|$TMP|T|g; s/|/\\\\|/g")
  printf '| %s | `%s` | rc %s: %s | %s s | %s MB |\n' "$input" "$shown" "$rc" "$msg" "$secs" "$((kb / 1024))"
}

echo "| Input | Command | Result | Time | Peak RSS |"
echo "|---|---|---|---|---|"
row "port past 2^32" "serve --port 4294975488" "$BIN" serve --model test-tiny --port 4294975488
row "batch size 2^32" "train --batch-size 4294967296" "$BIN" $TRAIN --batch-size 4294967296
row "infinite learning rate" "train --lr inf" "$BIN" $TRAIN --lr inf
row "NaN weight decay" "train --wd nan" "$BIN" $TRAIN --wd nan
row "100000 compute threads" "train --threads 100000" "$BIN" $TRAIN --threads 100000
row "100000 loader threads" "train --workers 100000" "$BIN" $TRAIN --workers 100000
row "run name with a parent" "train --name ../x" "$BIN" $TRAIN --name ../x
row "absolute run name" "train --name /abs/x" "$BIN" $TRAIN --name "$TMP/abs"  # a path that goes away with TMP
row "run name '.'" "train --name ." "$BIN" $TRAIN --name .
row "vocabulary /dev/zero" "OPENCLIP_VOCAB=/dev/zero tokenize" env OPENCLIP_VOCAB=/dev/zero "$BIN" tokenize
row "200 KB gzip of 200 MiB zeros as vocabulary" "OPENCLIP_VOCAB=bomb.gz tokenize" \
  env OPENCLIP_VOCAB="$TMP/bomb.gz" "$BIN" tokenize
row "help of a command group" "help index" "$BIN" help index
