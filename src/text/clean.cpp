// OpenCLIP's text cleaning, exactly as CPython 3.11 computes it (see clean.h). Pure ASCII text
// without '&' or control characters takes a byte-level fast path; everything else is cleaned
// on code points with the generated tables (unicode_tables.cpp).
#include "text/clean.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "text/unicode.h"

namespace oc::text {
namespace T = tables;
namespace {

// ---------------------------------------------------------------------------------------------
// Entity tables

const char* find_entity(const T::Entity* table, size_t n, std::string_view name) {
  const T::Entity* e = table + n;
  auto it = std::lower_bound(table, e, name, [](const T::Entity& x, std::string_view v) {
    return std::string_view(x.name) < v;
  });
  return it != e && std::string_view(it->name) == name ? it->value : nullptr;
}

void append_utf8(std::u32string& out, const char* s) {
  std::string_view v(s);
  for (size_t i = 0; i < v.size();) out.push_back(char32_t(utf8_next(v.data(), i)));
}

// ASCII prefix of `s` (names in html5 are ASCII; a non-ASCII character ends every match).
size_t ascii_prefix(std::u32string_view s, std::array<char, 40>& buf) {
  size_t n = 0;
  while (n < s.size() && n < buf.size() && s[n] < 0x80) buf[n] = char(s[n]), n++;
  return n;
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_hex(char32_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_alnum(char32_t c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// html._replace_charref for a numeric reference whose value is `num` (saturated).
void append_charref(std::u32string& out, uint64_t num) {
  for (size_t i = 0; i < T::kInvalidCharrefsCount; i++)
    if (T::kInvalidCharrefs[i].num == num) return void(out.push_back(char32_t(T::kInvalidCharrefs[i].cp)));
  if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) return void(out.push_back(U'\uFFFD'));
  if (std::binary_search(T::kInvalidCodepoints, T::kInvalidCodepoints + T::kInvalidCodepointsCount, uint32_t(num)))
    return;
  out.push_back(char32_t(num));
}

// ---------------------------------------------------------------------------------------------
// ftfy steps (ftfy/fixes.py), each a pass from `in` to `out`.

// fixes.unescape_html: HTML_ENTITY_RE = "&#?[0-9A-Za-z]{1,24};", decoded from ftfy's table
// (html5 names with ';' plus upper-case variants), numeric ones through html.unescape.
void ftfy_unescape(const std::u32string& in, std::u32string& out) {
  out.clear();
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    if (in[i] != '&') {
      out.push_back(in[i++]);
      continue;
    }
    size_t j = i + 1;
    bool hash = j < n && in[j] == '#';
    if (hash) j++;
    size_t k = j;
    while (k < n && k - j < 24 && is_alnum(in[k])) k++;
    if (k == j || k >= n || in[k] != ';') {  // no match at this '&'
      out.push_back(in[i++]);
      continue;
    }
    std::u32string_view ent(in.data() + i, k + 1 - i);  // "&...;"
    if (!hash) {
      std::array<char, 40> buf;
      size_t len = ascii_prefix(ent.substr(1), buf);
      std::string_view name(buf.data(), len);
      const char* v = find_entity(T::kHtml5, T::kHtml5Count, name);
      if (!v) v = find_entity(T::kFtfyUpperEntities, T::kFtfyUpperEntitiesCount, name);
      if (v) append_utf8(out, v);
      else out.append(ent);
    } else {
      std::u32string dec;
      (void)html_unescape(ent, dec);  // at most 24 digits: cannot fail
      if (dec.find(U';') != std::u32string::npos) out.append(ent);
      else out += dec;
    }
    i = k + 1;
  }
}

// fix_c1_controls, fix_latin_ligatures, fix_character_width, uncurl_quotes: per-character
// maps applied in that order, fused into one table by the generator.
void ftfy_char_maps(const std::u32string& in, std::u32string& out) {
  out.clear();
  for (char32_t c : in) {
    if (!(props(c) & T::kFtfy)) {
      out.push_back(c);
      continue;
    }
    const T::CpMap* e = T::kFtfyMap + T::kFtfyMapCount;
    auto it = std::lower_bound(T::kFtfyMap, e, uint32_t(c), [](const T::CpMap& m, uint32_t v) { return m.cp < v; });
    if (it == e || it->cp != c) {
      out.push_back(c);
      continue;
    }
    for (int k = 0; k < it->len; k++) out.push_back(char32_t(T::kFtfyMapPool[it->off + k]));
  }
}

// fix_line_breaks: \r\n, \r, U+2028, U+2029, U+0085 -> \n.
void ftfy_line_breaks(const std::u32string& in, std::u32string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); i++) {
    char32_t c = in[i];
    if (c == '\r' && i + 1 < in.size() && in[i + 1] == '\n') continue;
    if (c == '\r' || c == 0x2028 || c == 0x2029 || c == 0x85) c = '\n';
    out.push_back(c);
  }
}

// remove_terminal_escapes: "\033\[((?:\d|;)*)([a-zA-Z])" (\d is any Unicode decimal digit).
void ftfy_terminal_escapes(const std::u32string& in, std::u32string& out) {
  out.clear();
  const size_t n = in.size();
  for (size_t i = 0; i < n;) {
    if (in[i] == 0x1B && i + 1 < n && in[i + 1] == '[') {
      size_t k = i + 2;
      while (k < n && (in[k] == ';' || (props(in[k]) & T::kDecimal))) k++;
      if (k < n && ((in[k] >= 'a' && in[k] <= 'z') || (in[k] >= 'A' && in[k] <= 'Z'))) {
        i = k + 1;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
}

// remove_control_chars (chardata.CONTROL_CHARS).
bool ftfy_control(char32_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
         c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
}

bool needs_ftfy(std::u32string_view s, bool unescape) {
  for (char32_t c : s)
    if ((c == '&' && unescape) || (props(c) & (T::kFtfy | T::kNfcUnsafe))) return true;
  return false;
}

// ftfy.fix_and_explain without fix_encoding: all steps in order until the text stops changing.
// Python has no bound. Here a segment gets at most 1024 rounds, and fewer when it is long
// (about 16 M code points of work, at least 64 rounds), so that a crafted caption cannot
// stall a data loader; only entities nested that deep ("&amp;amp;amp;...") get there.
int max_rounds(size_t len) { return int(std::clamp<size_t>((size_t(1) << 24) / (len + 1), 64, 1024)); }

void ftfy_segment(std::u32string& seg, bool unescape, CleanScratch& t) {
  const int rounds = max_rounds(seg.size());
  for (int round = 0; round < rounds; round++) {
    t.b = seg;  // origtext
    if (unescape) {
      ftfy_unescape(seg, t.tmp);
      seg.swap(t.tmp);
    }
    ftfy_char_maps(seg, t.tmp);
    ftfy_line_breaks(t.tmp, seg);
    ftfy_terminal_escapes(seg, t.tmp);
    seg.clear();
    for (char32_t c : t.tmp)
      if (!ftfy_control(c)) seg.push_back(c);
    nfc_inplace(seg);
    if (seg == t.b) return;
  }
}

}  // namespace

void ftfy_fix_text(std::u32string& text, CleanScratch& t) {
  if (!needs_ftfy(text, true)) return;
  constexpr size_t kMaxDecodeLength = 1000000;  // ftfy's max_decode_length, in code points
  std::u32string& out = t.out;
  out.clear();
  bool unescape = true;
  for (size_t pos = 0; pos < text.size();) {
    size_t brk = text.find(U'\n', pos);
    size_t end = brk == std::u32string::npos ? text.size() : brk + 1;
    end = std::min(end, pos + kMaxDecodeLength);
    std::u32string_view seg(text.data() + pos, end - pos);
    // ftfy.fix_text: unescape_html="auto" turns off for this and every later segment once
    // a segment contains '<'.
    if (unescape && seg.find(U'<') != std::u32string_view::npos) unescape = false;
    if (needs_ftfy(seg, unescape)) {
      t.seg.assign(seg);
      ftfy_segment(t.seg, unescape, t);
      out += t.seg;
    } else {
      out += seg;
    }
    pos = end;
  }
  text.swap(out);
}

Status html_unescape(std::u32string_view in, std::u32string& out) {
  out.clear();
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    if (in[i] != '&') {
      out.push_back(in[i++]);
      continue;
    }
    size_t j = i + 1;
    if (j < n && in[j] == '#') {
      size_t k;
      uint64_t num = 0;
      if (j + 1 < n && is_digit(in[j + 1])) {  // #[0-9]+;?
        k = j + 1;
        while (k < n && is_digit(in[k])) {
          num = std::min<uint64_t>(num * 10 + (in[k] - '0'), 0x7FFFFFFF);
          k++;
        }
        // CPython 3.11 refuses int() of strings with more than 4300 digits (ValueError).
        if (k - (j + 1) > 4300)
          return Err{fmt::format("numeric character reference with {} digits at character {} "
                                 "(Python's html.unescape raises ValueError beyond 4300)",
                                 k - (j + 1), i)};
      } else if (j + 2 < n && (in[j + 1] == 'x' || in[j + 1] == 'X') && is_hex(in[j + 2])) {
        k = j + 2;
        while (k < n && is_hex(in[k])) {
          char32_t c = in[k];
          uint64_t d = is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
          num = std::min<uint64_t>(num * 16 + d, 0x7FFFFFFF);
          k++;
        }
      } else {  // '&#' that is no reference: the named form cannot start with '#'
        out.push_back(in[i++]);
        continue;
      }
      if (k < n && in[k] == ';') k++;
      append_charref(out, num);
      i = k;
      continue;
    }
    // Named: [^\t\n\f <&#;]{1,32};?
    size_t k = j;
    while (k < n && k - j < 32) {
      char32_t c = in[k];
      if (c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';') break;
      k++;
    }
    if (k == j) {
      out.push_back(in[i++]);
      continue;
    }
    if (k < n && in[k] == ';') k++;
    std::u32string_view s = in.substr(j, k - j);
    std::array<char, 40> buf;
    size_t alen = ascii_prefix(s, buf);
    const char* v = alen == s.size() ? find_entity(T::kHtml5, T::kHtml5Count, std::string_view(buf.data(), alen)) : nullptr;
    if (v) {
      append_utf8(out, v);
    } else {
      // The longest prefix (at least 2 characters) that is an entity name.
      size_t x = std::min(s.size() - 1, alen);
      for (; x >= 2; x--) {
        if ((v = find_entity(T::kHtml5, T::kHtml5Count, std::string_view(buf.data(), x)))) break;
      }
      if (v && x >= 2) {
        append_utf8(out, v);
        out.append(s.substr(x));
      } else {
        out.push_back('&');
        out.append(s);
      }
    }
    i = k;
  }
  return Status::success();
}

namespace {

template <bool kLower>
bool clean_ascii(std::string_view in, std::string& out) {
  // Per byte: 0 = kept (lower-cased), 1 = whitespace, 2 = needs the general path (non-ASCII,
  // '&', and controls other than \t \n \f \r, which ftfy deletes or rewrites). \r becomes \n
  // in ftfy; both collapse to one space.
  static const auto kClass = [] {
    std::array<uint8_t, 256> a{};
    for (int c = 0; c < 256; c++) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r') a[c] = 1;
      else if (c >= 0x80 || c == '&' || c == 0x7F || c < 0x20) a[c] = 2;
    }
    return a;
  }();
  out.resize(in.size());
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  char* o = out.data();
  char* const o0 = o;
  bool space = false;
  for (size_t i = 0, n = in.size(); i < n; i++) {
    uint8_t c = p[i];
    uint8_t k = kClass[c];
    if (k == 0) {
      if (space) *o++ = ' ', space = false;
      *o++ = char(kLower && c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (k == 1) {
      space = o != o0;
    } else {
      return false;
    }
  }
  out.resize(size_t(o - o0));
  return true;
}

template <bool kLower>
Status clean(std::string_view in, std::string& out, CleanScratch& t) {
  if (clean_ascii<kLower>(in, out)) return Status::success();
  utf8_to_u32(in, t.a);
  ftfy_fix_text(t.a, t);
  for (int pass = 0; pass < 2; pass++) {
    if (t.a.find(U'&') == std::u32string::npos) break;
    Status st = html_unescape(t.a, t.tmp);
    if (!st.ok()) return st;
    t.a.swap(t.tmp);
  }
  // strip, " ".join(split()), strip
  t.b.clear();
  bool space = false;
  for (char32_t c : t.a) {
    if (props(c) & T::kSpace) {
      space = !t.b.empty();
      continue;
    }
    if (space) t.b.push_back(U' '), space = false;
    t.b.push_back(c);
  }
  if (kLower) {
    lower(t.b, t.a);
    u32_to_utf8(t.a, out);
  } else {
    u32_to_utf8(t.b, out);
  }
  return Status::success();
}

}  // namespace

bool clean_lower_ascii(std::string_view in, std::string& out) { return clean_ascii<true>(in, out); }
bool clean_whitespace_ascii(std::string_view in, std::string& out) { return clean_ascii<false>(in, out); }
Status clean_lower(std::string_view in, std::string& out, CleanScratch& t) { return clean<true>(in, out, t); }
Status clean_whitespace(std::string_view in, std::string& out, CleanScratch& t) { return clean<false>(in, out, t); }

}  // namespace oc::text
