"""The PyTorch + OpenCLIP peer of scripts/gpu-check.sh on the same GPU; prints one JSON line.

  bench_open_clip_cuda.py train --model ViT-B-32 --batch-size 256 [--compile] [--steps N]
  bench_open_clip_cuda.py image --model ViT-B-32 --batch-size 1024 [--compile] [--steps N]

train: OpenCLIP's iteration on the GPU as its training script runs it with --precision
amp_bf16 (torch.autocast("cuda", bfloat16), model(images, texts) -> ClipLoss -> backward ->
AdamW step), TF32 allowed as OpenCLIP's main.py sets it, random images and caption-like tokens.
image: encode_image under torch.inference_mode and autocast bf16. --compile wraps the model
(or encode_image) in torch.compile; compilation happens in the warm-up steps, not timed.
Samples/s is the median over the timed steps (CUDA events around each step).
"""
import argparse
import json
import statistics

from bench_open_clip import caption_tokens  # the same synthetic captions as the CPU peer


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["train", "image"])
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    return ap.parse_args()


def timed(torch, step, warmup, steps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1000.0)
    return statistics.median(times)


def main():
    args = parse()
    import torch
    import open_clip

    torch.backends.cuda.matmul.allow_tf32 = True  # OpenCLIP main.py
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = open_clip.create_model(args.model, pretrained=None, precision="fp32", device=dev)
    g = torch.Generator().manual_seed(0)
    B, S = args.batch_size, model.visual.image_size
    S = S[0] if isinstance(S, (tuple, list)) else S
    images = torch.randn(B, 3, S, S, generator=g).to(dev)
    amp = lambda: torch.autocast("cuda", dtype=torch.bfloat16)
    if args.mode == "train":
        model.train()
        tokens = caption_tokens(torch, B, model.context_length, model.vocab_size, g).to(dev)
        loss_fn = open_clip.ClipLoss()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
        fwd = torch.compile(model) if args.compile else model

        def step():
            opt.zero_grad(set_to_none=True)
            with amp():
                img, txt, scale = fwd(images, tokens)[:3]
                loss = loss_fn(img, txt, scale)
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, 4.6052)
    else:
        model.eval()
        enc = torch.compile(model.encode_image) if args.compile else model.encode_image

        def step():
            with torch.inference_mode(), amp():
                enc(images)

    if args.compile:
        args.warmup = max(args.warmup, 2)  # compiles on the first call
    secs = timed(torch, step, args.warmup, args.steps)
    print(json.dumps({"impl": "pytorch+open_clip", "mode": args.mode, "model": args.model, "batch_size": B,
                      "compile": args.compile, "precision": "amp_bf16", "samples_per_second": B / secs,
                      "step_seconds": secs, "torch": torch.__version__, "open_clip": open_clip.__version__,
                      "gpu": torch.cuda.get_device_name(0),
                      "max_memory_gib": torch.cuda.max_memory_allocated() / 2**30}))


if __name__ == "__main__":
    main()
