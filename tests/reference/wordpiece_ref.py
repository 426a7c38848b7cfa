#!/usr/bin/python3
"""Independent Python reference of OpenCLIP 2.24's HFTokenizer("bert-base-uncased",
strip_sep_token=...) -- the tokenizer of the -CLIPA model configs -- used by tests/text to check
src/text/wordpiece.cpp.

Debian has no `transformers`/`tokenizers`, so the pipeline is transcribed in plain Python 3 +
unicodedata from their sources, following the Rust BertTokenizerFast that
AutoTokenizer.from_pretrained("bert-base-uncased") returns (not the slow Python BertTokenizer;
the differences are listed in docs/TOKENIZER.md):

  OpenCLIP  clean="whitespace": ftfy.fix_text, html.unescape twice, strip, regex \\s+ -> " ",
            strip (no lower()); ftfy as tokenizer_ref.py re-implements it.
  added     [PAD] [UNK] [CLS] [SEP] [MASK] matched verbatim (normalized=false) and kept whole.
  tokens
  BertNormalizer (normalizers/bert.rs): drop NUL, U+FFFD and is_control (Cc, Cf, Co -- not Cn --
            except \\t \\n \\r); is_whitespace -> " "; spaces around CJK ideographs; NFD and drop
            Mn; lower-case each character on its own (char::to_lowercase: no final sigma).
  BertPreTokenizer: split on whitespace (removed), then every punctuation char (ASCII
            punctuation or P*) alone.
  WordPiece: > 100 chars -> [UNK]; greedy longest match, "##" continuations; no match -> [UNK].
  post      [CLS] ids[:max_length-2] [SEP], padded with [PAD]; strip_sep_token: [SEP] ids -> 0.

Commands:
  vocab  --out F                                     the test vocabulary (vocab.txt format)
  corpus --vocab V --out F [--count N] [--seed S]    test texts + expected words/ids (JSON lines)
"""
import argparse
import html
import json
import random
import string
import sys
import unicodedata

import regex

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import tokenizer_ref as ref  # noqa: E402  (ftfy re-implementation and caption pools)

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_CHARS = 100

# PropList.txt White_Space (what Rust's char::is_whitespace tests).
WHITE_SPACE = {chr(c) for c in list(range(0x9, 0xE)) + [0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
                                                          0x205F, 0x3000] + list(range(0x2000, 0x200B))}


def clean_whitespace(text):
    """OpenCLIP tokenizer.py _clean_whitespace = whitespace_clean(basic_clean(x))."""
    text = ref.ftfy_fix_text(text)
    text = html.unescape(html.unescape(text))
    text = text.strip()
    text = regex.sub(r"\s+", " ", text)
    return text.strip()


def is_whitespace(c):
    return c in "\t\n\r" or c in WHITE_SPACE


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf", "Co")


