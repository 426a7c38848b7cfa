#!/usr/bin/python3
"""PyTorch side of the benchmarks: the same CLIP (clip_ref.py, OpenCLIP layout and math) timed on
this machine, to be run in the same session as the C++ benchmarks.

  bench_torch.py --model ViT-B-32 --mode train|infer_image|infer_text --batch-size B
                 --precision fp32|amp_bf16|pure_bf16 --steps N --threads T [--warmup 1] [--json]
                 [--blas auto|system|DIR]

train:       forward + ClipLoss + backward + AdamW step + logit_scale clamp (OpenCLIP's iteration),
             random images [B,3,S,S] and full-context tokens [B,ctx] (EOT in the last slot).
infer_image: encode_image under torch.no_grad, model.eval().
infer_text:  encode_text (full context) under torch.no_grad, model.eval().
zeroshot:    OpenCLIP's build_zero_shot_classifier over the first --classes ImageNet classes x
             --templates templates (data/imagenet_zeroshot.json, tokenized by tokenizer_ref.py,
             full context as OpenCLIP), one class per batch; then --images random images
             classified in batches of --batch-size (encode_image + 100 * img @ W).
samples/s = B * steps / (wall time of the timed steps); warmup steps are not timed.

BLAS matters more than anything else here: Debian's torch calls the libblas.so.3 alternative for
fp32 matmuls, and the default alternative is netlib's reference BLAS (~1-2 GFLOP/s, 60x slower
than OpenBLAS on this machine). --blas auto (default) re-executes with OpenBLAS when Debian's
libopenblas0-pthread is installed (/usr/lib/x86_64-linux-gnu/openblas-pthread) or the directory
in $OPENCLIP_OPENBLAS_DIR holds a libblas.so.3; the result records which BLAS was loaded.
"""
import argparse
import json
import os
import sys
import time

DEBIAN_OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread"


def parse():
    ap = argparse.ArgumentParser(description="PyTorch CLIP benchmark (reference side)")
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--mode", default="train", choices=["train", "infer_image", "infer_text", "zeroshot"])
    ap.add_argument("--classes", type=int, default=1000, help="zeroshot: first N ImageNet classes")
    ap.add_argument("--templates", type=int, default=80, help="zeroshot: first N OpenAI templates")
    ap.add_argument("--images", type=int, default=128, help="zeroshot: random images to classify")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "amp_bf16", "pure_bf16"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blas", default="auto", help="auto | system | DIR holding libblas.so.3")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    return ap.parse_args()


def maybe_reexec(args):
    """Thread counts and the BLAS library must be fixed before torch loads them."""
    want = None
    if args.blas == "auto":
        for d in (os.environ.get("OPENCLIP_OPENBLAS_DIR"), DEBIAN_OPENBLAS):
            if d and os.path.exists(os.path.join(d, "libblas.so.3")):
                want = d
                break
    elif args.blas != "system":
        want = args.blas
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(args.threads)
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    if want:
        env["LD_LIBRARY_PATH"] = want + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    if os.environ.get("_OC_BENCH_CHILD") != "1":
        env["_OC_BENCH_CHILD"] = "1"
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def loaded_blas():
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.split()[-1].lower()}
    return sorted(libs)


