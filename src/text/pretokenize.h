// SimpleTokenizer's pre-tokenizer, as regex.findall runs it over cleaned text:
//   <start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
// with regex.IGNORECASE. At each position the alternatives are tried in that order; a
// position nothing matches (whitespace, U+0345) is skipped. Header-only: it is the hot loop.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "text/unicode.h"

namespace oc::text {

namespace detail {

inline const std::array<uint16_t, 128>& ascii_props() {
  static const std::array<uint16_t, 128> t = [] {
    std::array<uint16_t, 128> a{};
    for (uint32_t c = 0; c < 128; c++) a[c] = props(c);
    return a;
  }();
  return t;
}

// Case-insensitive literal match at s[i] (pattern in lower case). Under IGNORECASE the
// `regex` module matches an ASCII letter by its two cases, and 's' also by U+017F (long s);
// tests/reference/gen_unicode_tables.py asserts that no other code point matches.
inline size_t match_literal(std::string_view s, size_t i, std::string_view pat) {
  const size_t start = i;
  for (char pc : pat) {
    if (i >= s.size()) return 0;
    auto c = static_cast<uint8_t>(s[i]);
    if (pc >= 'a' && pc <= 'z') {
      if ((c | 0x20) == uint8_t(pc)) {
        i++;
      } else if (pc == 's' && c == 0xC5 && i + 1 < s.size() && uint8_t(s[i + 1]) == 0xBF) {
        i += 2;
      } else {
        return 0;
      }
    } else {
      if (c != uint8_t(pc)) return 0;
      i++;
    }
  }
  return i - start;
}

inline size_t match_special(std::string_view s, size_t i) {
  if (size_t m = match_literal(s, i, "<start_of_text>")) return m;
  return match_literal(s, i, "<end_of_text>");
}

inline size_t match_contraction(std::string_view s, size_t i) {
  static constexpr std::string_view kAlts[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
  for (std::string_view a : kAlts)
    if (size_t m = match_literal(s, i, a)) return m;
  return 0;
}

// End of the run of code points starting at i that all have property bit `bit`.
inline size_t scan_run(std::string_view s, size_t i, uint16_t bit) {
  const auto& ap = ascii_props();
  const size_t n = s.size();
  while (i < n) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      if (!(ap[c] & bit)) break;
      i++;
    } else {
      size_t j = i;
      uint32_t cp = utf8_next(s.data(), j);
      if (!(props(cp) & bit)) break;
      i = j;
    }
  }
  return i;
}

}  // namespace detail

// Calls emit(begin, end) for each match of `s` (valid UTF-8), in order; emit returns false
// to stop early.
template <class Emit>
void pretokenize(std::string_view s, Emit&& emit) {
  const auto& ap = detail::ascii_props();
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    auto c = static_cast<uint8_t>(s[i]);
    uint16_t pr;
    size_t next;
    if (c < 0x80) {
      if (c == '<') {
        if (size_t m = detail::match_special(s, i)) {
          if (!emit(i, i + m)) return;
          i += m;
          continue;
        }
      } else if (c == '\'') {
        if (size_t m = detail::match_contraction(s, i)) {
          if (!emit(i, i + m)) return;
          i += m;
          continue;
        }
      }
      pr = ap[c];
      next = i + 1;
    } else {
      next = i;
      pr = props(utf8_next(s.data(), next));
    }
    size_t end;
    if (pr & tables::kLetter) {
      end = detail::scan_run(s, next, tables::kLetter);
    } else if (pr & tables::kNumber) {
      end = next;
    } else if (pr & tables::kPunct) {
      end = detail::scan_run(s, next, tables::kPunct);
    } else {
      i = next;
      continue;
    }
    if (!emit(i, end)) return;
    i = end;
  }
}

}  // namespace oc::text
