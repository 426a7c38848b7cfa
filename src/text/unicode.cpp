// UTF-8 validation/decoding, str.lower() and NFC over the generated tables (unicode_tables.cpp).
#include "text/unicode.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace oc::text {
namespace T = tables;

std::string utf8_error_message(std::string_view s, size_t bad) {
  std::string bytes;
  for (size_t k = bad; k < std::min(s.size(), bad + 4); k++)
    bytes += fmt::format("{}0x{:02X}", k > bad ? " " : "", uint8_t(s[k]));
  return fmt::format("invalid UTF-8 at byte offset {} (bytes {})", bad, bytes);
}

size_t utf8_invalid_offset(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // ASCII fast path, 8 bytes at a time
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; k++)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string_view::npos;
}

void utf8_to_u32(std::string_view s, std::u32string& out) {
  out.clear();
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(char32_t(utf8_next(s.data(), i)));
}

void u32_to_utf8(std::u32string_view s, std::string& out) {
  out.clear();
  out.reserve(s.size() + s.size() / 2);
  for (char32_t c : s) utf8_append(out, uint32_t(c));
}

std::string utf8_decode_replace(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  std::string out;
  out.reserve(n);
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      out.push_back(char(c));
      i++;
      continue;
    }
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (len == 0) {  // a byte that never starts a sequence
      out += "\xEF\xBF\xBD";
      i++;
      continue;
    }
    // Consume the longest valid prefix; an incomplete one becomes a single U+FFFD.
    size_t k = 1;
    while (k < len && i + k < n) {
      uint8_t b = p[i + k];
      bool ok = k == 1 ? (b >= lo && b <= hi) : ((b & 0xC0) == 0x80);
      if (!ok) break;
      k++;
    }
    if (k == len) out.append(bytes.data() + i, len);
    else out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

uint8_t combining_class(uint32_t cp) {
  if (!(props(cp) & T::kNfcUnsafe)) return 0;  // every ccc != 0 code point is NFC-unsafe
  const T::CccRange* b = T::kCcc;
  const T::CccRange* e = T::kCcc + T::kCccCount;
  auto it = std::upper_bound(b, e, cp, [](uint32_t v, const T::CccRange& r) { return v < r.first; });
  if (it == b) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

namespace {

const T::CpMap* find_map(const T::CpMap* b, size_t n, uint32_t cp) {
  const T::CpMap* e = b + n;
  auto it = std::lower_bound(b, e, cp, [](const T::CpMap& m, uint32_t v) { return m.cp < v; });
  return it != e && it->cp == cp ? it : nullptr;
}

// Python's handle_capital_sigma (Objects/unicodeobject.c): U+03A3 lowers to final sigma
// when preceded by a cased letter and not followed by one, case-ignorables skipped.
bool final_sigma(std::u32string_view s, size_t i) {
  size_t j = i;
  uint16_t pr = 0;
  bool found = false;
  while (j > 0) {
    pr = props(s[--j]);
    if (!(pr & T::kCaseIgnorable)) {
      found = true;
      break;
    }
  }
  if (!found || !(pr & T::kCased)) return false;
  for (j = i + 1; j < s.size(); j++) {
    pr = props(s[j]);
    if (!(pr & T::kCaseIgnorable)) return !(pr & T::kCased);
  }
  return true;
}

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  uint64_t key = (uint64_t(a) << 21) | b;
  const T::Composition* e = T::kComp + T::kCompCount;
  auto it = std::lower_bound(T::kComp, e, key, [](const T::Composition& c, uint64_t v) { return c.pair < v; });
  return it != e && it->pair == key ? it->composite : 0;
}

}  // namespace

