#!/usr/bin/python3
"""torchvision's ColorJitter and Grayscale(3) on PIL images with fixed parameters, for
tests/image/color_jitter_test.cpp:

  color_jitter_ref.py IN.raw W H OUT.raw CASE [CASE ...]

IN.raw is W*H*3 bytes (RGB). Each CASE is "order;b;c;s;h;gray" (order: 4 digits, a
permutation of 0..3; an empty factor is torchvision's None; gray 1 applies Grayscale(3)
after). ColorJitter.forward runs with get_params replaced by the case's values, so its own
ordering and None handling are what is tested. OUT.raw gets the cases' outputs one after another.
"""
import sys

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image


def main():
    src, w, h, out_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    img = Image.fromarray(np.frombuffer(open(src, "rb").read(), np.uint8).reshape(h, w, 3), "RGB")
    out = bytearray()
    for case in sys.argv[5:]:
        order, b, c, s, hue, gray = case.split(";")
        factors = [float(x) if x else None for x in (b, c, s, hue)]
        cj = T.ColorJitter(brightness=0.5, contrast=0.5, saturation=0.5, hue=0.5)
        cj.get_params = lambda *a, f=factors, o=order: (torch.tensor([int(d) for d in o]), *f)
        res = cj(img)
        if gray == "1":
            res = T.Grayscale(num_output_channels=3)(res)
        out += np.asarray(res, dtype=np.uint8).tobytes()
    open(out_path, "wb").write(bytes(out))


if __name__ == "__main__":
    main()
