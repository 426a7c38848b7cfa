// Brace expansion (braceexpand's rules, as webdataset.expand_urls uses), `::` sources with
// upsampling weights, and dataset sizes from sizes.json / __len__.
#include "data/urls.h"

#include <gtest/gtest.h>

#include "data/helpers.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;
using V = std::vector<std::string>;

V ex(const std::string& p) {
  auto r = expand_braces(p);
  EXPECT_TRUE(r.ok()) << p << ": " << r.error();
  return r.ok() ? *r : V{};
}

TEST(Braces, RangesListsAndNesting) {
  EXPECT_EQ(ex("s/{00000..00002}.tar"), (V{"s/00000.tar", "s/00001.tar", "s/00002.tar"}));
  EXPECT_EQ(ex("{a,b}{1..2}"), (V{"a1", "a2", "b1", "b2"}));
  EXPECT_EQ(ex("x{1..10..3}"), (V{"x1", "x4", "x7", "x10"}));
  EXPECT_EQ(ex("x{3..1}"), (V{"x3", "x2", "x1"}));
  EXPECT_EQ(ex("x{a..c}"), (V{"xa", "xb", "xc"}));
  EXPECT_EQ(ex("x{8..10}"), (V{"x8", "x9", "x10"}));
  EXPECT_EQ(ex("x{08..10}"), (V{"x08", "x09", "x10"}));
  EXPECT_EQ(ex("{a,{b,c}}d"), (V{"ad", "bd", "cd"}));
  EXPECT_EQ(ex("p{0..1}/{x,y}.tar"), (V{"p0/x.tar", "p0/y.tar", "p1/x.tar", "p1/y.tar"}));
  EXPECT_EQ(ex("plain.tar"), (V{"plain.tar"}));
  EXPECT_EQ(ex("x{}"), (V{"x{}"}));
  EXPECT_EQ(ex("x{y}{1,2}"), (V{"x{y}1", "x{y}2"}));
  EXPECT_EQ(ex("x\\{a,b\\}"), (V{"x{a,b}"}));
  EXPECT_EQ(ex("{,a}b"), (V{"b", "ab"}));
  EXPECT_EQ(ex("x{00000..00011}").size(), 12u);
  EXPECT_FALSE(expand_braces("x{a,b").ok());
  EXPECT_FALSE(expand_braces("x}a{").ok());
}

TEST(Braces, SourcesAndWeights) {
  auto r = expand_shards("a{0..1}.tar::b/{0..2}.tar", "1::0.5");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->urls, (V{"a0.tar", "a1.tar", "b/0.tar", "b/1.tar", "b/2.tar"}));
  EXPECT_EQ(r->weights, (std::vector<double>{1, 1, 0.5, 0.5, 0.5}));
  auto n = expand_shards("a{0..1}.tar::b.tar");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->weights.empty());
  EXPECT_EQ(n->urls.size(), 3u);
  auto bad = expand_shards("a.tar::b.tar", "1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("1 upsampling factors for 2 sources"), std::string::npos);
  EXPECT_FALSE(expand_shards("a.tar", "x").ok());
}

TEST(Urls, DirAndBase) {
  EXPECT_EQ(url_dirname("a/b/0.tar"), "a/b");
  EXPECT_EQ(url_basename("http://h:1/x/0.tar"), "0.tar");
  EXPECT_EQ(url_dirname("0.tar"), "");
}

TEST(DatasetSize, SizesJsonLenAndErrors) {
  std::string d = temp_dir("sizes");
  ASSERT_EQ(std::system(("mkdir -p " + d + "/a " + d + "/b " + d + "/c").c_str()), 0);
  write_text(d + "/a/sizes.json", R"({"0.tar": 10, "1.tar": "7"})");
  write_text(d + "/b/__len__", "100\n");
  auto s = dataset_size({d + "/a/0.tar", d + "/a/1.tar"});
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(*s, 17);
  auto l = dataset_size({d + "/a/0.tar", d + "/b/0.tar", d + "/b/1.tar"});
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(*l, 110);  // __len__ is a total: counted once for its folder
  auto m = dataset_size({d + "/a/2.tar"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("no size for shard 2.tar"), std::string::npos) << m.error();
  auto c = dataset_size({d + "/c/0.tar"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("--train-num-samples"), std::string::npos) << c.error();
}

}  // namespace
}  // namespace oc::data
