// Grapheme_Cluster_Break classes (Unicode 15.0, generated: src/text/grapheme_tables.cpp by
// tests/reference/gen_grapheme_tables.py), enough to find the extended grapheme clusters that
// Hugging Face's Precompiled normalizer treats as a whole (precompiled_charsmap.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace oc::text {

struct CodeRange {
  uint32_t lo, hi;  // inclusive
};

namespace tables {
extern const CodeRange kGcbExtend[];  // Extend and ZWJ
extern const size_t kGcbExtendSize;
extern const CodeRange kGcbSpacingMark[];
extern const size_t kGcbSpacingMarkSize;
extern const CodeRange kGcbPrepend[];
extern const size_t kGcbPrependSize;
extern const CodeRange kGcbControl[];  // Control, CR and LF
extern const size_t kGcbControlSize;
}  // namespace tables

enum class Gcb : uint8_t { Other, Extend, SpacingMark, Prepend, Control };

inline bool in_ranges(const CodeRange* r, size_t n, uint32_t cp) {
  const CodeRange* it = std::upper_bound(r, r + n, cp, [](uint32_t c, const CodeRange& x) { return c < x.lo; });
  return it != r && cp <= (it - 1)->hi;
}

inline Gcb grapheme_class(uint32_t cp) {
  using namespace tables;
  if (cp < 0x300) return cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xAD ? Gcb::Control : Gcb::Other;
  if (in_ranges(kGcbExtend, kGcbExtendSize, cp)) return Gcb::Extend;
  if (in_ranges(kGcbSpacingMark, kGcbSpacingMarkSize, cp)) return Gcb::SpacingMark;
  if (in_ranges(kGcbPrepend, kGcbPrependSize, cp)) return Gcb::Prepend;
  if (in_ranges(kGcbControl, kGcbControlSize, cp)) return Gcb::Control;
  return Gcb::Other;
}

}  // namespace oc::text
