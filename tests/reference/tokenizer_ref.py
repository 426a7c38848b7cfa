#!/usr/bin/python3
"""Independent Python reference of OpenCLIP's SimpleTokenizer (src/open_clip/tokenizer.py),
used by tests/text and bench/tokenizer_bench.cpp to check and time the C++ tokenizer.

Run with Debian's /usr/bin/python3 (it has `regex`). ftfy is not packaged in Debian, so
`ftfy_fix_text` below re-implements ftfy 6.3's fix_text with every step except the mojibake
detector (fix_encoding); see docs/TOKENIZER.md. Everything after ftfy is OpenCLIP's code:
html.unescape twice, strip, " ".join(split()), lower(), the `regex` pre-tokenizer with
IGNORECASE, byte-level BPE with the merge ranks, [sot] + ids + [eot], truncate, zero-pad.

Commands:
  corpus --vocab V --out F [--count N] [--seed S]   test captions + expected ids (JSON lines)
  encode --vocab V --input F --out F                JSON lines {"text"} -> {"clean", "ids"}
  decode --vocab V --input F --out F                JSON lines {"ids"}  -> {"text"}
  bench  --vocab V --input F [--repeat R]           captions/s on the lines of F (1 thread)
"""
import argparse
import gzip
import html
import html.entities
import json
import random
import re
import sys
import time
import unicodedata

import regex

# ---------------------------------------------------------------------------------------------
# ftfy 6.3 fix_text without fix_encoding (chardata.py / fixes.py / __init__.py, same order).

FTFY_SINGLE_QUOTE_RE = re.compile("[\u02bc\u2018-\u201b]")
FTFY_DOUBLE_QUOTE_RE = re.compile("[\u201c-\u201f]")
FTFY_HTML_ENTITY_RE = re.compile(r"&#?[0-9A-Za-z]{1,24};")
FTFY_ANSI_RE = re.compile("\033\\[((?:\\d|;)*)([a-zA-Z])")
FTFY_C1_CONTROL_RE = re.compile(r"[\x80-\x9f]")
FTFY_LIGATURES = {
    ord("Ĳ"): "IJ", ord("ĳ"): "ij", ord("ŉ"): "ʼn", ord("Ǳ"): "DZ", ord("ǲ"): "Dz",
    ord("ǳ"): "dz", ord("Ǆ"): "DŽ", ord("ǅ"): "Dž", ord("ǆ"): "dž", ord("Ǉ"): "LJ",
    ord("ǈ"): "Lj", ord("ǉ"): "lj", ord("Ǌ"): "NJ", ord("ǋ"): "Nj", ord("ǌ"): "nj",
    ord("ﬀ"): "ff", ord("ﬁ"): "fi", ord("ﬂ"): "fl", ord("ﬃ"): "ffi", ord("ﬄ"): "ffl",
    ord("ﬅ"): "ſt", ord("ﬆ"): "st",
}


def _ftfy_html_entities():
    entities = {}
    for name, char in html.entities.html5.items():
        if name.endswith(";"):
            entities["&" + name] = char
            if name == name.lower():
                entity_upper = "&" + name.upper()
                if html.unescape(entity_upper) == entity_upper:
                    entities[entity_upper] = char.upper()
    return entities


def _ftfy_width_map():
    width_map = {0x3000: " "}
    for i in range(0xFF01, 0xFFF0):
        alternate = unicodedata.normalize("NFKC", chr(i))
        if alternate != chr(i):
            width_map[i] = alternate
    return width_map


def _ftfy_control_chars():
    cc = list(range(0x00, 0x09)) + [0x0B] + list(range(0x0E, 0x20)) + [0x7F]
    cc += list(range(0x206A, 0x2070)) + [0xFEFF] + list(range(0xFFF9, 0xFFFD))
    return {i: None for i in cc}


def _sloppy_cp1252(byte):
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:  # the 5 undefined bytes pass through as Latin-1
        return chr(byte)


FTFY_HTML_ENTITIES = _ftfy_html_entities()
FTFY_WIDTH_MAP = _ftfy_width_map()
FTFY_CONTROL_CHARS = _ftfy_control_chars()


def _ftfy_unescape_fixup(match):
    text = match.group(0)
    if text in FTFY_HTML_ENTITIES:
        return FTFY_HTML_ENTITIES[text]
    elif text.startswith("&#"):
        unescaped = html.unescape(text)
        return text if ";" in unescaped else unescaped
    return text


