#!/usr/bin/python3
"""Reference outputs for the image module, from PIL 9.4 + torchvision (what OpenCLIP runs).

  image_ref.py gen OUTDIR     writes test images (JPEG/PNG/WebP, many modes and sizes) and
                              PIL/torchvision results into OUTDIR, listed in OUTDIR/manifest.txt
  image_ref.py bench DIR      times PIL+torchvision decode + RandomResizedCrop(224, (0.9,1.0),
                              bicubic) + ToTensor + Normalize on DIR/*.jpg, one core

Manifest lines (paths relative to OUTDIR; .rgb = uint8 HWC, .f32 = float32 CHW, little endian):
  decode FILE W H EXACT REF.rgb           Image.open(FILE).convert('RGB')
  eval FILE MODE INTERP SIZE FILL REF.f32 OpenCLIP eval transform (after convert('RGB'))
  crop FILE LEFT TOP W H SIZE REF.rgb     F.resized_crop(img, TOP, LEFT, H, W, [SIZE]*2, BICUBIC)
                                          (the train path with a fixed box; uint8, before ToTensor)
  rrc W H S0 S1 R0 R1 N MW MH MI MJ SW SH SI SJ   moments of RandomResizedCrop.get_params
Files already in OUTDIR/extra/ (written by the C++ test) get a decode line too.

OpenCLIP's order, on Image.open(FILE) in its own mode (files under mode/):
  srcdecode FILE MODE W H REF.raw         np.asarray(Image.open(FILE)) (P: indices, 1: 0/255)
  srceval FILE MODE INTERP SIZE FILL REF.f32   eval transform with _convert_to_rgb last
  srccrop FILE LEFT TOP W H SIZE REF.rgb  F.resized_crop(...).convert('RGB')
  convert NAME SRC.raw REF.raw            PIL's Image.frombytes(mode, (256, 256), SRC)
                                          .convert(target) over every (value, alpha) pair
"""
import io
import math
import os
import struct
import sys
import time
import warnings
import zlib

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)
NORMALIZE = T.Normalize(mean=MEAN, std=STD)



def crop_boxes(w, h, seed, n):
    """The whole image, then n random (left, top, width, height) boxes inside it."""
    rng = np.random.RandomState(seed)
    boxes = [(0, 0, w, h)]
    for _ in range(n):
        cw, ch = rng.randint(1, w + 1), rng.randint(1, h + 1)
        boxes.append((rng.randint(0, w - cw + 1), rng.randint(0, h - ch + 1), cw, ch))
    return boxes

