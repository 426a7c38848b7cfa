"""Driver of bench/compare_peers.sh (run inside its environment): `openclip bench infer` against
the engines CPU users deploy, ONNX Runtime and OpenVINO, on OpenCLIP's encoders exported once to
ONNX (bench/peers_export.py, into build/peers/): the image encoders of ViT-B-32, ViT-B-16 and
RN50 per precision at batch 64 (images/s) and batch 1 (ms per image), and ViT-B-32's text
encoder at batch 64 (texts/s; RN50's and ViT-B-16's text towers are the same model), alternating
ours and the peers in the same rounds (ours, ORT, OV, ours, ...); median per cell.
Row ids: MODEL/TOWER_PRECISION_bBATCH, e.g. vit-b-32/image_int8_b64, rn50/image_fp32_b1,
vit-b-32/text_bf16_b64 (--only matches them). The text rows come twice: captions of 8-24 words
(ours computes up to the longest, as it does for real captions) and text77_* with 75-token
captions, where ours computes all 77 positions as the exported graphs do: like for like. Prints a markdown table (which peer is best per
row, our ratio to it; "-" where an engine has no such path, with the reason under the row) and
appends every measurement to build/peers/results.jsonl."""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "peers")
OURS_PREC = {"fp32": "fp32", "bf16": "amp_bf16", "int8": "int8", "int8s": "int8"}
PEERS = {"fp32": [("ONNX Runtime", "ort"), ("OpenVINO", "ov")], "bf16": [("OpenVINO", "ov")],
         "int8": [("ONNX Runtime", "ort"), ("OpenVINO", "ov")], "int8s": [("ONNX Runtime", "ort"), ("OpenVINO", "ov")]}
# int8s: ours with static activation scales (`openclip quantize` on 32 random images, as
# OpenVINO's int8 model is nncf.quantize'd on 32 random inputs); int8: ours quantizing per row
# on each call (no scales file), as ONNX Runtime's quantize_dynamic. The peers are the same.
STATIC_MODELS = ["ViT-B-32", "ViT-B-16"]  # RN50 has no int8 path of ours
MODELS = ["ViT-B-32", "ViT-B-16", "RN50"]
TEXT_MODELS = ["ViT-B-32"]


def rows(quick):
    """(id, model, tower, precision, batch) in the order measured."""
    b = 8 if quick else 64
    out = []
    for m in MODELS:
        precs = ("fp32", "bf16", "int8") + (("int8s",) if m in STATIC_MODELS else ())
        for p in precs:
            out += [(f"{m.lower()}/image_{p}_b{bs}", m, "image", p, bs) for bs in (b, 1)]
        if m in TEXT_MODELS:
            out += [(f"{m.lower()}/text_{p}_b{b}", m, "text", p, b) for p in precs]
            out += [(f"{m.lower()}/text77_{p}_b{b}", m, "text", p, b) for p in precs]
    return out


def last_line(text):
    return (text.strip().splitlines() or ["failed"])[-1]


def onnx_of(model, tower):
    """The exported encoder, made on first use by the export Python (torch + open_clip)."""
    path = os.path.join(OUT, f"{model}-{tower}.onnx")
    if not os.path.exists(path):
        py = os.environ.get("OPENCLIP_EXPORT_PYTHON", os.path.join(ROOT, ".pyref", "bin", "python"))
        print(f"compare_peers: exporting {model} {tower} with {py}", file=sys.stderr)
        r = subprocess.run([py, os.path.join(ROOT, "bench", "peers_export.py"), path + ".tmp", model, tower],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"compare_peers: export of {model} {tower} failed: {last_line(r.stderr)}")
        os.replace(path + ".tmp", path)
    return path


