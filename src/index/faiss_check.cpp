#include "index/faiss_check.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>

#include <cstring>

#include "core/check.h"
#include "core/checked.h"
#include "io/file.h"

namespace oc::index {
namespace {

constexpr int64_t kMaxDim = 65536;  // model_config's bound on embed_dim
constexpr int64_t kMaxEf = 4096, kMaxLevels = 64, kMaxNeighbours = 1024;  // see check_hnsw_params

uint32_t fourcc(const char* s) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}

// Sequential reads of a faiss file; every error names the path, the field and its offset.
class Walk {
 public:
  explicit Walk(const std::string& path) : f_(open(path)) {}
  template <class T>
  T scalar(const char* field) {
    T v{};
    if (Status s = f_.read(at_, {reinterpret_cast<uint8_t*>(&v), sizeof v}); !s)
      OC_USER_ERROR("{}: faiss index truncated at byte {} ({})", f_.path(), at_, field);
    at_ += sizeof v;
    return v;
  }
  // A faiss vector: a uint64 count, then count x `unit` bytes. The count must fit in the
  // bytes left; they are skipped. Returns the count.
  uint64_t vector(const char* field, uint64_t unit) {
    const uint64_t where = at_;
    const uint64_t n = scalar<uint64_t>(field);
    const uint64_t left = f_.size() - at_;
    if (n > left / unit)
      OC_USER_ERROR("{}: faiss index field {} at byte {} claims {} x {} bytes but only {} are left in the file",
                    f_.path(), field, where, n, unit, left);
    at_ += n * unit;
    return n;
  }
  [[noreturn]] void fail(const std::string& what) const {
    OC_USER_ERROR("{}: bad faiss index near byte {}: {}", f_.path(), at_, what);
  }
  void end() const {
    if (at_ != f_.size()) fail(std::to_string(f_.size() - at_) + " bytes after the end of the index");
  }
  uint64_t size() const { return f_.size(); }

 private:
  static io::ReadFile open(const std::string& path) {
    auto f = io::ReadFile::open(path);
    if (!f) OC_USER_ERROR("{}: cannot read the faiss index: {}", path, f.error());
    return std::move(f).value();
  }
  io::ReadFile f_;
  uint64_t at_ = 0;
};

struct Header {
  int64_t d, ntotal;
};

// write_index_header: d, ntotal, two dummies, is_trained, metric_type (inner product only).
Header header(Walk& w) {
  Header h{w.scalar<int32_t>("d"), w.scalar<int64_t>("ntotal")};
  w.scalar<int64_t>("dummy");
  w.scalar<int64_t>("dummy");
  w.scalar<uint8_t>("is_trained");
  if (w.scalar<int32_t>("metric_type") != 0) w.fail("the metric is not inner product");
  if (h.d < 1 || h.d > kMaxDim) w.fail("dimension " + std::to_string(h.d) + " is out of range [1, 65536]");
  if (h.ntotal < 0 || h.ntotal > int64_t(w.size() / 4 / uint64_t(h.d)))
    w.fail("it claims " + std::to_string(h.ntotal) + " vectors of dimension " + std::to_string(h.d) +
           ", more than the file holds");
  return h;
}

// IxFI (after its fourcc): header, then the vectors (a count of 4-byte words).
void flat(Walk& w, const Header* outer) {
  const Header h = header(w);
  if (outer && (h.d != outer->d || h.ntotal != outer->ntotal)) w.fail("the HNSW storage disagrees with its index");
  if (w.vector("codes", 4) != uint64_t(h.ntotal * h.d))
    w.fail("the vectors are not ntotal x d = " + std::to_string(h.ntotal) + " x " + std::to_string(h.d) + " floats");
}

// IHNf: header, the HNSW graph (write_HNSW), then its flat storage.
void hnsw(Walk& w) {
  const Header h = header(w);
  const uint64_t probas = w.vector("assign_probas", 8), cum = w.vector("cum_nneighbor_per_level", 4);
  if (probas < 1 || cum != probas + 1) w.fail("bad level tables");
  if (w.vector("levels", 4) != uint64_t(h.ntotal)) w.fail("levels are not one per vector");
  if (w.vector("offsets", 8) != uint64_t(h.ntotal) + 1) w.fail("offsets are not one per vector plus one");
  w.vector("neighbors", 4);
  for (const char* f : {"entry_point", "max_level", "efConstruction", "efSearch", "upper_beam"}) w.scalar<int32_t>(f);
  if (w.scalar<uint32_t>("storage fourcc") != fourcc("IxFI")) w.fail("the HNSW storage is not an IndexFlatIP");
  flat(w, &h);
}

// Neighbour ids at each level: -1 (unused) or a vector that has that level.
void check_links(const faiss::HNSW& g, int64_t n, const std::string& path) {
  for (int64_t i = 0; i < n; ++i) {
    for (int l = 0; l < g.levels[size_t(i)]; ++l) {
      size_t b, e;
      g.neighbor_range(i, l, &b, &e);
      for (size_t k = b; k < e; ++k) {
        const int v = g.neighbors[k];
        if (v < -1 || v >= n || (v >= 0 && g.levels[size_t(v)] <= l))
          OC_USER_ERROR("{}: bad HNSW graph: vector {} has neighbour id {} at level {} (vectors: {})", path, i, v, l,
                        n);
      }
    }
  }
}
// The parameters faiss sizes its allocations from, against what this project writes (M 32:
// 64 neighbours at level 0, 32 above, ~7 levels; efConstruction 80, efSearch 128, upper_beam 1)
// with room to spare. Unbounded, upper_beam 2e9 made every search allocate heaps of that size
// inside faiss' OpenMP region (std::bad_alloc there is std::terminate), and a last level of
// 2e9 neighbours made appending one vector allocate 8 GB.
template <class Bad>
void check_hnsw_params(const faiss::HNSW& g, const Bad& bad) {
  auto bounded = [&](const char* field, int64_t v, int64_t hi) {
    if (v < 1 || v > hi)
      bad("HNSW field " + std::string(field) + " is " + std::to_string(v) + ", outside [1, " + std::to_string(hi) +
          "]");
  };
  bounded("efConstruction", g.efConstruction, kMaxEf);
  bounded("efSearch", g.efSearch, kMaxEf);
  bounded("upper_beam", g.upper_beam, kMaxEf);
  const auto& cum = g.cum_nneighbor_per_level;
  if (g.assign_probas.empty() || cum.size() != g.assign_probas.size() + 1 || cum[0] != 0) bad("bad level tables");
  bounded("assign_probas (levels)", int64_t(g.assign_probas.size()), kMaxLevels);
  double total = 0;
  for (double p : g.assign_probas) {
    if (!(p >= 0 && p <= 1)) bad("HNSW field assign_probas holds " + std::to_string(p) + ", not a probability");
    total += p;
  }
  if (total > 1.0 + 1e-6) bad("HNSW field assign_probas sums to " + std::to_string(total) + ", over 1");
  for (size_t l = 1; l < cum.size(); ++l) {
    if (cum[l] < cum[l - 1]) bad("neighbour counts per level decrease");
    if (cum[l] - cum[l - 1] > kMaxNeighbours)
      bad("HNSW field cum_nneighbor_per_level gives level " + std::to_string(l - 1) + " " +
          std::to_string(cum[l] - cum[l - 1]) + " neighbours, over " + std::to_string(kMaxNeighbours));
  }
}

}  // namespace

