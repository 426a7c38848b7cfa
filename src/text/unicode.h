// UTF-8 and Unicode helpers for the tokenizer: validation, decoding (strict and Python's
// errors="replace"), code point properties, str.lower() and NFC, each matching CPython 3.11.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/unicode_tables.h"

namespace oc::text {

// Offset of the first byte of the first ill-formed UTF-8 sequence (Unicode Table 3-7:
// no overlongs, no surrogates, nothing above U+10FFFF), or npos when `s` is valid.
size_t utf8_invalid_offset(std::string_view s);
// "invalid UTF-8 at byte offset N (bytes 0x.. 0x..)" for the ill-formed sequence at `bad`.
std::string utf8_error_message(std::string_view s, size_t bad);

// Decodes one code point of *valid* UTF-8 at s[i], advancing i.
inline uint32_t utf8_next(const char* s, size_t& i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s) + i;
  uint32_t c = p[0];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    i += 2;
    return ((c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (c < 0xF0) {
    i += 3;
    return ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  i += 4;
  return ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

inline void utf8_append(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out.push_back(char(c));
  } else if (c < 0x800) {
    out.push_back(char(0xC0 | (c >> 6)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(char(0xE0 | (c >> 12)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (c >> 18)));
    out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  }
}

// Valid UTF-8 -> code points, and back.
void utf8_to_u32(std::string_view s, std::u32string& out);
void u32_to_utf8(std::u32string_view s, std::string& out);

// bytes.decode("utf-8", errors="replace"): one U+FFFD per maximal ill-formed subpart.
std::string utf8_decode_replace(std::string_view bytes);

inline uint16_t props(uint32_t cp) { return tables::props(cp); }
uint8_t combining_class(uint32_t cp);

// dst = str.lower() of src (full mappings and the Final_Sigma rule, which looks at src).
void lower(std::u32string_view src, std::u32string& dst);

// Each code point lower-cased on its own (Rust's char::to_lowercase, full mappings): like
// lower() but U+03A3 always becomes U+03C3, never the final sigma.
void lower_chars(std::u32string_view src, std::u32string& dst);

// unicodedata.normalize("NFD", s) into dst (overwritten): full canonical decomposition
// (Hangul syllables algorithmically), then canonical ordering of non-starters.
void nfd(std::u32string_view s, std::u32string& dst);

// unicodedata.normalize("NFC", s), in place. Cheap when every code point is NFC-safe.
void nfc_inplace(std::u32string& s);

}  // namespace oc::text
