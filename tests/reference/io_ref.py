#!/usr/bin/python3
"""Independent Python side of the io tests (tests/io/*): run by the C++ tests.

Subcommands (every one prints one JSON line or an error and exits non-zero on mismatch):
  torch_save DIR          torch.save fixtures + DIR/<name>.json descriptions (needs torch)
  torch_check DIR NAME... torch.load DIR/NAME (plain and weights_only) and compare with
                          DIR/NAME.json written by C++; zipfile CRC/alignment checks (torch)
  evil DIR                hostile pickles/zips built with the stdlib only
  st_write DIR            safetensors written by hand (json + struct) + descriptions
  st_check FILE DESC      parse a C++-written safetensors file with the reference's checks,
                          compare values with DESC and bytes with a reference-style writer
  tfevents FILE           decode a TFRecord event file by hand (CRC-32C checked) to JSON

A "description" is a JSON tree every side can produce: {"type": "odict"|"dict"|"list"|
"tuple"|"set"|"int"|"float"|"str"|"bytes"|"bool"|"none"|"tensor", ...}; dict items are
[key, value] pairs in order; tensors carry dtype (safetensors spelling), shape, values
(exact: f16/bf16 widened to float) and requires_grad.
"""
import collections
import json
import os
import pickle
import struct
import sys
import zipfile

ST_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32,
           "F32": 32, "F64": 64, "I64": 64, "U64": 64, "C64": 64, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
           "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
# safetensors write order: alignment descending (the reference's Dtype enum order reversed)
ST_RANK = {"I64": 0, "F64": 1, "F32": 2, "I32": 3, "BF16": 4, "F16": 5, "I16": 6, "I8": 7, "U8": 8, "BOOL": 9}


def fail(msg):
    print("MISMATCH: " + msg)
    sys.exit(1)


# ---------------------------------------------------------------- values without torch
def decode_values(dtype, raw):
    """Little-endian bytes -> list of Python numbers, exactly (numpy for f16, bit tricks for bf16)."""
    import numpy as np
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return [float(x) for x in u.view(np.float32)]
    np_t = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
            "U8": "u1", "BOOL": "u1"}[dtype]
    a = np.frombuffer(raw, dtype=np_t)
    if dtype[0] == "F":
        return [float(x) for x in a.astype(np.float64)]
    return [int(x) for x in a]


def tensor_desc(dtype, shape, values, requires_grad=False):
    return {"type": "tensor", "dtype": dtype, "shape": list(shape), "values": values,
            "requires_grad": requires_grad}


# ---------------------------------------------------------------- torch side
def torch_dtype_name(t):
    import torch
    return {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
            torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
            torch.bool: "BOOL"}[t.dtype]


def describe(obj):
    import torch
    if obj is None:
        return {"type": "none"}
    if isinstance(obj, bool):
        return {"type": "bool", "value": obj}
    if isinstance(obj, int):
        return {"type": "int", "value": obj}
    if isinstance(obj, float):
        return {"type": "float", "value": obj}
    if isinstance(obj, str):
        return {"type": "str", "value": obj}
    if isinstance(obj, bytes):
        return {"type": "bytes", "value": obj.hex()}
    if isinstance(obj, torch.Tensor):
        t = obj.detach().contiguous()
        vals = t.reshape(-1).to(torch.float64 if t.is_floating_point() else torch.int64).tolist()
        if t.dtype == torch.bool:
            vals = [int(v) for v in vals]
        return tensor_desc(torch_dtype_name(t), t.shape, vals, bool(obj.requires_grad))
    if isinstance(obj, dict):
        kind = "odict" if type(obj) is collections.OrderedDict else "dict"
        return {"type": kind, "items": [[describe(k), describe(v)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple, set)):
        kind = {list: "list", tuple: "tuple", set: "set"}[type(obj)]
        return {"type": kind, "items": [describe(v) for v in obj]}
    raise TypeError("cannot describe %r" % type(obj))


def save_with_desc(d, name, obj, **kw):
    import torch
    torch.save(obj, os.path.join(d, name), **kw)
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump(describe(obj), f)


def cmd_torch_save(d):
    import torch
    os.makedirs(d, exist_ok=True)
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.25 - 1.0
    lin = torch.nn.Linear(3, 2)  # its state_dict carries _metadata (pickled with BUILD)
    with torch.no_grad():
        lin.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3) / 8)
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    sd = lin.state_dict()
    sd["base"] = base
    sd["base_t"] = base.t()                    # same storage, stride (1, 4)
    sd["slice"] = base[1:, 1:3]                # same storage, offset 5, non-contiguous
    sd["bf16"] = torch.linspace(-2, 2, 9).to(torch.bfloat16)
    sd["f16"] = (torch.arange(5, dtype=torch.float32) / 3).to(torch.float16)
    sd["i64"] = torch.tensor([-(2 ** 40), -1, 0, 7, 2 ** 33 + 5], dtype=torch.int64)
    sd["i32"] = torch.tensor([[-3, 4]], dtype=torch.int32)
    sd["mask"] = torch.tensor([True, False, True])
    sd["logit_scale"] = torch.tensor(4.6052)   # 0-d
    sd["empty"] = torch.zeros(0, 3)
    save_with_desc(d, "sd.pt", sd)
    save_with_desc(d, "sd_p4.pt", sd, pickle_protocol=4)

    # An OpenCLIP training checkpoint after one AdamW step (DDP: module. prefix).
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) + i)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    ckpt = {
        "epoch": 3,
        "name": "run-x",
        "state_dict": collections.OrderedDict(("module." + k, v) for k, v in model.state_dict().items()),
        "optimizer": opt.state_dict(),
        "scaler": {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                   "_growth_tracker": 0},
        "global_step": 12345,
        "samples_seen": 2 ** 40,
    }
    save_with_desc(d, "train.pt", ckpt)
    print(json.dumps({"ok": True, "torch": torch.__version__}))


