#!/usr/bin/python3
"""Independent zero-shot and retrieval evaluation for tests/eval, on the PyTorch reference
model (clip_ref.py) and tokenizer (tokenizer_ref.py):

  eval_ref.py --config test-tiny --weights W.safetensors --folder DIR --vocab V.txt.gz \
              --templates T.txt --retrieval-csv CSV [--dedup-images]

DIR holds one sub-folder per class of PNG images already at the model's image size, so
OpenCLIP's eval transform is ToTensor + Normalize only. Prints JSON with OpenCLIP's keys:
imagenet-zeroshot-val-top1/top5 (class names = folder names) and the retrieval metrics of the
CSV (filepath<TAB>title), computed as OpenCLIP's get_clip_metrics does (every row its own pair,
diagonal ground truth), or with --dedup-images one image per distinct path and an image's best
caption counting (CLIP_benchmark's multi-caption convention).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_ref  # noqa: E402
from tokenizer_ref import SimpleTokenizer  # noqa: E402

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        assert v["dtype"] == "F32"
        out[k] = torch.from_numpy(np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").copy()).reshape(v["shape"])
    return out


def pixels(path):
    a = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0
    return torch.from_numpy(((a - MEAN) / STD).transpose(2, 0, 1).copy())


def ranks(scores, gt_sets):
    # get_clip_metrics: the ground truth's position in torch.argsort(descending=True), so equal
    # scores (copies of an image) are placed as torch's CPU sort places them.
    out = []
    for i, row in enumerate(torch.from_numpy(np.ascontiguousarray(scores))):
        order = torch.argsort(row, descending=True).tolist()
        out.append(min(order.index(g) for g in gt_sets[i]))
    return np.array(out)


def summarize(r, prefix, m):
    m[prefix + "_mean_rank"] = float(r.mean() + 1)
    m[prefix + "_median_rank"] = float(np.floor(np.median(r)) + 1)
    for k in (1, 5, 10):
        m[f"{prefix}_R@{k}"] = float((r < k).mean())


def main():
    ap = argparse.ArgumentParser()
    for a in ("--config", "--weights", "--folder", "--vocab", "--templates", "--retrieval-csv"):
        ap.add_argument(a, required=True)
    ap.add_argument("--dedup-images", action="store_true",
                    help="retrieval: captions of one path share one image (ours, --val-dedup-images)")
    args = ap.parse_args()
    cfg = clip_ref.load_config(args.config)
    model = clip_ref.CLIP(cfg)
    model.load_state_dict(read_safetensors(args.weights), strict=True)
    model.eval()
    tok = SimpleTokenizer(args.vocab)
    ctx = cfg["text_cfg"]["context_length"]
    templates = [t for t in open(args.templates).read().split("\n") if t]
    classes = sorted(d for d in os.listdir(args.folder) if os.path.isdir(os.path.join(args.folder, d)))
    m = {}
    with torch.no_grad():
        W = []
        for c in classes:
            toks = torch.tensor([tok(t.replace("{c}", c), ctx) for t in templates])
            e = torch.nn.functional.normalize(model.encode_text(toks), dim=-1).mean(0)
            W.append(e / e.norm())
        W = torch.stack(W)
        imgs, labels = [], []
        for ci, c in enumerate(classes):
            for f in sorted(os.listdir(os.path.join(args.folder, c))):
                imgs.append(pixels(os.path.join(args.folder, c, f)))
                labels.append(ci)
        feats = torch.nn.functional.normalize(model.encode_image(torch.stack(imgs)), dim=-1)
        logits = 100.0 * feats @ W.T
        top = logits.topk(min(5, len(classes)), dim=1).indices
        y = torch.tensor(labels)
        m["imagenet-zeroshot-val-top1"] = float((top[:, 0] == y).float().mean())
        m["imagenet-zeroshot-val-top5"] = float((top == y[:, None]).any(1).float().mean())
        # retrieval
        rows = [l.split("\t") for l in open(args.retrieval_csv).read().split("\n")[1:] if l]
        base = os.path.dirname(args.retrieval_csv)
        if args.dedup_images:  # ours (--val-dedup-images): one image per distinct path
            paths = []
            for p, _ in rows:
                if p not in paths:
                    paths.append(p)
        else:  # OpenCLIP's get_clip_metrics: every row is its own image-text pair
            paths = [p for p, _ in rows]
        img = torch.nn.functional.normalize(model.encode_image(torch.stack([pixels(os.path.join(base, p)) for p in paths])), dim=-1)
        txt = torch.nn.functional.normalize(model.encode_text(torch.tensor([tok(t, ctx) for _, t in rows])), dim=-1)
        text_image = [paths.index(p) for p, _ in rows] if args.dedup_images else list(range(len(rows)))
        s = (img @ txt.T).numpy()
        summarize(ranks(s, [[j for j, ti in enumerate(text_image) if ti == i] for i in range(len(paths))]), "image_to_text", m)
        summarize(ranks(s.T, [[ti] for ti in text_image]), "text_to_image", m)
    print(json.dumps(m))


if __name__ == "__main__":
    main()