def content(w, h, channels, seed):
    """Gradients, a sine, a hard-edged 0/255 checker patch and seeded noise."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    planes = [xx * 255.0 / max(w - 1, 1), yy * 255.0 / max(h - 1, 1),
              128 + 100 * np.sin(xx / 5.0 + yy / 9.0), (xx + yy) * 255.0 / max(w + h - 2, 1)]
    a = np.stack(planes[:channels], axis=-1) + rng.normal(0, 18, (h, w, channels))
    x0, y0 = w // 3, h // 3
    checker = ((xx[y0:y0 + h // 4, x0:x0 + w // 4] // 3 + yy[y0:y0 + h // 4, x0:x0 + w // 4] // 3) % 2) * 255
    a[y0:y0 + h // 4, x0:x0 + w // 4, :] = checker[..., None]
    return a.clip(0, 255).astype(np.uint8)


# --- a small PNG writer for what PIL cannot save (16-bit RGB/RGBA/LA, 2/4-bit gray, interlace)
def _chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def _pack_rows(samples, depth):
    """samples: (h, n) ints -> list of packed row bytes (big endian, MSB first)."""
    rows = []
    for r in samples:
        if depth == 16:
            rows.append(r.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(r.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            pad = (-len(r)) % per
            v = np.concatenate([r, np.zeros(pad, dtype=r.dtype)]).reshape(-1, per).astype(np.int64)
            b = np.zeros(len(v), np.int64)
            for i in range(per):
                b |= v[:, i] << (8 - depth * (i + 1))
            rows.append(b.astype(np.uint8).tobytes())
    return rows


def write_png(path, samples, depth, color_type, palette=None, trns=None, interlace=False):
    """samples: (h, w, channels) ints."""
    h, w, c = samples.shape
    raw = b""
    if interlace:  # Adam7
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        for x0, y0, dx, dy in passes:
            sub = samples[y0::dy, x0::dx]
            if sub.size == 0:
                continue
            for row in _pack_rows(sub.reshape(sub.shape[0], -1), depth):
                raw += b"\x00" + row
    else:
        for row in _pack_rows(samples.reshape(h, -1), depth):
            raw += b"\x00" + row
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        data += _chunk(b"PLTE", bytes(palette))
    if trns is not None:
        data += _chunk(b"tRNS", trns)
    data += _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def make_images(out):
    """Returns [(relpath, exact_decode)]."""
    files = []

    def save(name, im, exact, **kw):
        im.save(os.path.join(out, name), **kw)
        files.append((name, exact))

    rgb_sizes = [(1, 1), (2, 3), (7, 5), (100, 50), (223, 224), (224, 224), (225, 224), (256, 256),
                 (300, 200), (481, 317), (640, 480), (1000, 50), (40, 900), (1024, 768)]
    for i, (w, h) in enumerate(rgb_sizes):
        a = content(w, h, 3, seed=i)
        save(f"rgb_{w}x{h}.png", Image.fromarray(a, "RGB"), True)
        save(f"rgb_{w}x{h}_q90.jpg", Image.fromarray(a, "RGB"), False, quality=90)
    a = content(320, 240, 3, 100)
    save("rgb_q75_444.jpg", Image.fromarray(a, "RGB"), False, quality=75, subsampling=0)
    save("rgb_q95_422.jpg", Image.fromarray(a, "RGB"), False, quality=95, subsampling=1)
    save("rgb_progressive.jpg", Image.fromarray(a, "RGB"), False, quality=85, progressive=True)
    save("rgb_odd_progressive.jpg", Image.fromarray(content(333, 257, 3, 101), "RGB"), False, quality=85,
         progressive=True)
    save("gray_300x200.jpg", Image.fromarray(content(300, 200, 1, 102)[..., 0], "L"), False, quality=90)
    save("cmyk_300x200.jpg", Image.fromarray(content(300, 200, 4, 103), "CMYK"), False, quality=90)
    save("gray_300x200.png", Image.fromarray(content(300, 200, 1, 104)[..., 0], "L"), True)
    save("rgba_300x200.png", Image.fromarray(content(300, 200, 4, 105), "RGBA"), True)
    save("la_300x200.png", Image.fromarray(content(300, 200, 2, 106), "LA"), True)
    pal = Image.fromarray(content(300, 200, 1, 107)[..., 0] % 200, "L").convert("P")
    pal.putpalette(np.random.RandomState(107).randint(0, 256, 600).tolist())
    save("p_300x200.png", pal, True)
    pal_t = pal.copy()
    pal_t.info["transparency"] = bytes([0, 128] + [255] * 50)
    save("p_trns_300x200.png", pal_t, True, transparency=bytes([0, 128] + [255] * 50))
    save("p_trns1_300x200.png", pal.copy(), True, transparency=5)
    save("bw_1bit_97x61.png", Image.fromarray(content(97, 61, 1, 108)[..., 0] > 128), True)
    save("rgb_trns_64x48.png", Image.fromarray(content(64, 48, 3, 109), "RGB"), True, transparency=(10, 20, 30))
    # 16-bit and low bit depths through the raw writer; PIL's view of them is the reference.
    rng = np.random.RandomState(110)
    g16 = (content(120, 80, 1, 111).astype(np.int64) * 3)  # mostly above 255: PIL saturates
    g16[:10] = rng.randint(0, 300, (10, 120, 1))
    for name, s, d, ct, kw in [
        ("gray16_120x80.png", g16, 16, 0, {}),
        ("rgb16_120x80.png", content(120, 80, 3, 112).astype(np.int64) * 257 + rng.randint(0, 257, (80, 120, 3)), 16, 2, {}),
        ("rgba16_120x80.png", content(120, 80, 4, 113).astype(np.int64) * 256 + 77, 16, 6, {}),
        ("la16_120x80.png", content(120, 80, 2, 114).astype(np.int64) * 256 + 3, 16, 4, {}),
        ("gray2_33x17.png", rng.randint(0, 4, (17, 33, 1)), 2, 0, {}),
        ("gray4_33x17.png", rng.randint(0, 16, (17, 33, 1)), 4, 0, {}),
        ("p4_33x17.png", rng.randint(0, 16, (17, 33, 1)), 4, 3, {"palette": rng.randint(0, 256, 48).tolist()}),
        ("rgb_interlaced_61x43.png", content(61, 43, 3, 115).astype(np.int64), 8, 2, {"interlace": True}),
        ("gray16_interlaced_61x43.png", rng.randint(0, 400, (43, 61, 1)), 16, 0, {"interlace": True}),
    ]:
        write_png(os.path.join(out, name), s, d, ct, **kw)
        files.append((name, True))
    a = content(300, 200, 4, 116)
    save("rgb_lossless.webp", Image.fromarray(a[..., :3], "RGB"), True, lossless=True, method=0)
    save("rgba_lossless.webp", Image.fromarray(a, "RGBA"), True, lossless=True, method=0)
    save("rgb_lossy.webp", Image.fromarray(a[..., :3], "RGB"), True, quality=80)
    save("rgba_lossy.webp", Image.fromarray(a, "RGBA"), True, quality=80)
    save("rgb_lossy_odd_37x23.webp", Image.fromarray(content(37, 23, 3, 117), "RGB"), True, quality=60)
    return files


def make_mode_images(out):
    """Images in every mode OpenCLIP's order treats differently: [(relpath, mode)]."""
    os.makedirs(os.path.join(out, "mode"), exist_ok=True)
    files = []

    def save(name, im, **kw):
        im.save(os.path.join(out, "mode", name), **kw)
        files.append((os.path.join("mode", name), im.mode))

    sizes = [(128, 96), (97, 61), (300, 200), (40, 130), (223, 224), (7, 5), (1000, 50)]
    for i, (w, h) in enumerate(sizes):
        a = content(w, h, 4, seed=200 + i)
        rng = np.random.RandomState(300 + i)
        pal = Image.fromarray(a[..., :3], "RGB").quantize(64 if i % 2 else 256, method=Image.Quantize.MEDIANCUT)
        save(f"p_{w}x{h}.png", pal)
        save(f"bit_{w}x{h}.png", Image.fromarray(a[..., 0] > 128).convert("1"))
        # Transparency: opaque, fully transparent (with colour left behind) and partial areas.
        alpha = a[..., 3].copy()
        alpha[: h // 3] = 0
        alpha[h // 3: h // 2] = 255
        alpha[:, : w // 5] = rng.randint(0, 256, (h, w // 5))
        rgba = np.concatenate([a[..., :3], alpha[..., None]], -1)
        save(f"rgba_{w}x{h}.png", Image.fromarray(rgba, "RGBA"))
        save(f"la_{w}x{h}.png", Image.fromarray(np.stack([a[..., 1], alpha], -1), "LA"))
        save(f"cmyk_{w}x{h}.jpg", Image.fromarray(a, "CMYK"), quality=90)
        save(f"l_{w}x{h}.png", Image.fromarray(a[..., 2], "L"))
        if i < 3:
            save(f"l_{w}x{h}.jpg", Image.fromarray(a[..., 2], "L"), quality=90)
            save(f"rgba_{w}x{h}.webp", Image.fromarray(rgba, "RGBA"), lossless=True, method=0)
            save(f"rgb_{w}x{h}.png", Image.fromarray(a[..., :3], "RGB"))
    # A palette shorter than its indices (PIL shows the missing entries as a gray ramp), tRNS.
    rng = np.random.RandomState(400)
    write_png(os.path.join(out, "mode", "p_short_50x30.png"), rng.randint(0, 256, (30, 50, 1)), 8, 3,
              palette=rng.randint(0, 256, 30).tolist(), trns=bytes([0, 128, 255, 7]))
    files.append((os.path.join("mode", "p_short_50x30.png"), "P"))
    write_png(os.path.join(out, "mode", "p2_45x29.png"), rng.randint(0, 4, (29, 45, 1)), 2, 3,
              palette=rng.randint(0, 256, 12).tolist())
    files.append((os.path.join("mode", "p2_45x29.png"), "P"))
    write_png(os.path.join(out, "mode", "la16_61x43.png"), rng.randint(0, 65536, (43, 61, 2)), 16, 4, interlace=True)
    files.append((os.path.join("mode", "la16_61x43.png"), "RGBA"))  # PIL: (16, 4) -> ("RGBA", "LA;16B")
    write_png(os.path.join(out, "mode", "gray4_61x43.png"), rng.randint(0, 16, (43, 61, 1)), 4, 0, trns=b"\x00\x05")
    files.append((os.path.join("mode", "gray4_61x43.png"), "L"))
    return files


def raw_pixels(im):
    a = np.asarray(im)
    if im.mode == "1":
        a = a.astype(np.uint8) * 255
    return a.astype(np.uint8).tobytes()


def eval_transform_mode(img, mode, interp, size, fill):
    """open_clip.transform.image_transform(is_train=False) on the opened image: the resize,
    crop and pad run in the image's mode and _convert_to_rgb comes last."""
    im = T.InterpolationMode.BILINEAR if interp == "bilinear" else T.InterpolationMode.BICUBIC
    if mode == "shortest":
        img = F.center_crop(F.resize(img, size, im), size)
    elif mode == "squash":
        img = F.resize(img, [size, size], im)
    else:
        w, h = img.size
        ratio = max(h / size, w / size)
        img = F.resize(img, [round(h / ratio), round(w / ratio)], im)
        w, h = img.size
        if size > w or size > h:
            pad = [(size - w) // 2 if size > w else 0, (size - h) // 2 if size > h else 0,
                   (size - w + 1) // 2 if size > w else 0, (size - h + 1) // 2 if size > h else 0]
            img = F.pad(img, pad, fill=fill)
        w, h = img.size
        if (w, h) != (size, size):
            img = F.crop(img, int(round((h - size) / 2.0)), int(round((w - size) / 2.0)), size, size)
    return NORMALIZE(F.to_tensor(img.convert("RGB")))


def gen_convert_tables(out, lines):
    """PIL's own conversions over every (value, alpha) pair, and CMYK over a grid."""
    v, a = np.meshgrid(np.arange(256), np.arange(256))
    v, a = v.astype(np.uint8), a.astype(np.uint8)
    rgba = np.stack([v, 255 - v, v // 2, a], -1)
    la = np.stack([v, a], -1)
    cmyk = np.stack([v, a, 255 - v, (v.astype(int) + a) // 2], -1).astype(np.uint8)
    for name, src_mode, dst_mode, data in [("rgba_rgbA", "RGBA", "RGBa", rgba), ("rgbA_rgba", "RGBa", "RGBA", rgba),
                                           ("la_lA", "LA", "La", la), ("lA_la", "La", "LA", la),
                                           ("cmyk_rgb", "CMYK", "RGB", cmyk)]:
        src, ref = f"conv_{name}_src.raw", f"conv_{name}_ref.raw"
        with open(os.path.join(out, src), "wb") as f:
            f.write(data.tobytes())
        im = Image.frombytes(src_mode, (256, 256), data.tobytes()).convert(dst_mode)
        with open(os.path.join(out, ref), "wb") as f:
            f.write(im.tobytes())  # packed: 2 bytes a pixel for LA/La, 3 for RGB
        lines.append(f"convert {name} {src} {ref}")


def gen_mode(out, lines):
    gen_convert_tables(out, lines)
    for k, (name, mode) in enumerate(make_mode_images(out)):
        img = Image.open(os.path.join(out, name))
        img.load()
        assert img.mode == mode, (name, img.mode, mode)
        ref = f"src_{k}.raw"
        with open(os.path.join(out, ref), "wb") as f:
            f.write(raw_pixels(img))
        lines.append(f"srcdecode {name} {img.mode} {img.size[0]} {img.size[1]} {ref}")
        ref = f"src_{k}.rgb"
        with open(os.path.join(out, ref), "wb") as f:
            f.write(np.asarray(img.convert("RGB")).tobytes())
        lines.append(f"decode {name} {img.size[0]} {img.size[1]} {int(not name.endswith('.jpg'))} {ref}")
        cases = [("shortest", "bicubic", 224, 0), ("shortest", "bicubic", 96, 0)]
        cases.append([("shortest", "bilinear", 224, 0), ("squash", "bicubic", 224, 0),
                      ("longest", "bicubic", 224, 255), ("longest", "bicubic", 224, 3)][k % 4])
        for j, (m, interp, size, fill) in enumerate(cases):
            ref = f"srceval_{k}_{j}.f32"
            with open(os.path.join(out, ref), "wb") as f:
                f.write(to_f32(eval_transform_mode(img, m, interp, size, fill)))
            lines.append(f"srceval {name} {m} {interp} {size} {fill} {ref}")
        for j, (left, top, cw, ch) in enumerate(crop_boxes(*img.size, 2000 + k, 3)):
            ref = f"srccrop_{k}_{j}.rgb"
            c = F.resized_crop(img, top, left, ch, cw, [224, 224], T.InterpolationMode.BICUBIC).convert("RGB")
            with open(os.path.join(out, ref), "wb") as f:
                f.write(np.asarray(c).tobytes())
            lines.append(f"srccrop {name} {left} {top} {cw} {ch} 224 {ref}")


def to_f32(t):
    return t.detach().numpy().astype("<f4").tobytes()


def eval_transform(img, mode, interp, size, fill):
    """open_clip.transform.image_transform(is_train=False), after convert('RGB')."""
    im = T.InterpolationMode.BILINEAR if interp == "bilinear" else T.InterpolationMode.BICUBIC
    if mode == "shortest":
        img = F.center_crop(F.resize(img, size, im), size)
    elif mode == "squash":
        img = F.resize(img, [size, size], im)
    else:  # longest: ResizeKeepRatio(longest=1) + CenterCropOrPad(fill)
        w, h = img.size
        ratio = max(h / size, w / size)
        img = F.resize(img, [round(h / ratio), round(w / ratio)], im)
        w, h = img.size
        if size > w or size > h:
            pad = [(size - w) // 2 if size > w else 0, (size - h) // 2 if size > h else 0,
                   (size - w + 1) // 2 if size > w else 0, (size - h + 1) // 2 if size > h else 0]
            img = F.pad(img, pad, fill=fill)
        w, h = img.size
        if (w, h) != (size, size):
            img = F.crop(img, int(round((h - size) / 2.0)), int(round((w - size) / 2.0)), size, size)
    return NORMALIZE(F.to_tensor(img))


def gen(out):
    warnings.simplefilter("ignore")  # PIL's note about palette transparency given as bytes
    os.makedirs(out, exist_ok=True)
    lines = []
    files = make_images(out)
    extra = os.path.join(out, "extra")
    if os.path.isdir(extra):
        files += [(os.path.join("extra", f), False) for f in sorted(os.listdir(extra))]
    for k, (name, exact) in enumerate(files):
        img = Image.open(os.path.join(out, name)).convert("RGB")
        ref = f"ref_{k}.rgb"
        with open(os.path.join(out, ref), "wb") as f:
            f.write(np.asarray(img).tobytes())
        lines.append(f"decode {name} {img.size[0]} {img.size[1]} {int(exact)} {ref}")
        if name.startswith("extra"):
            continue
        cases = [("shortest", "bicubic", 224, 0)]
        if k % 3 == 0:
            cases.append(("shortest", "bilinear", 224, 0))
        if k % 3 == 1:
            cases.append(("longest", "bicubic", 224, 0 if k % 2 else 255))
        if k % 3 == 2:
            cases.append(("squash", "bicubic", 224, 0))
        if k % 5 == 0:
            cases.append(("shortest", "bicubic", 96, 0))
        for j, (mode, interp, size, fill) in enumerate(cases):
            ref = f"eval_{k}_{j}.f32"
            with open(os.path.join(out, ref), "wb") as f:
                f.write(to_f32(eval_transform(img, mode, interp, size, fill)))
            lines.append(f"eval {name} {mode} {interp} {size} {fill} {ref}")
        # Fixed crop boxes through torchvision's resized_crop (the train path).
        for j, (left, top, cw, ch) in enumerate(crop_boxes(*img.size, 1000 + k, 2)):
            ref = f"crop_{k}_{j}.rgb"
            c = F.resized_crop(img, top, left, ch, cw, [224, 224], T.InterpolationMode.BICUBIC)
            with open(os.path.join(out, ref), "wb") as f:
                f.write(np.asarray(c).tobytes())
            lines.append(f"crop {name} {left} {top} {cw} {ch} 224 {ref}")
    gen_mode(out, lines)
    torch.manual_seed(0)
    for (W, H, s, r, n) in [(640, 480, (0.9, 1.0), (3 / 4, 4 / 3), 4000), (224, 224, (0.9, 1.0), (3 / 4, 4 / 3), 4000),
                            (500, 300, (0.08, 1.0), (3 / 4, 4 / 3), 4000), (300, 1000, (0.5, 1.0), (0.5, 2.0), 4000)]:
        dummy = torch.zeros(1, 1, 1).expand(3, H, W)
        p = np.array([T.RandomResizedCrop.get_params(dummy, list(s), list(r)) for _ in range(n)], np.float64)
        i, j, h, w = p.T
        m = [w.mean(), h.mean(), i.mean(), j.mean()]
        sd = [w.std(), h.std(), i.std(), j.std()]
        lines.append("rrc %d %d %r %r %r %r %d %s" % (W, H, s[0], s[1], r[0], r[1], n,
                                                       " ".join("%.6f" % v for v in m + sd)))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def bench(folder):
    torch.set_num_threads(1)
    tf = T.Compose([T.RandomResizedCrop(224, scale=(0.9, 1.0), interpolation=T.InterpolationMode.BICUBIC),
                    T.ToTensor(), NORMALIZE])
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".jpg"):
            continue
        data = open(os.path.join(folder, name), "rb").read()
        for _ in range(20):
            tf(Image.open(io.BytesIO(data)).convert("RGB"))
        wall = cpu = math.inf
        for _ in range(5):  # best of 5 rounds of 200; CPU time is what one core spends
            n, t0, c0 = 200, time.perf_counter(), time.process_time()
            for _ in range(n):
                tf(Image.open(io.BytesIO(data)).convert("RGB"))
            wall = min(wall, (time.perf_counter() - t0) / n)
            cpu = min(cpu, (time.process_time() - c0) / n)
        print(f"{name}: PIL+torchvision decode+RandomResizedCrop+ToTensor+Normalize "
              f"{wall * 1e3:.3f} ms wall, {cpu * 1e3:.3f} ms CPU per image ({1 / cpu:.0f} images/s/core)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "bench":
        bench(sys.argv[2])
    else:
        sys.exit(__doc__)
