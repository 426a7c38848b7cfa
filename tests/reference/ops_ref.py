#!/usr/bin/python3
"""PyTorch goldens for tests/ops/torch_ref_test.cpp.

usage: ops_ref.py DIR
DIR/meta.json names the cases and their sizes; inputs are raw little-endian arrays
DIR/<case>.<name>.bin (float64, except the adamw case: float32). For each case this writes
DIR/<case>.<name>.out.bin with the outputs and gradients PyTorch computes, in the same dtype.
Modules are the ones OpenCLIP uses: F.layer_norm, nn.GELU, QuickGELU, F.gelu(approximate="tanh"), nn.MultiheadAttention
(batch_first, in_proj, causal float mask; and as cross attention, Tq queries over Tk tokens,
as CLIP's AttentionPool2d and timm's AttentionPoolLatent use it), F.normalize + ClipLoss,
torch.optim.AdamW, and ModifiedResNet's conv -> BatchNorm2d (train mode) -> ReLU -> AvgPool2d
chain (inputs and outputs channels-last, as openclip-cpp lays them out; permuted to PyTorch's
NCHW here), and ConvNeXt's depthwise convolution (F.conv2d with groups = channels, bias).
"""
import json
import math
import os
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)  # the C++ test skips

D = sys.argv[1]
META = json.load(open(os.path.join(D, "meta.json")))


def load(case, name, shape, dtype=np.float64):
    a = np.fromfile(os.path.join(D, f"{case}.{name}.bin"), dtype=dtype)
    return torch.from_numpy(a.reshape(shape).copy())


def save(case, name, t):
    t.detach().contiguous().numpy().tofile(os.path.join(D, f"{case}.{name}.out.bin"))


def layernorm(m):
    N, C = m["N"], m["C"]
    x = load("layernorm", "x", [N, C]).requires_grad_()
    w = load("layernorm", "w", [C]).requires_grad_()
    b = load("layernorm", "b", [C]).requires_grad_()
    dy = load("layernorm", "dy", [N, C])
    y = F.layer_norm(x, (C,), w, b, eps=1e-5)
    y.backward(dy)
    for n, t in [("y", y), ("dx", x.grad), ("dw", w.grad), ("db", b.grad)]:
        save("layernorm", n, t)


def act(m):
    n = m["n"]
    x = load("act", "x", [n]).requires_grad_()
    dy = load("act", "dy", [n])
    y = torch.nn.GELU()(x)  # exact erf form
    (dx,) = torch.autograd.grad(y, x, dy)
    save("act", "gelu", y)
    save("act", "gelu_dx", dx)
    y = x * torch.sigmoid(1.702 * x)  # open_clip.transformer.QuickGELU
    (dx,) = torch.autograd.grad(y, x, dy)
    save("act", "quick", y)
    save("act", "quick_dx", dx)
    y = F.gelu(x, approximate="tanh")  # SigLIP2's text tower, timm's "gelu_tanh"
    (dx,) = torch.autograd.grad(y, x, dy)
    save("act", "tanh", y)
    save("act", "tanh_dx", dx)


def mha(m):
    B, T, C, H = m["B"], m["T"], m["C"], m["H"]
    for causal in (0, 1):
        case = f"mha{causal}"
        attn = torch.nn.MultiheadAttention(C, H, batch_first=True, dtype=torch.float64)
        with torch.no_grad():
            attn.in_proj_weight.copy_(load(case, "in_w", [3 * C, C]))
            attn.in_proj_bias.copy_(load(case, "in_b", [3 * C]))
            attn.out_proj.weight.copy_(load(case, "out_w", [C, C]))
            attn.out_proj.bias.copy_(load(case, "out_b", [C]))
        x = load(case, "x", [B, T, C]).requires_grad_()
        dy = load(case, "dy", [B, T, C])
        mask = None
        if causal:  # open_clip.transformer.TextTransformer.build_causal_mask
            mask = torch.empty(T, T, dtype=torch.float64).fill_(float("-inf")).triu_(1)
        y = attn(x, x, x, need_weights=False, attn_mask=mask)[0]
        y.backward(dy)
        save(case, "y", y)
        save(case, "dx", x.grad)
        save(case, "in_w", attn.in_proj_weight.grad)
        save(case, "in_b", attn.in_proj_bias.grad)
        save(case, "out_w", attn.out_proj.weight.grad)
        save(case, "out_b", attn.out_proj.bias.grad)