def compare(a, b, path="root"):
    if a.get("type") != b.get("type"):
        fail("%s: type %s != %s" % (path, a.get("type"), b.get("type")))
    t = a["type"]
    if t in ("list", "tuple", "set"):
        if len(a["items"]) != len(b["items"]):
            fail("%s: %d items != %d" % (path, len(a["items"]), len(b["items"])))
        for i, (x, y) in enumerate(zip(a["items"], b["items"])):
            compare(x, y, "%s[%d]" % (path, i))
    elif t in ("dict", "odict"):
        if len(a["items"]) != len(b["items"]):
            fail("%s: %d items != %d" % (path, len(a["items"]), len(b["items"])))
        for i, ((ka, va), (kb, vb)) in enumerate(zip(a["items"], b["items"])):
            compare(ka, kb, "%s.key%d" % (path, i))
            compare(va, vb, "%s[%r]" % (path, ka.get("value")))
    elif a != b:
        fail("%s: %s != %s" % (path, json.dumps(a)[:300], json.dumps(b)[:300]))


def has_float(desc):
    if desc["type"] == "float":
        return True
    for it in desc.get("items", []):
        if isinstance(it, list):
            if any(has_float(x) for x in it):
                return True
        elif has_float(it):
            return True
    return False


def check_zip_layout(path):
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()  # reads every entry, checks CRC-32
        if bad is not None:
            fail("%s: CRC mismatch in %s" % (path, bad))
        names = z.namelist()
        prefix = os.path.splitext(os.path.basename(path))[0]
        for n in names:
            if not n.startswith(prefix + "/"):
                fail("%s: entry %s not under %s/" % (path, n, prefix))
        if any(n.endswith(".format_version") for n in names):
            fail("%s: has .format_version" % path)
        with open(path, "rb") as f:
            raw = f.read()
        for info in z.infolist():
            h = info.header_offset
            nlen, xlen = struct.unpack("<HH", raw[h + 26:h + 30])
            start = h + 30 + nlen + xlen
            if start % 64:
                fail("%s: payload of %s starts at %d, not 64-aligned" % (path, info.filename, start))
    return names


def cmd_torch_check(d, names):
    import torch
    report = {}
    for name in names:
        path = os.path.join(d, name)
        with open(path + ".json") as f:
            want = json.load(f)
        entries = check_zip_layout(path)
        compare(describe(torch.load(path)), want, name)
        r = {"plain": "ok", "entries": entries}
        try:
            got = torch.load(path, weights_only=True)
            compare(describe(got), want, name + "(weights_only)")
            r["weights_only"] = "ok"
        except pickle.UnpicklingError as e:
            # torch 1.13's weights-only unpickler has no BINFLOAT: expected only with floats.
            if not has_float(want):
                fail("%s: weights_only load failed: %s" % (name, e))
            r["weights_only"] = "rejected: " + str(e).split("WeightsUnpickler error: ")[-1]
        report[name] = r
    print(json.dumps({"ok": True, "torch": torch.__version__, "files": report}))


