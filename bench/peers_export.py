"""Exports OpenCLIP's ViT-B-32 image encoder (random init: the speed does not depend on the
weights) to ONNX once, for the OpenVINO / ONNX Runtime rows of bench/compare_peers.sh.
Run with a Python that has torch and open_clip (.pyref: open_clip 2.24, whose ViT-B-32 is
the same module graph as 3.3's):  python bench/peers_export.py OUT.onnx [MODEL]"""
import sys

import open_clip
import torch


def main():
    out = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else "ViT-B-32"
    model = open_clip.create_model(name, pretrained=None).eval()
    size = model.visual.image_size
    size = size[0] if isinstance(size, (tuple, list)) else size

    class Image(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.encode_image(x)

    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        torch.onnx.export(Image(model), (x,), out, input_names=["pixels"], output_names=["features"],
                          dynamic_axes={"pixels": {0: "batch"}, "features": {0: "batch"}}, opset_version=17)
    print(out)


if __name__ == "__main__":
    main()