def _ftfy_segment(text, unescape):
    while True:
        orig = text
        if unescape:
            text = FTFY_HTML_ENTITY_RE.sub(_ftfy_unescape_fixup, text)
        # fix_encoding (mojibake detection) is not replicated.
        text = FTFY_C1_CONTROL_RE.sub(lambda m: _sloppy_cp1252(ord(m.group(0))), text)
        text = text.translate(FTFY_LIGATURES)
        text = text.translate(FTFY_WIDTH_MAP)
        text = FTFY_SINGLE_QUOTE_RE.sub("'", FTFY_DOUBLE_QUOTE_RE.sub('"', text))
        text = (text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n")
                .replace("\u2029", "\n").replace("\u0085", "\n"))
        # fix_surrogates: no surrogates can come from valid UTF-8.
        text = FTFY_ANSI_RE.sub("", text)
        text = text.translate(FTFY_CONTROL_CHARS)
        text = unicodedata.normalize("NFC", text)
        if text == orig:
            return text


def ftfy_fix_text(text, max_decode_length=1000000):
    out, pos, unescape = [], 0, True
    while pos < len(text):
        textbreak = text.find("\n", pos) + 1
        if textbreak == 0:
            textbreak = len(text)
        if textbreak - pos > max_decode_length:
            textbreak = pos + max_decode_length
        segment = text[pos:textbreak]
        if unescape and "<" in segment:
            unescape = False  # sticky, as ftfy's config._replace in fix_text
        out.append(_ftfy_segment(segment, unescape))
        pos = textbreak
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# OpenCLIP tokenizer.py


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def get_pairs(word):
    return {(word[i], word[i + 1]) for i in range(len(word) - 1)}


def clean_lower(text):
    text = ftfy_fix_text(text)
    text = html.unescape(html.unescape(text))
    text = text.strip()
    text = " ".join(text.split()).strip()
    return text.lower()


class SimpleTokenizer:
    def __init__(self, bpe_path):
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        merges = gzip.open(bpe_path).read().decode("utf-8").split("\n")
        merges = merges[1:49152 - 256 - 2 + 1]
        merges = [tuple(merge.split()) for merge in merges]
        vocab = list(bytes_to_unicode().values())
        vocab = vocab + [v + "</w>" for v in vocab]
        for merge in merges:
            vocab.append("".join(merge))
        special_tokens = ["<start_of_text>", "<end_of_text>"]
        vocab.extend(special_tokens)
        self.encoder = dict(zip(vocab, range(len(vocab))))
        assert len(self.encoder) == 49408
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.bpe_ranks = dict(zip(merges, range(len(merges))))
        self.cache = {t: t for t in special_tokens}
        special = "|".join(special_tokens)
        self.pat = regex.compile(
            special + r"""|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""",
            regex.IGNORECASE)
        self.sot, self.eot = self.encoder["<start_of_text>"], self.encoder["<end_of_text>"]

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token[:-1]) + (token[-1] + "</w>",)
        pairs = get_pairs(word)
        if not pairs:
            return token + "</w>"
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        word = " ".join(word)
        self.cache[token] = word
        return word

    def encode_clean(self, text):
        ids = []
        for token in regex.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token).split(" "))
        return ids

    def encode(self, text):
        return self.encode_clean(clean_lower(text))

    def __call__(self, text, context_length=77):
        tokens = [self.sot] + self.encode(text) + [self.eot]
        if len(tokens) > context_length:
            tokens = tokens[:context_length]
            tokens[-1] = self.eot
        return tokens + [0] * (context_length - len(tokens))

    def decode(self, tokens):
        text = "".join(self.decoder[t] for t in tokens)
        return bytearray([self.byte_decoder[c] for c in text]).decode(
            "utf-8", errors="replace").replace("</w>", " ")


# ---------------------------------------------------------------------------------------------
# Deterministic test captions.

NOUNS = ["dog", "cat", "man", "woman", "child", "pizza", "train", "bus", "giraffe", "zebra",
         "elephant", "surfboard", "skateboard", "kitchen", "table", "street", "horse", "bird",
         "clock", "laptop", "banana", "umbrella", "boat", "plate", "sandwich", "bench", "tench",
         "frisbee", "motorcycle", "airplane", "teddy bear", "fire hydrant", "stop sign"]
