#!/usr/bin/env python3
"""SentencePiece (unigram) references for src/text/sentencepiece.cpp: Google's `sentencepiece`
and Hugging Face's `tokenizers`, from the .spmref venv (scripts/setup_spm_ref.sh).

  spm_ref.py train DIR    trains a 1800-piece unigram model on generated captions (T5's ids:
                          <pad>=0 </s>=1 <unk>=2, nmt_nfkc normalization) and writes
                          DIR/spiece.model and DIR/tokenizer.json (the latter built as
                          transformers' T5 converter builds flan-t5's: Precompiled charsmap +
                          Replace(" {2,}"), WhitespaceSplit + Metaspace, Unigram, "$A </s>").
  spm_ref.py variants DIR OUTDIR N SEED
                          other tokenizer.json layouts of the model (VARIANTS) and tokenizers'
                          ids for N captions with each, as OUTDIR/<name>.json and .jsonl.
  spm_ref.py golden DIR OUT.jsonl.gz [N] [SEED]
                          for N generated captions (default 4000, seed 1): the raw text, the
                          text after OpenCLIP 2.24's clean='canonicalize', the ids of
                          sentencepiece's encode(raw), of tokenizers' encode(raw) without
                          special tokens, and the 64-id row OpenCLIP's HFTokenizer makes
                          (canonicalize, truncate, "</s>", pad with "</s>"); "hf" and
                          "spm_row" (sentencepiece on the cleaned text) only where they differ;
                          "clean_no_mojibake_fix" where ftfy's mojibake repair changed the text.

The captions are deterministic (random.Random(seed)); the C++ test reads the committed files
and runs this script again only to check they are current (tests/text/sentencepiece_test.cpp).
"""
import gzip
import html
import io
import json
import random
import re
import string
import sys

import ftfy
import sentencepiece as spm
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

CONTEXT = 64

# --- OpenCLIP 2.24.0 src/open_clip/tokenizer.py, verbatim --------------------------------------


def basic_clean(text):
    text = ftfy.fix_text(text)
    text = html.unescape(html.unescape(text))
    return text.strip()


def canonicalize_text(text, *, keep_punctuation_exact_string=None):
    text = text.replace("_", " ")
    if keep_punctuation_exact_string:
        text = keep_punctuation_exact_string.join(
            part.translate(str.maketrans("", "", string.punctuation))
            for part in text.split(keep_punctuation_exact_string))
    else:
        text = text.translate(str.maketrans("", "", string.punctuation))
    text = text.lower()
    text = re.sub(r"\s+", " ", text)
    return text.strip()


def clean_canonicalize(x):
    return canonicalize_text(basic_clean(x))


def clean_canonicalize_no_mojibake_fix(x):
    """The same without ftfy's mojibake repair, which the C++ cleaning does not replicate
    (docs/TOKENIZER.md, ftfy): what it must give on captions that look like mojibake."""
    text = ftfy.fix_text(x, fix_encoding=False)
    return canonicalize_text(html.unescape(html.unescape(text)).strip())


# --- captions ---------------------------------------------------------------------------------

SUBJ = ["a dog", "two cats", "the man", "a young woman", "an old car", "a red bicycle", "three birds",
        "a child", "the chef", "a group of people", "a small boat", "an airplane", "the horse", "a pizza"]
VERB = ["sitting on", "running across", "standing next to", "looking at", "parked near", "flying over",
        "eating", "holding", "jumping over", "lying under", "walking along", "riding"]
OBJ = ["a wooden bench", "the beach", "a busy street", "the kitchen table", "a snowy mountain", "the river",
       "a large building", "green grass", "a plate of food", "the sofa", "a fence", "the ocean"]
ACCENT = ["café", "naïve", "résumé", "Ångström", "Straße", "São Paulo", "Zürich", "crème brûlée", "façade",
          "piñata", "Ελληνικά", "ΟΔΟΣ", "Москва", "İstanbul", "ǅemal", "ﬁsh", "Ｔｏｋｙｏ", "e\u0301te\u0301",
          "n\u0303o", "Å\u0301"]