def zeroshot(args, model, cfg, torch, clip_ref):
    import tokenizer_ref
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(here, "..", "..", "data")
    task = json.load(open(os.path.join(data, "imagenet_zeroshot.json")))
    classes, templates = task["classnames"][:args.classes], task["templates"][:args.templates]
    tok = tokenizer_ref.SimpleTokenizer(os.path.join(data, "bpe_simple_vocab_16e6.txt.gz"))
    ctx = cfg["text_cfg"]["context_length"]
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad(), clip_ref.autocast_ctx(args.precision):
        rows = []
        for c in classes:
            texts = [t.replace("{c}", c).replace("{}", c) for t in templates]
            toks = torch.tensor([tok(x, context_length=ctx) for x in texts], dtype=torch.long)
            e = model.encode_text(toks).float()
            e = e / e.norm(dim=-1, keepdim=True)
            e = e.mean(dim=0)
            rows.append(e / e.norm())
        W = torch.stack(rows, dim=1)
    cls_s = time.perf_counter() - t0
    v = cfg["vision_cfg"]
    g = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.batch_size, 3, v["image_size"], v["image_size"], generator=g).to(
        clip_ref.input_dtype(args.precision))
    t0 = time.perf_counter()
    done = 0
    with torch.no_grad(), clip_ref.autocast_ctx(args.precision):
        while done < args.images:
            n = min(args.batch_size, args.images - done)
            f = model.encode_image(images[:n]).float()
            f = f / f.norm(dim=-1, keepdim=True)
            _ = 100.0 * f @ W
            done += n
    img_s = args.images / (time.perf_counter() - t0)
    n_prompts = len(classes) * len(templates)
    res = {"impl": "pytorch", "torch": torch.__version__, "model": args.model, "mode": "zeroshot",
           "precision": args.precision, "classes": len(classes), "templates": len(templates),
           "classifier_seconds": cls_s, "prompts_per_second": n_prompts / cls_s,
           "classifier_seconds_1000x80": 80000 / (n_prompts / cls_s), "images_per_second": img_s,
           "threads": args.threads, "loadavg_1min": float(open("/proc/loadavg").read().split()[0]),
           "blas": loaded_blas()}
    print(json.dumps(res) if args.json else
          f"pytorch zeroshot {args.model} {args.precision}: classifier {len(classes)} x {len(templates)} in "
          f"{cls_s:.1f} s ({n_prompts / cls_s:.1f} prompts/s; 1000 x 80 would take "
          f"{res['classifier_seconds_1000x80']:.0f} s); {img_s:.2f} images/s (load {res['loadavg_1min']})")
    return 0


def main():
    args = parse()
    maybe_reexec(args)
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import clip_ref

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = clip_ref.load_config(args.model)
    model = clip_ref.prepare_model(clip_ref.CLIP(cfg), args.precision)
    v, t = cfg["vision_cfg"], cfg["text_cfg"]
    B = args.batch_size
    g = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(B, 3, v["image_size"], v["image_size"], generator=g).to(clip_ref.input_dtype(args.precision))
    tokens = torch.randint(0, t["vocab_size"] - 2, (B, t["context_length"]), generator=g)
    tokens[:, 0] = t["vocab_size"] - 2
    tokens[:, -1] = t["vocab_size"] - 1

    if args.mode == "zeroshot":
        return zeroshot(args, model, cfg, torch, clip_ref)
    if args.mode == "train":
        model.train()
        hp = clip_ref.default_adam_params(args.model)
        opt = clip_ref.make_optimizer(model, hp["lr"], 0.2, betas=hp["betas"], eps=hp["eps"])
        loss_fn = clip_ref.ClipLoss()

        def step():
            loss, *_ = clip_ref.train_step(model, loss_fn, opt, images, tokens, args.precision)
            return float(loss)
    else:
        model.eval()
        enc = model.encode_image if args.mode == "infer_image" else model.encode_text
        x = images if args.mode == "infer_image" else tokens

        def step():
            with torch.no_grad(), clip_ref.autocast_ctx(args.precision):
                return float(enc(x).float().sum())

    for _ in range(args.warmup):
        step()
    times, cpu = [], []
    for _ in range(args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    total = sum(times)
    import resource
    res = {
        "impl": "pytorch", "torch": torch.__version__, "model": args.model, "mode": args.mode,
        "precision": args.precision, "batch_size": B, "threads": args.threads,
        "warmup": args.warmup, "steps": args.steps,
        "samples_per_s": B * args.steps / total,
        "step_ms": [round(1e3 * s, 2) for s in times],
        "step_ms_median": round(1e3 * sorted(times)[len(times) // 2], 2),
        # CPU seconds of this process per step: with --threads 1 on a shared, busy machine this
        # is the better estimate of the uncontended step time (spinning threads inflate it at >1).
        "step_cpu_s": [round(c, 2) for c in cpu],
        "samples_per_cpu_s": B * args.steps / sum(cpu),
        "loadavg_1min": float(open("/proc/loadavg").read().split()[0]),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "blas": loaded_blas(),
    }
    if args.json:
        print(json.dumps(res))
    else:
        print(f"pytorch {res['torch']} {args.model} {args.mode} {args.precision} batch {B} threads {args.threads}: "
              f"{res['samples_per_s']:.2f} samples/s  (step ms {res['step_ms']}, cpu s {res['step_cpu_s']}, "
              f"load {res['loadavg_1min']}, peak RSS {res['peak_rss_mib']} MiB, "
              f"blas {','.join(os.path.basename(b) for b in res['blas']) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