ADJS = ["small", "large", "red", "white", "black", "young", "old", "wooden", "busy", "empty",
        "tall", "colorful", "sleepy", "happy", "snowy", "green", "shiny", "blurry"]
VERBS = ["sitting on", "standing next to", "riding", "eating", "holding", "looking at",
         "walking down", "parked near", "flying over", "lying on", "playing with"]
PLACES = ["a field", "the beach", "a city street", "a table", "the snow", "a kitchen counter",
          "a grassy hill", "the water", "a runway", "a couch"]
WORDS_ACCENTED = ["café", "naïve", "Ångström", "São Paulo", "Zürich", "ÉCOLE", "Ærøskøbing",
                  "façade", "jalapeño", "Dvořák", "Łódź", "smörgåsbord", "crème brûlée",
                  "Besançon", "ĲSSELMEER", "İstanbul", "ΣΊΣΥΦΟΣ", "ὈΔΥΣΣΕΎΣ", "ΌΣΟΣ ΌΣΟΣ.",
                  "Straße", "STRASSE", "ẞ", "ǅemal", "Ⅻ", "ᏣᎳᎩ", "ᲛᲐᲠᲘ", "Ǳ", "ﬁnance",
                  "ﬂoor", "ＦＵＬＬ　ＷＩＤＴＨ", "ｶﾀｶﾅ", "Привет МИР", "Ελληνικά", "עברית", "العربية"]
CJK = ["一只猫坐在桌子上", "東京タワーの夜景", "강아지가 공원에서 뛰어요", "雪の中の赤い花", "北京烤鸭",
       "ラーメン二杯", "ㄱㄴㄷ", "漢字かなカナ", "๑๒๓ ภาษาไทย", "हिन्दी भाषा", "ελλάδα २०२४"]
EMOJI = ["🐶", "🐱‍👤", "👩‍👩‍👧‍👦", "🇫🇷", "👍🏽", "❤️", "😂😂😂", "☕", "🎉🎈", "✨", "🏳️‍🌈", "1️⃣"]
ENTITIES = ["&amp;", "&lt;b&gt;", "&amp;amp;", "&amp;amp;amp;amp;", "&#39;", "&#x27;", "&nbsp;",
            "&eacute;", "&EACUTE;", "&Eacute;", "&copy", "&copy;", "&notit;", "&notin;", "&ampx",
            "&#0;", "&#128;", "&#x80;", "&#xD800;", "&#1114112;", "&#65", "&#x41", "&foo;", "&;",
            "&#;", "&#x;", "&#13;", "&#x85;", "&#x1c;", "&#11;", "&Tab;", "&NewLine;", "&quot",
            "&SZLIG;", "&hellip;", "&rsquo;", "&ldquo;quoted&rdquo;", "&NotEqualTilde;",
            "&#x1F600;", "&#128512;", "&#99999999999999;", "&#x110000;", "&#xFFFE;", "&#xFDD0;",
            "&AMP;", "&LT;", "&nTILDE;", "&NTILDE;", "&#0065;", "&#00000000000000000000065;",
            "&aacute", "&AElig", "&amp;lt;", "&amp;#39;", "&lt;&lt;&gt;", "&&amp;", "&amp&amp;"]
FTFY_CHARS = ["\u2018quoted\u2019", "\u201cdouble\u201d", "don\u2019t", "it\u02bcs", "\x85",
              "\x93hi\x94", "\x80", "\x81", "\x9d", "\x00", "\x1b[31mred\x1b[0m", "\x1b[1;2x",
              "\x1b[", "\x1b]", "a\r\nb", "a\rb", "a\u2028b", "a\u2029b", "\ufeffbom", "\u206a",
              "\ufff9x\ufffc", "\x7f", "\x0b", "\x1c\x1d\x1e\x1f", "\u00ad", "\u200b", "\u180e",
              "\u3000", "\u00a0", "\u2003", "\u202f", "\u1680", "\x0c", "\t", "\x1b[٣m",
              "\x1b[12;34mok", "ŉ", "＇", "＂"]
