// Convolution weights prepared once (Backend::prepare_conv_weight, ops/cpu/conv.cpp): the
// forward on the kept copy is bitwise the plain one (the same primitive on the same reordered
// or rounded values), the copy is what runs while prepared (a weight written behind its back is
// not seen), and after release the plain path reads the weight again. The model's side:
// tests/model/resnet_infer_test.cpp.
#include "ops/cpu/conv.h"

#include <gtest/gtest.h>

#include <vector>

#include "normal_floats.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/registry.h"

namespace oc {
namespace {

std::vector<float> conv(ops::Backend& be, const std::vector<float>& x, const std::vector<float>& w,
                        const std::vector<float>& b, const ops::ConvShape& s, ops::Prec prec) {
  std::vector<float> y(size_t(s.out_size()));
  be.run(ops::Conv2dForwardArgs{
      .out = y.data(), .inp = x.data(), .weight = w.data(), .shape = s, .prec = prec, .bias = b.data(), .relu = true});
  return y;
}

// Every path on every CPU: fp32, bf16 on oneDNN's bf16 primitives where the CPU has them, and
// bf16 as the fp32 primitive on rounded values (forced here; the only one on AVX2 CPUs).
struct Case {
  ops::Prec prec;
  bool fallback;
};

TEST(ConvPrepared, BitwiseThePlainPathUntilReleased) {
  ops::Backend& be = ops::backend("cpu");
  for (Case c : {Case{ops::Prec::F32, false}, Case{ops::Prec::BF16, false}, Case{ops::Prec::BF16, true}})
    for (int64_t N : {1, 3}) {
      const ops::Prec prec = c.prec;
      ops::cpu::set_bf16_gemm_fallback(c.fallback);
      const ops::ConvShape s{N, 14, 14, 64, 96, 3, 1, 1};
      const auto x = test::normal_floats(size_t(s.in_size()), 1), b = test::normal_floats(size_t(s.OC), 3);
      auto w = test::normal_floats(size_t(s.weight_size()), 2);
      const auto plain = conv(be, x, w, b, s, prec);
      be.prepare_conv_weight(w.data(), s.weight_size());
      EXPECT_EQ(conv(be, x, w, b, s, prec), plain) << "prepared, first run (N=" << N << ")";
      EXPECT_EQ(conv(be, x, w, b, s, prec), plain) << "prepared, the kept copy (N=" << N << ")";
      if (prec == ops::Prec::BF16)  // bf16 layout or rounded values: never the user's OIHW floats
        EXPECT_GE(ops::prepared_conv_copies(w.data()), 1u);
      if (ops::prepared_conv_copies(w.data()) > 0) {  // the copy runs, not w
        const std::vector<float> w0 = w;
        for (float& v : w) v = -v;
        EXPECT_EQ(conv(be, x, w, b, s, prec), plain) << "a kept copy ignores writes until released";
        be.release_conv_weight(w.data());
        EXPECT_NE(conv(be, x, w, b, s, prec), plain) << "released: the new weights";
        w = w0;
      } else {
        be.release_conv_weight(w.data());
      }
      EXPECT_EQ(ops::prepared_conv_copies(w.data()), 0u);
      EXPECT_EQ(conv(be, x, w, b, s, prec), plain) << "released: the plain path, bitwise";
      ops::cpu::set_bf16_gemm_fallback(false);
    }
}

}  // namespace
}  // namespace oc
