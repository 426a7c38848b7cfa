#!/usr/bin/python3
"""Writes a golden file for the C++ CLIP model from the independent PyTorch reference (clip_ref.py).

  golden.py --config test-tiny --out DIR [--precision fp32|amp_bf16] [--steps 10] [--batch 4] [--seed 0]
            [--lr 1e-3] [--wd 0.1] [--warmup 2]

DIR/golden.safetensors (written by hand below; every tensor little-endian, F32 unless noted):
  param.<name>          initial parameters, OpenCLIP state_dict names and shapes (logit_scale is shape [])
  input.images          F32 [B,3,S,S]  seeded standard normal ("already normalized" pixels)
  input.tokens          I32 [B,ctx]    [sot, ids in [0,sot), eot, 0...]; lengths vary, row 0 is full
  out.image_features    F32 [B,E]      L2-normalized, at the initial parameters
  out.text_features     F32 [B,E]
  out.logit_scale_exp   F32 []         exp(logit_scale)
  out.logits_per_image  F32 [B,B]      logit_scale_exp * image_features @ text_features^T
  out.loss              F32 []         ClipLoss at the initial parameters (== traj.loss[0])
  grad.<name>           gradient of out.loss w.r.t. each parameter (before any step)
  traj.loss             F32 [steps]    loss of step i, computed before step i's update
  traj.lr               F32 [steps]    LR used by step i
  traj.logit_scale      F32 [steps]    raw logit_scale after step i's update and clamp
  final.<name>          parameters after all steps
  input.patch_keep      I32 [steps,B,K] (vision_cfg.patch_dropout > 0 only) patches kept at step i:
                        topk(K) of a seeded randn [B, Np], K = max(1, int(Np * (1 - prob)))
The same batch is used for every step. "__metadata__" records config, schedule, optimizer and
conventions as strings (see write_golden). DIR/summary.json repeats the metadata plus timings.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bf16_ref  # noqa: E402
import clip_ref  # noqa: E402

DTYPES = {torch.float32: ("F32", "<f4"), torch.int32: ("I32", "<i4")}
ALIGN = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "BF16": 2, "F16": 2, "U8": 1}


def save_safetensors(path, tensors, metadata):
    """safetensors writer: reference order (dtype alignment descending, then name), compact JSON,
    header padded with spaces to a multiple of 8; temp file + rename like the reference."""
    items = []
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in DTYPES:
            raise ValueError(f"{name}: dtype {t.dtype} not supported by this writer")
        items.append((name, DTYPES[t.dtype][0], t))
    items.sort(key=lambda it: (-ALIGN[it[1]], it[0]))
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, dt, t in items:
        data = t.numpy().astype(DTYPES[t.dtype][1], copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path):
    """Minimal reader (F32/I32) used to check the writer round-trips; returns (tensors, metadata)."""
    import numpy as np
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    np_types = {"F32": "<f4", "I32": "<i4"}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(buf[base + b:base + e], dtype=np_types[info["dtype"]]).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out, meta


def numpy_forward(cfg, tensors):
    """Second, plain float64 NumPy implementation of the documented math, reading only the
    golden tensors: checks that the file means what the docstring says (q|k|v row order,
    1/sqrt(head_dim) scaling, row-major patches, CLS pooling, argmax pooling, loss)."""
    import numpy as np
    P = {k[6:]: v.double().numpy() for k, v in tensors.items() if k.startswith("param.")}
    act = (lambda x: x / (1 + np.exp(-1.702 * x))) if cfg["quick_gelu"] else \
        (lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))))

    def ln(x, pre):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * P[pre + ".weight"] + P[pre + ".bias"]

    def ls(y, name):  # LayerScale when the block has one
        return y * P[name] if name in P else y

    def block(x, pre, heads, mask):
        B, L, W = x.shape
        hd = W // heads
        h = ln(x, pre + ".ln_1")
        qkv = h @ P[pre + ".attn.in_proj_weight"].T + P[pre + ".attn.in_proj_bias"]
        q, k, v = (qkv[..., i * W:(i + 1) * W].reshape(B, L, heads, hd).transpose(0, 2, 1, 3) for i in range(3))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        a = a.transpose(0, 2, 1, 3).reshape(B, L, W)
        x = x + ls(a @ P[pre + ".attn.out_proj.weight"].T + P[pre + ".attn.out_proj.bias"], pre + ".ls_1.gamma")
        h = ln(x, pre + ".ln_2")
        h = act(h @ P[pre + ".mlp.c_fc.weight"].T + P[pre + ".mlp.c_fc.bias"])
        return x + ls(h @ P[pre + ".mlp.c_proj.weight"].T + P[pre + ".mlp.c_proj.bias"], pre + ".ls_2.gamma")

    v, t = cfg["vision_cfg"], cfg["text_cfg"]
    img = tensors["input.images"].double().numpy()
    B, ps, g = img.shape[0], v["patch_size"], v["image_size"] // v["patch_size"]
    patches = img[:, :, :g * ps, :g * ps].reshape(B, 3, g, ps, g, ps).transpose(0, 2, 4, 1, 3, 5).reshape(B, g * g, -1)
    x = patches @ P["visual.conv1.weight"].reshape(v["width"], -1).T
    x = np.concatenate([np.broadcast_to(P["visual.class_embedding"], (B, 1, v["width"])), x], 1)
    x = x + P["visual.positional_embedding"]
    if "input.patch_keep" in tensors:  # the first step's kept patches, after the class token
        keep = tensors["input.patch_keep"][0].numpy().astype(np.int64)
        x = np.concatenate([x[:, :1], np.stack([x[b, 1 + keep[b]] for b in range(B)])], 1)
    if not v["no_ln_pre"]:
        x = ln(x, "visual.ln_pre")
    for i in range(v["layers"]):
        x = block(x, f"visual.transformer.resblocks.{i}", v["width"] // v["head_width"], 0.0)
    pool = (lambda y: y[:, 1:].mean(1)) if v["pool_type"] == "avg" else (lambda y: y[:, 0])
    if v["final_ln_after_pool"]:
        imf = ln(pool(x), "visual.ln_post") @ P["visual.proj"]
    else:
        imf = pool(ln(x, "visual.ln_post")) @ P["visual.proj"]

    tok = tensors["input.tokens"].numpy().astype(np.int64)
    ctx = t["context_length"]
    x = P["token_embedding.weight"][tok] + P["positional_embedding"]
    mask = 0.0 if t["no_causal_mask"] else np.triu(np.full((ctx, ctx), -np.inf), 1)
    for i in range(t["layers"]):
        x = block(x, f"transformer.resblocks.{i}", t["heads"], mask)
    x = ln(x, "ln_final")
    pos = {"first": np.zeros(B, np.int64), "last": np.full(B, ctx - 1)}.get(t["pool_type"], tok.argmax(-1))
    x = x[np.arange(B), pos]
    if t["proj_bias"]:
        txf = x @ P["text_projection.weight"].T + P["text_projection.bias"]
    else:
        txf = x @ P["text_projection"]

    imf /= np.linalg.norm(imf, axis=-1, keepdims=True)
    txf /= np.linalg.norm(txf, axis=-1, keepdims=True)
    scale = math.exp(P["logit_scale"])
    lpi = scale * imf @ txf.T

    def ce(l):
        l = l - l.max(-1, keepdims=True)
        return -(np.diag(l) - np.log(np.exp(l).sum(-1))).mean()
    loss = (ce(lpi) + ce(lpi.T)) / 2
    return {"out.image_features": imf, "out.text_features": txf, "out.logits_per_image": lpi,
            "out.logit_scale_exp": np.array(scale), "out.loss": np.array(loss)}


def check_first_adamw_step(p0, g0, p1, lr, wd, no_decay, eps):
    """After the first AdamW step m_hat = g and v_hat = g^2, so p1 = p0*(1-lr*wd) - lr*g/(|g|+eps)."""
    d = 0.0 if no_decay else wd
    expect = p0.double() * (1 - lr * d) - lr * g0.double() / (g0.double().abs() + eps)
    return float((expect - p1.double()).abs().max())


def make_inputs(cfg, batch, seed):
    """Images: N(0,1). Tokens: sot, content ids uniform in [0, sot), eot, zero padding.
    Row 0 fills the whole context (eot in the last slot), row 1 is empty text (sot eot), the
    rest have random lengths: the edge cases of argmax pooling and the causal mask."""
    v, t = cfg["vision_cfg"], cfg["text_cfg"]
    ctx, vocab = t["context_length"], t["vocab_size"]
    sot, eot = vocab - 2, vocab - 1  # 49406/49407 for the real vocab; eot must be the largest id
    g = torch.Generator().manual_seed(seed + 1000)
    images = torch.randn(batch, 3, v["image_size"], v["image_size"], generator=g)
    tokens = torch.zeros(batch, ctx, dtype=torch.int64)
    for b in range(batch):
        if b == 0:
            n = ctx - 2
        elif b == 1:
            n = 0
        else:
            n = int(torch.randint(1, ctx - 1, (1,), generator=g))
        ids = torch.randint(0, sot, (n,), generator=g)
        tokens[b, 0] = sot
        tokens[b, 1:1 + n] = ids
        tokens[b, 1 + n] = eot
    return images, tokens, sot, eot


def run(args):
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    cfg = clip_ref.load_config(args.config)
    model = clip_ref.CLIP(cfg)
    names = [n for n, _ in model.named_parameters()]
    assert names == list(model.state_dict().keys()), "parameter and state_dict order differ"
    images, tokens, sot, eot = make_inputs(cfg, args.batch, args.seed)
    tensors = {f"param.{n}": p.detach().clone() for n, p in model.named_parameters()}
    tensors["input.images"] = images.clone()
    tensors["input.tokens"] = tokens.to(torch.int32)
    step_now = [0]
    if isinstance(model.visual.patch_dropout, clip_ref.PatchDropout):
        # One seeded draw per step, recorded so the C++ side can replay it (its own generator
        # is not torch's).
        gk = torch.Generator().manual_seed(args.seed + 2000)
        Np = model.visual.grid_size ** 2
        K = max(1, int(Np * (1 - model.visual.patch_dropout.prob)))
        keeps = torch.stack([torch.randn(args.batch, Np, generator=gk).topk(K, dim=-1).indices
                             for _ in range(args.steps)])
        tensors["input.patch_keep"] = keeps.to(torch.int32)
        model.visual.patch_dropout.keep_fn = lambda B, Np_, K_: keeps[step_now[0]]
    t_build = time.perf_counter() - t0

    if args.precision == "amp_bf16_defined":
        # bf16_ref.py: every matmul input (forward and backward) rounded to bf16, all else float64.
        model.double()
        images = images.double()
        model.forward = lambda im, tok: bf16_ref.forward(model, im, tok)
    loss_fn = clip_ref.ClipLoss()
    betas, eps = (0.9, 0.98), 1e-6
    opt = clip_ref.make_optimizer(model, args.lr, args.wd, betas=betas, eps=eps)
    traj_loss, traj_lr, traj_scale = [], [], []
    t1 = time.perf_counter()
    for step in range(args.steps):
        step_now[0] = step
        lr = clip_ref.cosine_lr(args.lr, args.warmup, args.steps, step)
        clip_ref.set_lr(opt, lr)
        opt.zero_grad()
        with clip_ref.autocast_ctx("fp32" if args.precision == "amp_bf16_defined" else args.precision):
            img_f, txt_f, scale = model(images, tokens)
            loss = loss_fn(img_f, txt_f, scale)
        loss.backward()
        if step == 0:
            with torch.no_grad():
                i32, t32 = img_f.float(), txt_f.float()
                tensors["out.image_features"] = i32.clone()
                tensors["out.text_features"] = t32.clone()
                tensors["out.logit_scale_exp"] = scale.detach().float().clone()
                tensors["out.logits_per_image"] = (scale.float() * i32 @ t32.T).clone()
                tensors["out.loss"] = loss.detach().float().clone()
            for n, p in model.named_parameters():
                tensors[f"grad.{n}"] = p.grad.detach().float().clone()
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, clip_ref.LOGIT_SCALE_MAX)
        if step == 0:
            adam_err = max(check_first_adamw_step(tensors[f"param.{n}"], tensors[f"grad.{n}"], p.detach(), lr,
                                                  args.wd, clip_ref.is_no_decay(n, p), eps)
                           for n, p in model.named_parameters() if n != "logit_scale")
        traj_loss.append(float(loss))
        traj_lr.append(lr)
        traj_scale.append(float(model.logit_scale))
    t_train = time.perf_counter() - t1
    for n, p in model.named_parameters():
        tensors[f"final.{n}"] = p.detach().float().clone()
    tensors["traj.loss"] = torch.tensor(traj_loss, dtype=torch.float32)
    tensors["traj.lr"] = torch.tensor(traj_lr, dtype=torch.float32)
    tensors["traj.logit_scale"] = torch.tensor(traj_scale, dtype=torch.float32)

    metadata = {
        "format": "openclip-cpp golden v1",
        "generator": "tests/reference/golden.py (independent PyTorch CLIP, clip_ref.py)",
        "torch_version": torch.__version__,
        "config": cfg["name"],
        "config_json": json.dumps(cfg["raw"], sort_keys=True),
        "precision": args.precision,
        "autocast": {"amp_bf16": "torch.autocast('cpu', dtype=torch.bfloat16) around forward + loss",
                     "amp_bf16_defined": "none: bf16_ref.py (matmul inputs rounded to bf16 forward and backward, float64 elsewhere)"
                     }.get(args.precision, "none"),
        "seed": str(args.seed),
        "batch": str(args.batch),
        "steps": str(args.steps),
        "param_order": ",".join(names),
        "tokens": f"sot={sot} eot={eot} pad=0; row0 full context, row1 empty text, others random length; pooled at argmax(token id)",
        "images": "standard normal, torch.Generator seed+1000",
        "inputs_each_step": "the same batch (input.*) for every step",
        "optimizer": f"torch.optim.AdamW lr={args.lr} betas=({betas[0]}, {betas[1]}) eps={eps} amsgrad=False",
        "adamw_update": "p*=1-lr*wd; m=b1*m+(1-b1)*g; v=b2*v+(1-b2)*g^2; p-=lr/(1-b1^t)*m/(sqrt(v)/sqrt(1-b2^t)+eps); t=1 on the first step",
        "weight_decay": f"{args.wd} on group 'decay'; 0 on group 'no_decay' = ndim<2 or name contains bn/ln/bias/logit_scale",
        "lr_schedule": f"cosine with warmup: base_lr={args.lr} warmup={args.warmup} total_steps={args.steps}; step<warmup: base*(step+1)/warmup; else 0.5*(1+cos(pi*(step-warmup)/(total-warmup)))*base; set before each step",
        "logit_scale_clamp": "after each optimizer step: logit_scale.clamp_(0, ln(100)=4.605170185988092)",
        "loss": "ClipLoss: (CE(s*I@T^T, arange) + CE(s*T@I^T, arange))/2, s=exp(logit_scale), features L2-normalized",
        "grad": "grad.<name> = d out.loss / d param at the initial parameters (step 0)",
        "traj": "traj.loss[i] = loss before update i; traj.lr[i] = lr of update i; traj.logit_scale[i] = after update i and clamp",
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "golden.safetensors")
    save_safetensors(path, tensors, metadata)
    back, meta_back = load_safetensors(path)
    assert meta_back == metadata and set(back) == set(tensors)
    for k, v in tensors.items():
        assert torch.equal(back[k], v.detach().cpu()), f"round trip mismatch for {k}"

    # fp32: the float64 NumPy re-implementation must agree to float32 rounding: 1e-4 on unit-norm
    # features and the loss, 1e-4 * exp(logit_scale) on logits (an error on the features is
    # multiplied by the scale). That is far above fp32 noise (~1e-6 here) and far below any real
    # bug (wrong head split, mask or pooling index). amp_bf16: bf16 keeps 8 mantissa bits, so only
    # ~5e-2 on the same scales is expected.
    np_out = numpy_forward(cfg, tensors)
    np_err = {k: float((torch.from_numpy(v) - tensors[k].double()).abs().max()) for k, v in np_out.items()}
    tol = 1e-4 if args.precision == "fp32" else 5e-2
    scale_of = {"out.logits_per_image": float(tensors["out.logit_scale_exp"])}
    bad = {k: e for k, e in np_err.items() if not e <= tol * max(1.0, scale_of.get(k, 1.0))}
    if bad:
        raise SystemExit(f"golden self-check failed: NumPy float64 forward differs from torch: {bad}")
    if not adam_err <= 1e-6:
        raise SystemExit(f"golden self-check failed: first AdamW step differs from the documented formula by {adam_err}")

    summary = dict(metadata)
    summary.update({
        "file": path,
        "file_bytes": os.path.getsize(path),
        "num_tensors": len(tensors),
        "num_params": sum(p.numel() for p in model.parameters()),
        "loss_initial": traj_loss[0],
        "loss_final": traj_loss[-1],
        "traj_loss": traj_loss,
        "traj_lr": traj_lr,
        "traj_logit_scale": traj_scale,
        "check_numpy_float64_max_abs_err": np_err,
        "check_first_adamw_step_max_abs_err": adam_err,
        "seconds_build": round(t_build, 3),
        "seconds_train": round(t_train, 3),
        "seconds_total": round(time.perf_counter() - t0, 3),
    })
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main():
    ap = argparse.ArgumentParser(description="Write a PyTorch golden file for the C++ CLIP.")
    ap.add_argument("--config", default="test-tiny")
    ap.add_argument("--out", required=True)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "amp_bf16", "amp_bf16_defined"],
                    help="amp_bf16: torch CPU autocast; amp_bf16_defined: bf16_ref.py's defined arithmetic")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: reproducible sums)")
    args = ap.parse_args()
    if args.batch < 2 or args.steps < 1 or not (0 <= args.warmup < args.steps):
        ap.error("need batch >= 2, steps >= 1, 0 <= warmup < steps")
    torch.set_num_threads(args.threads)
    s = run(args)
    print(f"golden: {s['file']} ({s['num_tensors']} tensors, {s['file_bytes']} bytes) "
          f"config {s['config']} precision {s['precision']} loss {s['loss_initial']:.6f} -> {s['loss_final']:.6f} "
          f"in {s['seconds_total']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
