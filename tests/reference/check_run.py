#!/usr/bin/python3
"""Independent checks of an openclip-cpp training run, used by tests/train:

  check_run.py checkpoint PATH --config NAME   torch.load the checkpoint (plain and, for the
        state_dict alone, weights_only=True); check OpenCLIP's dict layout, and that the
        state_dict loads strictly into the PyTorch reference model (clip_ref.py) with every
        key and shape; check the optimizer state_dict loads into torch.optim.AdamW built
        with OpenCLIP's two parameter groups.
  check_run.py events DIR                     decode every TFRecord/Event protobuf in DIR by
        hand (no TensorBoard needed), verify the masked CRC-32C of every record, print JSON
        {tag: [[step, value], ...]}.
Exit status 0 when every check passes; a message names the first failure.
"""
import io
import json
import os
import struct
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io_ref import masked  # noqa: E402  TensorBoard's masked CRC-32C


def fail(msg):
    print("check_run: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check_checkpoint(path, config):
    import torch
    import clip_ref
    ck = torch.load(path, map_location="cpu")
    for k in ("epoch", "name", "state_dict", "optimizer"):
        if k not in ck:
            fail(f"checkpoint has no '{k}' (keys: {list(ck)})")
    sd = ck["state_dict"]
    model = clip_ref.CLIP(clip_ref.load_config(config))
    ref = model.state_dict()
    if list(sd.keys()) != list(ref.keys()):
        missing = [k for k in ref if k not in sd]
        extra = [k for k in sd if k not in ref]
        fail(f"state_dict keys differ from the reference model: missing {missing[:5]}, extra {extra[:5]}, "
             f"or the order differs")
    for k in ref:
        if tuple(sd[k].shape) != tuple(ref[k].shape) or sd[k].dtype != torch.float32:
            fail(f"{k}: {tuple(sd[k].shape)} {sd[k].dtype} vs reference {tuple(ref[k].shape)}")
    model.load_state_dict(sd, strict=True)
    opt = clip_ref.make_optimizer(model, 1e-3, 0.1)
    opt.load_state_dict(ck["optimizer"])
    # weights_only loading of a bare state_dict (what OpenCLIP's --pretrained does)
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    torch.load(buf, weights_only=True)
    # the file itself is a valid zip with correct CRCs (Python's zipfile checks them)
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        if bad:
            fail(f"bad CRC in zip member {bad}")
    print(json.dumps({"epoch": ck["epoch"], "name": ck["name"], "keys": len(sd)}))


def varint(b, i):
    shift = v = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]; i += n
        else:
            fail(f"wire type {wt}")
        yield f, wt, v


def check_events(d):
    out = {}
    files = sorted(f for f in os.listdir(d) if "tfevents" in f)
    if not files:
        fail(f"no event files in {d}")
    for name in files:
        data = open(os.path.join(d, name), "rb").read()
        i = 0
        first = True
        while i < len(data):
            if len(data) - i < 12:
                fail(f"{name}: truncated record at {i}")
            hdr = data[i:i + 8]
            (n,) = struct.unpack("<Q", hdr)
            (hcrc,) = struct.unpack("<I", data[i + 8:i + 12])
            if hcrc != masked(hdr):
                fail(f"{name}: bad length CRC at {i}")
            payload = data[i + 12:i + 12 + n]
            (dcrc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
            if dcrc != masked(payload):
                fail(f"{name}: bad data CRC at {i}")
            i += 16 + n
            step = 0
            for f, wt, v in fields(payload):
                if f == 2:
                    step = v
                if f == 3 and first and v != b"brain.Event:2":
                    fail(f"{name}: first event is not file_version brain.Event:2")
                if f == 5:
                    for vf, _, val in fields(v):
                        if vf != 1:
                            continue
                        tag, value = None, None
                        for sf, _, sv in fields(val):
                            if sf == 1:
                                tag = sv.decode()
                            if sf == 2:
                                (value,) = struct.unpack("<f", sv)
                        if tag is not None and value is not None:
                            out.setdefault(tag, []).append([step, value])
            first = False
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "checkpoint":
        cfg = sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv else "ViT-B-32"
        check_checkpoint(sys.argv[2], cfg)
    elif len(sys.argv) == 3 and sys.argv[1] == "events":
        check_events(sys.argv[2])
    else:
        fail(__doc__)
