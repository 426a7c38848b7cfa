// One suite for every backend: each op of backend_cases*.cpp runs on every registered backend
// other than `ref` and on `ref`, from identical argument contents in each backend's own
// buffers, and must agree with `ref` within the case's tolerance. Also: NaN/Inf propagate to
// the same outputs as in `ref`, nothing outside the written region changes (guard zones
// around every buffer, untouched padding and unwritten outputs), and two runs give bitwise
// identical results at one and at several threads (data at a different address the second
// time). A backend that is registered but not available here is skipped with a message.
// Finite-difference gradient checks stay on the double code (grad_*_test.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "backend_cases.h"
#include "ops/cpu/attention.h"
#include "ops/registry.h"
#include "core/rng.h"

namespace oc::ops::test {
namespace {

constexpr int64_t kGuard = 16;               // floats before and after every buffer
constexpr uint32_t kGuardBits = 0x7f8dead1;  // a signalling-NaN pattern no op produces
constexpr uint32_t kUnsetBits = 0x7fc0beef;  // quiet NaN: initial content of Out buffers

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> c = all_cases();
  return c;
}

// Host images of the arguments: 32-bit words (fp32) or 16-bit words (bf16) in a uint32 vector.
struct HostArgs {
  std::vector<std::vector<uint32_t>> a;  // each: guard + n + guard elements (bf16: packed in halves)
};

size_t words(const Arg& g) { return g.bf16 ? size_t(g.n + 2 * kGuard + 1) / 2 : size_t(g.n + 2 * kGuard); }

float as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Element i (guards included: i in [0, n + 2*kGuard)) of an argument image, widened to float.
float elem(const Arg& g, const std::vector<uint32_t>& w, int64_t i) {
  if (!g.bf16) return as_float(w[size_t(i)]);
  uint16_t h;
  std::memcpy(&h, reinterpret_cast<const uint16_t*>(w.data()) + i, 2);
  return to_f32(bf16{h});
}
void set_elem(const Arg& g, std::vector<uint32_t>& w, int64_t i, float v) {
  if (!g.bf16) {
    w[size_t(i)] = bits(v);
  } else {
    const bf16 h = to_bf16(v);
    std::memcpy(reinterpret_cast<uint16_t*>(w.data()) + i, &h.bits, 2);
  }
}
uint32_t raw(const Arg& g, const std::vector<uint32_t>& w, int64_t i) {
  if (!g.bf16) return w[size_t(i)];
  uint16_t h;
  std::memcpy(&h, reinterpret_cast<const uint16_t*>(w.data()) + i, 2);
  return h;
}

HostArgs make_inputs(const OpCase& c) {
  HostArgs h;
  Rng rng(std::hash<std::string>{}(c.name));
  for (const Arg& g : c.args) {
    std::vector<uint32_t> w(words(g), 0);
    for (int64_t i = 0; i < g.n + 2 * kGuard; ++i) {
      const bool guard = i < kGuard || i >= g.n + kGuard;
      float v;
      if (guard)
        v = as_float(kGuardBits);
      else if (g.kind == Kind::Out)
        v = as_float(kUnsetBits);
      else if (g.draw == Draw::Unit)
        v = float(rng.uniform() * g.scale);
      else if (g.draw == Draw::Positive)
        v = float((0.5 + 1.5 * rng.uniform()) * g.scale);
      else
        v = float(rng.normal() * g.scale);
      if (g.bf16 && guard) {  // 16-bit guard pattern
        const uint16_t gb = uint16_t(kGuardBits >> 16) ^ 0x0001;
        std::memcpy(reinterpret_cast<uint16_t*>(w.data()) + i, &gb, 2);
      } else {
        set_elem(g, w, i, v);
      }
    }
    h.a.push_back(std::move(w));
  }
  return h;
}

struct RunResult {
  HostArgs out;
  double ret = 0;
  float host[2] = {0, 0};
};

// Uploads the images into buffers of `be` (shifted by `shift` floats), runs, downloads.
RunResult run_on(Backend& be, const OpCase& c, const HostArgs& in, int shift = 0) {
  std::vector<Buffer> bufs;
  Ptrs p;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const size_t bytes = in.a[i].size() * 4;
    bufs.push_back(be.alloc(bytes + size_t(shift) * 4, c.name));
    char* base = static_cast<char*>(bufs.back().data()) + shift * 4;
    be.copy_from_host(base, in.a[i].data(), bytes);
    p.p.push_back(base + kGuard * (c.args[i].bf16 ? 2 : 4));
  }
  RunResult r;
  r.ret = c.run(be, p, r.host);
  be.synchronize();
  r.out = in;
  for (size_t i = 0; i < c.args.size(); ++i)
    be.copy_to_host(r.out.a[i].data(), static_cast<char*>(bufs[i].data()) + shift * 4, in.a[i].size() * 4);
  return r;
}