void check_faiss_layout(const std::string& path) {
  Walk w(path);
  const uint32_t h = w.scalar<uint32_t>("fourcc");
  if (h == fourcc("IHNf"))
    hnsw(w);
  else if (h == fourcc("IxFI"))
    flat(w, nullptr);
  else
    w.fail("not a flat or HNSW inner-product faiss index");
  w.end();
}

void check_faiss_structure(const faiss::Index& idx, const std::string& path) {
  const auto* h = dynamic_cast<const faiss::IndexHNSW*>(&idx);
  if (!h) return;  // flat: faiss checked codes.size() == ntotal * d against the file
  const faiss::HNSW& g = h->hnsw;
  const int64_t n = idx.ntotal;
  auto bad = [&](const std::string& what) { OC_USER_ERROR("{}: bad HNSW graph: {}", path, what); };
  const auto* st = dynamic_cast<const faiss::IndexFlatCodes*>(h->storage);
  if (!st || st->ntotal != n || st->d != idx.d) bad("its storage does not hold the index's vectors");
  check_hnsw_params(g, bad);
  const auto& cum = g.cum_nneighbor_per_level;
  if (g.levels.size() != size_t(n) || g.offsets.size() != size_t(n) + 1 || g.offsets[0] != 0)
    bad("levels or offsets are not one per vector");
  int max_level = -1;
  for (int64_t i = 0; i < n; ++i) {
    const int L = g.levels[size_t(i)];
    if (L < 1 || size_t(L) >= cum.size())
      bad("vector " + std::to_string(i) + " has level " + std::to_string(L - 1) + ", out of range");
    if (g.offsets[size_t(i) + 1] < g.offsets[size_t(i)] ||
        g.offsets[size_t(i) + 1] - g.offsets[size_t(i)] != size_t(cum[size_t(L)]))
      bad("the neighbour offsets of vector " + std::to_string(i) + " do not match its level");
    max_level = std::max(max_level, L - 1);
  }
  if (g.offsets[size_t(n)] != g.neighbors.size()) bad("the offsets do not end at the neighbour table's size");
  if (g.max_level != max_level)
    bad("max_level " + std::to_string(g.max_level) + " is not the highest level " + std::to_string(max_level));
  if (n == 0 ? g.entry_point != -1
             : g.entry_point < 0 || g.entry_point >= n || g.levels[size_t(g.entry_point)] - 1 != max_level)
    bad("entry point " + std::to_string(g.entry_point) + " is not a vector of the top level");
  check_links(g, n, path);
}

}  // namespace oc::index
