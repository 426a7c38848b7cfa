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


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "ops":
        ops(sys.argv[2])
    elif cmd == "table":
        table(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(f"unknown command {cmd}")
