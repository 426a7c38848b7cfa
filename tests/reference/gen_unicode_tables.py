#!/usr/bin/python3
"""Generates src/text/unicode_tables.cpp: the Unicode and HTML data the C++ tokenizer needs to
clean and split text exactly as OpenCLIP does under Debian's Python 3.11 + `regex`:

  - per-code-point properties (two-stage table): the pre-tokenizer classes as the `regex`
    module matches them with IGNORECASE ([\\p{L}], [\\p{N}], [^\\s\\p{L}\\p{N}]), str.isspace,
    the Final_Sigma context of str.lower (Case_Ignorable / Cased, derived from str.lower
    itself), NFC quick-check, re's \\d, the characters ftfy's char fixes touch;
  - str.lower full mappings, canonical combining classes, full canonical decompositions and
    primary compositions (unicodedata), for NFC;
  - ftfy's per-character maps (C1 controls as sloppy-windows-1252, Latin ligatures, character
    width, curly quotes) fused in ftfy's order;
  - html.entities.html5, ftfy's extra upper-case entities, html.unescape's invalid charrefs.

Run: /usr/bin/python3 tests/reference/gen_unicode_tables.py > src/text/unicode_tables.cpp
The character data of `regex` (Unicode 15+) and `unicodedata` (14.0 in Python 3.11) differ;
each property is taken from the module OpenCLIP uses for it.
"""
import html
import html.entities
import re
import sys
import unicodedata

import regex

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import tokenizer_ref as ref  # noqa: E402  (the ftfy tables, shared with the reference)

MAX = 0x110000
SHIFT = 7  # two-stage table block = 128 code points

L, N, P, SPACE, CI, CASED, NFC_UNSAFE, HAS_LOWER, DECIMAL, FTFY = (1 << i for i in range(10))


def chars():
    for cp in range(MAX):
        if not 0xD800 <= cp < 0xE000:
            yield cp


def ftfy_char_map():
    """C1 -> sloppy cp1252, ligatures, width, quotes: one pass of ftfy's loop, per char."""
    out = {}
    for cp in list(range(0x80, 0xA0)) + list(ref.FTFY_LIGATURES) + list(ref.FTFY_WIDTH_MAP) + \
            [0x2BC] + list(range(0x2018, 0x2020)):
        s = chr(cp)
        s = ref.FTFY_C1_CONTROL_RE.sub(lambda m: ref._sloppy_cp1252(ord(m.group(0))), s)
        s = s.translate(ref.FTFY_LIGATURES).translate(ref.FTFY_WIDTH_MAP)
        s = ref.FTFY_SINGLE_QUOTE_RE.sub("'", ref.FTFY_DOUBLE_QUOTE_RE.sub('"', s))
        if s != chr(cp):
            out[cp] = s
    return out


