"""Exports one OpenCLIP encoder (random init: the speed does not depend on the weights) to ONNX
once, for the OpenVINO / ONNX Runtime rows of bench/compare_peers.sh.
  python bench/peers_export.py OUT.onnx MODEL image|text
image: encode_image, input "pixels" float32 [batch, 3, S, S]; text: encode_text, input "tokens"
int64 [batch, context_length] (OpenCLIP's causal mask and end-token pooling in the graph); the
batch axis is dynamic, opset 17.
Run with a Python that has torch and open_clip (.pyref: open_clip 2.24 on torch 1.13, whose
ViT-B-32, ViT-B-16 and RN50 are the same module graphs as 3.3's; 3.3 needs torch 2, which PyPI
offers here only with its CUDA wheels)."""
import sys

import open_clip
import torch


class Encoder(torch.nn.Module):
    def __init__(self, m, tower):
        super().__init__()
        self.m, self.tower = m, tower

    def forward(self, x):
        return self.m.encode_image(x) if self.tower == "image" else self.m.encode_text(x)


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("image", "text"):
        raise SystemExit("usage: peers_export.py OUT.onnx MODEL image|text")
    out, name, tower = sys.argv[1:]
    model = open_clip.create_model(name, pretrained=None).eval()
    # OpenCLIP zero-initialises each ResNet block's last BatchNorm scale: folded into its conv at
    # export, every such conv would have zero weights, which torch.onnx stores once behind
    # Identity nodes (ONNX Runtime's quantize_dynamic refuses those) and an engine might skip.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            torch.nn.init.ones_(m.weight)
    if tower == "image":
        size = model.visual.image_size
        size = size[0] if isinstance(size, (tuple, list)) else size
        x, inp = torch.randn(2, 3, size, size), "pixels"
    else:
        ctx = getattr(model, "context_length", 77)
        x, inp = torch.zeros(2, ctx, dtype=torch.long), "tokens"  # start, 4 words, end, padding
        x[:, 0], x[:, 1:5], x[:, 5] = 49406, torch.randint(1, 49406, (2, 4)), 49407
    with torch.no_grad():
        torch.onnx.export(Encoder(model, tower), (x,), out, input_names=[inp], output_names=["features"],
                          dynamic_axes={inp: {0: "batch"}, "features": {0: "batch"}}, opset_version=17)
    print(out)


if __name__ == "__main__":
    main()
