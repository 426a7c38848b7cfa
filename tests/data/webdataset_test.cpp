// Grouping and selection of webdataset samples, checked against webdataset + OpenCLIP's
// logic run by CPython on the same shards (expected.json from data_ref.py).
#include "data/webdataset.h"

#include <gtest/gtest.h>

#include "data/helpers.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;

struct Got {
  std::vector<WdsSample> samples;
  DataStats stats;
};

void read_stream(const std::vector<std::string>& names, Got* g) {
  size_t i = 0;
  TarSampleStream s(
      [&]() -> std::optional<std::string> {
        if (i == names.size()) return std::nullopt;
        return fixture_dir() + "/" + names[i++];
      },
      &g->stats, [](const std::string&) { return true; });
  while (auto x = s.next()) g->samples.push_back(std::move(*x));
}

void compare(const nlohmann::json& want, const std::vector<WdsSample>& got, const std::string& what) {
  ASSERT_EQ(got.size(), want["samples"].size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& w = want["samples"][i];
    EXPECT_EQ(got[i].key, w["key"].get<std::string>()) << what << " #" << i;
    auto exts = got[i].exts;
    std::sort(exts.begin(), exts.end());
    EXPECT_EQ(exts, w["exts"].get<std::vector<std::string>>()) << what << " #" << i;
    EXPECT_EQ(fs::basename(got[i].url), w["url"].get<std::string>()) << what << " #" << i;
    if (!w["caption"].is_null() && w["status"] != "bad_caption") {
      auto* cap = got[i].find("txt");
      ASSERT_NE(cap, nullptr);
      EXPECT_EQ(std::string(cap->begin(), cap->end()), w["caption"].get<std::string>());
    }
  }
}

TEST(WebDataset, SplitKeyMatchesTheRegex) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3";
  std::vector<std::string> names = {"a.jpg",  "a/b.seg.png", "dir.x/b.jpg", "noext", ".hidden", "dir/.x",
                                    "a/b/.c", "a.b/.c",      "/.b",         "x/y.",  "a..b",    "A/B.JPG"};
  std::string cmd = std::string(kPython) + " " OPENCLIP_TEST_DIR "/reference/data_ref.py split-key";
  for (auto& n : names) cmd += " '" + n + "'";
  auto j = nlohmann::json::parse(run_capture(cmd));
  ASSERT_EQ(j.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string k, e;
    bool ok = split_key(names[i], &k, &e);
    if (j[i][0].is_null()) {
      EXPECT_FALSE(ok) << names[i];
    } else {
      ASSERT_TRUE(ok) << names[i];
      EXPECT_EQ(k, j[i][0].get<std::string>()) << names[i];
      EXPECT_EQ(e, j[i][1].get<std::string>()) << names[i];
    }
  }
}

TEST(WebDataset, MetaNames) {
  EXPECT_TRUE(is_meta_name("__meta__"));
  EXPECT_FALSE(is_meta_name("a/__meta__"));
  EXPECT_FALSE(is_meta_name("__key__.jpg"));
}

TEST(WebDataset, EachShardGroupsAsOpenClip) {
  OC_NEED_FIXTURES();
  auto e = expected();
  for (auto& name : e["order"]) {
    Got g;
    read_stream({name.get<std::string>()}, &g);
    compare(e["shards"][name.get<std::string>()], g.samples, name.get<std::string>());
  }
}

