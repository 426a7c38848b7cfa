"""The OpenCLIP-shaped entry points (create_model_and_transforms, get_tokenizer) over the extension."""
from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core


def _as_rgb_array(image: Any) -> Union[np.ndarray, str]:
    """A path stays a path (the library decodes it as OpenCLIP's Image.open would); a PIL image
    becomes its RGB uint8 array; a uint8 (H, W, 3) array is returned as it is."""
    if isinstance(image, (str, os.PathLike)):
        return os.fspath(image)
    if hasattr(image, "convert") and hasattr(image, "mode"):  # a PIL image, without importing PIL
        return np.asarray(image.convert("RGB"), dtype=np.uint8)
    return image


class CLIP:
    """A loaded model: encode_image / encode_text as OpenCLIP's CLIP, on numpy arrays.

    normalize defaults to False, as in OpenCLIP; the outputs are float32 [n, embed_dim]."""

    def __init__(self, core: "_core.Model", name: str):
        self._core = core
        self.name = name

    @property
    def embed_dim(self) -> int:
        return self._core.embed_dim

    @property
    def image_size(self) -> int:
        return self._core.image_size

    @property
    def context_length(self) -> int:
        return self._core.context_length

    def encode_image(self, images: Any, normalize: bool = False) -> np.ndarray:
        """Images: a PIL image, a path, a uint8 (H, W, 3) RGB array, a uint8 (n, H, W, 3) batch,
        or a list of those (mixed lists are fine). Returns float32 [n, embed_dim]."""
        if isinstance(images, np.ndarray) and images.ndim == 4:  # a batch (n, H, W, 3)
            images = list(images)
        one = isinstance(images, (str, os.PathLike, np.ndarray)) or hasattr(images, "convert")
        items = [_as_rgb_array(i) for i in ([images] if one else list(images))]
        if not items:
            raise ValueError("encode_image: no images")
        if all(isinstance(i, str) for i in items) or not any(isinstance(i, str) for i in items):
            return self._core.encode_image(items, normalize)
        # Paths and arrays mixed: each kind in one call, rows put back in order.
        out = np.empty((len(items), self.embed_dim), np.float32)
        for want_path in (True, False):
            idx = [k for k, i in enumerate(items) if isinstance(i, str) == want_path]
            if idx:
                out[idx] = self._core.encode_image([items[k] for k in idx], normalize)
        return out

    def encode_text(self, text: Any, normalize: bool = False) -> np.ndarray:
        """Texts: token ids as get_tokenizer gives them (int [n, context_length]), a list of
        str, or one str. Returns float32 [n, embed_dim]."""
        if isinstance(text, str):
            return self._core.encode_text([text], normalize)
        if isinstance(text, np.ndarray) or (hasattr(text, "numpy") and hasattr(text, "dtype")):
            ids = np.asarray(text.numpy() if hasattr(text, "numpy") else text)
            if ids.ndim == 1:
                ids = ids[None, :]
            return self._core.encode_tokens(ids, normalize)
        return self._core.encode_text(list(text), normalize)

    def __repr__(self) -> str:
        return f"openclip_cpp.CLIP({self.name!r}, embed_dim={self.embed_dim}, image_size={self.image_size})"


class Tokenizer:
    """get_tokenizer(name)(texts) -> int64 [n, context_length], as OpenCLIP's tokenizer (with
    the model's tokenizer: CLIP's BPE, WordPiece or SentencePiece, from its config)."""

    def __init__(self, model_name: str, context_length: Optional[int] = None):
        self._core = _core.Tokenizer(model_name)
        self.context_length = context_length or self._core.context_length

    def __call__(self, texts: Union[str, Sequence[str]], context_length: Optional[int] = None) -> np.ndarray:
        if isinstance(texts, str):
            texts = [texts]
        return self._core(list(texts), context_length or self.context_length)

    def decode(self, ids: Sequence[int]) -> str:
        return self._core.decode([int(i) for i in ids])


def _preprocess(image: Any) -> Union[np.ndarray, str]:
    """The model applies OpenCLIP's eval transform itself: this returns what encode_image
    takes (a PIL image's RGB uint8 array; paths and arrays unchanged)."""
    return _as_rgb_array(image)


def create_model_and_transforms(model_name: str, pretrained: Optional[str] = None, precision: str = "fp32",
                                device: str = "cpu", batch_size: int = 32, int8_scales: Optional[str] = None,
                                **unsupported: Any) -> Tuple[CLIP, Callable[[Any], Any], Callable[[Any], Any]]:
    """(model, preprocess_train, preprocess_val) as OpenCLIP returns them.

    model_name: a built-in config ("ViT-B-32"), a config JSON path or a Hugging Face hub
    folder; pretrained: a weights file (.pt/.bin/.safetensors) or a tag whose file is on
    disk (None: the hub folder's weights, else random init). precision: "fp32", "amp_bf16",
    "bf16" or "int8" (ViT towers; `openclip info` names the int8 GEMM path); int8_scales: static
    activation scales from `openclip quantize` (None: the file beside the weights if there is
    one, else scales per row on each call); device: "cpu", "ref" or "cuda" (a CUDA build). OpenCLIP's other keyword
    arguments (force_*, jit, cache_dir, ...) are refused with a TypeError naming them."""
    if unsupported:
        raise TypeError("create_model_and_transforms: not supported by openclip_cpp: " + ", ".join(sorted(unsupported)))
    core = _core.create_model(model_name, pretrained or "", precision, batch_size, device, int8_scales or "")
    return CLIP(core, model_name), _preprocess, _preprocess


def get_tokenizer(model_name: str, context_length: Optional[int] = None) -> Tokenizer:
    """The tokenizer of a model config, as OpenCLIP's get_tokenizer(model_name)."""
    return Tokenizer(model_name, context_length)


def list_models() -> List[str]:
    """The built-in model configs (OpenCLIP's list_models())."""
    return list(_core.list_models())
