// safetensors: round trip, the reference writer's exact layout, files written by an
// independent Python writer, C++ files checked by a Python reader that mirrors the
// reference validation, and every reader check on crafted bad files.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "io/le.h"
#include "core/check.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

std::vector<std::pair<std::string, HostTensor>> sample() {
  std::vector<std::pair<std::string, HostTensor>> t;
  auto fill = [](HostTensor h) {
    for (size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = uint8_t(i * 37 + 11);
    return h;
  };
  HostTensor f32(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) f32.f32()[i] = 0.5f * float(i) - 1.0f;
  t.emplace_back("visual.proj", f32);
  t.emplace_back("a.bias", fill(HostTensor(DType::F32, {3})));
  t.emplace_back("ids", fill(HostTensor(DType::I64, {2})));
  t.emplace_back("half", HostTensor(DType::F16, {3}));
  t.emplace_back("brain", HostTensor(DType::BF16, {1, 2}));
  t.emplace_back("flags", HostTensor(DType::Bool, {3}));
  t.emplace_back("logit_scale", fill(HostTensor(DType::F32, {})));
  t.emplace_back("nothing", HostTensor(DType::F32, {0, 5}));
  t.emplace_back("i32", fill(HostTensor(DType::I32, {2, 2})));
  t.emplace_back("u8", fill(HostTensor(DType::U8, {5})));
  return t;
}

TEST(Safetensors, RoundTripInReferenceOrder) {
  const std::string p = test::scratch_dir("rt") + "/m.safetensors";
  auto t = sample();
  write_safetensors(p, t, {{"format", "pt"}, {"epoch", "3"}});
  auto r = read_safetensors(p);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"epoch", "3"}}));
  std::vector<std::string> order;
  for (auto& [n, h] : r->tensors) order.push_back(n);
  // alignment descending (I64, F32, I32, BF16, F16, U8, BOOL), then name
  EXPECT_EQ(order, (std::vector<std::string>{"ids", "a.bias", "logit_scale", "nothing", "visual.proj", "i32", "brain",
                                             "half", "u8", "flags"}));
  for (auto& [n, h] : t) {
    const std::string& name = n;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(r->tensors.begin(), r->tensors.end(), [&](auto& x) { return x.first == name; });
    ASSERT_NE(it, r->tensors.end()) << n;
    EXPECT_EQ(it->second.dtype, h.dtype) << n;
    EXPECT_EQ(it->second.shape, h.shape) << n;
    EXPECT_EQ(it->second.bytes, h.bytes) << n;
  }
}

TEST(Safetensors, HeaderMatchesReferenceSerializer) {
  HostTensor a(DType::F32, {2}), b(DType::I64, {}), c(DType::F16, {0});
  std::vector<std::pair<std::string, TensorView>> v = {{"b", {a.dtype, a.shape, a.bytes.data()}},
                                                       {"a", {b.dtype, b.shape, b.bytes.data()}},
                                                       {"c\"q", {c.dtype, c.shape, c.bytes.data()}}};
  auto h = safetensors_header_bytes(v, {{"k", "v"}});
  std::string want =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"c\"q":{"dtype":"F16","shape":[0],"data_offsets":[16,16]}})";
  want.append((8 - want.size() % 8) % 8, ' ');
  ASSERT_EQ(h.size(), 8 + want.size());
  EXPECT_EQ(load_le<uint64_t>(h.data()), want.size());
  EXPECT_EQ(std::string(h.begin() + 8, h.end()), want);
  EXPECT_EQ(h.size() % 8, 0u);
}

TEST(Safetensors, WriterRejectsBadNames) {
  const std::string p = test::scratch_dir("names") + "/x.safetensors";
  HostTensor a(DType::F32, {1});
  EXPECT_THROW(write_safetensors(p, {{"x", a}, {"x", a}}), Error);
  EXPECT_THROW(write_safetensors(p, {{"__metadata__", a}}), Error);
  EXPECT_FALSE(fs::exists(p));
}

// A file: 8-byte length, header text, body.
std::string read_err(const std::string& header, size_t body, const std::string& tag, int64_t length = -1) {
  std::vector<uint8_t> b;
  append_le<uint64_t>(b, length >= 0 ? uint64_t(length) : header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + body, 0);
  const std::string p = test::scratch_dir(tag) + "/bad.safetensors";
  test::write_bytes(p, b);
  auto r = read_safetensors(p);
  return r.ok() ? "OK" : r.error();
}

#define EXPECT_ERR(call, ...)                                                             \
  do {                                                                                    \
    const std::string e_ = (call);                                                        \
    for (const char* s_ : {__VA_ARGS__}) EXPECT_NE(e_.find(s_), std::string::npos) << e_; \
  } while (0)

