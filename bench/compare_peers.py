"""Driver of bench/compare_peers.sh (run inside its environment): `openclip bench infer` against
the engines CPU users deploy, ONNX Runtime and OpenVINO, on OpenCLIP's ViT-B-32 image encoder
exported once to ONNX, per precision at batch 64 (images/s) and batch 1 (ms per image),
alternating ours and the peers in the same rounds (ours, ORT, OV, ours, ...); median per cell.
Prints a markdown table (which peer is best per row, our ratio to it) and appends every
measurement to build/peers/results.jsonl."""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS_PREC = {"fp32": "fp32", "bf16": "amp_bf16", "int8": "int8"}
PEERS = {"fp32": [("ONNX Runtime", "ort"), ("OpenVINO", "ov")], "bf16": [("OpenVINO", "ov")],
         "int8": [("ONNX Runtime", "ort"), ("OpenVINO", "ov")]}


def rows(quick):
    b = "8" if quick else "64"
    return [(f"image_{p}_b{bs}", p, int(bs)) for p in ("fp32", "bf16", "int8") for bs in (b, "1")]


def ours(binary, prec, batch, steps, threads):
    cmd = [binary, "bench", "infer", "--model", "ViT-B-32", "--precision", OURS_PREC[prec], "--batch-size", str(batch),
           "--steps", str(steps), "--warmup-steps", "1", "--threads", str(threads), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["encode_image_per_second"]


def peer(onnx, engine, prec, batch, steps, threads):
    cmd = [sys.executable, os.path.join(ROOT, "bench", "peers.py"), onnx, "--engine", engine, "--precision", prec,
           "--batch-size", str(batch), "--steps", str(steps), "--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(r.stdout.strip().splitlines()[-1])["per_second"], ""


def fmt(v, batch):
    if v is None:
        return "-"
    return f"{v:.1f}" if batch > 1 else f"{1000 / v:.1f}"  # batch 1: ms per image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx", default=os.path.join(ROOT, "build", "peers", "ViT-B-32.onnx"))
    ap.add_argument("--binary", default=os.environ.get("OPENCLIP_BINARY", os.path.join(ROOT, "build", "openclip")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="regex over the row ids (image_int8_b64, image_fp32_b1, ...)")
    ap.add_argument("--quick", action="store_true", help="batch 8 instead of 64, 1 step, 1 round")
    a = ap.parse_args()
    steps = {True: 1, False: 3}[a.quick]
    rounds = 1 if a.quick else a.rounds
    log = os.path.join(ROOT, "build", "peers", "results.jsonl")
    table = []
    for rid, prec, batch in rows(a.quick):
        if a.only and not re.search(a.only, rid):
            continue
        cells = {"ours": []}
        notes = []
        for _ in range(rounds):
            load = open("/proc/loadavg").read().split()[0]
            cells["ours"].append(ours(a.binary, prec, batch, steps if batch > 1 else 10 * steps, a.threads))
            for label, engine in PEERS[prec]:
                v, err = peer(a.onnx, engine, prec, batch, steps if batch > 1 else 10 * steps, a.threads)
                if v is None:
                    notes.append(f"{label}: {err}")
                    continue
                cells.setdefault(label, []).append(v)
            with open(log, "a") as f:
                f.write(json.dumps({"id": rid, "date": datetime.datetime.utcnow().isoformat(timespec="seconds"),
                                    "load": load, **{k: v[-1] for k, v in cells.items() if v}}) + "\n")
        med = {k: statistics.median(v) for k, v in cells.items() if v}
        best = max(((k, v) for k, v in med.items() if k != "ours"), key=lambda kv: kv[1], default=(None, None))
        table.append((rid, prec, batch, med, best, sorted(set(notes))))
    print(f"| {('encode_image ViT-B-32'):28} | ours | ONNX Runtime | OpenVINO | best peer | ours / best |")
    print("|---|---|---|---|---|---|")
    for rid, prec, batch, med, (bname, bval), notes in table:
        unit = "images/s" if batch > 1 else "ms"
        ratio = f"{med['ours'] / bval:.2f}x" if bval else "-"
        print(f"| {prec} batch {batch} ({unit}) | {fmt(med.get('ours'), batch)} | {fmt(med.get('ONNX Runtime'), batch)} "
              f"| {fmt(med.get('OpenVINO'), batch)} | {bname or '-'} | {ratio} |")
        for n in notes:
            print(f"|   note: {n} |||||")


if __name__ == "__main__":
    main()
