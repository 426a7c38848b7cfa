"""amp_bf16 with DEFINED arithmetic: the oracle for openclip-cpp's amp_bf16 (golden.py --precision
amp_bf16_defined).

torch's CPU autocast is not a usable bound: it rounds every matmul OUTPUT to bf16 too, and its bf16
kernels change with the CPU (on AMX oneDNN's bf16 path is more exact than the AVX2 one), so a test
bounded by "as close to fp32 as torch autocast" passes or fails by machine. This file states the
arithmetic openclip-cpp's amp_bf16 promises and computes it machine-independently:

  * every matrix product, forward AND backward, rounds both inputs to bfloat16 (round to nearest
    even, through float32, as core/bf16.h) and accumulates exactly (float64 here; fp32 in C++);
  * the products are: the patch embedding (conv1 as patches @ W^T), in_proj, the raw attention
    scores q @ k^T, P @ V, out_proj, c_fc, c_proj, visual.proj and text_projection; in backward
    dX = r(dY) @ r(W), dW = r(dY)^T @ r(X), and for attention dP = r(dO) @ r(V)^T,
    dV = r(P)^T @ r(dO), dQ = r(dS) @ r(K), dK = r(dS)^T @ r(Q) with the softmax scale folded
    into dS (scores are scaled after the product, as src/ops/cpu/attention.cpp does);
  * everything else is exact (float64): biases and their gradients, GELU, LayerNorm, softmax,
    residuals, embeddings, L2 normalisation, the contrastive loss (fp32 in C++, never rounded).

forward(model, images, tokens) runs this on a clip_ref.CLIP whose parameters were converted to
float64; autograd gives the gradients (MatmulBf16 supplies the rounded backward products).
"""
import math

import torch
import torch.nn.functional as F


def r(x):
    """The bf16 value of x: float64 -> float32 -> bfloat16 (nearest even) -> float64."""
    return x.to(torch.float32).to(torch.bfloat16).to(torch.float64)


class MatmulBf16(torch.autograd.Function):
    """a @ b with both inputs rounded to bf16; backward products round their inputs too."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return r(a) @ r(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        rg = r(g)
        return rg @ r(b).transpose(-1, -2), r(a).transpose(-1, -2) @ rg


mm = MatmulBf16.apply


def linear(x, w, b=None):
    y = mm(x, w.t())
    return y if b is None else y + b


def layer_norm(x, ln):
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


def block(x, blk, heads, causal):
    B, T, W = x.shape
    D = W // heads
    a = blk.attn
    qkv = linear(layer_norm(x, blk.ln_1), a.in_proj_weight, a.in_proj_bias)
    q, k, v = (qkv[..., i * W:(i + 1) * W].reshape(B, T, heads, D).transpose(1, 2) for i in range(3))
    s = mm(q, k.transpose(-1, -2)) / math.sqrt(D)  # raw product first, then the scale (as ours)
    if causal:
        s = s + torch.full((T, T), float("-inf"), dtype=s.dtype).triu(1)
    o = mm(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, W)
    x = x + linear(o, a.out_proj.weight, a.out_proj.bias)
    h = linear(layer_norm(x, blk.ln_2), blk.mlp.c_fc.weight, blk.mlp.c_fc.bias)
    h = blk.mlp.gelu(h)
    return x + linear(h, blk.mlp.c_proj.weight, blk.mlp.c_proj.bias)


def encode_image(model, images):
    v = model.visual
    B, ps, g = images.shape[0], v.patch_size, v.grid_size
    patches = images[:, :, :g * ps, :g * ps].reshape(B, 3, g, ps, g, ps).permute(0, 2, 4, 1, 3, 5)
    x = linear(patches.reshape(B, g * g, -1), v.conv1.weight.reshape(v.conv1.weight.shape[0], -1))
    x = torch.cat([v.class_embedding.view(1, 1, -1).expand(B, -1, -1), x], dim=1) + v.positional_embedding
    x = layer_norm(x, v.ln_pre)
    heads = v.transformer.resblocks[0].attn.num_heads
    for blk in v.transformer.resblocks:
        x = block(x, blk, heads, causal=False)
    return mm(layer_norm(x, v.ln_post)[:, 0], v.proj)


def encode_text(model, tokens):
    x = model.token_embedding.weight[tokens] + model.positional_embedding
    heads = model.transformer.resblocks[0].attn.num_heads
    for blk in model.transformer.resblocks:
        x = block(x, blk, heads, causal=True)
    x = layer_norm(x, model.ln_final)
    return mm(x[torch.arange(x.shape[0]), tokens.argmax(dim=-1)], model.text_projection)


def forward(model, images, tokens):
    """Same contract as clip_ref.CLIP.forward: (image features, text features, exp(logit_scale))."""
    img = F.normalize(encode_image(model, images.to(torch.float64)), dim=-1)
    txt = F.normalize(encode_text(model, tokens), dim=-1)
    return img, txt, model.logit_scale.exp()