void lower(std::u32string_view src, std::u32string& dst) {
  dst.clear();
  for (size_t i = 0; i < src.size(); i++) {
    uint32_t c = src[i];
    if (c < 0x80) {
      dst.push_back(c >= 'A' && c <= 'Z' ? char32_t(c + 32) : char32_t(c));
    } else if (!(props(c) & T::kHasLower)) {
      dst.push_back(char32_t(c));
    } else if (c == 0x3A3) {
      dst.push_back(final_sigma(src, i) ? U'\u03C2' : U'\u03C3');
    } else {
      const T::CpMap* m = find_map(T::kLower, T::kLowerCount, c);
      if (!m) {
        dst.push_back(char32_t(c));
        continue;
      }
      for (int k = 0; k < m->len; k++) dst.push_back(char32_t(T::kLowerPool[m->off + k]));
    }
  }
}

// kLower holds str.lower of each code point alone, so U+03A3 maps to U+03C3 there.
void lower_chars(std::u32string_view src, std::u32string& dst) {
  dst.clear();
  for (uint32_t c : src) {
    if (c < 0x80) {
      dst.push_back(c >= 'A' && c <= 'Z' ? char32_t(c + 32) : char32_t(c));
      continue;
    }
    const T::CpMap* m = (props(c) & T::kHasLower) ? find_map(T::kLower, T::kLowerCount, c) : nullptr;
    if (!m) {
      dst.push_back(char32_t(c));
      continue;
    }
    for (int k = 0; k < m->len; k++) dst.push_back(char32_t(T::kLowerPool[m->off + k]));
  }
}

void nfd(std::u32string_view s, std::u32string& d) {
  d.clear();
  // 1. Full canonical decomposition.
  for (uint32_t c : s) {
    if (c >= kSBase && c < kSBase + kSCount) {
      uint32_t si = c - kSBase;
      d.push_back(char32_t(kLBase + si / kNCount));
      d.push_back(char32_t(kVBase + (si % kNCount) / kTCount));
      if (si % kTCount) d.push_back(char32_t(kTBase + si % kTCount));
      continue;
    }
    const T::CpMap* m = c >= 0xC0 ? find_map(T::kDecomp, T::kDecompCount, c) : nullptr;
    if (!m) {
      d.push_back(char32_t(c));
      continue;
    }
    for (int k = 0; k < m->len; k++) d.push_back(char32_t(T::kDecompPool[m->off + k]));
  }
  // 2. Canonical ordering: stable sort of each run of non-starters by combining class.
  uint8_t prev = 0;
  for (size_t i = 0; i < d.size(); i++) {
    uint8_t cc = combining_class(d[i]);
    if (cc != 0 && prev > cc) {
      for (size_t j = i; j > 0 && combining_class(d[j - 1]) > cc; j--) std::swap(d[j - 1], d[j]);
    } else {
      prev = cc;
    }
  }
}

void nfc_inplace(std::u32string& s) {
  size_t first = 0;
  while (first < s.size() && (s[first] < 0x300 || !(props(s[first]) & T::kNfcUnsafe))) first++;
  if (first == s.size()) return;
  // Everything before the first unsafe code point is NFC and cannot compose with what follows,
  // except the starter just before it (it may take the unsafe one as its second).
  if (first > 0) first--;

  // 1-2. Full canonical decomposition and canonical ordering.
  std::u32string d;
  d.reserve(s.size() - first + 8);
  nfd(std::u32string_view(s).substr(first), d);
  std::basic_string<uint8_t> ccc(d.size(), 0);
  for (size_t i = 0; i < d.size(); i++) ccc[i] = combining_class(d[i]);
  // 3. Canonical composition (UAX #15): a character composes with the last starter unless a
  // character in between has class 0 or a class >= its own.
  size_t starter = 0, w = 1;
  bool have_starter = ccc[0] == 0;  // a leading non-starter has nothing to compose with
  int last_ccc = 0;
  for (size_t i = 1; i < d.size(); i++) {
    uint32_t c = d[i];
    int cc = ccc[i];
    if (have_starter && (last_ccc < cc || last_ccc == 0)) {
      if (uint32_t comp = compose_pair(d[starter], c)) {
        d[starter] = char32_t(comp);
        continue;
      }
    }
    if (cc == 0) starter = w, have_starter = true;
    last_ccc = cc;
    d[w++] = char32_t(c);
  }
  d.resize(w);
  s.resize(first);
  s += d;
}

}  // namespace oc::text
