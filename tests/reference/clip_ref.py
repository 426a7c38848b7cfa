#!/usr/bin/python3
"""Independent PyTorch CLIP (ViT image tower + causal text tower) written from
shared/docs/openclip-reference.md sections 6-9, the oracle the C++ model is tested against.

It is NOT open_clip (not installable here). What must match OpenCLIP exactly:
  - module/parameter names, shapes and state_dict order (302 keys, 151,277,313 params for ViT-B-32),
  - the forward math (pre-norm blocks, nn.MultiheadAttention batch_first, additive causal mask,
    LayerNorm eps 1e-5 that casts back to the input dtype, GELU or QuickGELU, CLS pooling after
    ln_post, text pooling at argmax(token id), projections as `x @ proj`),
  - the init distributions, ClipLoss, the AdamW parameter groups, the logit_scale clamp after each
    step, the warmup+cosine LR schedule, and amp_bf16 via CPU autocast.
Module construction order follows OpenCLIP's too, so RNG consumption at init is the same sequence.

Usage:  clip_ref.py --summary [--config ViT-B-32]     # parameter count, key count, key list
Library: load_config(name), CLIP(cfg), ClipLoss, make_optimizer, cosine_lr, train_step, ...
Torch 1.13, CPU only; run with /usr/bin/python3.
"""
import argparse
import contextlib
import json
import math
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG_DIR = os.path.join(REPO_ROOT, "configs", "models")

VISION_DEFAULTS = {"image_size": 224, "layers": 12, "width": 768, "head_width": 64,
                   "mlp_ratio": 4.0, "patch_size": 16,
                   # the tower options of the -CLIPA / -alt configs (openclip-reference.md, CLIPVisionCfg)
                   "ls_init_value": None, "patch_dropout": 0.0, "no_ln_pre": False, "pool_type": "tok",
                   "final_ln_after_pool": False}
TEXT_DEFAULTS = {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8,
                 "layers": 12, "mlp_ratio": 4.0,
                 "ls_init_value": None, "no_causal_mask": False, "pool_type": "argmax", "proj_bias": False,
                 # no effect on CLIP's text path (pad_id only builds CoCa's cls mask; CLIP.encode_text
                 # always applies ln_final before pooling); the tokenizer keys only pick the tokenizer
                 "pad_id": 0, "final_ln_after_pool": False, "hf_tokenizer_name": None, "tokenizer_kwargs": None}
LOGIT_SCALE_INIT = math.log(1 / 0.07)
LOGIT_SCALE_MAX = math.log(100)


# ----------------------------------------------------------------------------- config

def load_config(name_or_path):
    """Reads configs/models/<name>.json (or a path), fills OpenCLIP's dataclass defaults and
    refuses options this reference does not implement (better loud than silently different)."""
    path = name_or_path if name_or_path.endswith(".json") else os.path.join(CONFIG_DIR, name_or_path + ".json")
    with open(path) as f:
        raw = json.load(f)
    known_top = {"embed_dim", "vision_cfg", "text_cfg", "quick_gelu"}
    unknown = set(raw) - known_top
    if unknown:
        raise ValueError(f"{path}: unsupported top-level keys {sorted(unknown)}")
    vis = dict(VISION_DEFAULTS)
    for k, v in raw["vision_cfg"].items():
        if k not in VISION_DEFAULTS:
            raise ValueError(f"{path}: unsupported vision_cfg key '{k}'")
        vis[k] = v
    if vis["pool_type"] not in ("tok", "avg"):
        raise ValueError(f"{path}: vision pool_type '{vis['pool_type']}' not implemented")
    txt = dict(TEXT_DEFAULTS)
    for k, v in raw["text_cfg"].items():
        if k not in TEXT_DEFAULTS:
            raise ValueError(f"{path}: unsupported text_cfg key '{k}'")
        txt[k] = v
    if txt["pool_type"] not in ("argmax", "first", "last"):
        raise ValueError(f"{path}: text pool_type '{txt['pool_type']}' not implemented")
    name = os.path.splitext(os.path.basename(path))[0]
    return {"name": name, "embed_dim": raw["embed_dim"], "quick_gelu": bool(raw.get("quick_gelu", False)),
            "vision_cfg": vis, "text_cfg": txt, "raw": raw}


