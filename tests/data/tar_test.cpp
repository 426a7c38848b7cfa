// Tar reader against shards written by CPython's tarfile (tests/reference/data_ref.py), its
// damage reports, and the writer read back by CPython.
#include "data/tar.h"

#include <gtest/gtest.h>

#include "data/helpers.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;

struct ReadAll {
  std::vector<TarMember> members;
  std::vector<std::vector<uint8_t>> data;
  std::string error;
};

ReadAll read_all(const std::string& path, bool read_payloads = true) {
  ReadAll out;
  auto s = open_stream(path);
  if (!s) {
    out.error = s.error();
    return out;
  }
  TarReader r(std::move(*s), path);
  for (;;) {
    TarMember m;
    auto n = r.next(&m);
    if (!n) {
      out.error = n.error();
      break;
    }
    if (!*n) break;
    if (read_payloads) {
      auto d = r.read_data();
      if (!d) {
        out.error = d.error();
        break;
      }
      out.data.push_back(std::move(*d));
    }
    out.members.push_back(m);
  }
  return out;
}

TEST(TarNumber, OctalAndBase256) {
  uint64_t v = 0;
  const uint8_t oct[12] = {'0', '0', '0', '0', '0', '0', '0', '1', '7', '7', '7', 0};
  ASSERT_TRUE(parse_tar_number(oct, &v));
  EXPECT_EQ(v, 01777u);
  const uint8_t spaced[8] = {' ', ' ', '6', '4', '4', ' ', 0, 0};
  ASSERT_TRUE(parse_tar_number(spaced, &v));
  EXPECT_EQ(v, 0644u);
  const uint8_t empty[8] = {0};
  ASSERT_TRUE(parse_tar_number(empty, &v));
  EXPECT_EQ(v, 0u);
  uint8_t b256[12] = {0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0x10};  // 8 GiB + 16
  ASSERT_TRUE(parse_tar_number(b256, &v));
  EXPECT_EQ(v, (uint64_t(2) << 32) + 16);
  const uint8_t bad[8] = {'1', '8', 0};
  EXPECT_FALSE(parse_tar_number(bad, &v));
  const uint8_t neg[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(parse_tar_number(neg, &v));
}

TEST(TarPax, Records) {
  std::map<std::string, std::string> kv;
  ASSERT_TRUE(parse_pax("30 mtime=1700000000.123456789\n16 path=a/b.jpg\n", &kv));
  EXPECT_EQ(kv["path"], "a/b.jpg");
  EXPECT_EQ(kv["mtime"], "1700000000.123456789");
  EXPECT_FALSE(parse_pax("99 path=x\n", &kv));       // length past the end
  EXPECT_FALSE(parse_pax("10 pathx\n", &kv));        // no '='
  EXPECT_TRUE(parse_pax("11 path=é\n", &kv));       // UTF-8 value, length counts bytes
  EXPECT_EQ(kv["path"], "é");
}

TEST(TarReader, PaxShardAsWebdatasetWrites) {
  OC_NEED_FIXTURES();
  auto r = read_all(fixture_dir() + "/good.tar");
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.members.size(), 24u);  // 6 samples x (jpg, json, txt, cls), each behind its own pax header
  EXPECT_EQ(r.members[0].name, "000000000.jpg");
  EXPECT_EQ(r.members[3].name, "000000000.cls");
  EXPECT_EQ(std::string(r.data[2].begin(), r.data[2].end()), "caption 0");
  EXPECT_EQ(r.members[0].offset, 0u);  // the pax header's offset: where the member starts
}

TEST(TarReader, GnuLongNamesUstarPrefixPaxPathBase256) {
  OC_NEED_FIXTURES();
  auto g = read_all(fixture_dir() + "/gnu.tar");
  EXPECT_EQ(g.error, "");
  std::vector<std::string> names;
  for (auto& m : g.members) names.push_back(m.name);
  std::string long_dir = std::string(90, 'd') + "/" + std::string(30, 'e');
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "__meta__");
  EXPECT_EQ(names[1], long_dir + "/s0.jpg");  // GNU 'L' header; the directory and symlink are skipped
  EXPECT_EQ(std::count(names.begin(), names.end(), "link.jpg"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "somedir"), 0);

  auto u = read_all(fixture_dir() + "/ustar.tar");
  EXPECT_EQ(u.error, "");
  ASSERT_EQ(u.members.size(), 3u);
  EXPECT_EQ(u.members[0].name, std::string(120, 'p') + "/u0.png");

  auto p = read_all(fixture_dir() + "/global.tar");
  EXPECT_EQ(p.error, "");
  ASSERT_EQ(p.members.size(), 8u);
  EXPECT_EQ(p.members[6].name, std::string(150, 'p') + ".jpg");

  auto b = read_all(fixture_dir() + "/b256.tar");
  EXPECT_EQ(b.error, "");
  ASSERT_EQ(b.members.size(), 3u);
  EXPECT_EQ(std::string(b.data[2].begin(), b.data[2].end()), "base-256 size");
}

