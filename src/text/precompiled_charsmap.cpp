// Hand-written rather than through libsentencepiece: the library applies the map with its own
// (longest-match, per character) rule inside its normalizer and exposes neither the trie nor
// HF's per-grapheme rule, which tokenizer.json files need (see the header).
#include "text/precompiled_charsmap.h"

#include <fmt/format.h>

#include <cstring>

#include "core/check.h"
#include "text/grapheme_tables.h"
#include "text/unicode.h"

namespace oc::text {
namespace {

// Darts-clone's double-array unit layout.
bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t value(uint32_t u) { return u & ((1U << 31) - 1); }
uint32_t label(uint32_t u) { return u & ((1U << 31) | 0xFF); }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1U << 9)) >> 6); }

// End (exclusive) of the extended grapheme cluster starting at `i` in valid UTF-8 `s`: rules
// GB3-GB5 (CR LF, controls), GB9/GB9a (Extend, ZWJ, SpacingMark join the cluster) and GB9b
// (Prepend). The Hangul (GB6-8), emoji ZWJ (GB11) and regional-indicator (GB12/13) rules are
// not applied: the clusters they make are 6 bytes or longer (3-byte jamo, 4-byte indicators and
// pictographs), which the whole-cluster rule skips, so splitting them changes nothing there;
// the exception is a ZWJ sequence starting with a 2-byte pictograph (U+00A9, U+00AE).
size_t cluster_end(std::string_view s, size_t i) {
  size_t j = i;
  uint32_t cur = utf8_next(s.data(), j);
  Gcb cur_class = grapheme_class(cur);
  while (j < s.size()) {
    size_t k = j;
    uint32_t next = utf8_next(s.data(), k);
    Gcb next_class = grapheme_class(next);
    bool join;
    if (cur == '\r' && next == '\n')
      join = true;
    else if (cur_class == Gcb::Control || next_class == Gcb::Control)
      join = false;
    else
      join = next_class == Gcb::Extend || next_class == Gcb::SpacingMark || cur_class == Gcb::Prepend;
    if (!join) break;
    cur = next;
    cur_class = next_class;
    j = k;
  }
  return j;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const std::string& source) {
  if (blob.empty()) return;
  if (blob.size() < 4)
    OC_USER_ERROR("{}: precompiled_charsmap of {} bytes is truncated (needs a 4-byte trie size)", source, blob.size());
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as x86 and the blob
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || size_t(trie_bytes) > blob.size() - 4)
    OC_USER_ERROR("{}: precompiled_charsmap at byte offset 0: trie size {} does not fit the {}-byte blob", source,
                  trie_bytes, blob.size());
  units_.resize(trie_bytes / 4);
  std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  strings_.assign(blob.substr(4 + trie_bytes));
  // Lookups check every index against the array and the strings (a corrupt trie yields no
  // match, never a read outside); a replacement runs to the next NUL, and std::string keeps
  // one after the last string.
}

const char* PrecompiledCharsmap::shortest_prefix_match(std::string_view s) const {
  size_t pos = 0;
  pos ^= offset(units_[0]);
  for (unsigned char c : s) {
    pos ^= c;
    if (pos >= units_.size()) return nullptr;
    uint32_t u = units_[pos];
    if (label(u) != c) return nullptr;
    pos ^= offset(u);
    if (pos >= units_.size()) return nullptr;
    if (has_leaf(u)) {
      uint32_t v = value(units_[pos]);
      return v < strings_.size() ? strings_.data() + v : nullptr;
    }
  }
  return nullptr;
}

void PrecompiledCharsmap::normalize(std::string_view in, std::string& out) const {
  if (empty()) {
    out.append(in);
    return;
  }
  for (size_t i = 0; i < in.size();) {
    size_t end = cluster_end(in, i);
    std::string_view cluster = in.substr(i, end - i);
    const char* whole = cluster.size() < 6 ? shortest_prefix_match(cluster) : nullptr;
    if (whole) {
      out.append(whole);
    } else {
      for (size_t j = i; j < end;) {
        size_t k = j;
        utf8_next(in.data(), k);
        std::string_view ch = in.substr(j, k - j);
        const char* rep = shortest_prefix_match(ch);
        if (rep)
          out.append(rep);
        else
          out.append(ch);
        j = k;
      }
    }
    i = end;
  }
}

}  // namespace oc::text