# ----------------------------------------------------------------------------- modules

class LayerNorm(nn.LayerNorm):
    """OpenCLIP's LayerNorm: returns the input dtype. A bf16 input with fp32 weights (amp_bf16)
    is normalized in fp32 and rounded back to bf16, which is what torch >= 2.0 does (CUDA autocast
    runs layer_norm in fp32; CPU has a mixed-dtype kernel). Torch 1.13 CPU would raise instead."""

    def forward(self, x):
        orig_type = x.dtype
        if x.dtype != self.weight.dtype:
            x = x.to(self.weight.dtype)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.to(orig_type)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class LayerScale(nn.Module):
    """Per-channel scale of a residual branch, parameter 'gamma' initialised to ls_init_value."""

    def __init__(self, dim, init_value):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init_value)))

    def forward(self, x):
        return self.gamma * x


def layer_scale(dim, init_value):
    return nn.Identity() if init_value is None else LayerScale(dim, init_value)


class PatchDropout(nn.Module):
    """Training only: keeps the class token (first) and max(1, int(Np * (1 - prob))) patches per
    sample, those with the largest of Np standard normals (an ordered random subset). `keep_fn`,
    when set, supplies the kept patch indices [B, K] instead (the golden file records them so the
    C++ side can replay the same draw)."""

    def __init__(self, prob):
        super().__init__()
        self.prob = prob
        self.keep_fn = None

    def forward(self, x):
        if not self.training or self.prob == 0:
            return x
        cls, patches = x[:, :1], x[:, 1:]
        B, Np = patches.shape[0], patches.shape[1]
        K = max(1, int(Np * (1 - self.prob)))
        idx = self.keep_fn(B, Np, K) if self.keep_fn is not None else torch.randn(B, Np).topk(K, dim=-1).indices
        kept = torch.gather(patches, 1, idx.long().unsqueeze(-1).expand(-1, -1, patches.shape[2]))
        return torch.cat([cls, kept], dim=1)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d_model, n_head, mlp_ratio, act_layer, ls_init_value=None):
        super().__init__()
        self.ln_1 = LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ls_1 = layer_scale(d_model, ls_init_value)  # registered after attn: state_dict order
        self.ln_2 = LayerNorm(d_model)
        mlp_width = int(d_model * mlp_ratio)
        self.mlp = nn.Sequential(OrderedDict([
            ("c_fc", nn.Linear(d_model, mlp_width)),
            ("gelu", act_layer()),
            ("c_proj", nn.Linear(mlp_width, d_model)),
        ]))
        self.ls_2 = layer_scale(d_model, ls_init_value)

    def attention(self, x, attn_mask=None):
        attn_mask = attn_mask.to(x.dtype) if attn_mask is not None else None
        return self.attn(x, x, x, need_weights=False, attn_mask=attn_mask)[0]

    def forward(self, x, attn_mask=None):
        x = x + self.ls_1(self.attention(self.ln_1(x), attn_mask=attn_mask))
        x = x + self.ls_2(self.mlp(self.ln_2(x)))
        return x


class Transformer(nn.Module):
    def __init__(self, width, layers, heads, mlp_ratio, act_layer, ls_init_value=None):
        super().__init__()
        self.width = width
        self.layers = layers
        self.resblocks = nn.ModuleList(
            [ResidualAttentionBlock(width, heads, mlp_ratio, act_layer, ls_init_value) for _ in range(layers)])

    def forward(self, x, attn_mask=None):
        for r in self.resblocks:
            x = r(x, attn_mask=attn_mask)
        return x