COMBINING = ["cafe\u0301", "A\u030a", "n\u0303", "\u1100\u1161\u11a8", "\u1100\u1161",
             "\uac00\u11a8", "a\u0323\u0307", "a\u0307\u0323", "q\u0303", "\u0345", "ι\u0345",
             "e\u0301\u0301", "\u0301start", "o\u0308\u0304", "\u0928\u093c", "\u0b47\u0b3e",
             "\u00c5\u0301", "\u212b", "\u2126", "\u0340", "\u0344", "\u0958", "s\u0323\u0307",
             "\u1e9b\u0323", "\u0f73", "\u0f77", "x\u0338", "≠", "\u2260\u0338"]
CONTRACTIONS = ["don't", "it's", "we're", "they've", "I'm", "you'll", "he'd", "DON'T", "IT'S",
                "We'Re", "''s", "'s'", "'ſam", "o'clock", "rock'n'roll", "'tis", "y'all'd've",
                "ʼs", "\u2019s", "'M", "'LL", "'D'", "'VE"]
SPECIALS = ["<start_of_text>", "<END_OF_TEXT>", "<ſtart_of_text>", "x<end_of_text>y",
            "<start_of_text", ".<end_of_text>", "<end_of_text><end_of_text>", "<eNd_Of_TeXt>",
            "</w>", "a</w>b"]
PUNCT = [",", ".", "!", "?", "...", "—", "–", "(", ")", "\"", "'", ":", ";", "#", "@", "$12.50",
         "100%", "3.14159", "1920x1080", "2023-01-01", "#hashtag", "@user", "http://x.co/a?b=1",
         "C++", "a/b", "¿qué?", "¡hola!", "«guillemets»", "…", "•", "©®™", "½", "²³", "٣", "௧௨",
         "ⅷ", "〇", "_under_score_", "\\", "~", "`", "^", "|", "{}", "[]"]
WS = [" ", "  ", "\t", "\n", " \n ", "\u00a0", "\u3000", "\u2003", "\r\n", "\x1c", "\x0b"]


def _rand_unicode(rng, n):
    blocks = [(0x20, 0x7f), (0xa0, 0x250), (0x250, 0x370), (0x300, 0x370), (0x370, 0x400),
              (0x400, 0x530), (0x590, 0x700), (0x900, 0x980), (0x1100, 0x1200), (0x1e00, 0x2000),
              (0x2000, 0x2070), (0x2100, 0x2200), (0x3000, 0x3100), (0x4e00, 0x4f00),
              (0xac00, 0xad00), (0xfb00, 0xfb50), (0xff00, 0xfff0), (0x1d400, 0x1d500),
              (0x1f300, 0x1f700), (0x10000, 0x10100), (0xe0000, 0xe0080), (0x80, 0xa0),
              (0x0, 0x20), (0x10fff0, 0x110000), (0x1f1e6, 0x1f200), (0x1ab0, 0x1b00)]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(blocks)
        cp = rng.randrange(lo, hi)
        if 0xD800 <= cp < 0xE000:
            cp = 0x41
        out.append(chr(cp))
    return "".join(out)


# Pieces whose interactions are subtle: entity syntax, ftfy's fixed-point loop (a fix that
# makes a new entity or escape), NFC across ftfy's rounds, final sigma, specials, long s.
TRICKY = ["&", "#", ";", "x", "X", "a", "m", "p", "l", "t", "1", "6", "<", ">", "\n", "\r",
          "\x1b", "[", "\x85", "\x93", "\x9d", "ﬁ", "Ａ", "＆", "＃", "；", "Σ", "Α", "\u0345",
          "\u0301", "\u0323", "\u0308", "\u1100", "\u1161", "\u11a8", "\uac00", "ſ", "'", "s",
          "İ", " ", "\t", "\u00a0", "\u3000", "\u2028", "\x00", "\x1c", "\x0b", "\ufeff",
          "\u02bc", "\u2019", "amp", "lt", "gt", "#x41", "#65", "#x1b", "#133", "EACUTE", "nbsp",
          "AMP", "quot", "_", "start", "end", "of", "text", "\u0660", "e", "é", "ﬃ", "ŉ", "ǅ"]


def _tricky(rng):
    return "".join(rng.choice(TRICKY) for _ in range(rng.randint(1, 30)))