def xattn(m):
    """nn.MultiheadAttention(query [B,Tq,C], key = value [B,Tk,C]): the attention pooling of
    CLIP's AttentionPool2d and timm's AttentionPoolLatent (its q and kv linears are in_proj's
    rows 0:C and C:3C). torch 1.13 has no F.scaled_dot_product_attention; this is its math."""
    B, Tk, C, H = m["B"], m["Tk"], m["C"], m["H"]
    for Tq in m["Tq"]:
        case = f"xattn{Tq}"
        attn = torch.nn.MultiheadAttention(C, H, batch_first=True, dtype=torch.float64)
        with torch.no_grad():
            attn.in_proj_weight.copy_(load(case, "in_w", [3 * C, C]))
            attn.in_proj_bias.copy_(load(case, "in_b", [3 * C]))
            attn.out_proj.weight.copy_(load(case, "out_w", [C, C]))
            attn.out_proj.bias.copy_(load(case, "out_b", [C]))
        xq = load(case, "xq", [B, Tq, C]).requires_grad_()
        xkv = load(case, "xkv", [B, Tk, C]).requires_grad_()
        dy = load(case, "dy", [B, Tq, C])
        y = attn(xq, xkv, xkv, need_weights=False)[0]
        y.backward(dy)
        save(case, "y", y)
        save(case, "dxq", xq.grad)
        save(case, "dxkv", xkv.grad)
        save(case, "in_w", attn.in_proj_weight.grad)
        save(case, "in_b", attn.in_proj_bias.grad)
        save(case, "out_w", attn.out_proj.weight.grad)
        save(case, "out_b", attn.out_proj.bias.grad)


def clip(m):
    N, E = m["N"], m["E"]
    img = load("clip", "img", [N, E]).requires_grad_()
    txt = load("clip", "txt", [N, E]).requires_grad_()
    logit_scale = torch.tensor(m["logit_scale"], dtype=torch.float64, requires_grad=True)
    fi, ft = F.normalize(img, dim=-1), F.normalize(txt, dim=-1)
    s = logit_scale.exp()
    lpi = s * fi @ ft.T  # open_clip.loss.ClipLoss, world_size 1
    lpt = s * ft @ fi.T
    labels = torch.arange(N)
    loss = (F.cross_entropy(lpi, labels) + F.cross_entropy(lpt, labels)) / 2
    loss.backward()
    save("clip", "loss", loss.reshape(1))
    save("clip", "dimg", img.grad)
    save("clip", "dtxt", txt.grad)
    save("clip", "dscale", logit_scale.grad.reshape(1))