CJK = ["東京の猫", "一只狗在公园里", "서울의 밤", "ラーメン", "北京", "日本語のテキスト", "漢字", "ｶﾀｶﾅ"]
EMOJI = ["🐶", "🍕🍕", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "☕", "✨ sparkle ✨", "🏳️‍🌈"]
PUNCT = ["!", "?", ".", ",", "...", " - ", "(", ")", "\"", "'", ":", ";", "&amp;", "&lt;tag&gt;", "_", "#1",
         "@home", "$5", "100%", "a/b", "[x]", "{y}", "~", "`", "|", "^", "+", "=", "*", "\\"]
SPACE = [" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2003", " \r\n "]


def caption(rng):
    kind = rng.randrange(10)
    base = f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)}"
    if kind == 0:
        return base.capitalize() + "."
    if kind == 1:
        return f"{base} in {rng.choice(ACCENT)}"
    if kind == 2:
        return f"{rng.choice(CJK)} {base} {rng.choice(CJK)}"
    if kind == 3:
        return f"{base} {rng.choice(EMOJI)}{rng.choice(EMOJI)}"
    if kind == 4:  # punctuation and underscores everywhere (canonicalize removes them)
        words = base.split()
        return "".join(w + rng.choice(PUNCT + [" "] * 4) for w in words)
    if kind == 5:  # odd whitespace, leading and trailing
        words = base.split()
        return rng.choice(SPACE) + "".join(w + rng.choice(SPACE) for w in words)
    if kind == 6:  # long: past 64 tokens
        return " and ".join(f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)}" for _ in range(rng.randint(6, 14)))
    if kind == 7:  # upper case and digits
        return f"{base.upper()} {rng.randint(0, 10**rng.randint(1, 9))} {rng.choice(ACCENT).upper()}"
    if kind == 8:  # random code points from several scripts (unknown pieces, unk fusing)
        pools = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x600, 0x6ff), (0x900, 0x97f),
                 (0x3040, 0x30ff), (0x4e00, 0x4fff), (0xac00, 0xacff), (0x1f300, 0x1f64f), (0x300, 0x36f)]
        out = []
        for _ in range(rng.randint(1, 20)):
            lo, hi = rng.choice(pools)
            c = chr(rng.randint(lo, hi))
            out.append(c if not (0xd800 <= ord(c) < 0xe000) else "x")
        return "".join(out)
    words = [rng.choice(SUBJ + OBJ + ACCENT + CJK + EMOJI) for _ in range(rng.randint(1, 8))]
    return rng.choice(SPACE).join(words)


def captions(n, seed):
    rng = random.Random(seed)
    return [caption(rng) for _ in range(n)]


# --- the models -------------------------------------------------------------------------------


