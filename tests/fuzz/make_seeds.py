#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/<seed>.

Small valid inputs (a few KB per target), made with Python's own writers (tarfile, zipfile,
pickle, torch.save, PIL) or byte by byte where Python has none (safetensors, TFRecord,
IDX); Parquet seeds are the committed test fixtures. Rerun after changing a format:
    /usr/bin/python3 tests/fuzz/make_seeds.py   (Debian's: PIL and torch)
"""
import collections, gzip, io, json, os, pickle, struct, sys, tarfile, zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from io_ref import masked  # noqa: E402  TensorBoard's masked CRC32C, one copy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tiny_images():
    from PIL import Image
    img = Image.new("RGB", (5, 3))
    img.putdata([(i * 40 % 256, i * 90 % 256, 255 - i * 17) for i in range(15)])
    out = {}
    for fmt, ext in (("PNG", "png"), ("JPEG", "jpg"), ("WEBP", "webp")):
        b = io.BytesIO()
        img.save(b, fmt)
        out[ext] = b.getvalue()
    g = io.BytesIO()
    img.convert("L").save(g, "PNG")
    out["gray.png"] = g.getvalue()
    return out


def tar_bytes(members, fmt):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    raw = b.getvalue().rstrip(b"\0")
    n = (len(raw) + 511) // 512 * 512
    return raw.ljust(n + 1024, b"\0")  # two end blocks, without tarfile's 10 KiB padding


def tfrecord(payload):
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", masked(n)) + payload + struct.pack("<I", masked(payload))


def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload



def loader_seeds():
    """tokenizer.json, spiece.model and config JSON seeds (issue 42): small, valid files."""
    import base64
    # A 512-unit Darts-clone charsmap mapping "a" to "b" (as tests/text/hostile_tokenizer_test.cpp).
    u = [0] * 512
    u[0] = 256 << 10
    idx = 256 ^ ord("a")
    u[idx] = ((idx ^ 100) << 10) | (1 << 8) | ord("a")
    u[100] = (1 << 31) | 0
    blob = struct.pack("<I", 2048) + struct.pack("<512I", *u) + b"b\0"
    vocab = [["<unk>", 0.0], ["</s>", 0.0], ["\u2581", -1.0], ["\u2581a", -2.0], ["b", -2.5], ["\u2581b", -3.0],
             ["<0x41>", -9.0]]
    tok = {"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": True, "vocab": vocab},
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()},
               {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
               {"type": "Replace", "pattern": {"String": "x"}, "content": "yy"},
               {"type": "Strip", "strip_left": True, "strip_right": True},
               {"type": "Prepend", "prepend": "\u2581"}]},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "WhitespaceSplit"},
               {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]},
           "post_processor": {"type": "TemplateProcessing", "single": [
               {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
               "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
           "added_tokens": [{"id": 1, "content": "</s>"}]}
    put("fuzz_hf_tokenizer", "pipeline.json", json.dumps(tok).encode() + b"\n\x01\nax  b\xc3\xa9")
    tok2 = dict(tok, normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                                        "add_prefix_space": True})
    put("fuzz_hf_tokenizer", "metaspace.json", json.dumps(tok2).encode())
    # Gemma's layout (SigLIP2): Replace(" " -> "▁"), BPE with byte_fallback (all 256 byte pieces) and fuse_unk.
    bpe_vocab = {p: i for i, p in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)] +
                                            ["\u2581", "a", "b", "ab", "\u2581ab", "c"])}
    tok3 = {"model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True, "vocab": bpe_vocab,
                      "merges": ["a b", ["\u2581", "ab"]]},
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            "post_processor": {"type": "TemplateProcessing", "single": [
                {"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
            "added_tokens": [{"id": i, "content": c} for i, c in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"])]}
    put("fuzz_hf_tokenizer", "gemma_bpe.json", json.dumps(tok3).encode() + b"\n\x01\n ab c\xf0\x9f\x90\xb6")

    # spiece.model: pieces (piece, score, type) and a normalizer_spec with the same charsmap.
    def piece(p, score, typ):
        return field(1, 2, field(1, 2, p.encode()) + field(2, 5, struct.pack("<f", score)) + field(3, 0, varint(typ)))
    model = b"".join(piece(p, s, t) for p, s, t in
                     [("<unk>", 0.0, 2), ("</s>", 0.0, 3), ("\u2581", -1.0, 1), ("\u2581a", -2.0, 1), ("b", -2.5, 1)])
    model += field(2, 2, field(3, 0, varint(1)))  # trainer_spec.model_type = UNIGRAM
    model += field(3, 2, field(1, 2, b"custom") + field(2, 2, blob))
    put("fuzz_spiece", "tiny.model", model)

    cfg = {"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8},
           "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 48, "heads": 2, "layers": 2}}
    put("fuzz_json_configs", "model_cfg.json", json.dumps(cfg).encode())
    put("fuzz_json_configs", "hub.json", json.dumps({"model_cfg": cfg, "preprocess_cfg": {
        "mean": [0.5, 0.5, 0.5], "std": 0.5, "interpolation": "bicubic", "resize_mode": "squash"}}).encode())
    put("fuzz_json_configs", "nested.json", b'{"a": ' + b"[" * 120 + b"]" * 120 + b"}")

def main():
    # Start over, but keep `regress-*`: inputs that once crashed a target, kept as seeds.
    for root, _, files in os.walk(OUT):
        for f in files:
            if not f.startswith("regress-"):
                os.remove(os.path.join(root, f))
    imgs = tiny_images()
    loader_seeds()

    # Images and tokenizer (the two targets that predate the corpus).
    for ext, data in imgs.items():
        put("fuzz_image", "tiny." + ext, data)
    for i, cap in enumerate(["a photo of a cat.", "A  Dog's <b>toy</b> &amp; 2 balls!!",
                             "naïve café — 東京 🚀", "don't  stop   me\tnow\n"]):
        put("fuzz_tokenizer", f"caption{i}.txt", cap.encode())

    # Tar shards in webdataset's layout: ustar, pax (long name), GNU.
    shard = [("000000.txt", b"a red square"), ("000000.png", imgs["png"]), ("000000.cls", b"3\n"),
             ("000001.txt", b"a blue one"), ("000001.jpg", imgs["jpg"]), ("__meta__", b"{}")]
    put("fuzz_tar", "ustar.tar", tar_bytes(shard, tarfile.USTAR_FORMAT))
    long = "dir/" + "x" * 120 + "/000002"
    put("fuzz_tar", "pax_long.tar", tar_bytes([(long + ".txt", b"long"), (long + ".webp", imgs["webp"])],
                                              tarfile.PAX_FORMAT))
    put("fuzz_tar", "gnu.tar", tar_bytes([("a.b.txt", b"dots"), ("a.b.png", imgs["gray.png"])], tarfile.GNU_FORMAT))

    # Zip (stored entries, as torch writes) and a torch.save checkpoint.
    for name, z64 in (("stored.zip", False), ("zip64.zip", True)):
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            z.writestr(zipfile.ZipInfo("archive/data.pkl"), pickle.dumps({"a": 1}, protocol=2))  # 1980: same bytes every run
            with z.open(zipfile.ZipInfo("archive/data/0"), "w", force_zip64=z64) as f:
                f.write(b"\0" * 16)
        put("fuzz_zip", name, b.getvalue())

    # Pickles: what torch checkpoints hold.
    od = collections.OrderedDict([("w", 1.5), ("b", [1, 2, (3, None)])])
    for i, v in enumerate([od, {"epoch": 3, "name": "run", "flags": {True, False}, "bytes": b"\x00\x01"},
                           [1, -2, 2**40, 1e-3, "ü", None]]):
        put("fuzz_pickle", f"p{i}.pkl", pickle.dumps(v, protocol=2))

    try:
        import torch
        sd = collections.OrderedDict([("w", torch.arange(6, dtype=torch.float32).reshape(2, 3)),
                                      ("b", torch.zeros(3, dtype=torch.float16))])
        sd["view"] = sd["w"].t()  # shares the storage, with strides
        for name, obj in (("state_dict.pt", sd), ("checkpoint.pt", {"epoch": 1, "state_dict": sd})):
            b = io.BytesIO()
            torch.save(obj, b)
            put("fuzz_torch_pt", name, b.getvalue())
            with zipfile.ZipFile(io.BytesIO(b.getvalue())) as z:
                pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
                put("fuzz_pickle", "torch_" + name + ".pkl", z.read(pkl))
    except ImportError:
        print("make_seeds: no torch, skipping the .pt seeds")

    # safetensors: an 8-byte length, the JSON header padded to 8, the data.
    def st(tensors, meta=None):
        hdr, data = {}, b""
        if meta:
            hdr["__metadata__"] = meta
        for name, dtype, shape, raw in tensors:
            hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        j = json.dumps(hdr, separators=(",", ":")).encode()
        j += b" " * (-len(j) % 8)
        return struct.pack("<Q", len(j)) + j + data
    put("fuzz_safetensors", "two.safetensors", st([("a", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                                     ("b", "BF16", [3], b"\x80\x3f" * 3)], {"format": "pt"}))
    put("fuzz_safetensors", "empty_tensor.safetensors", st([("e", "I64", [0, 5], b""), ("u", "U8", [], b"\x07")]))

    # Parquet: the committed fixtures (pyarrow and parquetjs writers); thrift: their footers
    # and first page headers.
    fx = os.path.join(ROOT, "tests", "download", "fixtures")
    for name in ("plain_zstd_v1.parquet", "npm_gzip_plain.parquet", "dict_zstd_v2.parquet", "plain_none_v1.parquet"):
        raw = open(os.path.join(fx, name), "rb").read()
        put("fuzz_parquet", name, raw)
        n = struct.unpack("<I", raw[-8:-4])[0]
        put("fuzz_thrift", name + ".footer", raw[-8 - n:-8])
        put("fuzz_thrift", name + ".page", raw[4:4 + 64])
    put("fuzz_thrift", "rle_bitpacked", bytes([3, 4]) + bytes([0x03, 0x88, 0xC6, 0xFA, 0x10, 0x05]))

    # CSV (first byte: separator index into "\t,;|").
    put("fuzz_csv", "tab.tsv", b"\0filepath\ttitle\tlabel\n/a.jpg\ta cat\t1\n/b.png\t\"quoted\ttab\"\t2\n")
    put("fuzz_csv", "comma_crlf.csv", b"\x01\xef\xbb\xbffilepath,title\r\n/a.jpg,\"multi\nline \"\"q\"\"\"\r\n\r\n/b.jpg,x\r\n")
    put("fuzz_csv", "semicolon.csv", b"\x02title;filepath\nno path;\n")

    # URL lists (first byte: format csv/tsv/jsonl/txt; bit 2: with a caption column).
    put("fuzz_url_list", "list.csv", b"\x04url,caption\nhttp://a.example/1.jpg,a cat\nhttp://a.example/1.jpg,again\n")
    put("fuzz_url_list", "list.tsv", b"\x05url\tcaption\nhttps://b.example/x.png\t\"tab\tin\"\n")
    put("fuzz_url_list", "list.jsonl", b"\x06" + b'{"url": "http://c.example/a.webp", "caption": "\\u00e9t\\u00e9"}\n{"url": "u2"}\n')
    put("fuzz_url_list", "list.txt", b"\x03http://d.example/1.jpg\n\nhttp://d.example/2.jpg\n")

    # TensorBoard events: file_version, scalars, a SessionLog START.
    wall = field(1, 1, struct.pack("<d", 1700000000.5))
    recs = [wall + field(3, 2, b"brain.Event:2"),
            wall + field(2, 0, varint(10)) + field(5, 2, field(1, 2, field(1, 2, b"train/loss") + field(2, 5, struct.pack("<f", 0.25)))),
            wall + field(2, 0, varint(5)) + field(6, 2, field(1, 0, varint(1)))]
    put("fuzz_tfevents", "events", b"".join(tfrecord(r) for r in recs))
    put("fuzz_tfevents", "partial_tail", b"".join(tfrecord(r) for r in recs[:2]) + tfrecord(recs[2])[:9])

    # Model configs: some of ours (EVA02-B-16: model/eva/; ViT-B-32-SigLIP2-256: tanh-GELU towers;
    # convnext_tiny: the timm ConvNeXt reader).
    for name in ("ViT-B-32.json", "fmnist-S.json", "test-tiny.json", "EVA02-B-16.json", "ViT-B-32-SigLIP2-256.json",
                 "convnext_tiny.json"):
        p = os.path.join(ROOT, "configs", "models", name)
        if os.path.exists(p):
            put("fuzz_model_config", name, open(p, "rb").read())
            put("fuzz_model_plan", name, open(p, "rb").read())
    # fuzz_model_plan: the -CLIPA/SigLIP options and the config of issue 22 whose parameter
    # count wrapped 2^64 (now refused by its vocab_size and mlp_ratio).
    put("fuzz_model_plan", "options-clipa.json", json.dumps({
        "embed_dim": 8, "init_logit_bias": -10,
        "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 2, "no_ln_pre": True,
                       "pool_type": "avg", "ls_init_value": 1e-4, "mlp_ratio": 4.9231},
        "text_cfg": {"width": 64, "heads": 2, "layers": 1, "vocab_size": 100, "context_length": 8,
                     "proj_bias": True, "pool_type": "last", "ls_init_value": 0.1, "mlp_ratio": 0.5}}).encode())
    put("fuzz_model_plan", "regress-wrapping-mlp-ratio", json.dumps({
        "embed_dim": 512, "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 1},
        "text_cfg": {"vocab_size": 2147483647, "width": 2048, "heads": 8, "layers": 64,
                     "mlp_ratio": -1048576.25}}).encode())

    # IDX (first byte: bit 0 images/labels, bits 1-6 the item limit).
    imgs_idx = struct.pack(">IIII", 0x803, 3, 4, 5) + bytes(range(60))
    labels_idx = struct.pack(">II", 0x801, 6) + bytes([0, 1, 2, 9, 4, 5])
    put("fuzz_idx", "images.idx", b"\x01" + imgs_idx)
    put("fuzz_idx", "images_limit2.idx.gz", b"\x05" + gzip.compress(imgs_idx, mtime=0))
    put("fuzz_idx", "labels.idx", b"\x00" + labels_idx)
    put("fuzz_idx", "labels.idx.gz", b"\x08" + gzip.compress(labels_idx, mtime=0))


if __name__ == "__main__":
    main()
