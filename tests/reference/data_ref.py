#!/usr/bin/python3
"""Reference fixtures and expectations for the data module's tests (tests/data/).

Shards are written by CPython's tarfile (PAX with per-member float mtime as webdataset's
TarWriter, GNU long names, ustar prefixes, a pax global header, a base-256 size field) and
damaged on purpose. The expected samples come from a transcription of webdataset 0.2.86's
tar_file_expander + OpenCLIP's group_by_keys_nothrow on top of CPython's streaming reader
("r|*"), with the handler log_and_continue, so the C++ reader is checked against the
reader OpenCLIP really uses.

usage:
  data_ref.py make OUT_DIR          fixtures + OUT_DIR/expected.json
  data_ref.py split-key NAME...     base_plus_ext of each name (JSON)
  data_ref.py read TAR              members of a tar written by the C++ writer (JSON)
  data_ref.py bench-images DIR N    N generated 300-500 px JPEGs + .txt captions (loader benchmark)
"""
import io
import json
import os
import random
import re
import sys
import tarfile
import time

from PIL import Image

KEY_RE = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def base_plus_ext(path):
    m = KEY_RE.match(path)
    if not m:
        return None, None
    return m.group(1), m.group(2)


def tar_members(path, errors):
    """webdataset tar_file_iterator + tar_file_expander, handler=log_and_continue."""
    try:
        with open(path, "rb") as f:
            stream = tarfile.open(fileobj=f, mode="r|*")
            for info in stream:
                try:
                    if not info.isreg():
                        continue
                    fname = info.name
                    if "/" not in fname and fname.startswith("__") and fname.endswith("__"):
                        continue
                    data = stream.extractfile(info).read()
                    yield dict(fname=fname, data=data, url=path)
                    stream.members = []
                except Exception as exn:  # noqa: BLE001 (log_and_continue)
                    errors.append([os.path.basename(path), repr(exn)])
                    continue
    except Exception as exn:  # noqa: BLE001
        errors.append([os.path.basename(path), repr(exn)])


def group(members):
    """OpenCLIP's group_by_keys_nothrow."""
    cur = None
    for fs in members:
        prefix, suffix = base_plus_ext(fs["fname"])
        if prefix is None:
            continue
        suffix = suffix.lower()
        if cur is None or prefix != cur["__key__"] or suffix in cur:
            if cur is not None:
                yield cur
            cur = dict(__key__=prefix, __url__=fs["url"])
        cur[suffix] = fs["data"]
    if cur is not None:
        yield cur


def classify(sample):
    """OpenCLIP's filter + decode('pilrgb') + txt utf-8 decoding, as skip reasons."""
    has_cap = "txt" in sample
    img_ext = next((e for e in ("jpg", "png", "jpeg", "webp") if e in sample), None)
    if img_ext is None:
        return "no_image"
    if not has_cap:
        return "no_caption"
    try:
        im = Image.open(io.BytesIO(sample[img_ext]))
        im.load()
        im.convert("RGB")
    except Exception:  # noqa: BLE001
        return "decode_error"
    try:
        sample["txt"].decode("utf-8")
    except UnicodeDecodeError:
        return "bad_caption"
    return "ok"