class VisionTransformer(nn.Module):
    """pool_type 'tok': the CLS token; 'avg': the mean of the patch tokens. ln_post on every token
    before pooling, or on the pooled vector with final_ln_after_pool. Then @ proj."""

    def __init__(self, image_size, patch_size, width, layers, heads, mlp_ratio, output_dim, act_layer,
                 ls_init_value=None, patch_dropout=0.0, no_ln_pre=False, pool_type="tok", final_ln_after_pool=False):
        super().__init__()
        self.pool_type = pool_type
        self.final_ln_after_pool = final_ln_after_pool
        self.image_size = image_size
        self.patch_size = patch_size
        self.grid_size = image_size // patch_size
        self.output_dim = output_dim
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width ** -0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn(self.grid_size ** 2 + 1, width))
        self.patch_dropout = PatchDropout(patch_dropout) if patch_dropout > 0 else nn.Identity()
        self.ln_pre = nn.Identity() if no_ln_pre else LayerNorm(width)
        self.transformer = Transformer(width, layers, heads, mlp_ratio, act_layer, ls_init_value)
        self.ln_post = LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))
        # OpenCLIP's VisionTransformer.init_parameters is a no-op: everything else keeps torch's
        # default init (Conv2d/Linear kaiming-uniform, MHA xavier in_proj + zero biases, LN 1/0).

    def forward(self, x):
        x = self.conv1(x)                                   # [B, width, grid, grid]
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)  # [B, grid*grid, width], row-major
        cls = self.class_embedding.view(1, 1, -1).expand(x.shape[0], -1, -1).to(x.dtype)
        x = torch.cat([cls, x], dim=1)
        x = x + self.positional_embedding.to(x.dtype)
        x = self.patch_dropout(x)
        x = self.ln_pre(x)
        x = self.transformer(x)
        if not self.final_ln_after_pool:
            x = self.ln_post(x)
        pooled = x[:, 1:].mean(dim=1) if self.pool_type == "avg" else x[:, 0]
        if self.final_ln_after_pool:
            pooled = self.ln_post(pooled)
        return pooled @ self.proj


def build_causal_mask(n):
    mask = torch.empty(n, n)
    mask.fill_(float("-inf"))
    mask.triu_(1)  # -inf strictly above the diagonal, 0 on and below
    return mask