TEST(Safetensors, RejectsBadFiles) {
  const std::string t = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  EXPECT_EQ(read_err("{" + t + "}", 8, "ok"), "OK");
  EXPECT_EQ(read_err("  {" + t + "}\n  ", 8, "ws"), "OK");  // whitespace allowed around the JSON
  {
    const std::string p = test::scratch_dir("tiny") + "/t.safetensors";
    test::write_bytes(p, {1, 2, 3});
    EXPECT_ERR(read_safetensors(p).error(), "too small");
  }
  EXPECT_ERR(read_err("{}", 0, "huge", 200'000'000), "exceeds the limit", "byte 0");
  EXPECT_ERR(read_err("{}", 0, "long", 4096), "runs past the end");
  EXPECT_ERR(read_err("{\"w\xff\":1}", 0, "utf8"), "not valid UTF-8 at byte 11");
  EXPECT_ERR(read_err("{\"w\":", 0, "json"), "not valid JSON");
  EXPECT_ERR(read_err("[1]", 0, "arr"), "not a JSON object");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8, "dt"), "tensor 'w'",
             "unknown dtype 'F33'");
  EXPECT_ERR(read_err("{" + t + "," + t + "}", 8, "dup"), "duplicate key \"w\"", "byte 62");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, "dup2"),
             "duplicate key \"dtype\"");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, "gap"), "tensor 'w'",
             "gap", "file byte");
  EXPECT_ERR(read_err(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      12, "overlap"),
             "tensor 'b'", "overlap");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "size"), "tensor 'w'",
             "need 12");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "rev"), "tensor 'w'");
  EXPECT_ERR(read_err("{" + t + "}", 4, "trunc"), "truncated");
  EXPECT_ERR(read_err("{" + t + "}", 9, "trail"), "trailing bytes");
  EXPECT_ERR(read_err(R"({"__metadata__":{"a":1}})", 0, "meta"), "__metadata__ value of 'a' is not a string");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "neg"), "non-negative integer");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8, "flt"), "non-negative integer");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8,
                      "ovf"),
             "overflows");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", 1, "f4"), "whole number of bytes");
  EXPECT_ERR(read_err(R"({"w":{"dtype":"F32","shape":[[[[1]]]],"data_offsets":[0,8]}})", 8, "deep"), "nests deeper");
  // A valid file with a dtype openclip cannot hold: the header passes, reading names it.
  EXPECT_ERR(read_err(R"({"w":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", 4, "u16"), "tensor 'w'",
             "dtype U16");
}

TEST(Safetensors, MutationsNeverCrash) {
  const std::string dir = test::scratch_dir("mut");
  write_safetensors(dir + "/g.safetensors", sample(), {{"format", "pt"}});
  const auto good = test::read_bytes(dir + "/g.safetensors");
  std::mt19937 rng(5);
  int failures = 0;
  for (int i = 0; i < 3000; ++i) {
    auto b = good;
    if (i % 3 == 0) b.resize(1 + rng() % (b.size() - 1));
    for (int k = 0; k < 1 + int(rng() % 3); ++k) b[rng() % b.size()] = uint8_t(rng());
    failures += test::with_file(dir, b, [](const std::string& p) { return int(!read_safetensors(p).ok()); });
  }
  EXPECT_GT(failures, 1000);
}

nlohmann::json describe_file(const Safetensors& st) {
  nlohmann::json items = nlohmann::json::array();
  for (auto& [n, t] : st.tensors)
    items.push_back(nlohmann::json::array({{{"type", "str"}, {"value", n}}, test::describe_tensor(t, false)}));
  return items;
}

// (c) a file from an independent Python writer (json + struct, not the reference layout).
TEST(Safetensors, PythonWrittenFileReads) {
  const std::string dir = test::scratch_dir("py");
  auto py = test::run_ref("st_write " + dir);
  if (py.skip) GTEST_SKIP() << py.out;
  ASSERT_EQ(py.rc, 0) << py.out;
  auto r = read_safetensors(dir + "/py.safetensors");
  ASSERT_TRUE(r.ok()) << r.error();
  auto want = nlohmann::json::parse(test::read_bytes(dir + "/py.safetensors.json"));
  EXPECT_EQ(test::diff(describe_file(*r), want["items"]), "");
  EXPECT_EQ(r->metadata.at("note"), "h\xc3\xa9llo");
}

// (c) a C++ file parsed by the Python mirror of the reference checks, byte-compared with a
// reference-style serializer.
TEST(Safetensors, CppWrittenFileParsesInPython) {
  const std::string dir = test::scratch_dir("cpp");
  auto t = sample();
  write_safetensors(dir + "/c.safetensors", t, {{"format", "pt"}});
  nlohmann::json items = nlohmann::json::array();
  for (auto& [n, h] : t) items.push_back(nlohmann::json::array({{{"type", "str"}, {"value", n}}, test::describe_tensor(h, false)}));
  std::ofstream(dir + "/c.json") << nlohmann::json{{"items", items}, {"metadata", {{"format", "pt"}}}}.dump();
  auto py = test::run_ref("st_check " + dir + "/c.safetensors " + dir + "/c.json");
  if (py.skip) GTEST_SKIP() << py.out;
  EXPECT_EQ(py.rc, 0) << py.out;
}

}  // namespace
}  // namespace oc::io
