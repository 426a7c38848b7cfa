#!/usr/bin/env python3
"""OpenCLIP 2.24.0 + timm 0.9.16 EVA02 as the reference for tests/ops/eva_torch_ref_test.cpp and
tests/model/eva_test.cpp (run with .pyref/bin/python, made by scripts/setup_pyref.sh). No
weights are downloaded: models are built at random init and exchanged through files.

  eva_ref.py ops OUTDIR
      timm's own rotary embedding (RotaryEmbeddingCat, apply_rot_embed_cat, as EvaAttention
      applies it: not on the class token) and SwiGLU gate (silu(x_gate) * x) in float64, with
      their gradients by autograd, on seeded random inputs. Writes OUTDIR/*.f64 (see ops()).
  eva_ref.py table GRID REF OUTDIR
      RotaryEmbeddingCat(64, in_pixels=False, feat_shape=(GRID, GRID), ref_feat_shape=(REF, REF))'s
      pos_embed buffer (float32, [GRID*GRID, 128]) into OUTDIR/table.f32.

The model commands build OpenCLIP's built-in NAME (an EVA02 config) at random init
(torch.manual_seed(0)) with LAYERS blocks in each tower (0: the config's depths; timm's
Eva takes depth= from create_model's kwargs, so timm.create_model is wrapped, as siglip_ref.py
does), batch 4 (resnet_ref.py's batch, encode, loss and AdamW steps: ClipLoss, lr 1e-4, wd 0.2):
  eva_ref.py forward NAME LAYERS OUTDIR     w.pt, images.f32, tokens.i32, image.f32 / text.f32
  eva_ref.py grad NAME LAYERS OUTDIR        as forward, then the ClipLoss of the batch in train
                                            mode in fp32 and float64: loss.txt, loss64.txt,
                                            grads.pt, grads64.pt (gradients by name)
  eva_ref.py train NAME LAYERS N OUTDIR     as forward, then N AdamW steps: losses.txt
  eva_ref.py amp NAME LAYERS OUTDIR         as forward, then image_amp.f32: encode_image under
                                            openclip-cpp's amp_bf16 arithmetic (bf16_ref.py's
                                            contract, machine-independent): OpenCLIP's model in
                                            float64 with both inputs of every matrix product
                                            (patch conv, Linear layers, q @ k^T, P @ V) rounded
                                            to bf16, all else exact; image_amp32.f32: the same
                                            in float32 (PyTorch's fp32 sums)
  eva_ref.py load NAME LAYERS CKPT OUTDIR   create_model_and_transforms(NAME, pretrained=CKPT)'s
                                            encode_image / encode_text of OUTDIR's batch:
                                            image_loaded.f32 / text_loaded.f32
"""
import os
import sys

import numpy as np
import torch

# The op shapes (eva_torch_ref_test.cpp has the same numbers): batch, tokens (1 class token +
# a 3x3 grid), width, heads; the gate's element count.
B, GRID, W, H = 2, 3, 16, 2
N_GATE = 301


def tofile(t, path, dtype):
    t.detach().numpy().astype(dtype).tofile(path)


def rope_apply(qkv, rope):
    """EvaAttention.forward's q/k rotation on a packed [B, T, 3W] buffer."""
    from timm.layers.pos_embed_sincos import apply_rot_embed_cat
    Bn, T, _ = qkv.shape
    q, k, v = qkv.reshape(Bn, T, 3, H, -1).permute(2, 0, 3, 1, 4).unbind(0)
    q = torch.cat([q[:, :, :1, :], apply_rot_embed_cat(q[:, :, 1:, :], rope)], 2)
    k = torch.cat([k[:, :, :1, :], apply_rot_embed_cat(k[:, :, 1:, :], rope)], 2)
    return torch.stack([q, k, v]).permute(1, 3, 0, 2, 4).reshape(Bn, T, 3 * W)