def siglip(m):
    """open_clip.loss.SigLipLoss._loss on rank 0 of 2: own texts (labels 2*eye - 1) plus the
    neighbour's block negative-only (labels -1), each -logsigmoid(labels * logits).sum() / B."""
    N, M, E = m["N"], m["M"], m["E"]
    img = load("siglip", "img", [N, E]).requires_grad_()
    txt = load("siglip", "txt", [N, E]).requires_grad_()
    txt2 = load("siglip", "txt2", [M, E]).requires_grad_()
    logit_scale = torch.tensor(m["logit_scale"], dtype=torch.float64, requires_grad=True)
    logit_bias = torch.tensor(m["logit_bias"], dtype=torch.float64, requires_grad=True)
    fi, ft, ft2 = F.normalize(img, dim=-1), F.normalize(txt, dim=-1), F.normalize(txt2, dim=-1)

    def _loss(a, b, negative_only):
        logits = logit_scale.exp() * a @ b.T + logit_bias
        labels = -torch.ones((a.shape[0], b.shape[0]), dtype=torch.float64)
        if not negative_only:
            labels = 2 * torch.eye(a.shape[0], b.shape[0], dtype=torch.float64) + labels
        return -F.logsigmoid(labels * logits).sum() / a.shape[0]

    loss = _loss(fi, ft, False) + _loss(fi, ft2, True)
    loss.backward()
    save("siglip", "loss", loss.reshape(1))
    save("siglip", "dimg", img.grad)
    save("siglip", "dtxt", txt.grad)
    save("siglip", "dtxt2", txt2.grad)
    save("siglip", "dscale", logit_scale.grad.reshape(1))
    save("siglip", "dbias", logit_bias.grad.reshape(1))


def adamw(m):
    n, steps = m["n"], m["steps"]
    f32 = np.float32
    p = torch.nn.Parameter(load("adamw", "p", [n], f32))
    grads = load("adamw", "g", [steps, n], f32)
    opt = torch.optim.AdamW([p], lr=m["lr"], betas=(m["beta1"], m["beta2"]), eps=m["eps"],
                            weight_decay=m["wd"])
    for k in range(steps):
        p.grad = grads[k].clone()
        opt.step()
    st = opt.state[p]
    save("adamw", "p", p.data)
    save("adamw", "m", st["exp_avg"])
    save("adamw", "v", st["exp_avg_sq"])


def convnet(m):
    N, H, W, C, OC, K = m["N"], m["H"], m["W"], m["C"], m["OC"], m["K"]
    x = load("convnet", "x", [N, H, W, C]).permute(0, 3, 1, 2).contiguous().requires_grad_()
    conv = torch.nn.Conv2d(C, OC, K, padding=K // 2, bias=False).double()
    bn = torch.nn.BatchNorm2d(OC).double()
    with torch.no_grad():
        conv.weight.copy_(load("convnet", "w", [OC, C, K, K]))
        bn.weight.copy_(load("convnet", "bn_w", [OC]))
        bn.bias.copy_(load("convnet", "bn_b", [OC]))
    bn.train()
    y = torch.nn.AvgPool2d(2)(torch.relu(bn(conv(x))))
    y.backward(load("convnet", "dy", [N, H // 2, W // 2, OC]).permute(0, 3, 1, 2))
    for n, t in [("y", y.permute(0, 2, 3, 1)), ("dx", x.grad.permute(0, 2, 3, 1)), ("dw", conv.weight.grad),
                 ("dbn_w", bn.weight.grad), ("dbn_b", bn.bias.grad), ("running_mean", bn.running_mean),
                 ("running_var", bn.running_var)]:
        save("convnet", n, t)


def dwconv(m):
    N, H, W, C, K = m["N"], m["H"], m["W"], m["C"], m["K"]
    x = load("dwconv", "x", [N, H, W, C]).permute(0, 3, 1, 2).contiguous().requires_grad_()
    w = load("dwconv", "w", [C, 1, K, K]).requires_grad_()
    b = load("dwconv", "b", [C]).requires_grad_()
    y = F.conv2d(x, w, b, padding=K // 2, groups=C)  # timm's ConvNeXtBlock.conv_dw
    y.backward(load("dwconv", "dy", [N, H, W, C]).permute(0, 3, 1, 2))
    for n, t in [("y", y.permute(0, 2, 3, 1)), ("dx", x.grad.permute(0, 2, 3, 1)), ("dw", w.grad), ("db", b.grad)]:
        save("dwconv", n, t)


torch.set_num_threads(1)
for name in META["cases"]:
    {"layernorm": layernorm, "act": act, "mha": mha, "xattn": xattn, "clip": clip, "siglip": siglip, "adamw": adamw,
     "convnet": convnet, "dwconv": dwconv}[name](META[name])