# ---------------------------------------------------------------- hostile inputs (stdlib)
class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def cmd_evil(d):
    os.makedirs(d, exist_ok=True)
    marker = os.path.join(d, "pwned")
    with zipfile.ZipFile(os.path.join(d, "evil.pt"), "w") as z:
        z.writestr("evil/data.pkl", pickle.dumps({"x": Evil(marker)}, protocol=2))
        z.writestr("evil/version", "3\n")
    with zipfile.ZipFile(os.path.join(d, "deflated.pt"), "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("deflated/data.pkl", pickle.dumps({"a": 1}, protocol=2))
        z.writestr("deflated/version", "3\n")
    print(json.dumps({"ok": True, "marker": marker}))


# ---------------------------------------------------------------- safetensors
def st_encode(name, desc):
    """(dtype, shape, bytes) of a description's tensor."""
    import numpy as np
    dt, vals = desc["dtype"], desc["values"]
    if dt == "BF16":
        f = np.array(vals, dtype=np.float32).view(np.uint32)
        raw = (f >> 16).astype("<u2").tobytes()  # values are exact bf16 numbers
    else:
        np_t = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
                "U8": "u1", "BOOL": "u1"}[dt]
        raw = np.array(vals, dtype=np_t).tobytes()
    return dt, desc["shape"], raw


def st_serialize(tensors, metadata):
    """The reference serializer: sort by alignment desc then name, compact JSON, space padding."""
    order = sorted(tensors, key=lambda kv: (ST_RANK[kv[1][0]], kv[0]))
    header, off = {}, 0
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    for name, (dt, shape, raw) in order:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    js = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    js += b" " * ((8 - len(js) % 8) % 8)
    return struct.pack("<Q", len(js)) + js + b"".join(raw for _, (_, _, raw) in order)