// Compares every output of `got` with `want`: guards intact, nonfinite where and only where
// ref is (or also elsewhere, with `extra_nonfinite`: see OpCase::nonfinite_may_spread_from),
// finite values within tolerance. Returns "" or the first problem.
std::string compare(const OpCase& c, const HostArgs& in, const RunResult& got, const RunResult& want,
                    bool extra_nonfinite = false) {
  for (size_t ai = 0; ai < c.args.size(); ++ai) {
    const Arg& g = c.args[ai];
    const auto &w = want.out.a[ai], &x = got.out.a[ai], &i0 = in.a[ai];
    const int64_t total = g.n + 2 * kGuard;
    double max_ref = 0, max_err = 0;
    int64_t worst = -1;
    for (int64_t i = 0; i < total; ++i) {
      const bool guard = i < kGuard || i >= g.n + kGuard;
      if (guard || g.kind == Kind::In) {
        if (raw(g, x, i) != raw(g, i0, i))
          return fmt::format("arg {} ({}) element {} changed (guard zone or input)", ai,
                             g.kind == Kind::In ? "input" : "output", i - kGuard);
        continue;
      }
      if (!g.compare) continue;
      const float r = elem(g, w, i), v = elem(g, x, i);
      // An element ref left as it was, which the backend changed by more than a few ulps: a write
      // where ref writes nothing (padding, unwritten rows). Within a few ulps it is an update that
      // rounded back to the old value in ref and one ulp off in the backend (AdamW's step where
      // weight decay and the step cancel: the first GPU run met one in 40,000).
      const double ulps = 4.0 * (g.bf16 ? 0x1p-8 : 0x1p-24) * std::abs(double(r));
      if (raw(g, w, i) == raw(g, i0, i) && raw(g, x, i) != raw(g, i0, i) && !(std::isnan(r) && std::isnan(v)) &&
          !(std::abs(double(v) - double(r)) <= ulps))
        return fmt::format("arg {} element {}: ref left it untouched, the backend wrote {}", ai, i - kGuard, v);
      if (extra_nonfinite && std::isfinite(r) && !std::isfinite(v)) continue;
      if (std::isfinite(r) != std::isfinite(v))
        return fmt::format("arg {} element {}: ref {} vs {}", ai, i - kGuard, r, v);
      if (!std::isfinite(r)) continue;
      max_ref = std::max(max_ref, double(std::abs(r)));
      const double e = std::abs(double(v) - double(r));
      if (e > max_err) max_err = e, worst = i - kGuard;
    }
    const double tol = g.bf16 ? c.tol16 : c.tol;
    const double rel = max_err / std::max(max_ref, 1e-30);
    if (rel > tol)
      return fmt::format("arg {}: max|x - ref| / max|ref| = {:.3g} > {:.3g} (worst element {}, max|ref| {:.4g})", ai,
                         rel, tol, worst, max_ref);
  }
  auto close = [&](double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) return a == b || (std::isnan(a) && std::isnan(b));
    return std::abs(a - b) <= std::max(c.tol, 1e-12) * std::max(1.0, std::abs(b));
  };
  if (!close(got.ret, want.ret)) return fmt::format("returned {} vs ref {}", got.ret, want.ret);
  for (int k = 0; k < 2; ++k)
    if (!close(got.host[k], want.host[k]))
      return fmt::format("host scalar {}: {} vs ref {}", k, got.host[k], want.host[k]);
  return "";
}

std::string bitwise(const OpCase& c, const RunResult& a, const RunResult& b) {
  for (size_t i = 0; i < c.args.size(); ++i)
    if (c.args[i].compare && a.out.a[i] != b.out.a[i]) return fmt::format("arg {} differs between runs", i);
  if (bits(float(a.ret)) != bits(float(b.ret)) || std::memcmp(a.host, b.host, sizeof a.host) != 0)
    return "returned values differ between runs";
  return "";
}

