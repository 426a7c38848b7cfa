// Hostile data files (issue 13): IDX headers that claim more than the file holds, brace
// patterns that expand past the cap, CSV rows with the wrong number of fields in
// `data inspect`.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "core/fs.h"
#include "core/limits.h"
#include "data/csv.h"
#include "data/fashion_mnist.h"
#include "data/helpers.h"
#include "data/inspect.h"
#include "data/urls.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;

std::string idx_header(uint32_t magic, std::vector<uint32_t> dims) {
  std::string h;
  auto be = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) h += char((v >> s) & 0xff);
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  return h;
}

TEST(HostileData, IdxHeaderClaimsAreCheckedAgainstTheFile) {
  const std::string d = temp_dir("idx");
  // The file: 300 x 4096 x 4096 claimed (5 GB), 100 bytes of pixels present.
  const std::string plain = d + "/images-idx3-ubyte";
  write_text(plain, idx_header(0x803, {300, 4096, 4096}) + std::string(100, '\0'));
  EXPECT_EQ(fs::file_size(plain), 116);
  auto r = read_idx_images(plain, -1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), plain + ": the IDX header claims 300 x 16777216 bytes = 5033164800 bytes but only 100 are present");
  // gzip: bounded by deflate's largest ratio (1032:1) times the compressed size.
  const std::string gz = d + "/images-idx3-ubyte.gz";
  {
    gzFile f = gzopen(gz.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string body = idx_header(0x803, {300, 4096, 4096}) + std::string(100, '\0');
    gzwrite(f, body.data(), unsigned(body.size()));
    gzclose(f);
  }
  auto g = read_idx_images(gz, -1);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("claims 300 x 16777216"), std::string::npos) << g.error();
  // Labels: 2**32-1 claimed, 3 present.
  const std::string labels = d + "/labels-idx1-ubyte";
  write_text(labels, idx_header(0x801, {0xffffffffu}) + std::string(3, '\1'));
  auto l = read_idx_labels(labels, -1);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().find("claims 4294967295 x 1 bytes"), std::string::npos) << l.error();
  // An honest file still reads, and `limit` only needs what it takes.
  write_text(plain, idx_header(0x803, {3, 2, 2}) + std::string(12, '\7'));
  auto ok = read_idx_images(plain, 2);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->pixels.size(), 8u);
}

TEST(HostileData, BraceExpansionHasACap) {
  auto huge = expand_braces("shards/{0..99999999999}.tar");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().find("kMaxBraceExpansion"), std::string::npos) << huge.error();
  // Products of groups count too: 2000 x 2000 = 4M names.
  auto product = expand_braces("{0..1999}/{0..1999}.tar");
  ASSERT_FALSE(product.ok());
  EXPECT_NE(product.error().find("over the cap"), std::string::npos) << product.error();
  // A number too large for 64 bits is not a range (no exception escapes): literal text.
  auto big = expand_braces("{0..99999999999999999999999}");
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(big->size(), 1u);
  auto fine = expand_braces("{00000..00009}.tar");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->size(), 10u);
}

TEST(HostileData, MalformedCsvRowsAreSkippedAndInspectCountsThem) {
  const std::string d = temp_dir("csvrows");
  write_text(d + "/a.csv", "filepath\ttitle\nx.png\tone\ny.png\nz.png\tthree\textra\n\"q.png\"\t\"quoted\"\n");
  auto c = read_csv_columns(d + "/a.csv", '\t', {"filepath", "title"});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->rows, 2);
  ASSERT_EQ(c->malformed.size(), 2u);
  EXPECT_EQ(c->malformed[0].line, 3);
  EXPECT_EQ(c->malformed[0].fields, 1u);
  EXPECT_EQ(c->malformed[1].line, 4);
  EXPECT_EQ(c->malformed[1].fields, 3u);
  auto rep = inspect_csv(d + "/a.csv", '\t', "filepath", "title", false);
  EXPECT_EQ(rep.samples, 4);
  EXPECT_EQ(rep.skipped["malformed_row"], 2);
  EXPECT_EQ(rep.skipped["file_error"], 2);  // x.png and q.png do not exist
  EXPECT_NE(rep.text().find("malformed_row 2"), std::string::npos) << rep.text();
}

}  // namespace
}  // namespace oc::data
