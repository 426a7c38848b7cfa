// Index search latency, one query at a time as the server runs it: 100,000 random unit
// vectors of 512 dimensions (ViT-B-32's embedding size), exact (IndexFlatIP) and HNSW
// (the settings of src/index/vector_index.cpp). The HNSW benchmark reports its recall@10
// against the exact answer; random vectors are the hard case for HNSW (no cluster structure).
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "core/rng.h"
#include "index/vector_index.h"

namespace oc::index {
namespace {

constexpr int kDim = 512;
constexpr int64_t kN = 100'000;

std::vector<float> unit_vectors(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(size_t(n) * kDim);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int d = 0; d < kDim; ++d) s += std::pow(v[size_t(i) * kDim + d] = float(rng.normal()), 2);
    for (int d = 0; d < kDim; ++d) v[size_t(i) * kDim + d] /= float(std::sqrt(s));
  }
  return v;
}

const std::vector<float>& base() {
  static const std::vector<float> v = unit_vectors(kN, 1);
  return v;
}

const VectorIndex& built(IndexKind kind) {
  static std::unique_ptr<VectorIndex> idx[2];
  auto& p = idx[kind == IndexKind::Flat ? 0 : 1];
  if (!p) {
    p = std::make_unique<VectorIndex>(kind, kDim);
    p->add(base().data(), kN);
  }
  return *p;
}

void BM_Search(benchmark::State& state) {
  const IndexKind kind = state.range(0) ? IndexKind::Hnsw : IndexKind::Flat;
  const auto& idx = built(kind);
  const auto queries = unit_vectors(200, 2);
  size_t q = 0;
  for (auto _ : state) {
    auto hits = idx.search(queries.data() + (q++ % 200) * kDim, 10);
    benchmark::DoNotOptimize(hits);
  }
  if (kind == IndexKind::Hnsw) {
    double found = 0;
    for (int i = 0; i < 200; ++i) {
      std::set<int64_t> exact;
      for (auto& h : built(IndexKind::Flat).search(queries.data() + size_t(i) * kDim, 10)) exact.insert(h.id);
      for (auto& h : idx.search(queries.data() + size_t(i) * kDim, 10)) found += exact.count(h.id);
    }
    state.counters["recall@10"] = found / 2000.0;
  }
}
BENCHMARK(BM_Search)->Arg(0)->Arg(1)->ArgNames({"hnsw"})->Unit(benchmark::kMicrosecond)->Iterations(400);

}  // namespace
}  // namespace oc::index
