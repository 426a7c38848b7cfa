#!/usr/bin/env python3
"""The hub repository and the reference embeddings of tests/cli/hub_source_test.cpp, made with
OpenCLIP itself (.pyref: OpenCLIP 2.24, huggingface_hub).

  tiny_repo.py make DIR        DIR/repo: open_clip_config.json (save_config_for_hf),
                               open_clip_pytorch_model.bin and open_clip_model.safetensors of a
                               tiny ViT (seed 0); DIR/images/*.png
  tiny_repo.py embed DIR OUT   create_model_and_transforms('hf-hub:test/tiny') through
                               HF_ENDPOINT / HF_HUB_CACHE (as the environment sets them), the
                               images' normalized embeddings -> OUT (.npy)
  tiny_repo.py embed-safetensors DIR OUT   the same from open_clip_config.json and
                               open_clip_model.safetensors that huggingface_hub.hf_hub_download
                               finds in HF_HUB_CACHE (the files a 3.x cache holds; 2.24's
                               hf-hub: loader reads the .bin only)
  tiny_repo.py cos A.npy B.npy prints the smallest cosine of matching rows
"""
import os
import sys

import numpy as np
import torch

import open_clip

CFG = {"embed_dim": 32,
       "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "head_width": 32, "patch_size": 8},
       "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 48, "heads": 2, "layers": 2}}


def make(d):
    from PIL import Image
    from open_clip.push_to_hf_hub import save_config_for_hf
    import safetensors.torch
    torch.manual_seed(0)
    model = open_clip.CLIP(**CFG)
    model.visual.image_mean, model.visual.image_std = open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD
    os.makedirs(f"{d}/repo", exist_ok=True)
    sd = model.state_dict()
    torch.save(sd, f"{d}/repo/open_clip_pytorch_model.bin")
    safetensors.torch.save_file({k: v.contiguous() for k, v in sd.items()}, f"{d}/repo/open_clip_model.safetensors")
    from pathlib import Path
    save_config_for_hf(model, Path(f"{d}/repo/open_clip_config.json"), model_config=CFG)
    os.makedirs(f"{d}/images", exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (40 + 7 * i, 50, 3), dtype=np.uint8)).save(f"{d}/images/{i}.png")


def embed(d, out, safetensors_file=False):
    from PIL import Image
    if safetensors_file:
        import json
        from huggingface_hub import hf_hub_download
        cfg = json.load(open(hf_hub_download("test/tiny", "open_clip_config.json")))
        weights = hf_hub_download("test/tiny", "open_clip_model.safetensors")
        open_clip.factory._MODEL_CONFIGS["tiny-from-cache"] = cfg["model_cfg"]
        import safetensors.torch  # 2.24's load_checkpoint reads torch files only
        model, _, preprocess = open_clip.create_model_and_transforms("tiny-from-cache")
        model.load_state_dict(safetensors.torch.load_file(weights))
    else:
        model, _, preprocess = open_clip.create_model_and_transforms("hf-hub:test/tiny")
    model.eval()
    files = sorted(os.listdir(f"{d}/images"))
    x = torch.stack([preprocess(Image.open(f"{d}/images/{f}")) for f in files])
    with torch.no_grad():
        e = model.encode_image(x, normalize=True)
    np.save(out, e.numpy().astype(np.float32))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "cos":
        a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
        assert a.shape == b.shape, (a.shape, b.shape)
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        print(f"min_cosine {cos.min():.8f}")
    else:
        embed(sys.argv[2], sys.argv[3], safetensors_file=sys.argv[1] == "embed-safetensors")
