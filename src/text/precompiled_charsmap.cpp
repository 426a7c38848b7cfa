// Hand-written rather than through libsentencepiece: the library applies the map with its own
// (longest-match, per character) rule inside its normalizer and exposes neither the trie nor
// HF's per-grapheme rule, which tokenizer.json files need (see the header).
#include "text/precompiled_charsmap.h"

#include <fmt/format.h>

#include <algorithm>
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

void check_charsmap_blob(std::string_view blob, const std::string& source) {
  if (blob.size() < 4)
    OC_USER_ERROR("{}: precompiled_charsmap of {} bytes is truncated (needs a 4-byte trie size)", source, blob.size());
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as x86 and the blob
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || size_t(trie_bytes) >= blob.size() - 4)
    OC_USER_ERROR(
        "{}: precompiled_charsmap at byte offset 0: trie size {} does not fit the {}-byte blob with its "
        "replacement strings after it",
        source, trie_bytes, blob.size());
  std::vector<uint32_t> units(trie_bytes / 4);
  std::memcpy(units.data(), blob.data() + 4, trie_bytes);
  const std::string_view strings = blob.substr(4 + trie_bytes);
  const size_t base = 4 + size_t(trie_bytes);
  // The replacements: NUL-terminated UTF-8 (libsentencepiece reads one up to its NUL).
  if (strings.back() != '\0')
    OC_USER_ERROR("{}: precompiled_charsmap: the replacement strings do not end with a NUL byte (byte offset {})",
                  source, blob.size() - 1);
  for (size_t at = 0; at < strings.size();) {
    size_t end = strings.find('\0', at);
    std::string_view s = strings.substr(at, end - at);
    if (size_t bad = utf8_invalid_offset(s); bad != std::string_view::npos)
      OC_USER_ERROR("{}: precompiled_charsmap: the replacement string at byte offset {} is not UTF-8: {}", source,
                    base + at, utf8_error_message(s, bad));
    at = end + 1;
  }
  // Every state the trie can reach, as Darts-clone's commonPrefixSearch walks it for any byte
  // (it checks nothing itself): each unit read must lie in the array and each value must
  // start a character of the strings.
  auto fail = [&](size_t unit, const char* what) {
    OC_USER_ERROR("{}: precompiled_charsmap: trie unit {} (byte offset {}) {}", source, unit, 4 + 4 * unit, what);
  };
  std::vector<uint8_t> seen(units.size(), 0);
  std::vector<uint32_t> todo{offset(units[0])};
  while (!todo.empty()) {
    const uint32_t state = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < 256; c++) {
      const uint32_t idx = state ^ c;
      if (idx >= units.size()) fail(idx, "is reached but lies past the trie's end");
      const uint32_t u = units[idx];
      if (label(u) != c) continue;
      const uint32_t next = idx ^ offset(u);
      if (next >= units.size()) fail(idx, "leads past the trie's end");
      if (has_leaf(u)) {
        const uint32_t v = value(units[next]);
        if (v >= strings.size()) fail(next, "holds a replacement offset past the strings' end");
        if ((uint8_t(strings[v]) & 0xC0) == 0x80) fail(next, "holds a replacement offset inside a character");
      }
      if (!seen[next]) {
        seen[next] = 1;
        todo.push_back(next);
      }
    }
  }
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const std::string& source) {
  if (blob.empty()) return;
  check_charsmap_blob(blob, source);
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);
  units_.resize(trie_bytes / 4);
  std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  strings_.assign(blob.substr(4 + trie_bytes));
  // Lookups still check every index against the array (a corrupt trie yields no match, never a
  // read outside); a replacement runs to the next NUL, and the blob ends with one.
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
      return v < strings_.size() ? strings_.data() + v : nullptr;  // checked at load: UTF-8 from a character start
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