class CLIP(nn.Module):
    """Attribute assignment order = OpenCLIP's CLIP.__init__, so state_dict order is:
    positional_embedding, text_projection, logit_scale, visual.*, transformer.*, token_embedding, ln_final."""

    def __init__(self, cfg):
        super().__init__()
        v, t = cfg["vision_cfg"], cfg["text_cfg"]
        act = QuickGELU if cfg["quick_gelu"] else nn.GELU
        embed_dim = cfg["embed_dim"]
        self.cfg = cfg
        self.visual = VisionTransformer(v["image_size"], v["patch_size"], v["width"], v["layers"],
                                        v["width"] // v["head_width"], v["mlp_ratio"], embed_dim, act,
                                        ls_init_value=v["ls_init_value"], patch_dropout=v["patch_dropout"],
                                        no_ln_pre=v["no_ln_pre"], pool_type=v["pool_type"],
                                        final_ln_after_pool=v["final_ln_after_pool"])
        # Text tower: built in TextTransformer's order, then its pieces are flattened into CLIP.
        token_embedding = nn.Embedding(t["vocab_size"], t["width"])
        positional_embedding = nn.Parameter(torch.empty(t["context_length"], t["width"]))
        transformer = Transformer(t["width"], t["layers"], t["heads"], t["mlp_ratio"], act, t["ls_init_value"])
        ln_final = LayerNorm(t["width"])
        # proj_bias: an nn.Linear (weight [E, W], bias [E]) instead of the [W, E] parameter
        text_projection = nn.Linear(t["width"], embed_dim) if t["proj_bias"] else \
            nn.Parameter(torch.empty(t["width"], embed_dim))
        nn.init.normal_(token_embedding.weight, std=0.02)
        nn.init.normal_(positional_embedding, std=0.01)
        proj_std = (t["width"] ** -0.5) * ((2 * t["layers"]) ** -0.5)
        attn_std = t["width"] ** -0.5
        fc_std = (2 * t["width"]) ** -0.5
        for block in transformer.resblocks:
            nn.init.normal_(block.attn.in_proj_weight, std=attn_std)
            nn.init.normal_(block.attn.out_proj.weight, std=proj_std)
            nn.init.normal_(block.mlp.c_fc.weight, std=fc_std)
            nn.init.normal_(block.mlp.c_proj.weight, std=proj_std)
        if t["proj_bias"]:
            nn.init.normal_(text_projection.weight, std=t["width"] ** -0.5)
            nn.init.zeros_(text_projection.bias)
        else:
            nn.init.normal_(text_projection, std=t["width"] ** -0.5)

        self.transformer = transformer
        self.context_length = t["context_length"]
        self.vocab_size = t["vocab_size"]
        self.token_embedding = token_embedding
        self.positional_embedding = positional_embedding
        self.ln_final = ln_final
        self.text_projection = text_projection
        self.text_pool_type = t["pool_type"]
        self.register_buffer("attn_mask", None if t["no_causal_mask"] else build_causal_mask(t["context_length"]),
                             persistent=False)
        self.logit_scale = nn.Parameter(torch.ones([]) * LOGIT_SCALE_INIT)

    def encode_image(self, image, normalize=False):
        features = self.visual(image)
        return F.normalize(features, dim=-1) if normalize else features

    def encode_text(self, text, normalize=False):
        x = self.token_embedding(text)
        x = x + self.positional_embedding.to(x.dtype)
        x = self.transformer(x, attn_mask=self.attn_mask)
        x = self.ln_final(x)
        if self.text_pool_type == "first":
            x = x[:, 0]
        elif self.text_pool_type == "last":
            x = x[:, -1]
        else:
            x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)]  # EOT has the largest id
        x = self.text_projection(x) if isinstance(self.text_projection, nn.Linear) else x @ self.text_projection
        return F.normalize(x, dim=-1) if normalize else x

    def forward(self, image, text):
        image_features = self.encode_image(image, normalize=True)
        text_features = self.encode_text(text, normalize=True)
        return image_features, text_features, self.logit_scale.exp()


# ----------------------------------------------------------------------------- loss / optim