TEST(TarReader, DamageIsReportedWithPathAndOffset) {
  OC_NEED_FIXTURES();
  const std::string d = fixture_dir();
  auto t = read_all(d + "/trunc.tar");
  EXPECT_EQ(t.members.size(), 9u);  // t0..t2 complete; t3.jpg is cut
  EXPECT_NE(t.error.find("trunc.tar: unexpected end of data in member 't3.jpg'"), std::string::npos) << t.error;
  EXPECT_NE(t.error.find("the file ends at byte"), std::string::npos) << t.error;

  // Skipping instead of reading the cut payload reports the same damage (files seek).
  auto ts = read_all(d + "/trunc.tar", false);
  EXPECT_NE(ts.error.find("unexpected end of data in member 't3.jpg'"), std::string::npos) << ts.error;

  auto h = read_all(d + "/trunchdr.tar");
  EXPECT_EQ(h.members.size(), 3u);
  EXPECT_NE(h.error.find("truncated header at byte"), std::string::npos) << h.error;

  auto c = read_all(d + "/badsum.tar");
  EXPECT_EQ(c.members.size(), 3u);
  EXPECT_NE(c.error.find("bad checksum at byte"), std::string::npos) << c.error;

  EXPECT_NE(read_all(d + "/empty.tar").error.find("empty file"), std::string::npos);
  EXPECT_NE(read_all(d + "/isdir.tar").error.find("not a regular file"), std::string::npos);
  EXPECT_NE(read_all(d + "/missing.tar").error.find("cannot open"), std::string::npos);
}

TEST(TarReader, GarbageIsNotATar) {
  std::string d = temp_dir("garbage");
  write_text(d + "/g.tar", std::string(2000, 'x'));
  auto r = read_all(d + "/g.tar");
  EXPECT_TRUE(r.members.empty());
  EXPECT_NE(r.error.find("not a tar file"), std::string::npos) << r.error;
}

TEST(TarWriter, CPythonReadsWhatWeWrite) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3";
  std::string d = temp_dir("writer");
  std::string path = d + "/w.tar";
  std::string long_name = std::string(130, 'n') + ".txt";
  std::vector<uint8_t> bin(1000);
  for (size_t i = 0; i < bin.size(); ++i) bin[i] = uint8_t(i * 7 + 1);
  fs::write_atomic(path, [&](const fs::Sink& sink) {
    TarWriter w(sink, 1700000000);
    w.add("000000000.jpg", bin);
    w.add("000000000.txt", std::string("a caption"));
    w.add("000000001.txt", std::string());
    w.add(long_name, std::string("long"));
    w.finish();
    EXPECT_EQ(w.bytes_written() % 10240, 0u);
  });
  auto j = nlohmann::json::parse(run_capture(std::string(kPython) + " " OPENCLIP_TEST_DIR "/reference/data_ref.py read " + path));
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["name"], "000000000.jpg");
  EXPECT_EQ(j[0]["size"], 1000);
  EXPECT_EQ(j[0]["mode"], 0444);
  EXPECT_EQ(j[0]["uname"], "bigdata");
  std::string payload = j[0]["data"].get<std::string>();  // latin-1 decoded bytes
  ASSERT_EQ(payload.size() > 0, true);
  EXPECT_EQ(j[1]["data"], "a caption");
  EXPECT_EQ(j[2]["size"], 0);
  EXPECT_EQ(j[3]["name"], long_name);
  // And our reader agrees.
  auto r = read_all(path);
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.members.size(), 4u);
  EXPECT_EQ(r.data[0], bin);
  EXPECT_EQ(r.members[3].name, long_name);
}

}  // namespace
}  // namespace oc::data
