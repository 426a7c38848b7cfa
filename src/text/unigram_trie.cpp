#include "text/unigram_trie.h"

#include <algorithm>
#include <numeric>

namespace oc::text {

void UnigramTrie::build(const std::vector<std::string>& pieces) {
  std::vector<uint32_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return pieces[a] < pieces[b]; });
  nodes_.assign(1, Node{});
  edges_.clear();
  // Breadth-first over ranges of the sorted pieces sharing a prefix of `depth` bytes: each
  // node's children are made together, so its edges are contiguous.
  struct Range {
    uint32_t node;
    size_t lo, hi, depth;
  };
  std::vector<Range> todo{{0, 0, order.size(), 0}}, next;
  while (!todo.empty()) {
    next.clear();
    for (const Range& r : todo) {
      size_t lo = r.lo;
      for (; lo < r.hi && pieces[order[lo]].size() == r.depth; lo++)  // stable sort: the last id comes last
        if (r.depth > 0) nodes_[r.node].id = int32_t(order[lo]);
      nodes_[r.node].first = uint32_t(edges_.size());
      while (lo < r.hi) {
        uint8_t b = uint8_t(pieces[order[lo]][r.depth]);
        size_t hi = lo;
        while (hi < r.hi && uint8_t(pieces[order[hi]][r.depth]) == b) hi++;
        uint32_t node = uint32_t(nodes_.size());
        nodes_.push_back(Node{});
        edges_.push_back(Edge{b, node});
        nodes_[r.node].count++;
        next.push_back(Range{node, lo, hi, r.depth + 1});
        lo = hi;
      }
    }
    todo.swap(next);
  }
}

uint32_t UnigramTrie::child(uint32_t node, uint8_t b) const {
  const Node& n = nodes_[node];
  const Edge* first = edges_.data() + n.first;
  const Edge* last = first + n.count;
  const Edge* it = std::lower_bound(first, last, b, [](const Edge& e, uint8_t v) { return e.byte < v; });
  return it != last && it->byte == b ? it->node : kNone;
}

int32_t UnigramTrie::find(std::string_view s) const {
  if (s.empty() || nodes_.empty()) return -1;
  uint32_t node = 0;
  for (char c : s) {
    node = child(node, uint8_t(c));
    if (node == kNone) return -1;
  }
  return nodes_[node].id;
}

}  // namespace oc::text
