#!/usr/bin/env bash
# Issue 22's hostile inputs for model configs and index folders (items 1, 2, 4, 5): each is
# made here, run once under /usr/bin/time, and printed as a row of docs/RELIABILITY.md's
# table (input | command | result | time | peak RSS), result = rc and the first error line.
# Usage: bench/issue22_hostile.sh [BINARY [OLD_BINARY]]   (default build/openclip; writes under
# $TMPDIR). With OLD_BINARY (a build from before issue 22) the config rows are run with it too,
# as "was" rows; its index rows would not apply (the old folder layout).
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:-build/openclip}")
OLD=${2:+$(realpath "$2")}
T=$(mktemp -d "${TMPDIR:-/tmp}/issue22.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
row() {  # row INPUT COMMAND-LABEL CMD...
  local input=$1 label=$2; shift 2
  /usr/bin/time -f '%e %M' -o "$T/time" timeout 120 "$@" >"$T/out" 2>&1
  local rc=$? msg
  msg=$(grep -m1 -i 'error\|refus\|must\|not \|in use' "$T/out" | sed "s|$T|T|g" | tr '`' "'" | cut -c1-220)
  [ -z "$msg" ] && msg=$(head -c 160 "$T/out" | tr '\n' ' ' | sed "s|$T|T|g")
  read -r secs kb < <(tail -1 "$T/time") || { secs=?; kb=0; }
  printf '| %s | `%s` | rc %s: `%s` | %s s | %d MiB |\n' "$input" "$label" "$rc" "$msg" "$secs" $((kb / 1024))
}
cfg() {  # cfg NAME TEXT_CFG_EXTRA: a tiny config with the text tower changed
  printf '{"embed_dim": 32, "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 1}, "text_cfg": {"width": 64, "heads": 2, "layers": 1, "context_length": 16%s}}' "$2" >"$T/$1.json"
}
cfg wrap ', "vocab_size": 2147483647, "width": 2048, "heads": 8, "layers": 64, "mlp_ratio": -1048576.25'
cfg mlp0 ', "mlp_ratio": 0'
cfg mlpneg ', "mlp_ratio": -4'
cfg wide ', "width": 1000000000, "heads": 1'
cfg big ', "vocab_size": 16777216, "width": 65536, "heads": 1'
echo "| Input | Command | Result | Time | Peak RSS |"
echo "|---|---|---|---:|---:|"
config_rows() {  # config_rows BINARY LABEL-SUFFIX
  local b=$1 was=$2
  row 'config: `vocab_size` 2^31-1 with `mlp_ratio` -1048576.25 (the count wrapped 2^64)'"$was" 'bench infer --model x.json' \
    "$b" bench infer --model "$T/wrap.json" --batch-size 1 --steps 1
  row 'config: `mlp_ratio` 0'"$was" 'bench infer --model x.json' "$b" bench infer --model "$T/mlp0.json" --batch-size 1 --steps 1
  row 'config: `mlp_ratio` -4'"$was" 'bench infer --model x.json' "$b" bench infer --model "$T/mlpneg.json" --batch-size 1 --steps 1
  row 'config: text `width` 1e9'"$was" 'bench infer --model x.json' "$b" bench infer --model "$T/wide.json" --batch-size 1 --steps 1
  row 'config inside every bound, 2^24 x 65536 token embedding (4 TiB)'"$was" 'bench infer --model x.json' \
    "$b" bench infer --model "$T/big.json" --batch-size 1 --steps 1
}
config_rows "$B" ""
[ -n "$OLD" ] && config_rows "$OLD" " (was: before issue 22)"
# An index of 6 copies of a tiny PNG, random weights.
mkdir -p "$T/img"
for i in 1 2 3 4 5 6; do cp tests/fuzz/corpus/fuzz_image/tiny.png "$T/img/im$i.png"; done
IB=("$B" index build --model test-tiny --random-init --faiss hnsw --images)  # + IMAGES --out DIR
"${IB[@]}" "$T/img" --out "$T/idx" >/dev/null 2>&1 || echo "# index build failed"
gen=$(ls -d "$T"/idx/gen-* | tail -1)
resum() { /usr/bin/python3 - "$T/idx" "$gen" <<'PY'
import hashlib, json, sys, os
d, g = sys.argv[1], sys.argv[2]
m = json.load(open(d + "/meta.json"))
for f in m["files"]: m["files"][f] = hashlib.sha256(open(os.path.join(g, f), "rb").read()).hexdigest()
json.dump(m, open(d + "/meta.json", "w"))
PY
}
cp "$gen/faiss.index" "$T/faiss.good"
/usr/bin/python3 - "$gen/faiss.index" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read()); at = 37
for unit in (8, 4, 4, 8):
    n, = struct.unpack_from("<Q", b, at); at += 8 + n * unit