using Param = std::tuple<std::string, size_t>;  // backend, case index

class BackendOps : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string& name = std::get<0>(GetParam());
    for (const BackendInfo& b : backend_list())
      if (b.name == name && !b.available) GTEST_SKIP() << "backend " << name << " not available: " << b.description;
  }
  Backend& be() { return backend(std::get<0>(GetParam())); }
  const OpCase& op() { return cases()[std::get<1>(GetParam())]; }
  void expect_matches_ref() {
    const OpCase& c = op();
    const HostArgs in = make_inputs(c);
    const RunResult want = run_on(backend("ref"), c, in), got = run_on(be(), c, in);
    const std::string err = compare(c, in, got, want);
    EXPECT_TRUE(err.empty()) << c.name << ": " << err;
  }
};

TEST_P(BackendOps, MatchesRef) { expect_matches_ref(); }

// Same inputs twice at 1 thread and twice at the default count, the second time at a
// different address: bitwise identical per thread count.
TEST_P(BackendOps, BitwiseDeterministicPerThreadCount) {
  const OpCase& c = op();
  const HostArgs in = make_inputs(c);
  const int saved = omp_get_max_threads();
  for (int threads : {1, std::max(2, saved)}) {
    omp_set_num_threads(threads);
    const RunResult a = run_on(be(), c, in, 0), b = run_on(be(), c, in, 3);
    const std::string err = bitwise(c, a, b);
    EXPECT_TRUE(err.empty()) << c.name << " at " << threads << " threads: " << err;
  }
  omp_set_num_threads(saved);
}

class BackendOpsNonFinite : public BackendOps {};

// One NaN, then one +Inf, in the middle of each input in turn (the small shapes: propagation does not depend on size).
TEST_P(BackendOpsNonFinite, PropagatesAsInRef) {
  const OpCase& c = op();
  for (float bad : {NAN, INFINITY})
    for (size_t ai = 0; ai < c.args.size(); ++ai) {
      const Arg& g = c.args[ai];
      if (g.kind == Kind::Out || g.n == 0) continue;
      HostArgs in = make_inputs(c);
      set_elem(g, in.a[ai], kGuard + g.n / 2, bad);
      const RunResult want = run_on(backend("ref"), c, in), got = run_on(be(), c, in);
      const std::string err = compare(c, in, got, want, int(ai) == c.nonfinite_may_spread_from);
      EXPECT_TRUE(err.empty()) << c.name << " with " << bad << " in arg " << ai << ": " << err;
    }
}

// The available backends other than ref. A registered backend that is not available here (cuda
// without a GPU) gets its cases only where it runs (ctest discovers the tests on the machine
// that runs them); here it gets one skipped test that says why (BackendAvailability below),
// instead of a skipped process per case.
std::vector<std::string> backends_under_test() {
  std::vector<std::string> v;
  for (const BackendInfo& b : backend_list())
    if (b.name != "ref" && b.available) v.push_back(b.name);
  return v;
}

std::vector<std::string> unavailable_backends() {
  std::vector<std::string> v;
  for (const BackendInfo& b : backend_list())
    if (!b.available) v.push_back(b.name);
  return v.empty() ? std::vector<std::string>{"none"} : v;
}

class BackendAvailability : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendAvailability, SkippedHereWithTheReason) {
  for (const BackendInfo& b : backend_list())
    if (b.name == GetParam()) GTEST_SKIP() << "backend " << b.name << " not available: " << b.description;
  GTEST_SKIP() << "every registered backend is available here: nothing to report";
}
INSTANTIATE_TEST_SUITE_P(Registered, BackendAvailability, ::testing::ValuesIn(unavailable_backends()));

std::vector<size_t> case_indices(bool small_only) {
  std::vector<size_t> v;
  for (size_t i = 0; i < cases().size(); ++i)
    if (!small_only || cases()[i].small) v.push_back(i);
  return v;
}

std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return std::get<0>(p.param) + "_" + cases()[std::get<1>(p.param)].name;
}