def ops(out):
    from timm.layers.pos_embed_sincos import RotaryEmbeddingCat
    torch.manual_seed(0)
    T = 1 + GRID * GRID
    rope = RotaryEmbeddingCat(W // H, in_pixels=False, feat_shape=(GRID, GRID), ref_feat_shape=(16, 16))
    table = rope.get_embed().double()
    qkv = torch.randn(B, T, 3 * W, dtype=torch.float64, requires_grad=True)
    R = torch.randn(B, T, 3 * W, dtype=torch.float64)
    y = rope_apply(qkv, table)
    (y * R).sum().backward()
    for name, t in [("rope_table", table), ("rope_in", qkv), ("rope_r", R), ("rope_out", y), ("rope_grad", qkv.grad)]:
        tofile(t, os.path.join(out, name + ".f64"), np.float64)
    g = (2 * torch.randn(N_GATE, dtype=torch.float64)).requires_grad_()
    x = torch.randn(N_GATE, dtype=torch.float64, requires_grad=True)
    R = torch.randn(N_GATE, dtype=torch.float64)
    y = torch.nn.SiLU()(g) * x  # timm's SwiGLU: self.act(x_gate) * x
    (y * R).sum().backward()
    for name, t in [("gate", g), ("x", x), ("gate_r", R), ("gate_out", y), ("gate_dg", g.grad), ("gate_dx", x.grad)]:
        tofile(t, os.path.join(out, name + ".f64"), np.float64)


def table(grid, ref, out):
    from timm.layers.pos_embed_sincos import RotaryEmbeddingCat
    rope = RotaryEmbeddingCat(64, in_pixels=False, feat_shape=(grid, grid), ref_feat_shape=(ref, ref))
    tofile(rope.get_embed(), os.path.join(out, "table.f32"), np.float32)


_WRAPPED = []


def create(name, layers, pretrained=None):
    import open_clip
    if layers > 0 and not _WRAPPED:
        _WRAPPED.append(layers)
        open_clip.factory._MODEL_CONFIGS[name]["text_cfg"]["layers"] = layers
        create_timm = open_clip.timm_model.timm.create_model

        def create_at_depth(*args, **kwargs):
            return create_timm(*args, depth=layers, **kwargs)

        open_clip.timm_model.timm.create_model = create_at_depth
    if pretrained:
        return open_clip.create_model_and_transforms(name, pretrained=pretrained)[0]
    return open_clip.create_model(name)


def image_batch(model, out, read):
    """resnet_ref.py's batch (read: its read_batch) for a tower whose image_size is a pair."""
    import resnet_ref as R
    S = model.visual.image_size
    model.visual.image_size = S[0]
    try:
        return R.read_batch(model, out) if read else R.batch(model, out)
    finally:
        model.visual.image_size = S


def bf16_round(x):
    """The bf16 value of x: float64 -> float32 -> bfloat16 (nearest even) -> float64."""
    return x.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def encode_image_amp_defined(model, images, dtype=torch.float64):
    """encode_image in `dtype` with every matrix product's inputs rounded to bf16 (float64: the
    contract's exact sums; float32: PyTorch's own fp32 sums of the same rounded products, the
    yardstick of how far fp32 accumulation alone moves the result). timm's EvaAttention scales q
    before q @ k^T (openclip-cpp after it): the same rounding where the scale is a power of two
    (head width 64: 1/8)."""
    import torch.nn.functional as F
    model = model.to(dtype).eval()
    for m in model.visual.modules():
        if hasattr(m, "fused_attn"):
            m.fused_attn = False  # the explicit q @ k^T, softmax, P @ V
    r = lambda x: bf16_round(x).to(dtype)  # noqa: E731
    linear, conv2d, matmul = F.linear, F.conv2d, torch.Tensor.__matmul__
    F.linear = lambda x, w, b=None: linear(r(x), r(w), b)
    F.conv2d = lambda x, w, b=None, *a: conv2d(r(x), r(w), b, *a)
    torch.Tensor.__matmul__ = lambda a, b: matmul(r(a), r(b))
    try:
        with torch.no_grad():
            return model.encode_image(images.to(dtype))
    finally:
        F.linear, F.conv2d, torch.Tensor.__matmul__ = linear, conv2d, matmul


def model_command(cmd, name, layers, rest):
    import resnet_ref as R
    out = rest[-1]
    torch.manual_seed(0)
    torch.set_num_threads(2)
    if cmd == "load":
        model = create(name, layers, pretrained=rest[0])
        images, tokens = image_batch(model, out, read=True)
        R.encode(model, images, tokens, out, "_loaded")
        return
    model = create(name, layers)
    torch.save(model.state_dict(), os.path.join(out, "w.pt"))
    images, tokens = image_batch(model, out, read=False)
    R.encode(model, images, tokens, out)
    if cmd == "grad":
        for dtype, suffix in ((torch.float32, ""), (torch.float64, "64")):
            m = create(name, layers)
            m.load_state_dict(torch.load(os.path.join(out, "w.pt")))
            m = m.to(dtype).train()
            loss = R.loss_of(m, images.to(dtype), tokens)
            loss.backward()
            open(os.path.join(out, f"loss{suffix}.txt"), "w").write(f"{loss.item():.17g}\n")
            torch.save({n: p.grad for n, p in m.named_parameters()}, os.path.join(out, f"grads{suffix}.pt"))
    elif cmd == "amp":
        tofile(encode_image_amp_defined(model, images), os.path.join(out, "image_amp.f32"), np.float32)
        tofile(encode_image_amp_defined(model, images, torch.float32), os.path.join(out, "image_amp32.f32"), np.float32)
    elif cmd == "train":
        losses = R.train(model, images, tokens, int(rest[0]))
        open(os.path.join(out, "losses.txt"), "w").write("".join(f"{x:.17g}\n" for x in losses))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    cmd = sys.argv[1]
    if cmd == "ops":
        ops(sys.argv[2])
    elif cmd == "table":
        table(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif cmd in ("forward", "grad", "train", "load", "amp"):
        model_command(cmd, sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit(f"unknown command {cmd}")