def image_bytes(rng, fmt="JPEG", size=(24, 20)):
    im = Image.new("RGB", size, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    for _ in range(10):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        im.putpixel((x, y), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    b = io.BytesIO()
    im.save(b, format=fmt, quality=90) if fmt == "JPEG" else im.save(b, format=fmt)
    return b.getvalue()


def add(tf, name, data, mtime=None, typ=tarfile.REGTYPE):
    ti = tarfile.TarInfo(name)
    ti.size = len(data) if typ == tarfile.REGTYPE else 0
    ti.mtime = time.time() if mtime is None else mtime
    ti.mode = 0o444
    ti.uname = ti.gname = "bigdata"
    ti.type = typ
    tf.addfile(ti, io.BytesIO(data) if typ == tarfile.REGTYPE else None)


def sample(tf, rng, key, caption=b"a photo", img="jpg", extra=()):
    if img:
        add(tf, f"{key}.{img}", image_bytes(rng, "PNG" if img.lower() == "png" else "JPEG"))
    add(tf, f"{key}.json", json.dumps({"key": key}).encode())
    if caption is not None:
        add(tf, f"{key}.txt", caption)
    for e, d in extra:
        add(tf, f"{key}.{e}", d)


def make(out):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(0)
    sizes = {}

    # 1. img2dataset-like PAX shard: float mtime gives each member its own pax 'x' header.
    with tarfile.open(os.path.join(out, "good.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(6):
            sample(tf, rng, f"{i:09d}", f"caption {i}".encode(), extra=[("cls", str(i % 3).encode())])
    sizes["good.tar"] = 6

    # 2. GNU format, long names (GNU 'L' headers), a directory and a symlink, uppercase .JPG,
    #    a metadata member, dotted names.
    with tarfile.open(os.path.join(out, "gnu.tar"), "w", format=tarfile.GNU_FORMAT) as tf:
        add(tf, "__meta__", b"ignored")
        add(tf, "somedir", b"", typ=tarfile.DIRTYPE)
        long_dir = "d" * 90 + "/" + "e" * 30
        sample(tf, rng, f"{long_dir}/s0", b"long name sample")
        ti = tarfile.TarInfo("link.jpg")
        ti.type = tarfile.SYMTYPE
        ti.linkname = "x" * 120
        tf.addfile(ti)
        add(tf, "s1.JPG", image_bytes(rng))
        add(tf, "s1.TXT", b"upper case")
        add(tf, "s2.seg.png", image_bytes(rng, "PNG"))
        add(tf, "s2.txt", b"double ext")
        add(tf, "noext", b"x")
        add(tf, ".hidden", b"x")
        add(tf, "dir/.x", b"dotfile in dir")
    sizes["gnu.tar"] = 3

    # 3. ustar with a name prefix (name > 100 chars, split at a '/') and a pax global header.
    with tarfile.open(os.path.join(out, "ustar.tar"), "w", format=tarfile.USTAR_FORMAT) as tf:
        pre = "p" * 120
        sample(tf, rng, f"{pre}/u0", b"prefixed", img="png")
    with tarfile.open(os.path.join(out, "global.tar"), "w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "global header"}) as tf:
        sample(tf, rng, "g0", b"global " + "\u00e9".encode())
        sample(tf, rng, "g1", "pax path \u00fc".encode())
        add(tf, "p" * 150 + ".jpg", image_bytes(rng))  # pax 'path' record
        add(tf, "p" * 150 + ".txt", b"pax long name")
    sizes["ustar.tar"] = 1
    sizes["global.tar"] = 3

    # 4. Bad samples: missing caption, missing image, duplicate extension, empty members,
    #    corrupt JPEG, bad UTF-8 caption; then a good one.
    with tarfile.open(os.path.join(out, "bad.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
        sample(tf, rng, "b0", None)                       # no caption
        sample(tf, rng, "b1", b"no image", img=None)      # no image
        add(tf, "b2.jpg", image_bytes(rng))               # duplicate extension: two samples
        add(tf, "b2.txt", b"first b2")
        add(tf, "b2.jpg", image_bytes(rng))
        add(tf, "b2.txt", b"second b2")
        add(tf, "b3.jpg", b"")                             # empty image
        add(tf, "b3.txt", b"")
        add(tf, "b4.jpg", bytes(rng.randrange(256) for _ in range(300)))  # corrupt JPEG
        add(tf, "b4.txt", b"corrupt")
        sample(tf, rng, "b5", b"bad \xff\xfe utf8")        # bad UTF-8
        add(tf, "b6.txt", b"empty caption")
        add(tf, "b6.jpg", image_bytes(rng))
        sample(tf, rng, "b7", b"good after bad")
    sizes["bad.tar"] = 9

    # 5. Truncated inside the last member's payload.
    p = os.path.join(out, "trunc.tar")
    with tarfile.open(p, "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(3):
            sample(tf, rng, f"t{i}", f"trunc {i}".encode())
        add(tf, "t3.jpg", image_bytes(rng, size=(64, 64)))
    data = open(p, "rb").read()
    # find the t3.jpg payload: cut in its middle
    cut = data.index(b"\xff\xd8", data.index(b"t3.jpg")) + 200
    open(p, "wb").write(data[:cut])
    sizes["trunc.tar"] = 4

    # 5b. Truncated inside a header (cut 100 bytes into the t1.json header).
    p = os.path.join(out, "trunchdr.tar")
    with tarfile.open(p, "w", format=tarfile.USTAR_FORMAT) as tf:
        sample(tf, rng, "h0", b"before cut")
        sample(tf, rng, "h1", b"after cut")
    data = open(p, "rb").read()
    hdr = data.index(b"h1.jpg")
    open(p, "wb").write(data[: hdr + 100])
    sizes["trunchdr.tar"] = 2

    # 5c. Corrupt header checksum in the middle.
    p = os.path.join(out, "badsum.tar")
    with tarfile.open(p, "w", format=tarfile.USTAR_FORMAT) as tf:
        sample(tf, rng, "c0", b"before bad checksum")
        sample(tf, rng, "c1", b"after")
    data = bytearray(open(p, "rb").read())
    h = data.index(b"c1.jpg")
    data[h + 10] ^= 0x55
    open(p, "wb").write(bytes(data))
    sizes["badsum.tar"] = 2

    # 6. Base-256 size field (GNU extension) on a small member.
    p = os.path.join(out, "b256.tar")
    with tarfile.open(p, "w", format=tarfile.GNU_FORMAT) as tf:
        sample(tf, rng, "n0", b"base-256 size")
    data = bytearray(open(p, "rb").read())
    h = data.index(b"n0.txt")
    size = len(b"base-256 size")
    field = bytes([0x80]) + size.to_bytes(11, "big")
    data[h + 124:h + 136] = field
    data[h + 148:h + 156] = b" " * 8
    chk = sum(data[h:h + 512])
    data[h + 148:h + 156] = b"%06o\0 " % chk
    open(p, "wb").write(bytes(data))
    sizes["b256.tar"] = 1

    # 7. A zero-byte shard, a directory in place of a shard; missing.tar is never written.
    open(os.path.join(out, "empty.tar"), "wb").close()
    os.makedirs(os.path.join(out, "isdir.tar"), exist_ok=True)
    sizes["empty.tar"] = 0
    sizes["isdir.tar"] = 0
    sizes["missing.tar"] = 0
    with open(os.path.join(out, "sizes.json"), "w") as f:
        json.dump(sizes, f)

    # Expectations: per shard, and for the whole list read as one stream (groups may cross
    # shard boundaries).
    order = ["good.tar", "gnu.tar", "ustar.tar", "global.tar", "bad.tar", "trunc.tar", "trunchdr.tar",
             "badsum.tar", "b256.tar", "empty.tar", "isdir.tar", "missing.tar"]
    expected = {"order": order, "shards": {}, "stream": None}

    def run(names):
        errors, samples = [], []
        members = (m for n in names for m in tar_members(os.path.join(out, n), errors))
        for s in group(members):
            exts = sorted(k for k in s if not k.startswith("__"))
            samples.append({"key": s["__key__"], "url": os.path.basename(s["__url__"]), "exts": exts,
                            "status": classify(s),
                            "caption": s["txt"].decode("utf-8", "replace") if "txt" in s else None})
        return {"samples": samples, "errors": errors}

    for n in order:
        expected["shards"][n] = run([n])
    expected["stream"] = run(order)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


def bench_images(out, n):
    import numpy as np
    rng = np.random.default_rng(0)
    os.makedirs(out, exist_ok=True)
    words = ["cat", "dog", "red", "car", "tree", "house", "blue", "sky", "boat", "river"]
    for i in range(n):
        w, h = int(rng.integers(300, 500)), int(rng.integers(300, 500))
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * rng.uniform(0.2, 1)) % 256, (y * rng.uniform(0.2, 1)) % 256,
                         ((x + y) * rng.uniform(0.1, .5)) % 256], -1)
        img = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(os.path.join(out, f"{i:05d}.jpg"), quality=90)
        with open(os.path.join(out, f"{i:05d}.txt"), "w") as f:
            f.write(" ".join(rng.choice(words, size=int(rng.integers(3, 12)))))


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "bench-images":
        bench_images(sys.argv[2], int(sys.argv[3]))
    elif cmd == "split-key":
        print(json.dumps([list(base_plus_ext(n)) for n in sys.argv[2:]]))
    elif cmd == "read":
        out = []
        with tarfile.open(sys.argv[2], "r|*") as tf:
            for info in tf:
                d = tf.extractfile(info).read() if info.isreg() else b""
                out.append({"name": info.name, "size": info.size, "mode": info.mode, "uname": info.uname,
                            "data": d.decode("latin-1")})
        print(json.dumps(out))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
