// Inference attention (ops/attention.h, att null): no [B,H,T,T] probabilities buffer, each
// (batch, head) block computed in the thread's scratch. The arithmetic is the same as with the
// buffer, so the outputs must be bitwise equal, on the cpu backend (fp32, fp32 with bf16-rounded
// operands, amp_bf16 with its AVX-512 kernel and its sgemm fallback) and on ref, with and without
// the causal mask, at 1 and 2 threads (the blocks are split over threads; each thread's scratch
// must not leak between blocks).
#include <fmt/format.h>

#include <cstring>

#include "core/bf16.h"
#include "core/parallel.h"
#include "ops/attention.h"
#include "ops/cpu/attention.h"
#include "ops/registry.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

struct Shape {
  int64_t B, T, C, H;
};
// ViT-B-32's 50 tokens (head size 64), the text tower's 77, and an odd 13 tokens / head size 16
// with more blocks than threads.
const Shape kShapes[] = {{2, 50, 128, 2}, {1, 77, 128, 2}, {3, 13, 64, 4}};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

std::vector<bf16> to_b16(const std::vector<float>& v) {
  std::vector<bf16> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = to_bf16(v[i]);
  return r;
}

void check_fp32(Backend& be, const Shape& s, bool causal, Prec prec, const std::string& where) {
  Rng rng(uint64_t(s.T * 7 + causal));
  const auto qkv = randn<float>(rng, s.B * s.T * 3 * s.C);
  std::vector<float> kept(size_t(s.B * s.T * s.C)), lean(kept.size()), att(size_t(s.B * s.H * s.T * s.T));
  be.run(AttentionForwardArgs{.out = kept.data(),
                              .att = att.data(),
                              .qkv = qkv.data(),
                              .B = s.B,
                              .Tn = s.T,
                              .C = s.C,
                              .H = s.H,
                              .causal = causal,
                              .prec = prec});
  be.run(AttentionForwardArgs{.out = lean.data(),
                              .att = nullptr,
                              .qkv = qkv.data(),
                              .B = s.B,
                              .Tn = s.T,
                              .C = s.C,
                              .H = s.H,
                              .causal = causal,
                              .prec = prec});
  EXPECT_TRUE(same_bits(kept, lean)) << where;
}

void check_bf16(Backend& be, const Shape& s, bool causal, const std::string& where) {
  Rng rng(uint64_t(s.T * 5 + causal));
  const auto qkv = to_b16(randn<float>(rng, s.B * s.T * 3 * s.C));
  std::vector<bf16> kept(size_t(s.B * s.T * s.C)), lean(kept.size());
  std::vector<float> att(size_t(s.B * s.H * s.T * s.T));
  be.run(AttentionForwardBf16Args{.out = kept.data(),
                                  .att = att.data(),
                                  .qkv = qkv.data(),
                                  .B = s.B,
                                  .Tn = s.T,
                                  .C = s.C,
                                  .H = s.H,
                                  .causal = causal});
  be.run(AttentionForwardBf16Args{.out = lean.data(),
                                  .att = nullptr,
                                  .qkv = qkv.data(),
                                  .B = s.B,
                                  .Tn = s.T,
                                  .C = s.C,
                                  .H = s.H,
                                  .causal = causal});
  std::vector<uint16_t> a(kept.size()), b(lean.size());
  for (size_t i = 0; i < kept.size(); ++i) a[i] = kept[i].bits, b[i] = lean[i].bits;
  EXPECT_TRUE(same_bits(a, b)) << where;
}

TEST(AttentionInference, WithoutTheProbabilitiesBufferIsBitwiseTheSame) {
  const int saved = num_threads();
  for (const char* name : {"cpu", "ref"}) {
    Backend& be = backend(name);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (const Shape& s : kShapes)
        for (bool causal : {false, true}) {
          const std::string where =
              fmt::format("{} threads {} B={} T={} C={} H={} causal={}", name, threads, s.B, s.T, s.C, s.H, causal);
          check_fp32(be, s, causal, Prec::F32, where + " fp32");
          check_fp32(be, s, causal, Prec::BF16, where + " fp32, bf16 operands");
          check_bf16(be, s, causal, where + " amp_bf16 " + cpu::attention_bf16_kernel());
          cpu::set_attention_bf16_amx(false);
          check_bf16(be, s, causal, where + " amp_bf16 " + cpu::attention_bf16_kernel());
          cpu::set_attention_bf16_amx(true);
          cpu::set_attention_bf16_fallback(true);
          check_bf16(be, s, causal, where + " amp_bf16 sgemm fallback");
          cpu::set_attention_bf16_fallback(false);
        }
    }
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace oc::ops::test