class ClipLoss(nn.Module):
    """Single-process ClipLoss: (CE(s*I@T^T, arange) + CE(s*T@I^T, arange)) / 2."""

    def forward(self, image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        labels = torch.arange(logits_per_image.shape[0], dtype=torch.long)
        return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2


def is_no_decay(name, p):
    return p.ndim < 2 or "bn" in name or "ln" in name or "bias" in name or "logit_scale" in name


def default_adam_params(model_name):
    """OpenCLIP get_default_params: 'vit' in the lowercased model name -> (0.9, 0.98), 1e-6."""
    if "vit" in model_name.lower():
        return {"lr": 5e-4, "betas": (0.9, 0.98), "eps": 1e-6}
    return {"lr": 5e-4, "betas": (0.9, 0.999), "eps": 1e-8}


def make_optimizer(model, lr, wd, betas=(0.9, 0.98), eps=1e-6):
    """Group 0: no-decay (weight_decay 0), group 1: decay (wd); both in named_parameters order."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    no_decay = [p for n, p in named if is_no_decay(n, p)]
    decay = [p for n, p in named if not is_no_decay(n, p)]
    return torch.optim.AdamW([{"params": no_decay, "weight_decay": 0.0},
                              {"params": decay, "weight_decay": wd}], lr=lr, betas=betas, eps=eps)


def cosine_lr(base_lr, warmup, total_steps, step):
    """OpenCLIP scheduler.cosine_lr for optimizer-step index `step` (0-based)."""
    if step < warmup:
        return base_lr * (step + 1) / warmup
    e = step - warmup
    es = total_steps - warmup
    return 0.5 * (1 + math.cos(math.pi * e / es)) * base_lr


def set_lr(optimizer, lr):
    for g in optimizer.param_groups:
        g["lr"] = lr


def autocast_ctx(precision):
    if precision in ("amp_bf16", "amp_bfloat16"):
        return torch.autocast("cpu", dtype=torch.bfloat16)
    if precision in ("fp32", "pure_bf16"):
        return contextlib.nullcontext()
    raise ValueError(f"precision '{precision}' not supported by the CPU reference")


def input_dtype(precision):
    return torch.bfloat16 if precision == "pure_bf16" else torch.float32


def convert_weights_to_lp(model, dtype=torch.bfloat16):
    """OpenCLIP's `--precision bf16`: model.apply over modules, casting Conv/Linear weights and
    biases, MultiheadAttention's in_proj/q/k/v weights, in_proj_bias, bias_k/bias_v, and the
    nn.Parameter projections text_projection (CLIP) and proj (VisionTransformer)."""
    def _convert(m):
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            m.weight.data = m.weight.data.to(dtype)
            if m.bias is not None:
                m.bias.data = m.bias.data.to(dtype)
        if isinstance(m, nn.MultiheadAttention):
            for attr in [*[f"{s}_proj_weight" for s in ["in", "q", "k", "v"]], "in_proj_bias", "bias_k", "bias_v"]:
                t = getattr(m, attr)
                if t is not None:
                    t.data = t.data.to(dtype)
        if isinstance(m, CLIP) and isinstance(getattr(m, "text_projection", None), nn.Parameter):
            m.text_projection.data = m.text_projection.data.to(dtype)
        if isinstance(m, VisionTransformer) and getattr(m, "proj", None) is not None:
            m.proj.data = m.proj.data.to(dtype)
    model.apply(_convert)
    return model


def prepare_model(model, precision):
    if precision == "pure_bf16":
        model.to(torch.bfloat16)
    return model


def train_step(model, loss_fn, optimizer, images, tokens, precision, lr=None):
    """One OpenCLIP train iteration: [set lr] zero_grad, autocast forward + loss, backward,
    step, then clamp logit_scale to [0, ln 100]. Returns (loss, image_f, text_f, scale)."""
    if lr is not None:
        set_lr(optimizer, lr)
    optimizer.zero_grad()
    with autocast_ctx(precision):
        img_f, txt_f, scale = model(images, tokens)
        loss = loss_fn(img_f, txt_f, scale)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, LOGIT_SCALE_MAX)
    return loss, img_f, txt_f, scale


def tower_param_counts(model):
    vis = sum(p.numel() for n, p in model.named_parameters() if n.startswith("visual."))
    total = sum(p.numel() for p in model.parameters())
    return {"visual": vis, "text": total - vis - 1, "logit_scale": 1, "total": total}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ViT-B-32")
    ap.add_argument("--summary", action="store_true", help="print parameter/key counts and keys")
    ap.add_argument("--keys", action="store_true", help="with --summary: list every key and shape")
    ap.add_argument("--lp-params", action="store_true",
                    help="print the parameters --precision bf16 keeps in bf16 (convert_weights_to_lp), one per line")
    args = ap.parse_args()
    if args.lp_params:
        model = convert_weights_to_lp(CLIP(load_config(args.config)))
        for n, p in model.named_parameters():
            if p.dtype == torch.bfloat16:
                print(n)
        return 0
    if not args.summary:
        ap.print_help()
        return 0
    torch.manual_seed(0)
    cfg = load_config(args.config)
    model = CLIP(cfg)
    sd = model.state_dict()
    counts = tower_param_counts(model)
    print(f"config: {cfg['name']}  quick_gelu: {cfg['quick_gelu']}")
    print(f"state_dict keys: {len(sd)}")
    print(f"params: total {counts['total']:,}  visual {counts['visual']:,}  text {counts['text']:,}  logit_scale 1")
    keys = list(sd.keys())
    show = keys if args.keys else keys[:8] + ["..."] + keys[-4:]
    for k in show:
        print(f"  {k} {list(sd[k].shape)}" if k != "..." else "  ...")
    nd = sum(1 for n, p in model.named_parameters() if is_no_decay(n, p))
    print(f"optimizer groups: no_decay {nd} tensors, decay {len(keys) - nd} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
