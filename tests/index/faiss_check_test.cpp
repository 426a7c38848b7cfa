// A damaged faiss index is refused at load, before any search (issue 22, item 2): each
// field of an HNSW index and a flat index's vector count, written with a wrong value into
// an index this project wrote. On the code before the checks, these loaded without
// complaint and the first search segfaulted (or the flat count zero-filled 2 GB).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/check.h"
#include "core/fs.h"
#include "core/rng.h"
#include "index/vector_index.h"
#include "test_util.h"

namespace oc::index {
namespace {

// Byte offsets of the fields of an IndexHNSWFlat file (faiss 1.7's write_HNSW order).
struct HnswLayout {
  size_t probas, cum, levels, offsets, neighbors, entry_point, max_level, storage_codes;
  int64_t n;
};

template <class T>
T get(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
template <class T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

constexpr size_t kHeader = 4 + 4 + 8 + 8 + 8 + 1 + 4;  // fourcc, d, ntotal, 2 dummies, is_trained, metric

HnswLayout layout(const std::vector<uint8_t>& b) {
  HnswLayout l{};
  l.n = get<int64_t>(b, 8);
  size_t at = kHeader;
  auto vec = [&](size_t unit) {
    const size_t here = at;
    at += 8 + get<uint64_t>(b, at) * unit;
    return here;
  };
  l.probas = vec(8), l.cum = vec(4), l.levels = vec(4), l.offsets = vec(8), l.neighbors = vec(4);
  l.entry_point = at, l.max_level = at + 4;
  at += 5 * 4;
  l.storage_codes = at + kHeader;
  return l;
}

std::vector<float> unit_rows(int64_t n, int d, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t(n * d));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int k = 0; k < d; ++k) s += std::pow(x[size_t(i * d + k)] = float(rng.normal()), 2);
    for (int k = 0; k < d; ++k) x[size_t(i * d + k)] /= float(std::sqrt(s));
  }
  return x;
}

std::string saved(IndexKind kind, const std::string& dir, int64_t n = 300, int d = 8) {
  VectorIndex vi(kind, d);
  auto x = unit_rows(n, d, 5);
  vi.add(x.data(), n);
  const std::string p = dir + "/" + kind_name(kind) + ".index";
  vi.save(p);
  return p;
}

std::string load_error(const std::string& path) {
  try {
    VectorIndex::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The saved HNSW index with `edit` applied, loaded: the error (or "" when it loaded).
std::string edited_hnsw(const std::string& dir, const std::function<void(std::vector<uint8_t>&, const HnswLayout&)>& edit) {
  static int k = 0;
  auto bytes = fs::read_file(saved(IndexKind::Hnsw, dir)).value();
  edit(bytes, layout(bytes));
  const std::string p = dir + "/edited" + std::to_string(k++) + ".index";
  fs::write_atomic(p, bytes);
  return load_error(p);
}

TEST(FaissCheck, IndexesWeWriteLoadAndSearch) {
  const std::string dir = test::fresh_dir("faiss_ok");
  for (IndexKind kind : {IndexKind::Flat, IndexKind::Hnsw}) {
    auto vi = VectorIndex::load(saved(kind, dir));
    auto q = unit_rows(300, 8, 5);
    auto hits = vi.search(q.data() + 8 * 17, 3);
    ASSERT_FALSE(hits.empty());
    EXPECT_EQ(hits[0].id, 17);
  }
  EXPECT_EQ(edited_hnsw(dir, [](auto&, auto&) {}), "");
}

TEST(FaissCheck, EveryCorruptedHnswFieldIsRefused) {
  const std::string dir = test::fresh_dir("faiss_hnsw");
  struct Case {
    const char* name;
    std::function<void(std::vector<uint8_t>&, const HnswLayout&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"neighbour id past the end", [](auto& b, auto& l) { put<int32_t>(b, l.neighbors + 8 + 4 * 3, int32_t(l.n + 1000)); },
       "has neighbour id 1300"},
      {"negative neighbour id", [](auto& b, auto& l) { put<int32_t>(b, l.neighbors + 8, -7); }, "neighbour id -7"},
      {"entry point past the end", [](auto& b, auto& l) { put<int32_t>(b, l.entry_point, int32_t(l.n)); }, "entry point 300"},
      {"negative entry point", [](auto& b, auto& l) { put<int32_t>(b, l.entry_point, -5); }, "entry point -5"},
      {"max level too high", [](auto& b, auto& l) { put<int32_t>(b, l.max_level, 9); }, "max_level 9"},
      {"level out of range", [](auto& b, auto& l) { put<int32_t>(b, l.levels + 8, 1000); }, "vector 0 has level 999"},
      {"offset out of range", [](auto& b, auto& l) { put<uint64_t>(b, l.offsets + 8 + 8 * 2, uint64_t(1) << 40); },
       "neighbour offsets of vector"},
      {"vector count past the file", [](auto& b, auto& l) { put<uint64_t>(b, l.neighbors, uint64_t(1) << 36); },
       "field neighbors at byte"},
      {"flat storage count", [](auto& b, auto& l) { put<uint64_t>(b, l.storage_codes, uint64_t(1) << 29); },
       "field codes at byte"},
      {"ntotal", [](auto& b, auto&) { put<int64_t>(b, 8, int64_t(1) << 40); }, "more than the file holds"},
      {"dimension", [](auto& b, auto&) { put<int32_t>(b, 4, -3); }, "dimension -3"},
  };
  for (auto& c : cases) {
    const std::string e = edited_hnsw(dir, c.edit);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(dir + "/edited"), std::string::npos) << c.name << ": names the file: " << e;
  }
}

TEST(FaissCheck, FlatIndexClaimingMoreVectorsThanItsBytesIsRefusedBeforeAllocating) {
  const std::string dir = test::fresh_dir("faiss_flat");
  auto bytes = fs::read_file(saved(IndexKind::Flat, dir, 40, 8)).value();  // 1.3 KB
  put<uint64_t>(bytes, kHeader, uint64_t(1) << 29);  // 2^29 4-byte words: faiss zero-filled 2 GB
  fs::write_atomic(dir + "/big.index", bytes);
  const std::string e = load_error(dir + "/big.index");
  EXPECT_NE(e.find("claims 536870912 x 4 bytes but only 1280 are left"), std::string::npos) << e;
  fs::write_atomic(dir + "/trunc.index", std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20));
  EXPECT_NE(load_error(dir + "/trunc.index").find("truncated at byte"), std::string::npos);
  fs::write_atomic(dir + "/other.index", std::string("IxF2 not ours"));
  EXPECT_NE(load_error(dir + "/other.index").find("not a flat or HNSW inner-product faiss index"), std::string::npos);
}

}  // namespace
}  // namespace oc::index