def proto_field(buf, want):
    """The first length-delimited field `want` of a protobuf message (bytes), or b""."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(buf, i)
            if field == want:
                return buf[i:i + n]
            i += n
        else:
            raise ValueError(f"wire type {wire}")
    return b""


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def hf_from_spm(model_bytes):
    """transformers' T5 converter (as flan-t5's tokenizer.json shows it) without transformers."""
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tok = Tokenizer(models.Unigram(vocab, unk_id=sp.unk_id(), byte_fallback=False))
    charsmap = proto_field(proto_field(model_bytes, 3), 2)  # ModelProto.normalizer_spec.precompiled_charsmap
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens([tokenizers.AddedToken(t, normalized=False, special=True)
                            for t in ("<pad>", "</s>", "<unk>")])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", sp.eos_id())])
    return tok


def train(out_dir):
    text = captions(6000, 12345)
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=buf, vocab_size=1800,
                                   model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                                   character_coverage=0.995, num_threads=1, seed_sentencepiece_size=50000,
                                   minloglevel=2)
    model = buf.getvalue()
    with open(f"{out_dir}/spiece.model", "wb") as f:
        f.write(model)
    hf_from_spm(model).save(f"{out_dir}/tokenizer.json")


def golden(model_dir, out, n, seed):
    sp = spm.SentencePieceProcessor(model_file=f"{model_dir}/spiece.model")
    hf = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    row_tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    row_tok.enable_truncation(CONTEXT)
    # SigLIP pads with "</s>" (1): the hub's tokenizer_config pad_token, OpenCLIP 3.x's
    # SigLipTokenizer (pad_token_id = 1), big_vision's tokenize(pad_value=1).
    row_tok.enable_padding(length=CONTEXT, pad_id=1, pad_token="</s>")
    differ = mojibake = 0
    # mtime=0: the same captions give the same bytes (the committed file does not churn).
    with open(out, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8") as f:
        for t in captions(n, seed):
            clean = clean_canonicalize(t)
            a = sp.encode(t)
            b = hf.encode(t, add_special_tokens=False).ids
            differ += a != b
            row = row_tok.encode(clean).ids
            rec = {"text": t, "clean": clean, "spm": a, "row": row}
            no_fix = clean_canonicalize_no_mojibake_fix(t)
            if no_fix != clean:
                rec["clean_no_mojibake_fix"] = no_fix
                mojibake += 1
            if a != b:
                rec["hf"] = b
            spm_ids = sp.encode(clean)[:CONTEXT - 1] + [sp.eos_id()]
            spm_row = spm_ids + [sp.eos_id()] * (CONTEXT - len(spm_ids))
            if spm_row != row:
                rec["spm_row"] = spm_row
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"spm_ref: {n} captions, sentencepiece and tokenizers differ on {differ} raw texts, "
          f"ftfy repairs mojibake in {mojibake}", file=sys.stderr)


# Other tokenizer.json layouts of the same model (transformers versions write different ones),
# to check the normalizers and pre-tokenizers src/text/hf_unigram.cpp supports beyond flan-t5's.
VARIANTS = {
    # no WhitespaceSplit: Metaspace alone splits
    "metaspace_split": lambda j: j.update(pre_tokenizer={
        "type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}),
    # transformers >= 4.40 with legacy=False: strip right, runs of spaces -> "▁", one pre-token
    "legacy_false": lambda j: j.update(
        normalizer={"type": "Sequence", "normalizers": [
            j["normalizer"]["normalizers"][0], {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"}]},
        pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}),
    # Strip both sides, a literal Replace, Prepend, no charsmap, Metaspace prepending nothing
    "strip_prepend": lambda j: j.update(
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"String": "\t"}, "content": " "},
            {"type": "Prepend", "prepend": "▁"}]},
        pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}),
    # byte fallback: the 256 <0xXX> pieces appended
    "byte_fallback": lambda j: (j["model"].update(byte_fallback=True),
                                j["model"]["vocab"].extend([f"<0x{b:02X}>", 0.0] for b in range(256))),
}


def variants(model_dir, out_dir, n, seed):
    base = json.load(open(f"{model_dir}/tokenizer.json", encoding="utf-8"))
    caps = captions(n, seed)
    for name, edit in VARIANTS.items():
        j = json.loads(json.dumps(base))
        edit(j)
        path = f"{out_dir}/{name}.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        tok = Tokenizer.from_file(path)
        with open(f"{out_dir}/{name}.jsonl", "w", encoding="utf-8") as f:
            for t in caps:
                f.write(json.dumps({"text": t, "ids": tok.encode(t, add_special_tokens=False).ids}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2])
    elif sys.argv[1] == "golden":
        golden(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 4000,
               int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    elif sys.argv[1] == "variants":
        variants(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(f"usage: {sys.argv[0]} train DIR | golden DIR OUT.jsonl.gz [N] [SEED] | variants DIR OUTDIR N SEED")
