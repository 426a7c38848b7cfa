#!/usr/bin/env python3
"""OpenCLIP 2.24.0 + timm 0.9.16 SigLIP models as the reference for tests/model/siglip_*_test.cpp
(run with .pyref/bin/python, made by scripts/setup_pyref.sh). No weights are downloaded: the
models are built at random init (pretrained=None) and exchanged through files.

SigLIP2 (OpenCLIP 3.3's configs, which 2.24 lacks): NAME's JSON is read from the project's
configs/models/ (a copy of 3.3's) and registered with 2.24's factory; 2.24's
CLIPTextCfg takes its act_kwargs ({"approximate": "tanh"}: nn.GELU(approximate="tanh")). Its
timm towers that timm 0.9.16 lacks are built as timm 1.0.22 defines them (TIMM_1_0 below: the
0.9.16 entry of the same family with 1.0.22's arguments merged over it), and for
act_layer="gelu_tanh" the MAP head's MLP gets GELUTanh too, as 1.0.22's AttentionPoolLatent
takes the tower's act_layer (0.9.16's keeps nn.GELU).

  siglip_ref.py run NAME LAYERS B STEPS OUTDIR
      OpenCLIP's NAME (a built-in SigLIP config) with LAYERS blocks in each tower (0: the
      config's own depths), at random
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


# timm 1.0.22's vit_*_siglip_* entries that 0.9.16 lacks: (0.9.16 entry, 1.0.22's arguments).
TIMM_1_0 = {
    "vit_base_patch32_siglip_256": ("vit_base_patch16_siglip_256", dict(patch_size=32, act_layer="gelu_tanh")),
    "vit_large_patch16_siglip_512": ("vit_large_patch16_siglip_384", dict(img_size=512, act_layer="gelu_tanh")),
    "vit_so400m_patch14_siglip_378": ("vit_so400m_patch14_siglip_384", dict(img_size=378)),
    **{f"vit_so400m_patch16_siglip_{s}": ("vit_so400m_patch14_siglip_384",
                                         dict(img_size=s, patch_size=16, act_layer="gelu_tanh"))
       for s in (256, 384, 512)},
    **{f"vit_giantopt_patch16_siglip_{s}": (f"vit_base_patch16_siglip_{s}",
                                           dict(embed_dim=1536, depth=40, num_heads=16, act_layer="gelu_tanh"))
       for s in (256, 384)},
}


def register_config(name):
    """A config 2.24 lacks (SigLIP2): the project's copy of OpenCLIP 3.3's JSON."""
    import json
    import open_clip.factory as factory
    if name in factory._MODEL_CONFIGS:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "configs", "models", name + ".json")) as f:
        factory._MODEL_CONFIGS[name] = json.load(f)


def set_depth(name, layers):
    import open_clip
    import open_clip.factory as factory
    import timm
    register_config(name)
    if layers:
        factory._MODEL_CONFIGS[name]["text_cfg"]["layers"] = layers
    create = timm.create_model

    def create_at_depth(model_name, *args, **kwargs):
        base, args_1_0 = TIMM_1_0.get(model_name, (model_name, {}))
        kwargs = {**args_1_0, **kwargs}
        if layers:
            kwargs["depth"] = layers
        model = create(base, *args, **kwargs)
        if kwargs.get("act_layer") == "gelu_tanh" and model.attn_pool is not None:
            model.attn_pool.mlp.act = timm.layers.GELUTanh()
        return model

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
