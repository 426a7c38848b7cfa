// The vocabulary of a Unigram model as a byte trie: exact lookup and the common-prefix search
// the Viterbi lattice needs (every piece that starts a string, shortest first). Nodes and edges
// are flat arrays built from the sorted pieces, so a 250,000-piece vocabulary (mT5) costs a few
// MB and no per-node allocation.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oc::text {

class UnigramTrie {
 public:
  // pieces[i] has id i; of duplicates the last id wins (tokenizers' token_to_ids). Empty pieces
  // are left out.
  void build(const std::vector<std::string>& pieces);
  int32_t find(std::string_view s) const;  // id of piece `s`, or -1

  // Calls f(length, id) for every piece that is a prefix of `s`, shortest first.
  template <class F>
  void prefixes(std::string_view s, F&& f) const {
    uint32_t node = 0;
    for (size_t i = 0; i < s.size(); i++) {
      node = child(node, uint8_t(s[i]));
      if (node == kNone) return;
      if (nodes_[node].id >= 0) f(i + 1, nodes_[node].id);
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    int32_t id = -1;
    uint32_t first = 0, count = 0;  // edges_[first, first + count), sorted by byte
  };
  struct Edge {
    uint8_t byte;
    uint32_t node;
  };
  uint32_t child(uint32_t node, uint8_t b) const;

  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
};

}  // namespace oc::text