INSTANTIATE_TEST_SUITE_P(All, BackendOps,
                         ::testing::Combine(::testing::ValuesIn(backends_under_test()),
                                            ::testing::ValuesIn(case_indices(false))),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Small, BackendOpsNonFinite,
                         ::testing::Combine(::testing::ValuesIn(backends_under_test()),
                                            ::testing::ValuesIn(case_indices(true))),
                         param_name);

// The cpu backend's attention_*_bf16 cases again with its sgemm fallback forced (what CPUs
// without AVX-512 run); where the CPU has it, the cases above ran the AVX-512 kernel.
class CpuAttentionBf16Fallback : public BackendOps {
 protected:
  void SetUp() override {
    BackendOps::SetUp();
    cpu::set_attention_bf16_fallback(true);
  }
  void TearDown() override { cpu::set_attention_bf16_fallback(false); }
};

TEST_P(CpuAttentionBf16Fallback, MatchesRef) { expect_matches_ref(); }

std::vector<size_t> attention_bf16_cases() {
  std::vector<size_t> v;
  for (size_t i = 0; i < cases().size(); ++i)
    if (cases()[i].name.rfind("attention_forward_bf16_", 0) == 0 ||
        cases()[i].name.rfind("attention_backward_bf16_", 0) == 0)
      v.push_back(i);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Sgemm, CpuAttentionBf16Fallback,
                         ::testing::Combine(::testing::Values(std::string("cpu")),
                                            ::testing::ValuesIn(attention_bf16_cases())),
                         param_name);

// The registry: ref and cpu always; an unknown name is an error listing what exists.
TEST(BackendRegistry, RefAndCpuAlwaysRegistered) {
  std::vector<std::string> names;
  for (const BackendInfo& b : backend_list()) names.push_back(b.name);
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "ref");
  EXPECT_EQ(names[1], "cpu");
  EXPECT_EQ(make_backend("ref")->name(), "ref");
  EXPECT_EQ(make_backend("cpu")->name(), "cpu");
  EXPECT_EQ(default_backend().name(), "cpu");
}

TEST(BackendRegistry, UnknownDeviceListsAvailable) {
  try {
    make_backend("tpu");
    FAIL() << "make_backend(\"tpu\") did not throw";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown device 'tpu'"), std::string::npos) << m;
    EXPECT_NE(m.find("ref, cpu"), std::string::npos) << m;
  }
}

TEST(BackendMemory, AllocationFailureSaysBytesAndWhat) {
  for (const char* name : {"ref", "cpu"}) {
    try {
      backend(name).alloc(size_t(1) << 62, "ViT-B-32 training activations, batch 256");
      FAIL() << name << ": a 4 EiB allocation succeeded";
    } catch (const std::exception& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("4611686018427387904 bytes"), std::string::npos) << m;
      EXPECT_NE(m.find("ViT-B-32 training activations, batch 256"), std::string::npos) << m;
    }
  }
}

TEST(BackendMemory, CopiesScalarsFillZero) {
  for (const char* name : {"ref", "cpu"}) {
    Backend& b = backend(name);
    Buffer x = b.alloc_floats(100, "test"), y = b.alloc_floats(100, "test", false);
    std::vector<float> host(100);
    for (int i = 0; i < 100; ++i) host[size_t(i)] = float(i) * 0.5f;
    b.copy_from_host(x.data(), host.data(), 400);
    b.copy(y.data(), x.data(), 400);
    b.write_scalar(y.f32() + 7, -3.0f);
    EXPECT_EQ(b.read_scalar(y.f32() + 7), -3.0f) << name;
    EXPECT_EQ(b.read_scalar(y.f32() + 8), 4.0f) << name;
    b.fill(y.f32() + 10, 5, 2.5f);
    b.zero(y.f32() + 20, 8);
    std::vector<float> back(100);
    b.copy_to_host(back.data(), y.data(), 400);
    for (int i = 0; i < 100; ++i) {
      float want = float(i) * 0.5f;
      if (i == 7) want = -3.0f;
      if (i >= 10 && i < 15) want = 2.5f;
      if (i >= 20 && i < 22) want = 0.0f;
      EXPECT_EQ(back[size_t(i)], want) << name << " element " << i;
    }
    Buffer moved = std::move(x);
    EXPECT_EQ(x.data(), nullptr);
    EXPECT_EQ(moved.bytes(), 400u);
    EXPECT_EQ(moved.backend(), &b);
  }
}

}  // namespace
}  // namespace oc::ops::test
