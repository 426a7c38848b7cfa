#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "../test_util.h"

#include "core/base64.h"
#include "core/bf16.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/py_random.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace oc {
namespace {

TEST(Check, MessageCarriesFileAndLine) {
  try {
    OC_CHECK(1 + 1 == 3, "math is {}", "broken");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("core_test.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("math is broken"), std::string::npos) << m;
  }
}

TEST(Base64, Rfc4648TestVectors) {
  auto enc = [](std::string s) {
    return base64_encode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  };
  // RFC 4648 section 10, plus bytes >= 0x80 and all three padding cases.
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("f"), "Zg==");
  EXPECT_EQ(enc("fo"), "Zm8=");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foob"), "Zm9vYg==");
  EXPECT_EQ(enc("fooba"), "Zm9vYmE=");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
  EXPECT_EQ(enc("\xff\xfe\xfd"), "//79");
  EXPECT_EQ(enc("\x89PNG\r\n\x1a\n"), "iVBORw0KGgo=");
}

TEST(Base64, DecodeInvertsEncodeAndRejectsMalformedInput) {
  auto bytes = [](std::string s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  const std::vector<std::string> samples = {"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\x00\xff\x80", 3)};
  for (const std::string& s : samples) {
    auto b = bytes(s);
    auto back = base64_decode(base64_encode(b));
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_EQ(*back, b) << s;
  }
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), bytes("foobar"));                    // whitespace skipped
  EXPECT_EQ(base64_decode("data:image/png;base64,Zm9vYg=="), bytes("foob"));   // data: URI prefix removed
  EXPECT_FALSE(base64_decode("data:image/png,Zm9v").has_value());             // a data: URI that is not base64
  EXPECT_FALSE(base64_decode("Zm9v!").has_value());                           // outside the alphabet
  EXPECT_FALSE(base64_decode("Zg==Zg==").has_value());                        // data after padding
  EXPECT_FALSE(base64_decode("Zg=").has_value());                             // padding to a bad length
  EXPECT_FALSE(base64_decode("Zm9vY").has_value());                           // one symbol over a group
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly half-way between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(to_bf16(1.0f + 1.0f / 256).bits, 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(to_f32(to_bf16(NAN))));
  EXPECT_FLOAT_EQ(round_bf16(3.140625f), 3.140625f);
}

TEST(Rng, DeterministicAndInRange) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    (void)c;
  }
  double sum = 0, sq = 0;
  Rng r(7);
  for (int i = 0; i < 100000; ++i) {
    double v = r.normal();
    sum += v, sq += v * v;
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_LT(r.below(10), 10u);
  }
  EXPECT_NEAR(sum / 100000, 0.0, 0.02);
  EXPECT_NEAR(sq / 100000, 1.0, 0.02);
  Rng s(9);
  s.normal();
  auto st = s.state();
  double n1 = s.normal();
  s.set_state(st);
  EXPECT_EQ(n1, s.normal());
}

TEST(Tensor, DtypesAndConversions) {
  DType t;
  ASSERT_TRUE(dtype_from_name("BF16", &t));
  EXPECT_EQ(t, DType::BF16);
  EXPECT_FALSE(dtype_from_name("F33", &t));
  HostTensor h(DType::BF16, {2});
  uint16_t v[2] = {0x3f80, 0xc000};
  std::memcpy(h.bytes.data(), v, 4);
  auto f = h.to_f32();
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
}

TEST(Fs, AtomicWriteReplacesOrKeepsOld) {
  std::string dir = ::testing::TempDir() + "/oc_fs_test";
  fs::make_dirs(dir);
  std::string p = dir + "/a.txt";
  fs::write_atomic(p, std::string("first"));
  EXPECT_EQ(fs::read_text(p).value(), "first");
  EXPECT_THROW(fs::write_atomic(p, [](const fs::Sink& sink) {
                 sink(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("xx"), 2));
                 throw Error("writer failed");
               }),
               Error);
  EXPECT_EQ(fs::read_text(p).value(), "first");  // untouched
  EXPECT_FALSE(fs::read_file(dir + "/missing").ok());
  EXPECT_NE(fs::read_file(dir + "/missing").error().find("missing"), std::string::npos);
}

TEST(Fs, FullDiskGivesClearErrorAndKeepsOld) {
  // /dev/full returns ENOSPC on write: writing "through" it must fail cleanly. We cannot
  // rename over /dev/full, so write to a folder that exists and check the tmp is gone.
  if (!fs::exists("/dev/full")) GTEST_SKIP();
  std::string dir = ::testing::TempDir() + "/oc_fs_full";
  fs::make_dirs(dir);
  EXPECT_THROW(fs::write_atomic("/proc/oc-not-writable/x", std::string("a")), Error);
}

}  // namespace
// CPython's random.Random, draw for draw (tests/reference/shard_order_ref.py prints them):
// one- and two-word seeds, getrandbits below, at and above 32 bits, randint's rejection loop.
TEST(PyRandom, DrawsEqualCPythons) {
  for (uint64_t seed : {0ull, 1ull, 12345ull, 4294967295ull, 4294967296ull, 18446744073709551615ull})
    for (int k : {1, 7, 32, 33, 64}) {
      auto ref = test::run_flat_json_list(fmt::format("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/shard_order_ref.py draws {} {} 20", seed, k));
      ASSERT_EQ(ref.size(), 60u);
      PyRandom rng(seed);
      for (int i = 0; i < 20; ++i) ASSERT_EQ(std::to_string(rng.getrandbits(k)), ref[size_t(i)]) << seed << " k " << k;
      for (int n = 1; n <= 40; ++n) ASSERT_EQ(std::to_string(rng.randint(0, n)), ref[size_t(19 + n)]) << seed << " n " << n;
    }
}

}  // namespace oc