def write_png(path, w, h, seed):
    """A w x h RGB PNG of uniform random bytes (stdlib only: the peers' venv has no PIL)."""
    import random
    import struct
    import zlib
    r = random.Random(seed)
    raw = b"".join(b"\x00" + bytes(r.getrandbits(8) for _ in range(3 * w)) for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def scales_of(a, model):
    """Our static int8 scales for the model's random weights, made once: `openclip quantize` on 32
    random 224 px images and its default captions (build/peers/MODEL.int8.safetensors)."""
    path = os.path.join(OUT, f"{model}.int8.safetensors")
    if not os.path.exists(path):
        calib = os.path.join(OUT, "calib")
        os.makedirs(calib, exist_ok=True)
        for i in range(32):
            if not os.path.exists(os.path.join(calib, f"r{i:02d}.png")):
                write_png(os.path.join(calib, f"r{i:02d}.png"), 224, 224, i)
        r = subprocess.run([a.binary, "quantize", "--model", model, "--calib", calib, "--calib-images", "32",
                            "--threads", str(a.threads), "--out", path + ".tmp"], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"compare_peers: openclip quantize of {model} failed: {last_line(r.stderr)}")
        os.replace(path + ".tmp", path)
    return path


def ours(a, model, tower, prec, batch, steps, full=False):
    """Our inputs/s, or (None, why): e.g. int8 refused for a family without an int8 path.
    full: captions of 75 tokens (all 77 positions computed)."""
    cmd = [a.binary, "bench", "infer", "--model", model, "--tower", tower, "--precision", OURS_PREC[prec],
           "--batch-size", str(batch), "--steps", str(steps), "--warmup-steps", "1", "--threads", str(a.threads),
           "--json"] + (["--text-len", "77"] if full else []) + (
               ["--int8-scales", scales_of(a, model)] if prec == "int8s" else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, last_line(r.stderr)
    j = json.loads(last_line(r.stdout))
    return j[f"encode_{tower}_per_second"], j.get("text_tokens_computed")


def peer(a, onnx, engine, tower, prec, batch, steps):
    prec = "int8" if prec == "int8s" else prec  # the peers' int8 in both int8 rows
    cmd = [sys.executable, os.path.join(ROOT, "bench", "peers.py"), onnx, "--engine", engine, "--precision", prec,
           "--tower", tower, "--batch-size", str(batch), "--steps", str(steps), "--threads", str(a.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, last_line(r.stderr)
    return json.loads(last_line(r.stdout))["per_second"], ""


def commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def measure(a, row, steps, rounds, log):
    """rounds x (ours, then each peer): the medians per engine, and notes: {engine: why it failed}
    plus "info" for the text rows."""
    rid, model, tower, prec, batch = row
    onnx = onnx_of(model, tower)
    cells, notes, tokens = {}, {}, None
    n = steps if batch > 1 else 10 * steps
    for _ in range(rounds):
        load = open("/proc/loadavg").read().split()[0]
        v, extra = ours(a, model, tower, prec, batch, n, full="/text77_" in rid)
        if v is None:
            notes["ours"] = extra
        else:
            cells.setdefault("ours", []).append(v)
            tokens = extra
        for label, engine in PEERS[prec]:
            v, err = peer(a, onnx, engine, tower, prec, batch, n)
            if v is None:
                notes[label] = err
                continue
            cells.setdefault(label, []).append(v)
        with open(log, "a") as f:
            f.write(json.dumps({"id": rid, "date": datetime.datetime.utcnow().isoformat(timespec="seconds"),
                                "commit": a.commit, "load": load, "threads": a.threads,
                                **{k: v[-1] for k, v in cells.items()}}) + "\n")
    if tower == "text" and tokens and tokens < 77:
        notes["info"] = (f"ours computes {tokens} of the 77 token positions (up to the longest caption: the causal "
                         "mask makes the rest irrelevant to the end token); the exported OpenCLIP graphs all 77")
    return {k: statistics.median(v) for k, v in cells.items()}, notes


def fmt(v, batch):
    if v is None:
        return "-"
    return f"{v:.1f}" if batch > 1 else f"{1000 / v:.1f}"  # batch 1: ms per input


def print_table(table):
    print("| encode | ours | ONNX Runtime | OpenVINO | best peer | ours / best |")
    print("|---|---|---|---|---|---|")
    for (rid, model, tower, prec, batch), med, notes in table:
        peers = [(k, v) for k, v in med.items() if k != "ours"]
        bname, bval = max(peers, key=lambda kv: kv[1], default=(None, None))
        ratio = f"{med['ours'] / bval:.2f}x" if bval and "ours" in med else "-"
        unit = ("images/s" if tower == "image" else "texts/s") if batch > 1 else "ms"
        what = "text, 75-token captions" if "/text77_" in rid else tower
        pname = "int8 (ours: static scales)" if prec == "int8s" else prec
        print(f"| {model} {what} {pname} batch {batch} ({unit}) | {fmt(med.get('ours'), batch)} "
              f"| {fmt(med.get('ONNX Runtime'), batch)} | {fmt(med.get('OpenVINO'), batch)} | {bname or '-'} "
              f"| {ratio} |")
        for who, n in sorted(notes.items()):
            print(f"|   note: {who}: {n} |||||")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.environ.get("OPENCLIP_BINARY", os.path.join(ROOT, "build", "openclip")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="regex over the row ids (vit-b-32/image_int8_b64, rn50/image_fp32_b1, "
                                               "vit-b-32/text_fp32_b64, ...)")
    ap.add_argument("--quick", action="store_true", help="batch 8 instead of 64, 1 step, 1 round")
    ap.add_argument("--list", action="store_true", help="print the row ids and exit")
    a = ap.parse_args()
    a.commit = commit()
    selected = [r for r in rows(a.quick) if not a.only or re.search(a.only, r[0])]
    if not selected:
        print(f"compare_peers: no row matches --only {a.only!r}; the rows:\n  " +
              "\n  ".join(r[0] for r in rows(a.quick)), file=sys.stderr)
        return 1
    if a.list:
        print("\n".join(r[0] for r in selected))
        return 0
    steps, rounds = (1, 1) if a.quick else (3, a.rounds)
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "results.jsonl")
    print(f"compare_peers: {len(selected)} rows, {rounds} round(s), ours at {a.commit}, {a.threads} threads",
          file=sys.stderr)
    table = [(row, *measure(a, row, steps, rounds, log)) for row in selected]
    print_table(table)
    # A peer that fails where it has the path, or a row with no figure at all, is a broken
    # run (exit 1); ours may refuse a row (e.g. int8 for a family without an int8 path).
    broken = [r[0] for r, med, notes in table if not med or set(notes) - {"ours", "info"}]
    if broken:
        print(f"compare_peers: a peer failed on {', '.join(broken)}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
