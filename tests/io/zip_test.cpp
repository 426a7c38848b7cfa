// ZipWriter/ZipReader: round trips (classic and zip64), alignment, CRCs, and rejection of
// truncated or inconsistent archives without crashing.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io/le.h"
#include "io/zip.h"
#include "io_test_util.h"

namespace oc::io {
namespace {

std::vector<uint8_t> make_zip(bool zip64, std::vector<std::pair<std::string, std::string>> entries) {
  std::vector<uint8_t> out;
  ZipWriter z([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); },
              {.alignment = 64, .force_zip64 = zip64});
  for (auto& [n, d] : entries) z.add(n, std::string_view(d));
  z.finish();
  return out;
}

const std::vector<std::pair<std::string, std::string>> kEntries = {
    {"a/data.pkl", "hello"}, {"a/empty", ""}, {"a/data/0", std::string(1000, 'x') + "end"}};

void expect_round_trip(const std::string& path) {
  auto z = ZipReader::open(path);
  ASSERT_TRUE(z.ok()) << z.error();
  ASSERT_EQ(z->entries().size(), kEntries.size());
  for (size_t i = 0; i < kEntries.size(); ++i) {
    const ZipEntry& e = z->entries()[i];
    EXPECT_EQ(e.name, kEntries[i].first);
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
    auto data = z->read_all(e);
    ASSERT_TRUE(data.ok()) << data.error();
    EXPECT_EQ(std::string(data->begin(), data->end()), kEntries[i].second);
    EXPECT_EQ(e.crc32, crc32({reinterpret_cast<const uint8_t*>(kEntries[i].second.data()), kEntries[i].second.size()}));
  }
  EXPECT_NE(z->find("a/data/0"), nullptr);
  EXPECT_EQ(z->find("a/missing"), nullptr);
}

TEST(Zip, Crc32CheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xCBF43926u);
}

TEST(Zip, RoundTripAligned) {
  const std::string p = test::scratch_dir("z") + "/a.zip";
  test::write_bytes(p, make_zip(false, kEntries));
  expect_round_trip(p);
}

TEST(Zip, Zip64RoundTrip) {
  const std::string p = test::scratch_dir("z") + "/a.zip";
  auto bytes = make_zip(true, kEntries);
  const uint8_t sig[] = {0x50, 0x4b, 0x06, 0x06};
  EXPECT_NE(std::search(bytes.begin(), bytes.end(), sig, sig + 4), bytes.end()) << "no zip64 end record";
  test::write_bytes(p, bytes);
  expect_round_trip(p);
}

// Offsets into the archive of make_zip(false, kEntries).
size_t eocd_pos(const std::vector<uint8_t>& b) { return b.size() - 22; }
size_t cd_pos(const std::vector<uint8_t>& b) { return load_le<uint32_t>(b.data() + eocd_pos(b) + 16); }
size_t cd_entry(const std::vector<uint8_t>& b, int i) {
  size_t p = cd_pos(b);
  for (int k = 0; k < i; ++k)
    p += 46 + load_le<uint16_t>(b.data() + p + 28) + load_le<uint16_t>(b.data() + p + 30) +
         load_le<uint16_t>(b.data() + p + 32);
  return p;
}

std::string open_error(const std::vector<uint8_t>& bytes, const std::string& tag) {
  const std::string p = test::scratch_dir(tag) + "/bad.zip";
  test::write_bytes(p, bytes);
  auto z = ZipReader::open(p);
  if (z.ok()) {
    for (const auto& e : z->entries()) {
      auto d = z->read_all(e);
      if (!d.ok()) return d.error();
    }
    return "";
  }
  return z.error();
}

TEST(Zip, RejectsTruncated) {
  auto b = make_zip(false, kEntries);
  b.resize(b.size() - 10);
  EXPECT_NE(open_error(b, "t").find("end-of-central-directory"), std::string::npos);
  EXPECT_NE(open_error({}, "e").find("only 0 bytes"), std::string::npos);
}

TEST(Zip, RejectsCentralDirectoryOutOfBounds) {
  auto b = make_zip(false, kEntries);
  const uint32_t far = 0x7fff0000;
  std::memcpy(b.data() + eocd_pos(b) + 16, &far, 4);
  std::string e = open_error(b, "cd");
  EXPECT_NE(e.find("central directory"), std::string::npos) << e;
  EXPECT_NE(e.find("out of bounds"), std::string::npos) << e;
}

TEST(Zip, RejectsEntryPastCentralDirectory) {
  auto b = make_zip(false, kEntries);
  const uint32_t big = 5000;
  size_t h = cd_entry(b, 2);
  std::memcpy(b.data() + h + 20, &big, 4);
  std::memcpy(b.data() + h + 24, &big, 4);
  std::string e = open_error(b, "past");
  EXPECT_NE(e.find("'a/data/0'"), std::string::npos) << e;
  EXPECT_NE(e.find("overlaps the central directory"), std::string::npos) << e;
}

TEST(Zip, RejectsSizeMismatchAndCompression) {
  auto b = make_zip(false, kEntries);
  const uint32_t other = 3;
  std::memcpy(b.data() + cd_entry(b, 0) + 20, &other, 4);  // compressed size only
  std::string e = open_error(b, "size");
  EXPECT_NE(e.find("'a/data.pkl'"), std::string::npos) << e;
  EXPECT_NE(e.find("differs"), std::string::npos) << e;

  b = make_zip(false, kEntries);
  const uint16_t deflate = 8;
  std::memcpy(b.data() + cd_entry(b, 1) + 10, &deflate, 2);
  e = open_error(b, "method");
  EXPECT_NE(e.find("'a/empty' is compressed (method 8)"), std::string::npos) << e;
}

TEST(Zip, DetectsCrcMismatch) {
  auto b = make_zip(false, kEntries);
  const std::string p = test::scratch_dir("crc") + "/a.zip";
  test::write_bytes(p, b);
  auto z = ZipReader::open(p);
  ASSERT_TRUE(z.ok());
  b[z->find("a/data/0")->data_offset + 7] ^= 1;
  std::string e = open_error(b, "crc2");
  EXPECT_NE(e.find("CRC-32"), std::string::npos) << e;
  EXPECT_NE(e.find("'a/data/0'"), std::string::npos) << e;
}

// Every truncation and 3000 random byte corruptions: errors or success, never a crash or hang.
TEST(Zip, MutationsNeverCrash) {
  const auto good = make_zip(false, kEntries);
  const std::string dir = test::scratch_dir("mut");
  std::mt19937 rng(1);
  int failures = 0;
  for (int i = 0; i < 3000 + int(good.size()); ++i) {
    auto b = good;
    if (i < int(good.size())) {
      b.resize(size_t(i));
    } else {
      for (int k = 0; k < 1 + int(rng() % 4); ++k) b[rng() % b.size()] = uint8_t(rng());
    }
    failures += test::with_file(dir, b, [](const std::string& p) {
      auto z = ZipReader::open(p);
      if (!z.ok()) return 1;
      for (const auto& e : z->entries()) (void)z->read_all(e);
      return 0;
    });
  }
  EXPECT_GT(failures, int(good.size()) / 2);  // the checks do fire
}

}  // namespace
}  // namespace oc::io
