// `openclip convert`: .pt (OpenCLIP training checkpoint, DDP prefix) -> .safetensors -> .pt
// keeps every tensor bit for bit; bad arguments fail with a message naming the problem.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "io/torch_pt.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

struct CliRun {
  int rc;
  std::string out;
};

CliRun openclip(const std::string& args) {
  oc::test::Run r = oc::test::run(oc::test::openclip() + " " + args);
  return {r.status, r.out};
}

TEST(Convert, CheckpointToSafetensorsAndBack) {
  const std::string dir = test::scratch_dir("c");
  PyValue sd = PyValue::new_dict(true);
  HostTensor w(DType::F32, {3, 2}), ls(DType::F32, {}), ids(DType::I64, {4});
  for (int i = 0; i < 6; ++i) w.f32()[i] = float(i) - 2.5f;
  ls.f32()[0] = 4.6052f;
  for (int i = 0; i < 32; ++i) ids.bytes[size_t(i)] = uint8_t(i);
  sd.set("module.w", PyValue::from_tensor(w));
  sd.set("module.logit_scale", PyValue::from_tensor(ls));
  sd.set("module.ids", PyValue::from_tensor(ids));
  PyValue ck = PyValue::new_dict(false);
  ck.set("epoch", PyValue::integer(1));
  ck.set("state_dict", sd);
  ck.set("optimizer", PyValue::new_dict(false));
  save_pt(dir + "/epoch_1.pt", ck);

  CliRun r = openclip("convert " + dir + "/epoch_1.pt " + dir + "/m.safetensors");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("converted 3 tensors"), std::string::npos) << r.out;
  auto st = read_safetensors(dir + "/m.safetensors");
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(st->tensors.size(), 3u);
  EXPECT_EQ(st->metadata.at("format"), "pt");
  std::map<std::string, HostTensor> by_name(st->tensors.begin(), st->tensors.end());
  EXPECT_EQ(by_name.at("w").bytes, w.bytes);
  EXPECT_EQ(by_name.at("w").shape, w.shape);
  EXPECT_EQ(by_name.at("logit_scale").shape, Shape{});
  EXPECT_EQ(by_name.at("ids").bytes, ids.bytes);

  r = openclip("convert " + dir + "/m.safetensors " + dir + "/back.bin");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto back = load_pt(dir + "/back.bin");
  ASSERT_TRUE(back.ok()) << back.error();
  auto sd2 = extract_state_dict(*back);
  ASSERT_TRUE(sd2.ok()) << sd2.error();
  ASSERT_EQ(sd2->size(), 3u);
  for (auto& [name, rec] : *sd2) EXPECT_EQ(rec->data.bytes, by_name.at(name).bytes) << name;
}

TEST(Convert, ErrorsNameTheProblem) {
  const std::string dir = test::scratch_dir("e");
  CliRun r = openclip("convert " + dir + "/nope.pt " + dir + "/o.safetensors");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("nope.pt"), std::string::npos) << r.out;
  r = openclip("convert " + dir + "/a.pt " + dir + "/o.txt");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("cannot tell the output format"), std::string::npos) << r.out;
  r = openclip("convert onlyone");
  EXPECT_NE(r.rc, 0);
  test::write_bytes(dir + "/junk.safetensors", {1, 2, 3, 4, 5, 6, 7, 8, 9});
  r = openclip("convert " + dir + "/junk.safetensors " + dir + "/o.pt");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("junk.safetensors"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/o.pt"));
}

}  // namespace
}  // namespace oc::io
