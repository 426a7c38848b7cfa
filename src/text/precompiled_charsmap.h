// SentencePiece's precompiled normalization map ("precompiled_charsmap": nmt_nfkc and the like)
// as Hugging Face's `Precompiled` normalizer applies it (tokenizers/src/normalizers/
// precompiled.rs with the spm_precompiled crate). The blob is
//   <uint32 LE trie size> <Darts-clone double-array trie (uint32 units)> <NUL-terminated strings>
// the trie mapping UTF-8 keys to offsets of replacement strings.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oc::text {

// Checks `blob` as both its readers index it (this class and libsentencepiece's normalizer,
// whose Darts-clone trie walk has no bounds checks): the trie size fits, every unit any byte
// sequence can reach lies inside the trie, every replacement offset starts a character of the
// NUL-terminated, valid UTF-8 strings. Throws oc::Error "<source>: precompiled_charsmap: ..."
// naming the unit and its byte offset.
void check_charsmap_blob(std::string_view blob, const std::string& source);

class PrecompiledCharsmap {
 public:
  PrecompiledCharsmap() = default;
  // Checks (check_charsmap_blob) and splits the blob. An empty blob is the identity.
  PrecompiledCharsmap(std::string_view blob, const std::string& source);

  bool empty() const { return units_.empty(); }

  // HF's normalization of valid UTF-8 `in`, appended to `out`: per extended grapheme cluster,
  // a cluster under 6 bytes whose first bytes match a key (the SHORTEST matching key, as
  // spm_precompiled's transform takes results[0]) is replaced as a whole by that key's
  // replacement, dropping the rest of the cluster (e.g. "ﬁ" + U+0301 -> "fi"); otherwise each
  // character is replaced by its own entry or kept. sentencepiece itself differs there (it
  // takes the longest key at each character); this is the tokenizer.json behaviour.
  void normalize(std::string_view in, std::string& out) const;

 private:
  // The replacement of the shortest key that is a prefix of `s`, or nullptr.
  const char* shortest_prefix_match(std::string_view s) const;

  std::vector<uint32_t> units_;
  std::string strings_;
};

}  // namespace oc::text
