#!/usr/bin/env python3
"""Gemma-style BPE references for the SigLIP2 tokenizer (src/text/hf_bpe.cpp): Hugging Face's
`tokenizers` from the .spmref venv (scripts/setup_spm_ref.sh). The real Gemma tokenizer.json
(256,000 pieces) is not downloadable here, so a small BPE is trained in its layout:

  normalizer Replace(" " -> "▁"), no pre-tokenizer, BPE with byte_fallback and fuse_unk
  (unk_token "<unk>"), the 256 "<0x00>".."<0xFF>" pieces in the vocabulary (ids 4..259 after
  <pad>=0 <eos>=1 <bos>=2 <unk>=3), post_processor TemplateProcessing "<bos> $A", and a
  tokenizer_config.json (tokenizer_class GemmaTokenizer, add_bos_token true, add_eos_token
  true): transformers' GemmaTokenizerFast rewrites the post-processor from those flags
  (update_post_processor), emulated here with tokenizers' TemplateProcessing.

  gemma_bpe_ref.py train DIR    trains the model on spm_ref.py's captions with a small alphabet
                                (so that many characters fall back to bytes) and writes
                                DIR/tokenizer.json and DIR/tokenizer_config.json.
  gemma_bpe_ref.py golden DIR OUT.jsonl.gz [N] [SEED]
                                for N captions (default 3000, seed 7) and the EXTRA strings: the
                                raw text, tokenizers' encode(raw) ids without special tokens, and
                                the 64-id row OpenCLIP 3.3's HFTokenizer makes (clean
                                "canonicalize", <bos> ids <eos>, truncated to 64, padded with
                                <pad>).
"""
import gzip
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spm_ref import CONTEXT, captions, clean_canonicalize  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, processors, trainers  # noqa: E402

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
BYTES = [f"<0x{b:02X}>" for b in range(256)]

# Strings the captions do not cover: emoji and unknown scripts (byte fallback), whitespace runs,
# the added tokens and byte-piece spellings in the text, long texts (truncation), empty ones.
EXTRA = ["", " ", "   ", "a  b   c", "\ttab\nnewline\r\n", " leading", "trailing ", "🐶🐱 dog and cat 🐕",
         "👨‍👩‍👧 family", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters", "עברית", "ไทย", "ᚠᛇᚻ runes", "e\u0301 combining",
         "<bos> literal", "x<eos>y", "<0x41> byte piece text", "<unk><unk>", "a" * 300, "dog " * 100,
         "the " * 40 + "🐶" * 40, "\u00a0nbsp\u3000ideographic", "日本語のテキスト " * 20]


def train(out_dir):
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIALS, limit_alphabet=120,
                                  show_progress=False)
    tok.train_from_iterator(captions(6000, 4321), trainer)
    j = json.loads(tok.to_str())
    # Gemma's vocabulary order: the special pieces, the byte pieces, then the learned ones.
    learned = [p for p, _ in sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1]) if p not in SPECIALS]
    order = SPECIALS + BYTES + [p for p in learned if p not in BYTES]
    j["model"]["vocab"] = {p: i for i, p in enumerate(order)}
    j["added_tokens"] = [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, p in enumerate(SPECIALS)]
    j["post_processor"] = json.loads(processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", 2)]).__getstate__())
    with open(f"{out_dir}/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)
    with open(f"{out_dir}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": True,
                   "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}, f,
                  indent=1)


def row_tokenizer(model_dir):
    """GemmaTokenizerFast as OpenCLIP's HFTokenizer calls it: the post-processor from
    tokenizer_config.json's flags, truncation and padding to CONTEXT with the pad token."""
    cfg = json.load(open(f"{model_dir}/tokenizer_config.json", encoding="utf-8"))
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    single = (["<bos>"] if cfg.get("add_bos_token", True) else []) + ["$A"] + \
        (["<eos>"] if cfg.get("add_eos_token", False) else [])
    tok.post_processor = processors.TemplateProcessing(
        single=" ".join(single), special_tokens=[("<bos>", tok.token_to_id("<bos>")), ("<eos>", tok.token_to_id("<eos>"))])
    tok.enable_truncation(CONTEXT)
    tok.enable_padding(length=CONTEXT, pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    return tok


def golden(model_dir, out, n, seed):
    raw_tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    row_tok = row_tokenizer(model_dir)
    fallback = 0
    with open(out, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8") as f:
        for t in EXTRA + captions(n, seed):
            ids = raw_tok.encode(t, add_special_tokens=False).ids
            fallback += any(4 <= i < 260 for i in ids)
            rec = {"text": t, "ids": ids, "row": row_tok.encode(clean_canonicalize(t)).ids}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"gemma_bpe_ref: {n + len(EXTRA)} texts, {fallback} with byte-fallback pieces", file=sys.stderr)


def main():
    cmd = sys.argv[1]
    if cmd == "train":
        train(sys.argv[2])
    elif cmd == "golden":
        n = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
        seed = int(sys.argv[5]) if len(sys.argv) > 5 else 7
        golden(sys.argv[2], sys.argv[3], n, seed)
    else:
        sys.exit(f"gemma_bpe_ref.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