def main():
    pl = regex.compile(r"[\p{L}]", regex.IGNORECASE)
    pn = regex.compile(r"[\p{N}]", regex.IGNORECASE)
    pp = regex.compile(r"[^\s\p{L}\p{N}]", regex.IGNORECASE)
    pd = re.compile(r"\d")
    # src/text/pretokenize.h hard-codes how IGNORECASE matches the literal alternatives.
    for ch in sorted(set("<start_of_text><end_of_text>'s't're've'm'll'd")):
        pat = regex.compile(regex.escape(ch), regex.IGNORECASE)
        eq = {cp for cp in chars() if pat.fullmatch(chr(cp))}
        want = {ord(ch), ord(ch.upper())} | ({0x17F} if ch == "s" else set())
        assert eq == want, (ch, sorted(eq))
    fmap = ftfy_char_map()
    ftfy_touched = set(fmap) | set(ref.FTFY_CONTROL_CHARS) | {0x0D, 0x2028, 0x2029, 0x85, 0x1B}

    # NFC data
    ccc = {cp: unicodedata.combining(chr(cp)) for cp in chars() if unicodedata.combining(chr(cp))}
    decomp, comp, comp_second = {}, {}, set()
    for cp in chars():
        if 0xAC00 <= cp <= 0xD7A3:
            continue  # Hangul syllables are algorithmic
        c = chr(cp)
        d = unicodedata.normalize("NFD", c)
        if d != c:
            decomp[cp] = d
        raw = unicodedata.decomposition(c)
        if raw and not raw.startswith("<"):
            parts = [int(x, 16) for x in raw.split()]
            if len(parts) == 2 and unicodedata.normalize("NFC", c) == c:
                comp[(parts[0], parts[1])] = cp
                comp_second.add(parts[1])
    hangul_second = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))

    props = [0] * MAX
    lower = {}
    for cp in chars():
        c = chr(cp)
        v = 0
        if pl.match(c):
            v |= L
        if pn.match(c):
            v |= N
        if pp.match(c):
            v |= P
        if c.isspace():
            v |= SPACE
        t1 = (c + "Σ").lower()[-1] == "ς"          # !CI(c) && cased(c)
        t2 = ("A" + c + "Σ").lower()[-1] == "ς"    # CI(c) || cased(c)
        if t2 and not t1:
            v |= CI
        if t1:
            v |= CASED
        if cp in ccc or unicodedata.normalize("NFC", c) != c or cp in comp_second or \
                cp in hangul_second:
            v |= NFC_UNSAFE
        if c.lower() != c:
            v |= HAS_LOWER
            lower[cp] = c.lower()
        if pd.match(c):
            v |= DECIMAL
        if cp in ftfy_touched:
            v |= FTFY
        props[cp] = v
    # Surrogates cannot occur in valid UTF-8; give them the class of an unassigned char.
    for cp in range(0xD800, 0xE000):
        props[cp] = props[0x0378]

    blocks, index = {}, []
    for b in range(MAX >> SHIFT):
        blk = tuple(props[b << SHIFT:(b + 1) << SHIFT])
        if blk not in blocks:
            blocks[blk] = len(blocks)
        index.append(blocks[blk])

    w = sys.stdout.write
    w("// GENERATED by tests/reference/gen_unicode_tables.py from Python %s (unicodedata %s),\n"
      "// regex %s and html.entities. Do not edit; re-run the generator.\n"
      % (sys.version.split()[0], unicodedata.unidata_version, regex.__version__))
    w('#include "text/unicode_tables.h"\n\nnamespace oc::text::tables {\n\n')

    def arr(ctype, name, vals, per=16, fmt="%d"):
        w("const %s %s[] = {\n" % (ctype, name))
        for i in range(0, len(vals), per):
            w("  " + ",".join(fmt % x for x in vals[i:i + per]) + ",\n")
        w("};\n")

    arr("uint16_t", "kPropIndex", index, 24)
    flat = [x for blk in sorted(blocks, key=blocks.get) for x in blk]
    arr("uint16_t", "kPropBlocks", flat, 24)
    w("const size_t kPropBlockCount = %d;\n\n" % len(blocks))

    def cpmap(name, mapping):
        pool, entries = [], []
        for cp in sorted(mapping):
            s = [ord(ch) for ch in mapping[cp]]
            entries.append((cp, len(pool), len(s)))
            pool.extend(s)
        arr("uint32_t", name + "Pool", pool, 12, "0x%X")
        w("const CpMap %s[] = {\n" % name)
        for i in range(0, len(entries), 6):
            w("  " + ",".join("{0x%X,%d,%d}" % e for e in entries[i:i + 6]) + ",\n")
        w("};\nconst size_t %sCount = %d;\n\n" % (name, len(entries)))

    cpmap("kLower", lower)
    cpmap("kDecomp", decomp)
    cpmap("kFtfyMap", fmap)

    ranges = []
    for cp in sorted(ccc):
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == ccc[cp]:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, ccc[cp]])
    w("const CccRange kCcc[] = {\n")
    for i in range(0, len(ranges), 6):
        w("  " + ",".join("{0x%X,0x%X,%d}" % tuple(r) for r in ranges[i:i + 6]) + ",\n")
    w("};\nconst size_t kCccCount = %d;\n\n" % len(ranges))

    w("const Composition kComp[] = {\n")
    items = sorted(((a << 21) | b, c) for (a, b), c in comp.items())
    for i in range(0, len(items), 5):
        w("  " + ",".join("{0x%XULL,0x%X}" % it for it in items[i:i + 5]) + ",\n")
    w("};\nconst size_t kCompCount = %d;\n\n" % len(items))

    def cstr(s):
        out = []
        for b in s.encode("utf-8"):
            if 0x20 <= b < 0x7F and chr(b) not in '"\\?':
                out.append(chr(b))
            else:
                out.append("\\%03o" % b)
        return '"' + "".join(out) + '"'

    def entities(name, mapping):
        keys = sorted(mapping, key=lambda k: k.encode("utf-8"))
        w("const Entity %s[] = {\n" % name)
        for i in range(0, len(keys), 4):
            w("  " + ",".join("{%s,%s}" % (cstr(k), cstr(mapping[k])) for k in keys[i:i + 4]) + ",\n")
        w("};\nconst size_t %sCount = %d;\n\n" % (name, len(keys)))

    entities("kHtml5", html.entities.html5)
    upper = {k[1:]: v for k, v in ref.FTFY_HTML_ENTITIES.items()
             if k[1:] not in html.entities.html5}
    entities("kFtfyUpperEntities", upper)

    w("const Charref kInvalidCharrefs[] = {\n  ")
    w(",".join("{0x%X,0x%X}" % (k, ord(v)) for k, v in sorted(html._invalid_charrefs.items())))
    w("\n};\nconst size_t kInvalidCharrefsCount = %d;\n" % len(html._invalid_charrefs))
    arr("uint32_t", "kInvalidCodepoints", sorted(html._invalid_codepoints), 12, "0x%X")
    w("const size_t kInvalidCodepointsCount = %d;\n\n" % len(html._invalid_codepoints))
    w("}  // namespace oc::text::tables\n")
    sys.stderr.write("blocks=%d lower=%d decomp=%d comp=%d ccc_ranges=%d ftfy=%d upper_ent=%d\n" % (
        len(blocks), len(lower), len(decomp), len(comp), len(ranges), len(fmap), len(upper)))


if __name__ == "__main__":
    main()
