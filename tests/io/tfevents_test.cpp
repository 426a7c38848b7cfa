// TensorBoard event files: formats.md 3.3 test vectors byte for byte, the rank-0 tensor
// scalar form, writer/reader round trip with TensorBoard's restart semantics, partial and
// corrupt records, and an independent Python decoder.
#include <gtest/gtest.h>

#include <regex>

#include "io/le.h"
#include "io/tfevents.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

using test::from_hex;
using test::to_hex;

TEST(TfEvents, Crc32cCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xE3069283u);
}

TEST(TfEvents, FormatsTestVectors) {
  const auto fv = event_file_version(1700000000.0);
  EXPECT_EQ(to_hex(fv), "0900000040fc54d9411a0d627261696e2e4576656e743a32");
  EXPECT_EQ(to_hex(tfrecord(fv)), "1800000000000000a37f4b22" + to_hex(fv) + "eced8f9d");
  const auto sc = event_scalar(1700000001.5, 100, "train/loss", 0.5f);
  EXPECT_EQ(to_hex(sc), "0900006040fc54d94110642a130a110a0a747261696e2f6c6f7373150000003f");
  const auto rec = tfrecord(sc);
  EXPECT_EQ(to_hex(std::span(rec).subspan(8, 4)), "29eda950");
  EXPECT_EQ(to_hex(std::span(rec).subspan(rec.size() - 4)), "a743abfb");
}

TEST(TfEvents, TensorFormScalarDecodes) {
  // Event{wall 1700000001.5, step 100, summary{value{tag, metadata{scalars}, tensor rank-0 0.5}}}
  const auto value = from_hex("0a0a747261696e2f6c6f7373 4a0d0a090a077363616c6172732001 420a080112002a040000003f");
  std::vector<uint8_t> summary = {0x0a, uint8_t(value.size())};
  summary.insert(summary.end(), value.begin(), value.end());
  std::vector<uint8_t> ev = from_hex("0900006040fc54d9411064");
  ev.push_back(0x2a);
  ev.push_back(uint8_t(summary.size()));
  ev.insert(ev.end(), summary.begin(), summary.end());
  auto scan = scan_events(tfrecord(ev), false);
  ASSERT_TRUE(scan.ok()) << scan.error();
  ASSERT_EQ(scan->scalars.size(), 1u);
  EXPECT_EQ(scan->scalars[0].tag, "train/loss");
  EXPECT_EQ(scan->scalars[0].value, 0.5f);
  EXPECT_EQ(scan->scalars[0].step, 100);
  EXPECT_EQ(scan->scalars[0].wall_time, 1700000001.5);
}

std::string write_run(const std::string& dir) {
  EventWriter w(dir);
  for (int s = 0; s < 10; ++s) w.add_scalar("train/loss", 1.0f / float(s + 1), s, 1700000000.0 + s);
  w.add_scalar("val/acc", 0.25f, 9, 1700000009.5);
  // Resumed from the checkpoint at step 5: steps 5.. are logged again.
  w.session_start(5, 1700000100.0);
  for (int s = 5; s < 8; ++s) w.add_scalar("train/loss", -float(s), s, 1700000100.0 + s);
  return w.path();
}

TEST(TfEvents, WriterReaderRoundTripAndRestart) {
  const std::string dir = test::scratch_dir("run");
  const std::string path = write_run(dir + "/logs");
  EXPECT_TRUE(std::regex_match(fs::basename(path), std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+)")))
      << path;
  auto all = read_events(path, false);
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->file_version, "brain.Event:2");
  EXPECT_FALSE(all->partial_tail);
  EXPECT_EQ(all->scalars.size(), 14u);
  auto tb = read_events(path, true);
  ASSERT_TRUE(tb.ok());
  std::vector<std::pair<int64_t, float>> loss;
  for (auto& p : tb->scalars)
    if (p.tag == "train/loss") loss.emplace_back(p.step, p.value);
  ASSERT_EQ(loss.size(), 8u);
  EXPECT_EQ(loss[4], (std::pair<int64_t, float>{4, 0.2f}));
  EXPECT_EQ(loss[5], (std::pair<int64_t, float>{5, -5.0f}));
  EXPECT_EQ(loss[7], (std::pair<int64_t, float>{7, -7.0f}));
  // val/acc at step 9 >= 5 is dropped too: TensorBoard purges every tag.
  EXPECT_EQ(std::count_if(tb->scalars.begin(), tb->scalars.end(), [](auto& p) { return p.tag == "val/acc"; }), 0);
}

TEST(TfEvents, PartialTailAndCorruption) {
  std::vector<uint8_t> file = tfrecord(event_file_version(1.0));
  const auto r2 = tfrecord(event_scalar(2.0, 1, "a", 1.0f));
  file.insert(file.end(), r2.begin(), r2.end());
  const size_t whole = file.size();
  const auto r3 = tfrecord(event_scalar(3.0, 2, "a", 2.0f));
  for (size_t cut = 1; cut < r3.size(); ++cut) {  // every partial write of the third record
    auto f = file;
    f.insert(f.end(), r3.begin(), r3.begin() + ptrdiff_t(cut));
    auto s = scan_events(f, false);
    ASSERT_TRUE(s.ok()) << cut << ": " << s.error();
    EXPECT_TRUE(s->partial_tail);
    EXPECT_EQ(s->complete_bytes, whole);
    EXPECT_EQ(s->scalars.size(), 1u);
  }
  auto bad = file;
  bad[whole - 6] ^= 0x40;  // inside the second record's payload
  auto s = scan_events(bad, false, "f");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("record at byte 40: data CRC mismatch"), std::string::npos) << s.error();
  bad = file;
  bad[40 + 2] ^= 1;  // its length
  s = scan_events(bad, false, "f");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("byte 40: length CRC"), std::string::npos) << s.error();
}

// (e) an independent reader: Python decoding TFRecord + protobuf by hand.
TEST(TfEvents, PythonDecoderAgrees) {
  const std::string dir = test::scratch_dir("py");
  const std::string path = write_run(dir);
  auto py = test::run_ref("tfevents " + path);
  if (py.skip) GTEST_SKIP() << py.out;
  ASSERT_EQ(py.rc, 0) << py.out;
  auto ev = test::last_json(py.out)["events"];
  ASSERT_EQ(ev.size(), 16u);  // file_version + 11 + START + 3
  EXPECT_EQ(ev[0]["file_version"], "brain.Event:2");
  EXPECT_EQ(ev[1]["tag"], "train/loss");
  EXPECT_EQ(ev[1]["simple_value"], 1.0);
  EXPECT_EQ(ev[3]["step"], 2);
  EXPECT_EQ(ev[3]["wall_time"], 1700000002.0);
  EXPECT_FLOAT_EQ(ev[3]["simple_value"].get<float>(), 1.0f / 3.0f);
  EXPECT_EQ(ev[12]["session_log"], 1);
  EXPECT_EQ(ev[12]["step"], 5);
  EXPECT_EQ(ev[15]["simple_value"], -7.0);
  auto rep = test::last_json(py.out);
  if (rep["tensorboard"]) {  // TensorBoard's EventAccumulator, where installed
    auto loss = rep["tb_scalars"]["train/loss"];
    ASSERT_EQ(loss.size(), 8u) << loss.dump();
    EXPECT_EQ(loss[5][1], -5.0);
    EXPECT_FALSE(rep["tb_scalars"].contains("val/acc") && !rep["tb_scalars"]["val/acc"].empty());
  }
}

}  // namespace
}  // namespace oc::io