TEST(WebDataset, WholeListAsOneStreamWithCountedErrors) {
  OC_NEED_FIXTURES();
  auto e = expected();
  Got g;
  read_stream(e["order"].get<std::vector<std::string>>(), &g);
  compare(e["stream"], g.samples, "stream");
  // CPython's tarfile stops silently at a cut header or a bad checksum; we count those too.
  EXPECT_EQ(g.stats.count(Skip::ShardError), 3);  // trunc (payload), trunchdr (header), badsum
  EXPECT_EQ(g.stats.count(Skip::ShardEmpty), 1);
  EXPECT_EQ(g.stats.count(Skip::ShardMissing), 2);  // a directory and a missing file
  EXPECT_EQ(g.stats.shards(), 10);

  // Selection reasons match OpenCLIP's filter for the samples that fail it.
  int64_t no_cap = 0, no_img = 0;
  for (size_t i = 0; i < g.samples.size(); ++i) {
    Skip why;
    bool ok = select_fields(g.samples[i], &why).has_value();
    std::string st = e["stream"]["samples"][i]["status"];
    if (st == "no_caption") {
      EXPECT_FALSE(ok);
      EXPECT_EQ(why, Skip::NoCaption);
      ++no_cap;
    } else if (st == "no_image") {
      EXPECT_FALSE(ok);
      EXPECT_EQ(why, Skip::NoImage);
      ++no_img;
    } else {
      EXPECT_TRUE(ok) << g.samples[i].key;
    }
  }
  EXPECT_EQ(no_cap, 1);
  EXPECT_EQ(no_img, 3);
}

TEST(WebDataset, KeepOnlyTrainingFieldsSkipsTheRest) {
  OC_NEED_FIXTURES();
  DataStats st;
  int i = 0;
  TarSampleStream s([&]() -> std::optional<std::string> {
    if (i++) return std::nullopt;
    return fixture_dir() + "/good.tar";
  }, &st);
  int n = 0;
  while (auto x = s.next()) {
    EXPECT_EQ(x->exts.size(), 4u);
    EXPECT_EQ(x->fields.size(), 3u);  // json seen (for grouping) but not read
    EXPECT_EQ(x->find("json"), nullptr);
    auto lab = parse_label(std::string(x->find("cls")->begin(), x->find("cls")->end()));
    ASSERT_TRUE(lab.has_value());
    EXPECT_EQ(*lab, n % 3);
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(WebDataset, LazyImagesMaterializeToTheSameBytes) {
  OC_NEED_FIXTURES();
  for (const char* shard : {"good.tar", "gnu.tar", "trunc.tar"}) {
    std::vector<WdsSample> eager, lazy;
    for (bool lz : {false, true}) {
      DataStats st;
      int i = 0;
      TarSampleStream s([&]() -> std::optional<std::string> {
        if (i++) return std::nullopt;
        return fixture_dir() + "/" + shard;
      }, &st);
      s.set_lazy_images(lz);
      while (auto x = s.next()) (lz ? lazy : eager).push_back(std::move(*x));
      EXPECT_EQ(st.count(Skip::ShardError), std::string(shard) == "trunc.tar" ? 1 : 0) << shard;
    }
    ASSERT_EQ(eager.size(), lazy.size()) << shard;
    for (size_t k = 0; k < eager.size(); ++k) {
      EXPECT_EQ(eager[k].key, lazy[k].key);
      EXPECT_EQ(eager[k].exts, lazy[k].exts);
      bool has_image = eager[k].find("jpg") || eager[k].find("png");
      EXPECT_EQ(lazy[k].lazy.size(), has_image ? 1u : 0u) << eager[k].key;
      ASSERT_TRUE(lazy[k].materialize().ok());
      for (const char* e : {"jpg", "png", "txt"}) {
        auto *a = eager[k].find(e), *b = lazy[k].find(e);
        ASSERT_EQ(a == nullptr, b == nullptr) << e;
        if (a) {
          EXPECT_EQ(*a, *b) << eager[k].key << "." << e;
        }
      }
    }
  }
}

TEST(WebDataset, ParseLabel) {
  EXPECT_EQ(parse_label("3"), 3);
  EXPECT_EQ(parse_label(" 12\n"), 12);
  EXPECT_EQ(parse_label("-1"), -1);
  EXPECT_FALSE(parse_label("x").has_value());
  EXPECT_FALSE(parse_label("").has_value());
  EXPECT_FALSE(parse_label("1.5").has_value());
}

}  // namespace
}  // namespace oc::data
