// The Parquet reader against fixtures from two writers: hand-built files covering every
// encoding/codec/page-version path (tests/reference/download_ref.py parquet, cross-checked
// with the independent hyparquet reader) and files from hyparquet-writer (npm).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "io/parquet.h"

namespace oc::io {
namespace {

std::string fixture(const std::string& name) { return std::string(OPENCLIP_TEST_DIR) + "/download/fixtures/" + name; }

class ParquetFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ParquetFixture, ReadsEveryValue) {
  auto f = ParquetFile::open(fixture(GetParam() + ".parquet"));
  ASSERT_TRUE(f) << f.error();
  auto want = nlohmann::json::parse(*fs::read_text(fixture(GetParam() + ".json")));
  EXPECT_EQ(f->num_rows(), int64_t(want["URL"].size()));
  for (const char* col : {"URL", "TEXT"}) {
    auto v = f->read_strings(col);
    ASSERT_TRUE(v) << v.error();
    ASSERT_EQ(v->size(), want[col].size()) << col;
    for (size_t i = 0; i < v->size(); ++i) {
      if (want[col][i].is_null()) {
        EXPECT_FALSE((*v)[i].has_value()) << col << " row " << i;
      } else {
        ASSERT_TRUE((*v)[i].has_value()) << col << " row " << i;
        EXPECT_EQ(*(*v)[i], want[col][i].get<std::string>()) << col << " row " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ParquetFixture,
                         ::testing::Values("plain_none_v1", "dict_snappy_v1", "plain_gzip_v2", "dict_zstd_v2",
                                           "plain_zstd_v1", "npm_snappy_dict", "npm_gzip_plain", "npm_uncompressed"));

TEST(Parquet, FixturesCoverTheirPaths) {
  // The fixtures must really hold what their names say, or the test above proves less.
  auto has = [](const std::string& name, int codec, int rgs_at_least) {
    auto f = ParquetFile::open(fixture(name + ".parquet"));
    ASSERT_TRUE(f) << f.error();
    EXPECT_GE(f->meta().row_groups.size(), size_t(rgs_at_least)) << name;
    for (const auto& g : f->meta().row_groups) EXPECT_EQ(g.columns[0].codec, codec) << name;
  };
  has("dict_snappy_v1", 1, 3);
  has("plain_gzip_v2", 2, 3);
  has("dict_zstd_v2", 6, 2);
  has("npm_snappy_dict", 1, 3);
  has("npm_gzip_plain", 2, 1);
  auto f = ParquetFile::open(fixture("npm_snappy_dict.parquet"));
  ASSERT_TRUE(f);
  EXPECT_GE(f->meta().row_groups[0].columns[0].dictionary_page_offset, 0) << "npm writer wrote no dictionary page";
}

TEST(Parquet, ErrorsNameTheProblem) {
  auto missing = ParquetFile::open(fixture("plain_none_v1.parquet"));
  ASSERT_TRUE(missing);
  auto r = missing->read_strings("url");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("no column 'url' (columns: URL, TEXT)"), std::string::npos) << r.error();

  auto bytes = *fs::read_file(fixture("dict_snappy_v1.parquet"));
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, std::vector<uint8_t> b) {
    std::ofstream(dir + name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return dir + name;
  };
  auto nomagic = bytes;
  nomagic.back() = 'X';
  auto e1 = ParquetFile::open(write("nomagic.parquet", nomagic));
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().find("no PAR1 magic"), std::string::npos) << e1.error();

  // Damage inside the first data page: the read fails with the page's byte offset, never crashes.
  auto damaged = bytes;
  for (size_t i = 200; i < 1200 && i < damaged.size(); ++i) damaged[i] ^= 0x5a;
  auto f2 = ParquetFile::open(write("damaged.parquet", damaged));
  ASSERT_TRUE(f2) << f2.error();  // the footer is intact
  auto r2 = f2->read_strings("URL");
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().find("page at byte"), std::string::npos) << r2.error();

  // Every truncation of the footer is an error, never a crash.
  for (size_t cut = 1; cut < 400; cut += 7) {
    auto t = bytes;
    t.erase(t.end() - 8 - std::ptrdiff_t(cut), t.end() - 8);
    auto f3 = ParquetFile::open(write("cut.parquet", t));
    if (f3) (void)f3->read_strings("URL");
  }
}

TEST(Parquet, RleBitPackedHybrid) {
  // Run of 5 x value 3 (width 2), then one bit-packed group of 8 values 0..7 at width 3.
  std::vector<uint8_t> in = {5 << 1, 3, (1 << 1) | 1, 0x88, 0xc6, 0xfa};
  std::vector<uint32_t> out;
  ASSERT_TRUE(decode_rle_hybrid(in, 2, 5, &out));
  EXPECT_EQ(out, std::vector<uint32_t>(5, 3));
  std::vector<uint8_t> packed(in.begin() + 2, in.end());
  ASSERT_TRUE(decode_rle_hybrid(packed, 3, 8, &out));
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(decode_rle_hybrid(packed, 3, 9, &out));  // input ends early
}

TEST(Parquet, RleBitPackedAtWidthZeroStopsAtTheCount) {
  // Found by fuzz_thrift: at bit width 0 a bit-packed group takes no bytes, and this header
  // claims 2^41 - 1 groups of 8 values; decoding 10 values used to walk all ~2^44 of them
  // (hours: the test then fails by ctest's timeout).
  std::vector<uint8_t> in = {0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  std::vector<uint32_t> out;
  ASSERT_TRUE(decode_rle_hybrid(in, 0, 10, &out));
  EXPECT_EQ(out, std::vector<uint32_t>(10, 0));
}

TEST(Parquet, CodecErrors) {
  std::vector<uint8_t> junk = {1, 2, 3, 4};
  EXPECT_FALSE(parquet_decompress(1, junk, 100));
  EXPECT_FALSE(parquet_decompress(2, junk, 100));
  EXPECT_FALSE(parquet_decompress(6, junk, 100));
  auto lzo = parquet_decompress(3, junk, 4);
  ASSERT_FALSE(lzo);
  EXPECT_NE(lzo.error().find("codec 3 is not supported"), std::string::npos);
}

}  // namespace
}  // namespace oc::io
