// Sizes that a file claims are checked against the bytes it holds before anything is
// allocated (issue 13): expanded (stride-0) tensors in .pt files, thrift container lengths in
// Parquet footers, JSON numbers in safetensors headers, and the core/limits helper itself.
#include <gtest/gtest.h>

#include <string>

#include "core/fs.h"
#include "core/limits.h"
#include "io/parquet.h"
#include "io/parquet_thrift.h"
#include "io/safetensors.h"
#include "io/torch_pt.h"
#include "io_test_util.h"
#include "test_util.h"

namespace oc::io {
namespace {

// torch.save of an expanded view writes one stored element plus the view's size and
// strides: a few hundred bytes that claim 2**40 floats.
bool torch_save(const std::string& expr, const std::string& path) {
  const std::string cmd = "/usr/bin/python3 -c \"import torch; torch.save(" + expr + ", '" + path + "')\" 2>&1";
  return oc::test::run(cmd).status == 0;
}

TEST(HostileInput, ExpandedTensorIsRefusedBeforeAllocating) {
  if (!oc::test::have_torch()) GTEST_SKIP() << "no /usr/bin/python3 with torch";
  const std::string dir = test::scratch_dir("expand");
  const std::string huge = dir + "/huge.pt", gib = dir + "/gib.pt", fine = dir + "/fine.pt";
  ASSERT_TRUE(torch_save("{'w': torch.zeros(1).expand(2**20, 2**20)}", huge));
  ASSERT_TRUE(torch_save("{'w': torch.zeros(1).expand(2**14, 2**14)}", gib));
  ASSERT_TRUE(torch_save("{'w': torch.arange(4.).expand(3, 4)}", fine));
  EXPECT_LT(fs::file_size(huge), 2000);  // the issue's file is 841 bytes
  auto r = load_pt(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(huge), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("['w']"), std::string::npos) << r.error();  // names the tensor
  EXPECT_NE(r.error().find(kPtExpansionCap.name), std::string::npos) << r.error();
  // 1 GiB from a 771-byte file is over the cap too.
  auto g = load_pt(gib);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("stride [0, 0]"), std::string::npos) << g.error();
  // A small expanded view is materialised as before.
  auto f = load_pt(fine);
  ASSERT_TRUE(f.ok()) << f.error();
  auto sd = extract_state_dict(*f);
  ASSERT_TRUE(sd.ok()) << sd.error();
  const auto v = (*sd)[0].second->data.to_f32();
  ASSERT_EQ(v.size(), 12u);
  EXPECT_EQ(v[5], 1.0f);
  EXPECT_EQ(v[11], 3.0f);
}

TEST(HostileInput, ManyViewsOfOneStorageCountAgainstTheCap) {
  if (!oc::test::have_torch()) GTEST_SKIP() << "no /usr/bin/python3 with torch";
  const std::string dir = test::scratch_dir("views");
  // 40 views of one 8 MiB storage would materialise 320 MiB from an 8 MiB file.
  ASSERT_TRUE(torch_save("(lambda s: {str(i): s[:] for i in range(40)})(torch.zeros(2**21))", dir + "/v.pt"));
  auto r = load_pt(dir + "/v.pt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("with the views before it"), std::string::npos) << r.error();
}

std::vector<uint8_t> thrift(std::initializer_list<int> b) { return std::vector<uint8_t>(b.begin(), b.end()); }

TEST(HostileInput, ThriftContainersAreBoundedByTheBytesPresent) {
  // A footer whose field 1 is a map of 2**62 (bool, bool) entries: bools in a map take a
  // byte each, so this claims at least 2**63 bytes in a 12-byte buffer.
  auto map = thrift({0x1b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x11, 0x00, 0x00});
  auto m = parse_parquet_footer(map);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("map header claims"), std::string::npos) << m.error();
  // A list of 1000 bools with 3 bytes left.
  auto list = thrift({0x19, 0xf1, 0xe8, 0x07, 0x01, 0x01, 0x01});
  auto l = parse_parquet_footer(list);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().find("list header claims 1000"), std::string::npos) << l.error();
  // Structs nested 200 deep (field 1, type struct, again and again): an error, no stack overflow.
  std::vector<uint8_t> deep(200, 0x1c);
  auto d = parse_parquet_footer(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("nesting too deep"), std::string::npos) << d.error();
}

TEST(HostileInput, SafetensorsNumberOverflowNamesTheFile) {
  const std::string json = R"({"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})";
  std::vector<uint8_t> b(json.begin(), json.end());
  auto h = parse_safetensors_header(b, 8 + b.size() + 4, "model.safetensors");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("model.safetensors"), std::string::npos) << h.error();
  EXPECT_NE(h.error().find("1e999"), std::string::npos) << h.error();
  EXPECT_EQ(h.error().find("[json.exception"), std::string::npos) << h.error();
}

TEST(HostileInput, ClaimedBytesHelper) {
  auto ok = claimed_bytes("f", "x", 3, 4, 12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 12u);
  auto over = claimed_bytes("f.idx", "the header", 300, 4096 * 4096, 100);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error(), "f.idx: the header claims 300 x 16777216 bytes = 5033164800 bytes but only 100 are present");
  auto wrap = claimed_bytes("f", "x", uint64_t(1) << 40, uint64_t(1) << 40, UINT64_MAX);
  ASSERT_FALSE(wrap.ok());
  EXPECT_NE(wrap.error().find("overflows"), std::string::npos) << wrap.error();
  Status cap = within_cap("f", "y", 11, Cap{"the test cap", 10});
  ASSERT_FALSE(cap.ok());
  EXPECT_NE(cap.error().find("the test cap"), std::string::npos) << cap.error();
  EXPECT_TRUE(within_cap("f", "y", 10, Cap{"the test cap", 10}).ok());
}

}  // namespace
}  // namespace oc::io
