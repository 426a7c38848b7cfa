#!/usr/bin/env python3
"""OpenCLIP 2.24.0's own training loop (training.train.train_one_epoch, its ClipLoss /
SigLipLoss, main.py's AdamW groups and cosine schedule, DDP over gloo for several processes)
on webdataset shards, printing the loss of every optimizer step. For tests/train's parity
test; run with .pyref/bin/python (scripts/setup_pyref.sh).

  openclip_train_ref.py shards DIR N PER                 N shards of PER 32x32 PNG + caption samples
  openclip_train_ref.py init OUT.pt [--siglip]           write a random test-tiny init
  openclip_train_ref.py train --shards A.tar,B.tar,... --init W.pt --batch-size B
        [--world 2] [--accum-freq K] [--siglip] [--lr .. --wd .. --warmup ..]

The data path is OpenCLIP's minus randomness: shards split over ranks as wds.split_by_node
(shards[rank::world]), samples in order (no shuffle), PNGs already at the model's size, so
RandomResizedCrop(scale=(1,1)) is the identity and the transform is ToTensor + Normalize.
Prints one line "step S loss L" per step (rank 0's loss, as OpenCLIP logs it).
"""
import argparse
import io
import os
import sys
import tarfile

import numpy as np
import torch

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs", "models", "test-tiny.json")


def create(siglip):
    import open_clip
    open_clip.add_model_config(CONFIG)
    kw = {"init_logit_scale": np.log(10), "init_logit_bias": -10} if siglip else {}
    return open_clip.create_model("test-tiny", precision="fp32", output_dict=True, **kw)


def samples(paths):
    from PIL import Image
    for p in paths:
        with tarfile.open(p) as t:
            members = sorted((m for m in t.getmembers() if m.isfile()), key=lambda m: m.name)
            by_key = {}
            for m in members:
                key, ext = m.name.rsplit(".", 1)
                by_key.setdefault(key, {})[ext] = t.extractfile(m).read()
            for key in sorted(by_key):
                d = by_key[key]
                img = Image.open(io.BytesIO(d["png"])).convert("RGB")
                yield img, d["txt"].decode("utf-8")


class Loader:
    """What train_one_epoch reads: an iterable of (images, texts) with num_batches/num_samples."""

    def __init__(self, shards, batch, tokenizer, transform, total_samples):
        self.shards, self.batch, self.tok, self.tf = shards, batch, tokenizer, transform
        self.num_samples = total_samples
        self.num_batches = None

    def __iter__(self):
        imgs, txts = [], []
        for img, txt in samples(self.shards):
            imgs.append(self.tf(img))
            txts.append(txt)
            if len(imgs) == self.batch:
                yield torch.stack(imgs), self.tok(txts)
                imgs, txts = [], []


class Data:
    def __init__(self, loader):
        self.dataloader = loader

    def set_epoch(self, epoch):
        pass


def train(rank, a):
    import open_clip
    import torchvision.transforms as T
    from training.scheduler import cosine_lr
    from training.train import train_one_epoch

    torch.set_num_threads(1)
    if a.world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        torch.distributed.init_process_group("gloo", rank=rank, world_size=a.world)
    model = create(a.siglip)
    sd = torch.load(a.init, map_location="cpu")
    model.load_state_dict(sd)
    tokenizer = open_clip.get_tokenizer("test-tiny")
    tf = T.Compose([T.ToTensor(), T.Normalize(open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD)])
    shards = a.shards.split(",")[rank::a.world]
    loader = Loader(shards, a.batch_size, tokenizer, tf, a.num_samples)
    loader.num_batches = a.num_samples // (a.batch_size * a.world)
    args = argparse.Namespace(
        device="cpu", precision="fp32", distill=False, accum_freq=a.accum_freq, skip_scheduler=False,
        grad_clip_norm=None, horovod=False, log_every_n_steps=1, batch_size=a.batch_size, world_size=a.world,
        wandb=False, rank=rank, local_rank=rank, siglip=a.siglip, local_loss=a.local_loss,
        gather_with_grad=a.gather_with_grad, model="test-tiny", distributed=a.world > 1, save_logs=False)
    exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n  # noqa: E731
    named = list(model.named_parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in named if exclude(n, p) and p.requires_grad], "weight_decay": 0.},
         {"params": [p for n, p in named if not exclude(n, p) and p.requires_grad], "weight_decay": a.wd}],
        lr=a.lr, betas=(0.9, 0.98), eps=1e-6)
    total_steps = loader.num_batches // a.accum_freq
    scheduler = cosine_lr(optimizer, a.lr, a.warmup, total_steps)
    loss = open_clip.create_loss(args)
    losses = []
    inner = loss.forward

    def recording(*x, **kw):
        out = inner(*x, **kw)
        losses.append(float(sum(out.values())) if isinstance(out, dict) else float(out))
        return out

    loss.forward = recording
    if a.world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    train_one_epoch(model, {"train": Data(loader)}, loss, 0, optimizer, None, scheduler, None, args)
    if rank == 0:
        for s in range(total_steps):  # K loss calls per step, all equal: the last one
            print(f"step {s} loss {losses[(s + 1) * a.accum_freq - 1]!r}", flush=True)


def write_shards(out_dir, n_shards, per):
    from PIL import Image
    rng = np.random.default_rng(0)
    words = "red green blue square circle big small photo of a the dog cat tree car house".split()
    k = 0
    for s in range(n_shards):
        with tarfile.open(os.path.join(out_dir, f"{s:05d}.tar"), "w") as t:
            for _ in range(per):
                b = io.BytesIO()
                Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(b, "PNG")
                for ext, data in (("png", b.getvalue()), ("txt", " ".join(rng.choice(words, 5)).encode())):
                    ti = tarfile.TarInfo(f"{k:06d}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
                k += 1


def main():
    if sys.argv[1] == "shards":
        return write_shards(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--shards")
    ap.add_argument("--init")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--num-samples", type=int)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--accum-freq", type=int, default=1)
    ap.add_argument("--siglip", action="store_true")
    ap.add_argument("--local-loss", action="store_true")
    ap.add_argument("--gather-with-grad", action="store_true")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--port", type=int, default=29611)
    a = ap.parse_args()
    if a.cmd == "init":
        torch.manual_seed(0)
        torch.save(create(a.siglip).state_dict(), a.out)
    elif a.world == 1:
        train(0, a)
    else:
        torch.multiprocessing.spawn(train, args=(a,), nprocs=a.world)


if __name__ == "__main__":
    main()
