#!/usr/bin/env python3
"""OpenCLIP 2.24.0 + timm 0.9.16 SigLIP models as the reference for tests/model/siglip_*_test.cpp
(run with .pyref/bin/python, made by scripts/setup_pyref.sh). No weights are downloaded: the
models are built at random init (pretrained=None) and exchanged through files.

  siglip_ref.py run NAME LAYERS B STEPS OUTDIR
      OpenCLIP's NAME (a built-in SigLIP config) with LAYERS blocks in each tower, at random
      init (torch.manual_seed(0)). Writes to OUTDIR: w.pt (its state_dict), images.f32
      [B,3,S,S], tokens.i32 [B,L], image.f32 / text.f32 (encode_image / encode_text, not
      normalized), grads.pt (name -> gradient of SigLipLoss (world size 1) on that batch, the
      first step's), losses.txt (the loss of each of STEPS AdamW steps on the batch: OpenCLIP's
      two groups, lr 1e-3, wd 0.1, betas (0.9, 0.98), eps 1e-6, logit_scale clamped to
      [0, ln 100] after each step, as training/main.py and train.py do).
  siglip_ref.py load NAME LAYERS CKPT OUTDIR
      open_clip.create_model_and_transforms(NAME, pretrained=CKPT) at the same depth; encodes
      OUTDIR/images.f32 and tokens.i32 into OUTDIR/image_ckpt.f32 and text_ckpt.f32.

The reduced depth (real widths): timm's VisionTransformer takes depth= from create_model's
kwargs (the vit_*_siglip_* entries merge them over their defaults), so timm.create_model is
wrapped to pass depth=LAYERS; the text tower's depth is its config's text_cfg.layers.
"""
import math
import os
import sys

import numpy as np
import torch


def set_depth(name, layers):
    import open_clip
    import open_clip.factory as factory
    import timm
    factory._MODEL_CONFIGS[name]["text_cfg"]["layers"] = layers
    create = timm.create_model

    def create_at_depth(*args, **kwargs):
        return create(*args, depth=layers, **kwargs)

    open_clip.timm_model.timm.create_model = create_at_depth


def tofile(t, path, dtype=np.float32):
    t.detach().numpy().astype(dtype).tofile(path)


def batch(model, B):
    S, L, V = model.visual.image_size[0], model.context_length, model.vocab_size
    images = torch.randn(B, 3, S, S)
    tokens = torch.randint(1, V, (B, L), dtype=torch.int64)
    tokens[0, L // 2:] = 1  # padding, as the SentencePiece tokenizer pads short texts ("</s>" = 1)
    return images, tokens


def run(name, layers, B, steps, out):
    import open_clip
    set_depth(name, layers)
    torch.manual_seed(0)
    model = open_clip.create_model(name, pretrained=None)
    torch.save(model.state_dict(), os.path.join(out, "w.pt"))
    images, tokens = batch(model, B)
    tofile(images, os.path.join(out, "images.f32"))
    tofile(tokens, os.path.join(out, "tokens.i32"), np.int32)
    model.eval()  # no dropout in these models; eval for the plain encoders
    with torch.no_grad():
        tofile(model.encode_image(images), os.path.join(out, "image.f32"))
        tofile(model.encode_text(tokens), os.path.join(out, "text.f32"))
    loss_fn = open_clip.loss.SigLipLoss(rank=0, world_size=1)
    exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n  # noqa: E731
    named = list(model.named_parameters())
    opt = torch.optim.AdamW(
        [{"params": [p for n, p in named if exclude(n, p)], "weight_decay": 0.},
         {"params": [p for n, p in named if not exclude(n, p)], "weight_decay": 0.1}],
        lr=1e-3, betas=(0.9, 0.98), eps=1e-6)
    losses = []
    for s in range(steps):
        opt.zero_grad()
        loss = loss_fn(*model(images, tokens))
        loss.backward()
        if s == 0:
            torch.save({n: p.grad.clone() for n, p in named}, os.path.join(out, "grads.pt"))
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        losses.append(loss.item())
    with open(os.path.join(out, "losses.txt"), "w") as f:
        f.write("".join(f"{x!r}\n" for x in losses))


def load(name, layers, ckpt, out):
    import open_clip
    set_depth(name, layers)
    model, _, _ = open_clip.create_model_and_transforms(name, pretrained=ckpt)
    S, L = model.visual.image_size[0], model.context_length
    images = torch.from_numpy(np.fromfile(os.path.join(out, "images.f32"), dtype=np.float32)).reshape(-1, 3, S, S)
    tokens = torch.from_numpy(np.fromfile(os.path.join(out, "tokens.i32"), dtype=np.int32)).reshape(-1, L).long()
    with torch.no_grad():
        tofile(model.encode_image(images), os.path.join(out, "image_ckpt.f32"))
        tofile(model.encode_text(tokens), os.path.join(out, "text_ckpt.f32"))


def main():
    torch.set_num_threads(2)
    cmd = sys.argv[1]
    if cmd == "run":
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif cmd == "load":
        load(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        sys.exit(f"siglip_ref.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
