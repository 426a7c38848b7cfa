"""Their side of bench/compare.sh: OpenCLIP (open-clip-torch) on PyTorch 2.x, timed on this
machine. Runs inside compare.sh's environment (.venv-bench/); prints one JSON line.

  bench_open_clip.py train [--model M] [--siglip] --precision fp32|pure_bf16|autocast_bf16 --batch-size B --steps N
  bench_open_clip.py image|text --precision fp32|bf16|autocast_bf16 [--compile] --batch-size B --steps N
  bench_open_clip.py tokenizer --captions FILE
  bench_open_clip.py data --shard TAR --batch-size B --batches N --workers W

train: OpenCLIP's iteration (model(images, texts) -> ClipLoss, or SigLipLoss with --siglip and
main.py's SigLIP init (logit_scale ln 10, logit_bias -10) -> backward -> AdamW step), random
images at the model's size and caption-like tokens (8-24 tokens, padded to the model's context
as OpenCLIP does).
image/text: encode_image / encode_text under torch.inference_mode, model.eval(); `bf16` is the
model cast to bfloat16 (pure bf16, their fastest eager CPU path), `autocast_bf16` fp32 weights
under torch.autocast("cpu", torch.bfloat16); --compile wraps the encoder in torch.compile
(compiled during the warm-up steps, which are not timed).
tokenizer: open_clip.tokenize over the lines of FILE. data: a torch DataLoader over the JPEG/text
pairs of a webdataset tar (PIL decode, OpenCLIP's training transform, tokenizer), W workers.
"""
import argparse
import io
import json
import math
import os
import resource
import tarfile
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["train", "image", "text", "tokenizer", "data"])
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "pure_bf16", "autocast_bf16"])
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--siglip", action="store_true", help="train: SigLipLoss, as OpenCLIP's --siglip")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--captions", help="tokenizer: a text file, one caption per line")
    ap.add_argument("--shard", help="data: a webdataset tar of NNN.jpg + NNN.txt")
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    return ap.parse_args()


def caption_tokens(torch, B, ctx, vocab, g):
    """[sot, ids..., eot, 0...] with 8..24 ids: the lengths of COCO-like captions."""
    t = torch.zeros(B, ctx, dtype=torch.long)
    lens = torch.randint(8, 25, (B,), generator=g)
    for b in range(B):
        n = int(lens[b])
        t[b, 0] = vocab - 2
        t[b, 1:n + 1] = torch.randint(0, vocab - 2, (n,), generator=g)
        t[b, n + 1] = vocab - 1
    return t


def timed(step, warmup, steps):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def model_run(args, torch, open_clip):
    # main.py passes these model_kwargs for --siglip
    kw = {"init_logit_scale": math.log(10), "init_logit_bias": -10} if args.siglip else {}
    model = open_clip.create_model(args.model, pretrained=None, precision="fp32", device="cpu", **kw)
    B = args.batch_size
    g = torch.Generator().manual_seed(1)
    size = model.visual.image_size
    size = size if isinstance(size, int) else size[0]
    images = torch.randn(B, 3, size, size, generator=g)
    tokens = caption_tokens(torch, B, model.context_length, model.vocab_size, g)
    bf16 = args.precision in ("bf16", "pure_bf16")
    if bf16:
        model = model.to(torch.bfloat16)
        images = images.to(torch.bfloat16)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "autocast_bf16")
    if args.mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
        loss_fn = open_clip.loss.SigLipLoss() if args.siglip else open_clip.ClipLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            with autocast:
                out = model(images, tokens)  # (image, text, logit_scale[, logit_bias])
                loss = loss_fn(*out[:4] if args.siglip else out[:3])
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, 4.6052)
    else:
        model.eval()
        enc = model.encode_image if args.mode == "image" else model.encode_text
        x = images if args.mode == "image" else tokens
        if args.compile:
            enc = torch.compile(enc)

        def step():
            with torch.inference_mode(), autocast:
                enc(x)
        if args.compile:
            args.warmup = max(args.warmup, 2)  # compiles on the first call
    times = timed(step, args.warmup, args.steps)
    return {"samples_per_s": B / sorted(times)[len(times) // 2], "step_s": times}


def tokenizer_run(args, open_clip):
    lines = [line.rstrip("\n") for line in open(args.captions, encoding="utf-8")]
    tok = open_clip.get_tokenizer(args.model)
    tok(lines[:64])  # warm-up
    t0 = time.perf_counter()
    for i in range(0, len(lines), 1024):
        tok(lines[i:i + 1024])
    dt = time.perf_counter() - t0
    return {"samples_per_s": len(lines) / dt, "step_s": [dt]}


def data_run(args, torch, open_clip):
    from PIL import Image
    transform = open_clip.image_transform(224, is_train=True)
    tok = open_clip.get_tokenizer(args.model)

    class Shard(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            wid, nw = (info.id, info.num_workers) if info else (0, 1)
            while True:  # resampled, as a training run over a few shards
                with tarfile.open(args.shard) as tf:
                    pending = {}
                    for i, m in enumerate(tf):
                        key, ext = m.name.rsplit(".", 1)
                        pending.setdefault(key, {})[ext] = tf.extractfile(m).read()
                        if len(pending[key]) == 2:
                            s = pending.pop(key)
                            if hash(key) % nw != wid:
                                continue
                            img = Image.open(io.BytesIO(s["jpg"])).convert("RGB")
                            yield transform(img), tok([s["txt"].decode()])[0]

    dl = torch.utils.data.DataLoader(Shard(), batch_size=args.batch_size, num_workers=args.workers)
    it = iter(dl)
    next(it)  # worker start
    t0 = time.perf_counter()
    for _ in range(args.batches):
        next(it)
    dt = time.perf_counter() - t0
    return {"samples_per_s": args.batches * args.batch_size / dt, "step_s": [dt]}


def main():
    args = parse()
    import torch
    import open_clip
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.mode == "tokenizer":
        r = tokenizer_run(args, open_clip)
    elif args.mode == "data":
        r = data_run(args, torch, open_clip)
    else:
        r = model_run(args, torch, open_clip)
    r.update({"impl": "open_clip", "torch": torch.__version__, "open_clip": open_clip.__version__,
              "mode": args.mode, "precision": args.precision, "compile": args.compile,
              "batch_size": args.batch_size, "threads": args.threads,
              "loadavg": open("/proc/loadavg").read().split()[:3],
              "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
    print(json.dumps(r))


if __name__ == "__main__":
    main()
