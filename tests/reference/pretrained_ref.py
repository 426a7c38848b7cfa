#!/usr/bin/env python3
"""OpenCLIP 2.24.0's handling of pretrained weights: OpenAI's TorchScript checkpoints, the
bf16 set, the positional-embedding resizing of load_checkpoint (run with .pyref/bin/python,
made by scripts/setup_pyref.sh):

  pretrained_ref.py jit CONFIG.json OUTDIR fp16|fp32
      OpenCLIP's model from CONFIG at random init (seed 0), shaped as OpenAI's released
      files: attn_mask a plain tensor attribute (not a buffer, as in OpenAI's
      ResidualAttentionBlock), with fp16 the convert_weights_to_fp16 set in fp16; then
      torch.jit.save(torch.jit.script(model)) -> OUTDIR/m.pt. That file loaded by
      open_clip.load_openai_model(path, device='cpu') encodes images.f32 [2,3,S,S] and
      tokens.i32 [2,L] (written too) -> image.f32 / text.f32 (not normalized).
  pretrained_ref.py lp-set CONFIG.json
      the state_dict names convert_weights_to_lp(model, torch.bfloat16) casts, one a line.
  pretrained_ref.py resize-pos OUTDIR
      open_clip.model.resize_pos_embed / resize_text_pos_embed (their defaults, as
      load_checkpoint calls them) on seeded random embeddings: OUTDIR/vis_in.f32 [1+7*7, 16]
      -> vis_G.f32 for G in VIS_GRIDS; txt_in.f32 [16, 8] -> txt_N.f32 for N in TXT_LENGTHS.
"""
import os
import sys

import numpy as np
import torch


def create_model(config_path):
    import open_clip
    open_clip.add_model_config(config_path)
    return open_clip.create_model(os.path.splitext(os.path.basename(config_path))[0])


def jit(config, out, precision):
    import open_clip
    torch.manual_seed(0)
    model = create_model(config).eval()
    mask = model.attn_mask
    del model._buffers["attn_mask"]
    model.attn_mask = mask
    if precision == "fp16":
        open_clip.model.convert_weights_to_fp16(model)
    path = os.path.join(out, "m.pt")
    torch.jit.save(torch.jit.script(model), path)
    ref = open_clip.load_openai_model(path, device="cpu")
    S, L = ref.visual.image_size, ref.context_length
    S = S[0] if isinstance(S, (tuple, list)) else S
    vocab = ref.vocab_size
    images = torch.randn(2, 3, S, S)
    tokens = torch.randint(1, vocab - 1, (2, L), dtype=torch.int64)
    tokens[0, L // 2] = vocab - 1
    tokens[0, L // 2 + 1:] = 0
    tokens[1, -1] = vocab - 1
    with torch.no_grad():
        img, txt = ref.encode_image(images), ref.encode_text(tokens)
    images.numpy().astype(np.float32).tofile(os.path.join(out, "images.f32"))
    tokens.numpy().astype(np.int32).tofile(os.path.join(out, "tokens.i32"))
    img.numpy().astype(np.float32).tofile(os.path.join(out, "image.f32"))
    txt.numpy().astype(np.float32).tofile(os.path.join(out, "text.f32"))


def lp_set(config):
    from open_clip.model import convert_weights_to_lp
    model = create_model(config)
    convert_weights_to_lp(model, dtype=torch.bfloat16)
    for name, t in model.state_dict().items():
        if t.dtype == torch.bfloat16:
            print(name)


VIS_GRIDS = (3, 4, 10, 16)
TXT_LENGTHS = (5, 10, 24, 77)


def resize_pos(out):
    from types import SimpleNamespace
    from open_clip.model import resize_pos_embed, resize_text_pos_embed
    torch.manual_seed(0)
    vis = torch.randn(1 + 7 * 7, 16)
    txt = torch.randn(16, 8)
    vis.numpy().tofile(os.path.join(out, "vis_in.f32"))
    txt.numpy().tofile(os.path.join(out, "txt_in.f32"))
    for g in VIS_GRIDS:
        sd = {"visual.positional_embedding": vis.clone()}
        resize_pos_embed(sd, SimpleNamespace(visual=SimpleNamespace(grid_size=(g, g))))
        sd["visual.positional_embedding"].numpy().astype(np.float32).tofile(os.path.join(out, f"vis_{g}.f32"))
    for n in TXT_LENGTHS:
        sd = {"positional_embedding": txt.clone()}
        resize_text_pos_embed(sd, SimpleNamespace(positional_embedding=torch.zeros(n, 8)))
        sd["positional_embedding"].numpy().astype(np.float32).tofile(os.path.join(out, f"txt_{n}.f32"))


def main():
    cmd = sys.argv[1]
    if cmd == "jit":
        jit(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "lp-set":
        lp_set(sys.argv[2])
    elif cmd == "resize-pos":
        resize_pos(sys.argv[2])
    else:
        sys.exit(f"pretrained_ref.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
