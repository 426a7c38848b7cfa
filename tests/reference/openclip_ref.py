#!/usr/bin/env python3
"""OpenCLIP 2.24.0 itself as the reference (run with .pyref/bin/python, made by
scripts/setup_pyref.sh; `argsort` needs only torch):

  openclip_ref.py argsort ROWS.txt            torch.argsort(row, descending=True) per line
  openclip_ref.py metrics S IMG.txt TXT.txt [IMG2.txt TXT2.txt ...]
                                              training.train.get_clip_metrics(img, txt, S): one
                                              JSON line per pair (one process: open_clip loads once)
  openclip_ref.py lock-image CONFIG.json N...  per N a line "== N", then the names of the
                                              parameters left trainable by
                                              CLIP.lock_image_tower(unlocked_groups=N), one a line
  openclip_ref.py forward CONFIG.json OUTDIR   OpenCLIP's model at random init: OUTDIR/w.pt (its
                                              state_dict), images.f32 [2,3,S,S], tokens.i32 [2,L],
                                              image.f32 / text.f32 (encode_*, not normalized)
  openclip_ref.py tokenize FILE                open_clip.tokenize (its SimpleTokenizer with the real
                                              ftfy) of each line: one line of ids per input line
  openclip_ref.py transform OUT.f32 SIZE MODE INTERP IMG...
                                              open_clip.transform.image_transform(SIZE, False,
                                              resize_mode=MODE, interpolation=INTERP) of each
                                              Image.open(IMG).convert("RGB"), float32 CHW in a row

Text files hold one row of floats per line (written with 9 significant digits, so float32
values come back exactly).
"""
import json
import sys

import numpy as np
import torch


def rows(path):
    return [torch.tensor([float(x) for x in line.split()], dtype=torch.float32)
            for line in open(path).read().split("\n") if line.strip()]


def create_model(config_path):
    """OpenCLIP's CLIP from a model config file (its name: the file's stem), random init."""
    import os
    import open_clip
    open_clip.add_model_config(config_path)
    return open_clip.create_model(os.path.splitext(os.path.basename(config_path))[0])


def main():
    cmd = sys.argv[1]
    if cmd == "argsort":
        for r in rows(sys.argv[2]):
            print(" ".join(str(i) for i in torch.argsort(r, descending=True).tolist()))
    elif cmd == "metrics":
        from training.train import get_clip_metrics
        scale = torch.tensor(float(sys.argv[2]), dtype=torch.float32)
        for a, b in zip(sys.argv[3::2], sys.argv[4::2]):
            m = get_clip_metrics(torch.stack(rows(a)), torch.stack(rows(b)), scale)
            print(json.dumps({k: float(v) for k, v in m.items()}))
    elif cmd == "lock-image":
        for n in sys.argv[3:]:
            model = create_model(sys.argv[2])
            model.lock_image_tower(unlocked_groups=int(n))
            print(f"== {n}")
            for name, p in model.named_parameters():
                if p.requires_grad:
                    print(name)
    elif cmd == "tokenize":
        import open_clip
        lines = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
        for row in open_clip.tokenize(lines).tolist():
            print(" ".join(str(i) for i in row))
    elif cmd == "transform":
        from open_clip.transform import image_transform
        from PIL import Image
        size, mode, interp = int(sys.argv[3]), sys.argv[4], sys.argv[5]
        tf = image_transform(size, False, resize_mode=mode, interpolation=interp)
        with open(sys.argv[2], "wb") as f:
            for path in sys.argv[6:]:
                f.write(tf(Image.open(path).convert("RGB")).numpy().astype(np.float32).tobytes())
    elif cmd == "forward":
        import os
        torch.manual_seed(0)
        model = create_model(sys.argv[2]).eval()
        out = sys.argv[3]
        torch.save(model.state_dict(), os.path.join(out, "w.pt"))
        S, L = model.visual.image_size[0], model.context_length
        vocab = model.vocab_size
        images = torch.randn(2, 3, S, S)
        tokens = torch.randint(1, vocab - 1, (2, L), dtype=torch.int64)
        tokens[0, L // 2] = vocab - 1  # an end token: argmax pooling takes its position
        tokens[0, L // 2 + 1:] = 0
        tokens[1, -1] = vocab - 1
        with torch.no_grad():
            img, txt = model.encode_image(images), model.encode_text(tokens)
        images.numpy().astype(np.float32).tofile(os.path.join(out, "images.f32"))
        tokens.numpy().astype(np.int32).tofile(os.path.join(out, "tokens.i32"))
        img.numpy().astype(np.float32).tofile(os.path.join(out, "image.f32"))
        txt.numpy().astype(np.float32).tofile(os.path.join(out, "text.f32"))
    else:
        sys.exit(f"openclip_ref.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