def cmd_st_write(d):
    os.makedirs(d, exist_ok=True)
    descs = collections.OrderedDict()
    descs["weight"] = tensor_desc("F32", [2, 3], [0.5 * i - 1 for i in range(6)])
    descs["half"] = tensor_desc("F16", [3], [0.0, 1.5, -65504.0])
    descs["brain"] = tensor_desc("BF16", [2, 2], [1.0, -2.5, 3.140625, 0.0])
    descs["ids"] = tensor_desc("I64", [3], [-(2 ** 40), 0, 2 ** 35])
    descs["small"] = tensor_desc("I32", [1, 1], [-7])
    descs["bytes"] = tensor_desc("U8", [4], [0, 1, 128, 255])
    descs["flags"] = tensor_desc("BOOL", [2], [1, 0])
    descs["scalar"] = tensor_desc("F32", [], [2.5])
    descs["none"] = tensor_desc("F32", [0, 4], [])
    # Not the reference order on purpose: insertion order, a readable pretty header with
    # leading whitespace, no padding. Readers must not depend on the writer's layout.
    header, blobs, off = {"__metadata__": {"format": "pt", "note": "h\u00e9llo"}}, [], 0
    for name, desc in descs.items():
        dt, shape, raw = st_encode(name, desc)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    js = (" \n" + json.dumps(header, indent=1, ensure_ascii=False)).encode()
    with open(os.path.join(d, "py.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))
    with open(os.path.join(d, "py.safetensors.json"), "w") as f:
        json.dump({"type": "dict", "items": [[{"type": "str", "value": k}, v] for k, v in descs.items()],
                   "metadata": header["__metadata__"]}, f)
    print(json.dumps({"ok": True}))


def st_parse(path):
    """The reference's read_metadata + validate, with its error names."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail("HeaderTooSmall")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > 100_000_000:
        fail("HeaderTooLarge")
    if 8 + n > len(raw):
        fail("InvalidHeaderLength")
    text = raw[8:8 + n].decode("utf-8")  # raises on invalid UTF-8

    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            fail("duplicate keys %s" % keys)
        return dict(pairs)

    header = json.loads(text, object_pairs_hook=no_dupes)
    meta = header.pop("__metadata__", None)
    if meta is not None and not all(isinstance(v, str) for v in meta.values()):
        fail("non-string metadata")
    items = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    pos = 0
    for name, info in items:
        b, e = info["data_offsets"]
        if b != pos or e < b:
            fail("InvalidOffset(%s)" % name)
        count = 1
        for s in info["shape"]:
            count *= s
        bits = count * ST_BITS[info["dtype"]]
        if bits % 8 or e - b != bits // 8:
            fail("TensorInvalidInfo(%s)" % name)
        pos = e
    if 8 + n + pos != len(raw):
        fail("MetadataIncompleteBuffer")
    return raw, n, text, header, meta


def cmd_st_check(path, desc_path):
    raw, n, text, header, meta = st_parse(path)
    with open(desc_path) as f:
        want = json.load(f)
    if (8 + n) % 8:
        fail("header not padded to 8 bytes")
    if not text.startswith("{"):
        fail("header does not start with {")
    if meta is not None and not text.startswith('{"__metadata__"'):
        fail("__metadata__ is not first")
    if (want.get("metadata") or None) != meta:
        fail("metadata %r != %r" % (meta, want.get("metadata")))
    got = []
    for name, info in header.items():
        b, e = info["data_offsets"]
        vals = decode_values(info["dtype"], raw[8 + n + b:8 + n + e])
        got.append([{"type": "str", "value": name}, tensor_desc(info["dtype"], info["shape"], vals)])
    wanted = sorted(want["items"], key=lambda kv: kv[0]["value"])
    compare({"type": "dict", "items": sorted(got, key=lambda kv: kv[0]["value"])},
            {"type": "dict", "items": wanted}, path)
    tensors = [(k["value"], st_encode(k["value"], v)) for k, v in want["items"]]
    if st_serialize(tensors, want.get("metadata") or {}) != raw:
        fail("bytes differ from the reference-style serializer")
    print(json.dumps({"ok": True, "tensors": len(header), "header_bytes": n}))


# ---------------------------------------------------------------- TensorBoard
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def pb_fields(buf):
    """Yield (field, wire, value) of one protobuf message; value is int, bytes or raw fixed bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            fail("wire type %d" % wire)
        yield field, wire, v


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def cmd_tfevents(path):
    with open(path, "rb") as f:
        raw = f.read()
    events, pos = [], 0
    while pos < len(raw):
        (n,) = struct.unpack("<Q", raw[pos:pos + 8])
        (lc,) = struct.unpack("<I", raw[pos + 8:pos + 12])
        if lc != masked(raw[pos:pos + 8]):
            fail("length crc at %d" % pos)
        data = raw[pos + 12:pos + 12 + n]
        (dc,) = struct.unpack("<I", raw[pos + 12 + n:pos + 16 + n])
        if dc != masked(data):
            fail("data crc at %d" % pos)
        ev = {"step": 0}
        for field, wire, v in pb_fields(data):
            if field == 1:
                ev["wall_time"] = struct.unpack("<d", v)[0]
            elif field == 2:
                ev["step"] = v
            elif field == 3:
                ev["file_version"] = v.decode()
            elif field == 5:
                for f2, _, val in pb_fields(v):
                    if f2 != 1:
                        continue
                    for f3, w3, x in pb_fields(val):
                        if f3 == 1:
                            ev["tag"] = x.decode()
                        elif f3 == 2 and w3 == 5:
                            ev["simple_value"] = struct.unpack("<f", x)[0]
            elif field == 7:
                ev["session_log"] = dict((f2, x) for f2, _, x in pb_fields(v)).get(1, 0)
        events.append(ev)
        pos += n + 16
    out = {"ok": True, "events": events, "tensorboard": False}
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        event_accumulator = None
    if event_accumulator is not None:  # TensorBoard's own reader, restart purging included
        acc = event_accumulator.EventAccumulator(os.path.dirname(path))
        acc.Reload()
        out["tensorboard"] = True
        out["tb_scalars"] = {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    print(json.dumps(out))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "torch_save":
        cmd_torch_save(args[0])
    elif cmd == "torch_check":
        cmd_torch_check(args[0], args[1:])
    elif cmd == "evil":
        cmd_evil(args[0])
    elif cmd == "st_write":
        cmd_st_write(args[0])
    elif cmd == "st_check":
        cmd_st_check(args[0], args[1])
    elif cmd == "tfevents":
        cmd_tfevents(args[0])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
