// openclip index build / search over real files: embeddings equal `openclip embed`'s, scores
// equal the dot products of the CLI's embeddings, appends, shards with captions, HNSW, and
// the bad-input errors (missing folder, other weights, interrupted build).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/rng.h"
#include "data/tar.h"
#include "image/codec.h"
#include "index/store.h"
#include "io/safetensors.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"
#include "index/index_fixture.h"

namespace oc {
namespace {

using test::run;
using test::build_cmd;
using test::last_json_line;
using test::make_fixture;
using Fixture = test::TinyModelFiles;

std::string embeddings_file(const std::string& dir) {
  return index::data_path(dir, index::read_meta(dir), "embeddings.safetensors");
}

std::vector<float> read_embeddings(const std::string& path, int64_t* rows) {
  auto st = io::read_safetensors(path);
  EXPECT_TRUE(st.ok()) << path;
  auto& t = st.value().tensors.at(0).second;
  *rows = t.shape[0];
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

TEST(IndexCli, EmbeddingsEqualEmbedAndImageSearchFindsItself) {
  Fixture f = make_fixture("index_basic");
  auto r = run(build_cmd(f, f.dir + "/img", f.dir + "/idx"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["added"], 12);
  EXPECT_EQ(j["total"], 12);
  EXPECT_EQ(j["faiss"], "flat");
  auto e = run(test::openclip() + " embed --model test-tiny --pretrained " + f.weights + " --images '" + f.dir +
               "/img/{sub/im10,im11,im12,sub/im13,im14,im15,sub/im16,im17,im18,sub/im19,im20,im21}.png' --out " + f.dir +
               "/e.safetensors");
  ASSERT_EQ(e.status, 0) << e.out;
  auto items = index::load_index(f.dir + "/idx").items;
  ASSERT_EQ(items.size(), 12u);
  int64_t n1, n2;
  auto ours = read_embeddings(embeddings_file(f.dir + "/idx"), &n1);
  auto cli = read_embeddings(f.dir + "/e.safetensors", &n2);
  ASSERT_EQ(n1, 12);
  ASSERT_EQ(n2, 12);
  const size_t E = ours.size() / 12;
  // Row order differs (index: sorted paths; embed: the brace order), so match by file name.
  for (int i = 0; i < 12; ++i) {
    const std::string want = "im" + std::to_string(10 + i) + ".png";
    size_t row = 0;
    while (row < 12 && fs::basename(items[row].key) != want) ++row;
    ASSERT_LT(row, 12u) << want;
    for (size_t k = 0; k < E; ++k) ASSERT_EQ(ours[row * E + k], cli[size_t(i) * E + k]) << want << " dim " << k;  // same code path: bit-identical
  }
  auto s = run(test::openclip() + " index search " + f.dir + "/idx --image " + f.images[5] + " -k 3 --json");
  ASSERT_EQ(s.status, 0) << s.out;
  auto res = nlohmann::json::parse(s.out)["results"];
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res[0]["key"], f.images[5]);
  EXPECT_NEAR(res[0]["score"].get<double>(), 1.0, 1e-4);  // unit vector with itself, fp32 rounding
  EXPECT_GE(res[0]["score"].get<double>(), res[1]["score"].get<double>());
}

TEST(IndexCli, TextSearchScoresAreDotProductsOfCliEmbeddings) {
  Fixture f = make_fixture("index_text");
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", f.dir + "/idx")).status, 0);
  fs::write_atomic(f.dir + "/t.txt", std::string("a red square\n"));
  ASSERT_EQ(run(test::openclip() + " embed --model test-tiny --pretrained " + f.weights + " --texts " + f.dir +
                "/t.txt --out " + f.dir + "/t.safetensors").status, 0);
  int64_t n;
  auto t = read_embeddings(f.dir + "/t.safetensors", &n);
  auto all = read_embeddings(embeddings_file(f.dir + "/idx"), &n);
  const size_t E = t.size();
  std::vector<std::pair<float, int>> want;
  for (int i = 0; i < n; ++i) {
    double d = 0;
    for (size_t k = 0; k < E; ++k) d += double(t[k]) * all[size_t(i) * E + k];
    want.push_back({float(d), i});
  }
  std::sort(want.rbegin(), want.rend());
  auto s = run(test::openclip() + " index search " + f.dir + "/idx --text 'a red square' -k 5 --json");
  ASSERT_EQ(s.status, 0) << s.out;
  auto res = nlohmann::json::parse(s.out)["results"];
  ASSERT_EQ(res.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(res[i]["id"], want[size_t(i)].second) << i;
    EXPECT_NEAR(res[i]["score"].get<double>(), want[size_t(i)].first, 1e-5);  // fp32 sum order differs from double
  }
}

TEST(IndexCli, AppendsNewImagesAndSkipsKnownOnes) {
  Fixture f = make_fixture("index_append");
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img/sub", f.dir + "/idx")).status, 0);
  auto r = run(build_cmd(f, f.dir + "/img", f.dir + "/idx"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["added"], 8);
  EXPECT_EQ(j["already_indexed"], 4);
  EXPECT_EQ(j["total"], 12);
  auto s = run(test::openclip() + " index search " + f.dir + "/idx --image " + f.dir + "/img/im21.png -k 1 --json");
  ASSERT_EQ(s.status, 0) << s.out;
  EXPECT_EQ(nlohmann::json::parse(s.out)["results"][0]["key"], f.dir + "/img/im21.png");
}

TEST(IndexCli, ShardsGiveCaptionsAndHnswFindsItself) {
  Fixture f = make_fixture("index_shards", 0);
  Rng rng(9);
  std::vector<uint8_t> bytes;
  fs::Sink sink = [&](std::span<const uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); };
  data::TarWriter w(sink);
  std::vector<uint8_t> third;
  for (int i = 0; i < 6; ++i) {
    auto png = test::random_png(rng, 30, 30);
    if (i == 3) third = png;
    char key[16];
    std::snprintf(key, sizeof key, "%09d", i);
    w.add(std::string(key) + ".png", png);
    w.add(std::string(key) + ".txt", "caption number " + std::to_string(i));
  }
  w.finish();
  fs::write_atomic(f.dir + "/s-000000.tar", bytes);
  fs::write_atomic(f.dir + "/q.png", third);
  auto r = run(build_cmd(f, f.dir + "/s-{000000..000000}.tar", f.dir + "/idx") + " --faiss hnsw");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["faiss"], "hnsw");
  auto s = run(test::openclip() + " index search " + f.dir + "/idx --image " + f.dir + "/q.png -k 2 --json");
  ASSERT_EQ(s.status, 0) << s.out;
  auto res = nlohmann::json::parse(s.out)["results"];
  EXPECT_EQ(res[0]["caption"], "caption number 3");
  EXPECT_EQ(res[0]["key"], f.dir + "/s-000000.tar:000000003");
}

TEST(IndexCli, BadInputGetsClearErrors) {
  Fixture f = make_fixture("index_bad", 3);
  auto miss = run(test::openclip() + " index search " + f.dir + "/nope --text hi");
  EXPECT_EQ(miss.status, 1);
  EXPECT_NE(miss.out.find("no such index folder"), std::string::npos) << miss.out;
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", f.dir + "/idx")).status, 0);
  auto other = run(build_cmd(f, f.dir + "/img", f.dir + "/idx", f.other_weights));
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.out.find("built with other weights"), std::string::npos) << other.out;
  auto other_s = run(test::openclip() + " index search " + f.dir + "/idx --text hi --pretrained " + f.other_weights);
  EXPECT_EQ(other_s.status, 1);
  EXPECT_NE(other_s.out.find("built with other weights"), std::string::npos) << other_s.out;
  auto empty = run(test::openclip() + " index search " + f.dir + "/idx --text ''");
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.out.find("--text is empty"), std::string::npos) << empty.out;
  fs::write_atomic(f.dir + "/img/bad.png", std::string("not a png"));
  auto bad = run(build_cmd(f, f.dir + "/img", f.dir + "/idx2"));
  ASSERT_EQ(bad.status, 0) << bad.out;
  EXPECT_EQ(last_json_line(bad.out)["failed"], 1);  // counted and skipped, the rest indexed
  EXPECT_EQ(last_json_line(bad.out)["total"], 3);
  // meta.json out of step with items.jsonl (edited by hand).
  auto meta = fs::read_text(f.dir + "/idx/meta.json").value();
  meta.replace(meta.find("\"count\": 3"), 10, "\"count\": 4");
  fs::write_atomic(f.dir + "/idx/meta.json", meta);
  auto broken = run(test::openclip() + " index search " + f.dir + "/idx --text hi");
  EXPECT_EQ(broken.status, 1);
  EXPECT_NE(broken.out.find("3 items but meta.json says 4"), std::string::npos) << broken.out;
}

}  // namespace
}  // namespace oc
