#!/usr/bin/env python3
"""OpenCLIP 2.24.0's convolutional CLIPs as the reference of tests/model/resnet_test.cpp and
convnext_test.cpp (run with .pyref/bin/python): ModifiedResNet, and timm's ConvNeXt through
TimmModel. The model is built at random init from a config file (its name: the file's stem);
every BatchNorm2d then gets random weight, bias and running statistics (at init bn3.weight is 0
in every Bottleneck, which would hide the residual branches), and every ConvNeXt block's layer
scale `gamma` a random value around 0.5 (at init 1e-6, which would hide them likewise).

  resnet_ref.py forward CONFIG.json OUTDIR    OUTDIR/w.pt (state_dict), images.f32 [B,3,S,S],
                                              tokens.i32 [B,L], image.f32 / text.f32 (eval mode,
                                              encode_*, not normalized)
  resnet_ref.py grad CONFIG.json OUTDIR       as forward, then in train mode the contrastive
                                              loss (ClipLoss) of the batch: loss.txt, grads.pt
                                              (every parameter's gradient by name), after.pt
                                              (the state_dict after the forward: running stats);
                                              the same in float64: loss64.txt, grads64.pt
  resnet_ref.py grad CONFIG.json SCALES.f32 OUTDIR
                                              as grad, a ConvNeXt with each block's DropPath
                                              replaced by the per-sample scales given (float32
                                              [blocks, B]: 0 drops, 1/keep keeps), the masks the
                                              C++ side applies: stochastic depth without torch's
                                              generator
  resnet_ref.py grad-evalbn CONFIG.json OUTDIR
                                              as grad with every BatchNorm2d in eval mode (running
                                              statistics; weight and bias still train)
  resnet_ref.py train CONFIG.json OUTDIR N    as forward, then N AdamW steps (lr 1e-4, betas
                                              0.9/0.98, eps 1e-6, wd 0.2 on OpenCLIP's decay
                                              group) on the same batch: losses.txt, one a line
  resnet_ref.py train-fp64 CONFIG.json OUTDIR N
                                              as train, then the same in float64: losses64.txt
  resnet_ref.py relu-flips CONFIG.json train|eval OUTDIR
                                              not used by a test: the analysis behind the bars of
                                              resnet_long_test.cpp. As grad (train: BatchNorm in
                                              train mode; eval: as grad-evalbn), then prints per
                                              ReLU how many decisions (output > 0) fp32 takes
                                              differently from float64, and per parameter the
                                              gradient error of fp32 and of float64 run with
                                              fp32's ReLU decisions forced, both against float64
  resnet_ref.py bf16-image CONFIG.json OUTDIR as forward, then image_bf16.f32: encode_image in amp_bf16's
                                              defined arithmetic (bf16_ref.py): every Conv2d and
                                              Linear of the image tower on bf16-rounded input and
                                              weight, computed in float64; the rest float64; and
                                              image_bf16_fp32.f32: the same rounding in float32
  resnet_ref.py load CONFIG.json CKPT OUTDIR  open_clip.create_model_and_transforms(name,
                                              pretrained=CKPT) and its eval encode_image /
                                              encode_text of OUTDIR's images / tokens
"""
import os
import sys

import numpy as np
import torch

B = 4


def create(config_path, pretrained=None):
    import open_clip
    open_clip.add_model_config(config_path)
    name = os.path.splitext(os.path.basename(config_path))[0]
    if pretrained:
        return open_clip.create_model_and_transforms(name, pretrained=pretrained)[0]
    return open_clip.create_model(name)


def perturb_bn(model):
    g = torch.Generator().manual_seed(1)
    for n, p in model.named_parameters():
        if n.endswith(".gamma"):  # timm ConvNeXtBlock's layer scale
            with torch.no_grad():
                p.copy_(0.5 + 0.2 * torch.randn(p.shape, generator=g))
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.copy_(1 + 0.2 * torch.rand(m.running_var.shape, generator=g))


def image_size(model):
    S = model.visual.image_size
    return S[0] if isinstance(S, tuple) else S  # TimmModel keeps a 2-tuple


