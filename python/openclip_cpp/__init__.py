"""openclip-cpp: OpenCLIP models in native C++, with OpenCLIP's Python API where it names the same thing.

    import openclip_cpp
    model, _, preprocess = openclip_cpp.create_model_and_transforms("ViT-B-32", pretrained="ViT-B-32.safetensors")
    tokenizer = openclip_cpp.get_tokenizer("ViT-B-32")
    image_features = model.encode_image([preprocess(Image.open("cat.jpg"))], normalize=True)
    text_features = model.encode_text(tokenizer(["a cat", "a dog"]), normalize=True)

Differences from OpenCLIP: there is no torch. Inputs and outputs are numpy arrays (float32
embeddings, int64 token ids); the model runs OpenCLIP's eval transform itself, so
`preprocess` only turns a PIL image, a path or an array into the uint8 RGB (height, width, 3)
array the model takes (`encode_image` also takes PIL images, paths and arrays directly).
`create_model` (the older entry point of this package) returns the extension's Model, whose
`normalize` defaults to True; the model of `create_model_and_transforms` follows OpenCLIP
(normalize=False by default).
"""
import os as _os

if not _os.environ.get("OPENCLIP_DATA_DIR"):
    # The BPE vocabulary installed with the wheel (data/), found before the build tree's.
    _data = _os.path.join(_os.path.dirname(__file__), "data")
    if _os.path.isdir(_data):
        _os.environ["OPENCLIP_DATA_DIR"] = _data

from . import _core  # noqa: E402
from ._core import Model, __version__, create_model, tokenize, train  # noqa: E402,F401
from ._api import CLIP, Tokenizer, create_model_and_transforms, get_tokenizer, list_models  # noqa: E402,F401

__all__ = ["CLIP", "Model", "Tokenizer", "create_model", "create_model_and_transforms", "get_tokenizer",
           "list_models", "tokenize", "train", "__version__"]