struct.pack_into("<i", b, at + 8, 1 << 20)  # vector 0's first neighbour id
open(sys.argv[1], "wb").write(b)
PY
row 'HNSW index, a neighbour id 2^20 (checksum left stale)' 'index search --text hi' "$B" index search "$T/idx" --text hi
resum
row 'HNSW index, a neighbour id 2^20 (checksum re-recorded)' 'index search --text hi' "$B" index search "$T/idx" --text hi
/usr/bin/python3 - "$T/flat.index" <<'PY'
import struct, sys
hdr = b"IxFI" + struct.pack("<iqqq?i", 8, 40, 1 << 20, 1 << 20, True, 0)
open(sys.argv[1], "wb").write(hdr + struct.pack("<Q", 1 << 29) + bytes(1280))
PY
cp "$T/flat.index" "$gen/faiss.index"; resum
row '1.3 KB flat index claiming 2^29 floats' 'index search --text hi' "$B" index search "$T/idx" --text hi
cp "$T/faiss.good" "$gen/faiss.index"; resum
/usr/bin/python3 - "$gen/items.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines(); j = json.loads(lines[0]); j["path"] = "/etc/passwd"
open(sys.argv[1], "w").write("\n".join([json.dumps(j)] + lines[1:]) + "\n")
PY
resum
row 'items.jsonl path `/etc/passwd`' 'index search (serve --index: the same load)' "$B" index search "$T/idx" --text hi
"${IB[@]}" "$T/img" --out "$T/idx2" >/dev/null 2>&1
sed -i 's/"embed_dim": 32/"embed_dim": "32"/' "$T/idx2/meta.json"
row 'meta.json `"embed_dim": "32"`' 'index search --text hi' "$B" index search "$T/idx2" --text hi
"${IB[@]}" "$T/img" --out "$T/idx5" >/dev/null 2>&1
sed -i 's|"weights": ""|"weights": "/dev/zero"|; s|"weights_sha256": "random-init"|"weights_sha256": "x"|' "$T/idx5/meta.json"
row 'meta.json `"weights": "/dev/zero"`' 'index search --text hi' "$B" index search "$T/idx5" --text hi
cp configs/models/test-tiny.json "$T/tiny.json"
"$B" index build --model "$T/tiny.json" --random-init --images "$T/img" --out "$T/idx6" >/dev/null 2>&1
sed -i 's/"embed_dim": 32/"embed_dim": 16/' "$T/tiny.json"
row 'the model config'"'"'s `embed_dim` 32 -> 16 after the build' 'index search --text hi' "$B" index search "$T/idx6" --text hi
row '`--pretrained /dev/zero`' 'index build' "$B" index build --model test-tiny --pretrained /dev/zero --images "$T/img" --out "$T/idx3"
mkfifo "$T/fifo"
row '`--pretrained` a FIFO' 'index build' "$B" index build --model test-tiny --pretrained "$T/fifo" --images "$T/img" --out "$T/idx3"
"${IB[@]}" "$T/img" --out "$T/idx4" >/dev/null 2>&1
mkdir -p "$T/many"; for i in $(seq 1 200); do cp tests/fuzz/corpus/fuzz_image/tiny.png "$T/many/m$i.png"; done
"${IB[@]}" "$T/many" --out "$T/idx4" --batch-size 1 >/dev/null 2>&1 &  # a writer for a while
writer=$!
for _ in $(seq 1 200); do grep -qs "pid $writer " "$T/idx4/.lock" && break; sleep 0.05; done
row 'a second `index build` into a folder another build is writing' 'index build' "${IB[@]}" "$T/img" --out "$T/idx4"
wait $writer
cp -r "$T/img" "$T/img2"; for i in 1 2 3; do cp "$T/img/im$i.png" "$T/img2/new$i.png"; done
OPENCLIP_DEBUG_INDEX_KILL_AFTER=faiss "${IB[@]}" "$T/img2" --out "$T/idx4" >/dev/null 2>&1
row 'append SIGKILLed after writing the new faiss file' 'index search --text hi' "$B" index search "$T/idx4" --text hi -k 1
row 'same' 'index build (rerun)' "${IB[@]}" "$T/img2" --out "$T/idx4"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg): end"