def batch(model, out):
    S, L, vocab = image_size(model), model.context_length, model.vocab_size
    images = torch.randn(B, 3, S, S)
    tokens = torch.randint(1, vocab - 1, (B, L), dtype=torch.int64)
    for b in range(B):
        tokens[b, L // 2 + b] = vocab - 1  # the end token: argmax pooling
        tokens[b, L // 2 + b + 1:] = 0
    images.numpy().astype(np.float32).tofile(os.path.join(out, "images.f32"))
    tokens.numpy().astype(np.int32).tofile(os.path.join(out, "tokens.i32"))
    return images, tokens


def read_batch(model, out):
    S, L = image_size(model), model.context_length
    images = torch.from_numpy(np.fromfile(os.path.join(out, "images.f32"), dtype=np.float32).reshape(-1, 3, S, S))
    tokens = torch.from_numpy(np.fromfile(os.path.join(out, "tokens.i32"), dtype=np.int32).astype(np.int64).reshape(-1, L))
    return images, tokens


def encode(model, images, tokens, out, suffix=""):
    model.eval()
    with torch.no_grad():
        img, txt = model.encode_image(images), model.encode_text(tokens)
    img.numpy().astype(np.float32).tofile(os.path.join(out, f"image{suffix}.f32"))
    txt.numpy().astype(np.float32).tofile(os.path.join(out, f"text{suffix}.f32"))


def bf16_image(model, images, out):
    import copy
    from bf16_ref import r
    for dtype, suffix in ((torch.float64, ""), (torch.float32, "_fp32")):
        m = copy.deepcopy(model).to(dtype).eval()
        for mod in m.visual.modules():
            if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                with torch.no_grad():
                    mod.weight.copy_(r(mod.weight).to(dtype))
                mod.register_forward_pre_hook(lambda _, inp, dtype=dtype: (r(inp[0]).to(dtype),))
        with torch.no_grad():
            img = m.encode_image(images.to(dtype))
        img.numpy().astype(np.float32).tofile(os.path.join(out, f"image_bf16{suffix}.f32"))


class FixedDropPath(torch.nn.Module):
    """timm's DropPath with its mask given: x * scale[b] for sample b (timm: x * random_tensor)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale.to(x.dtype).view(-1, *([1] * (x.dim() - 1)))


def fix_drop_path(model, path):
    blocks = [b for s in model.visual.trunk.stages for b in s.blocks]
    scales = torch.from_numpy(np.fromfile(path, dtype=np.float32).reshape(len(blocks), -1))
    for block, scale in zip(blocks, scales):
        block.drop_path = FixedDropPath(scale)


def loss_of(model, images, tokens):
    from open_clip.loss import ClipLoss
    img, txt, scale = model(images, tokens)
    return ClipLoss()(img, txt, scale)


def train(model, images, tokens, steps):
    """`steps` AdamW steps on the batch in train mode; the losses."""
    model.train()
    def no_decay(n, p):
        return p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n
    decay = [p for n, p in model.named_parameters() if not no_decay(n, p)]
    rest = [p for n, p in model.named_parameters() if no_decay(n, p)]
    opt = torch.optim.AdamW([{"params": rest, "weight_decay": 0.0}, {"params": decay, "weight_decay": 0.2}],
                            lr=1e-4, betas=(0.9, 0.98), eps=1e-6)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(model, images, tokens)
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, np.log(100))
        losses.append(loss.item())
    return losses


def relu_flips(config, out, train_bn):
    def run(dtype, forced=None):
        m = create(config)
        m.load_state_dict(torch.load(os.path.join(out, "w.pt")))
        m = m.to(dtype).train()
        for bn in m.modules():
            if isinstance(bn, torch.nn.BatchNorm2d) and not train_bn:
                bn.eval()
        decisions = []

        def hook(mod, inp, outp):  # in forward order: stem act1..3, then each block's act1..3
            if forced is None:
                decisions.append(outp > 0)
                return None
            keep = forced[len(decisions)]
            decisions.append(keep)
            return torch.where(keep, inp[0], torch.zeros_like(inp[0]))
        for r in m.visual.modules():
            if isinstance(r, torch.nn.ReLU):
                r.inplace = False
                r.register_forward_hook(hook)
        images, tokens = read_batch(m, out)
        loss_of(m, images.to(dtype), tokens).backward()
        return decisions, {n: p.grad.double() for n, p in m.named_parameters() if n.startswith("visual.")}
    d32, g32 = run(torch.float32)
    d64, g64 = run(torch.float64)
    _, gf = run(torch.float64, forced=d32)
    flips = [int((a != b).sum()) for a, b in zip(d32, d64)]
    print(f"ReLU decisions fp32 takes differently from float64: {sum(flips)} of {sum(d.numel() for d in d64)}")
    print("per ReLU call (forward order):", flips)
    def rel(a, b):
        return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
    rows = sorted(((rel(g32[n], g64[n]), rel(gf[n], g64[n]), n) for n in g64 if not n.endswith("k_proj.bias")),
                  reverse=True)
    print("max |g - g64| / max |g64|: fp32, float64 with fp32's ReLU decisions")
    for r in rows[:10]:
        print("  %.3e  %.3e  %s" % r)


def main():
    cmd, config, out = sys.argv[1], sys.argv[2], sys.argv[-1]
    torch.manual_seed(0)
    torch.set_num_threads(2)
    if cmd == "relu-flips":
        model = create(config)
        perturb_bn(model)
        torch.save(model.state_dict(), os.path.join(out, "w.pt"))
        batch(model, out)
        relu_flips(config, out, sys.argv[3] == "train")
        return
    if cmd == "load":
        model = create(config, pretrained=sys.argv[3])
        images, tokens = read_batch(model, out)
        encode(model, images, tokens, out, "_loaded")
        return
    model = create(config)
    perturb_bn(model)
    torch.save(model.state_dict(), os.path.join(out, "w.pt"))
    images, tokens = batch(model, out)
    encode(model, images, tokens, out)
    if cmd == "bf16-image":
        bf16_image(model, images, out)
    if cmd in ("grad", "grad-evalbn"):
        # fp32, then float64 from the same weights: the exact gradients fp32 (ours and
        # PyTorch's) are judged by. The running statistics after the fp32 forward: after.pt.
        for dtype, suffix in ((torch.float32, ""), (torch.float64, "64")):
            m = create(config)
            m.load_state_dict(torch.load(os.path.join(out, "w.pt")))
            m = m.to(dtype).train()
            if cmd == "grad" and len(sys.argv) > 4:
                fix_drop_path(m, sys.argv[3])
            if cmd == "grad-evalbn":
                for bn in m.modules():
                    if isinstance(bn, torch.nn.BatchNorm2d):
                        bn.eval()
            loss = loss_of(m, images.to(dtype), tokens)
            loss.backward()
            open(os.path.join(out, f"loss{suffix}.txt"), "w").write(f"{loss.item():.17g}\n")
            torch.save({n: p.grad for n, p in m.named_parameters()}, os.path.join(out, f"grads{suffix}.pt"))
            if not suffix:
                torch.save(m.state_dict(), os.path.join(out, "after.pt"))
    elif cmd in ("train", "train-fp64"):
        # fp32 (losses.txt), and for train-fp64 then float64 from the same weights
        # (losses64.txt): how far fp32 rounding alone moves the trajectory.
        steps = int(sys.argv[3])
        dtypes = ((torch.float32, ""), (torch.float64, "64"))
        for dtype, suffix in dtypes[:2 if cmd == "train-fp64" else 1]:
            m = create(config)
            m.load_state_dict(torch.load(os.path.join(out, "w.pt")))
            losses = train(m.to(dtype), images.to(dtype), tokens, steps)
            open(os.path.join(out, f"losses{suffix}.txt"), "w").write("".join(f"{v:.17g}\n" for v in losses))
    elif cmd not in ("forward", "bf16-image"):
        sys.exit(f"resnet_ref.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