def _long_word(rng):
    """Words past 64 bytes take the heap BPE in C++ (src/text/tokenizer.cpp bpe_long)."""
    kind = rng.random()
    n = rng.randint(60, 400)
    if kind < 0.3:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
    if kind < 0.5:
        unit = rng.choice(["ha", "lol", "ab", "a", "na", "xo", "abc", "the", "ing", "é", "東", "ß", "ss"])
        return unit * (n // len(unit))
    if kind < 0.7:
        return "".join(rng.choice("etaoinshrdlu") for _ in range(n))
    if kind < 0.85:
        return "".join(rng.choice("!?.-=_*#~/\\|") for _ in range(n))
    return "".join(rng.choice("aeiouéèàüößçñ") for _ in range(n))


def _coco(rng):
    s = "%s %s %s %s %s" % (rng.choice(["a", "an", "the", "two", "A", "The", "Some"]),
                            rng.choice(ADJS), rng.choice(NOUNS), rng.choice(VERBS),
                            rng.choice(PLACES))
    if rng.random() < 0.5:
        s += rng.choice([".", "", " .", "!", " ."])
    if rng.random() < 0.2:
        s = s.capitalize()
    if rng.random() < 0.1:
        s = s.upper()
    return s


def gen_corpus(count, seed):
    rng = random.Random(seed)
    fixed = ["a diagram", "a dog", "a cat", "Hello, World!", "a photo of a tench.", "", " ",
             "\n\t ", "&", "<", "&lt;", "\u0345", "ΑΣ", "ΑΣ.", "Σ", "ΑΣΑ", "Α\u0345Σ", "ΑΣ\u0345",
             "aΣ'", "A.Σ", "İ", "İİ", "ǅ", "K", "x" * 300, "a " * 100, "ab" * 60,
             "line one\nline <two> &amp;\n&amp; three", "&amp;\n<b>\n&amp;",
             "<i>&amp;</i>", "no angle &amp; amp"]
    out = list(fixed)
    pools = [ENTITIES, FTFY_CHARS, COMBINING, CONTRACTIONS, SPECIALS, PUNCT, WORDS_ACCENTED,
             CJK, EMOJI]
    while len(out) < count:
        kind = rng.random()
        if kind < 0.35:
            s = _coco(rng)
        elif kind < 0.80:
            parts = []
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.3:
                    parts.append(_coco(rng))
                elif r < 0.9:
                    parts.append(rng.choice(rng.choice(pools)))
                else:
                    parts.append(rng.choice(WS))
                parts.append(rng.choice(WS) if rng.random() < 0.7 else "")
            s = "".join(parts)
        elif kind < 0.85:
            s = _rand_unicode(rng, rng.randint(1, 40))
        elif kind < 0.90:
            s = _tricky(rng)
        elif kind < 0.93:
            s = " ".join(_coco(rng) for _ in range(rng.randint(4, 12)))  # past 77 tokens
        elif kind < 0.95:
            s = _coco(rng) + " " + _long_word(rng)
        else:
            s = "".join(chr(rng.randrange(0, 128)) for _ in range(rng.randint(1, 60)))
        if rng.random() < 0.05:
            s = s.swapcase()
        out.append(s)
    return out[:count]


# ---------------------------------------------------------------------------------------------


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["corpus", "encode", "decode", "bench"])
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--input")
    ap.add_argument("--out")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--context-length", type=int, default=77)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tok = SimpleTokenizer(args.vocab)

    if args.command == "bench":
        with open(args.input, encoding="utf-8") as f:
            captions = f.read().split("\n")
        if captions and captions[-1] == "":
            captions.pop()
        tok([captions[0]][0], args.context_length)
        best, best_cpu = 0.0, 0.0
        for _ in range(args.repeat):  # warm cache after the first pass, as OpenCLIP's
            t0, c0 = time.perf_counter(), time.process_time()
            for c in captions:
                tok(c, args.context_length)
            best = max(best, len(captions) / (time.perf_counter() - t0))
            best_cpu = max(best_cpu, len(captions) / (time.process_time() - c0))
        print(json.dumps({"captions": len(captions), "captions_per_s": best,
                          "cpu_captions_per_s": best_cpu}))
        return

    if args.command == "corpus":
        rows = [{"text": t} for t in gen_corpus(args.count, args.seed)]
    else:
        rows = _read_jsonl(args.input)
    with open(args.out, "w", encoding="utf-8") as f:
        for row in rows:
            if args.command == "decode":
                rec = {"text": tok.decode(row["ids"])}
            else:
                text = row["text"]
                rec = {"text": text, "clean": clean_lower(text),
                       "ids": tok(text, args.context_length)}
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