def is_chinese(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_punc(c):
    return (ord(c) < 128 and c in string.punctuation) or unicodedata.category(c).startswith("P")


def normalize(s):
    s = "".join(" " if is_whitespace(c) else c for c in s
                if not (ord(c) == 0 or ord(c) == 0xFFFD or is_control(c)))
    s = "".join(" %s " % c if is_chinese(ord(c)) else c for c in s)
    s = "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
    return "".join(c.lower() for c in s)


def pre_tokenize(s):
    words, cur = [], ""
    for c in s:
        if is_whitespace(c):
            if cur:
                words.append(cur)
            cur = ""
        elif is_punc(c):
            if cur:
                words.append(cur)
            words.append(c)
            cur = ""
        else:
            cur += c
    if cur:
        words.append(cur)
    return words


def wordpiece(word, vocab):
    if len(word) > MAX_CHARS:
        return [vocab["[UNK]"]]
    out, start = [], 0
    while start < len(word):
        end, cur = len(word), None
        while start < end:
            sub = ("##" if start > 0 else "") + word[start:end]
            if sub in vocab:
                cur = vocab[sub]
                break
            end -= 1
        if cur is None:
            return [vocab["[UNK]"]]
        out.append(cur)
        start = end
    return out


def split_special(text):
    """Leftmost matches of the special tokens, the rest in between (may be empty)."""
    parts = regex.split("(" + "|".join(regex.escape(t) for t in SPECIAL) + ")", text)
    return [(p, p in SPECIAL) for p in parts]


def encode(clean, vocab):
    ids = []
    for part, special in split_special(clean):
        if special:
            if part in vocab:
                ids.append(vocab[part])
            continue
        for w in pre_tokenize(normalize(part)):
            ids.extend(wordpiece(w, vocab))
    return ids


def row(ids, vocab, max_length, strip_sep):
    r = [vocab["[CLS]"]] + ids[:max_length - 2] + [vocab["[SEP]"]]
    r += [vocab["[PAD]"]] * (max_length - len(r))
    if strip_sep:
        r = [0 if x == vocab["[SEP]"] else x for x in r]
    return r


def load_vocab(path):
    vocab = {}
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # as Rust's lines(): no empty entry after the last newline
    for i, line in enumerate(lines):
        vocab[line.rstrip()] = i
    return vocab


# ---------------------------------------------------------------------------------------------
# The test vocabulary: BERT's layout ([PAD] 0, [unused*], [UNK] 100, [CLS] 101, [SEP] 102,
# [MASK] 103), ASCII characters and their "##" forms, words and pieces from the corpus pools,
# some non-Latin characters; many characters are left out on purpose so that [UNK] happens.

WORDS = ["a", "an", "the", "of", "photo", "dog", "cat", "on", "in", "at", "with", "and", "is", "un",
         "##aff", "##able", "unaff", "##s", "##ing", "##ed", "##er", "##est", "##ly", "play", "##ground",
         "cafe", "creme", "brulee", "naive", "resume", "zurich", "sao", "paulo", "ecole", "facade",
         "istanbul", "strasse", "finance", "floor", "full", "width", "hello", "world", "don", "t", "it",
         "s", "##n", "##t", "mask", "sep", "cls", "unk", "pad", "unused", "##0", "##1", "x", "ab", "##ab",
         "abc", "##c", "ha", "##ha", "lol", "na", "##na", "the", "##the", "ss", "##ss", "tench", "diagram",
         "amp", "lt", "gt", "quot", "nbsp", "ο", "##δ", "##ο", "##σ", "##ς", "οδος"]
OTHER_CHARS = "中文日本语人猫桌子上東京雪赤花北烤鸭二杯漢字一只坐在ᄀᄂᄃ한강아지ßσςοδæøłđħıŋðþ" \
              "αβγδεζηθικλμνξπρτυφχψωабвгдежзийклмнопрстуфхцчшщъыьэюяあいうえおかきくけこカタナラメン" \
              "“”‘’«»—–…¿¡、。・「」€£¥©®™°±×÷😂🐶❤"


def make_vocab():
    toks = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(toks)

    def add(t):
        if t not in seen:
            seen.add(t)
            toks.append(t)

    for c in string.printable[:94]:  # digits, letters, punctuation
        add(c)
    for c in string.ascii_lowercase + string.digits:
        add("##" + c)
    for w in WORDS + ref.NOUNS + ref.ADJS + [w for v in ref.VERBS for w in v.split()] + \
            [w for p in ref.PLACES for w in p.split()]:
        add(w.lower())
    for c in OTHER_CHARS:
        add(c)
        if ord(c) % 3:  # only some continuation forms
            add("##" + c)
    return toks


# ---------------------------------------------------------------------------------------------
# The corpus: OpenCLIP-like captions plus what BERT treats specially.

BERT_PIECES = ["[SEP]", "[MASK]", "[mask]", "[CLS]x", "[[SEP]]", "[UNK", "[PAD][PAD]", "x[SEP]y", "[unused5]",
               "[ SEP ]", "ΟΔΟΣ", "ὈΔΥΣΣΕΎΣ", "İ", "ß", "ẞ", "\u212a", "\u212b", "Å", "ﬁ", "中文", "日本語",
               "\U00020000\U0002B820\U0002B920", "\uf900\ufa0e", "한국어", "e\u0301", "\u0301", "a\u0300\u0316",
               "\ufe0f", "🐶\ufe0f", "👍🏽", "\u200b", "\u200d", "\u00ad", "\ue000", "\U000F0000", "\u0378",
               "\ufffd", "\x00", "\x7f", "\u2028", "\u2029", "\u202f", "\u3000", "\u180e", "\u061c",
               "¿qué?", "«guillemets»", "—", "…", "$100", "a_b", "C++", "e-mail", "U.S.A.", "1,000.5",
               "un" + "aff" * 3 + "able", "unaffable", "playground", "playgrounds", "xyzzy", "é" * 101,
               "e\u0301" * 60, "a" * 100, "a" * 101, "ab" * 50, "ab" * 51, "\u0915\u094d\u0937",
               "\u0e01\u0e34", "Ελληνικά", "Привет", "\U0001d400\U0001d41a", "²³½", "①", "ǅ", "ŉ"]


def gen_corpus(count, seed):
    rng = random.Random(seed)
    fixed = ["a photo of a dog", "", " ", "Hello, World!", "[SEP]", "[CLS] [SEP] [PAD]", "ΟΔΟΣ",
             "unaffable", "a " * 40, "é" * 101, "&amp;lt;", "\u0301\u0301"]
    out = list(fixed)
    pools = [BERT_PIECES, BERT_PIECES, ref.WORDS_ACCENTED, ref.CJK, ref.EMOJI, ref.PUNCT, ref.COMBINING,
             ref.ENTITIES, ref.FTFY_CHARS, ref.CONTRACTIONS, ref.SPECIALS]
    while len(out) < count:
        kind = rng.random()
        if kind < 0.25:
            s = ref._coco(rng)
        elif kind < 0.75:
            parts = []
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.25:
                    parts.append(ref._coco(rng))
                elif r < 0.9:
                    parts.append(rng.choice(rng.choice(pools)))
                else:
                    parts.append(rng.choice(ref.WS))
                parts.append(rng.choice(ref.WS) if rng.random() < 0.6 else "")
            s = "".join(parts)
        elif kind < 0.83:
            s = ref._rand_unicode(rng, rng.randint(1, 40))
        elif kind < 0.88:
            s = "".join(chr(rng.randrange(0, 128)) for _ in range(rng.randint(1, 60)))
        elif kind < 0.93:
            s = " ".join(ref._coco(rng) for _ in range(rng.randint(3, 8)))  # past 32 tokens
        else:
            s = ref._coco(rng) + " " + ref._long_word(rng)
        if rng.random() < 0.1:
            s = s.swapcase()
        out.append(s)
    return out[:count]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["vocab", "corpus"])
    ap.add_argument("--vocab")
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.command == "vocab":
        with open(a.out, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(t + "\n" for t in make_vocab()))
        return
    vocab = load_vocab(a.vocab)
    with open(a.out, "w", encoding="utf-8") as f:
        for text in gen_corpus(a.count, a.seed):
            clean = clean_whitespace(text)
            ids = encode(clean, vocab)
            words = pre_tokenize(normalize(clean))  # without the special-token split
            f.write(json.dumps({"text": text, "clean": clean, "words": words, "ids": ids,
                                "row32": row(ids, vocab, 32, True), "row8": row(ids, vocab, 8, False)},
                               ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
