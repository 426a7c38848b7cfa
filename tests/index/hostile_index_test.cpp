// Hostile index folders (issue 22, items 2, 4 and 5): damaged files and fields, metadata
// that points elsewhere, weights that are devices or FIFOs, a model whose embedding size
// changed, two writers at once and writers killed between the steps of an append. Each is
// refused with the file and what is wrong, or recovered from; none crashes, hangs or loses
// or mixes data.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <algorithm>

#include "core/check.h"
#include "core/fs.h"
#include "index/checksum.h"
#include "index/index_fixture.h"
#include "index/searcher.h"
#include "index/sources.h"
#include "index/store.h"

namespace oc {
namespace {

using nlohmann::json;
using test::build_cmd;
using test::last_json_line;
using test::make_fixture;
using test::run;

json read_json(const std::string& p) { return json::parse(fs::read_text(p).value()); }
void write_json(const std::string& p, const json& j) { fs::write_atomic(p, j.dump(2)); }

// Edits meta.json; `resum` re-records the SHA-256 of the current generation's files (so
// that a test reaches the check behind the checksum).
void edit_meta(const std::string& dir, const std::function<void(json&)>& fn, bool resum = false) {
  json m = read_json(dir + "/meta.json");
  fn(m);
  if (resum) {
    const std::string gen = dir + "/" + fmt::format("gen-{:06d}", m["generation"].get<int>()) + "/";
    for (const char* f : {"embeddings.safetensors", "items.jsonl", "faiss.index"})
      m["files"][f] = index::file_sha256(gen + f, "test");
  }
  write_json(dir + "/meta.json", m);
}

std::string current(const std::string& dir, const std::string& file) {
  return index::data_path(dir, index::read_meta(dir), file);
}

std::string search_cmd(const std::string& dir, const std::string& more = "--text hi") {
  return test::openclip() + " index search " + dir + " " + more;
}

TEST(HostileIndex, CorruptedHnswIsRefusedBySearchNotACrash) {
  auto f = make_fixture("hidx_hnsw", 6);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx) + " --faiss hnsw").status, 0);
  // A neighbour id out of range in the graph (the first neighbour slot of vector 0).
  auto bytes = fs::read_file(current(idx, "faiss.index")).value();
  size_t at = 37;
  for (int v = 0; v < 4; ++v) {  // assign_probas, cum_nneighbor_per_level, levels, offsets
    uint64_t n;
    std::memcpy(&n, bytes.data() + at, 8);
    at += 8 + n * (v == 0 || v == 3 ? 8 : 4);
  }
  const int32_t bad = 1 << 20;
  std::memcpy(bytes.data() + at + 8, &bad, 4);
  fs::write_atomic(current(idx, "faiss.index"), bytes);
  auto r = run(search_cmd(idx));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("faiss.index: SHA-256"), std::string::npos) << r.out;  // the checksum sees it first
  edit_meta(idx, [](json&) {}, /*resum=*/true);                               // ... and behind it, the graph check
  r = run(search_cmd(idx));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("bad HNSW graph: vector 0 has neighbour id 1048576"), std::string::npos) << r.out;
}

TEST(HostileIndex, ChangedFilesAndWrongTypesNameTheFileAndKey) {
  auto f = make_fixture("hidx_types", 3);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx)).status, 0);
  const std::string items = current(idx, "items.jsonl");
  const std::string text = fs::read_text(items).value();
  fs::write_atomic(items, text + " ");
  auto r = run(search_cmd(idx));
  EXPECT_NE(r.out.find(items + ": SHA-256"), std::string::npos) << r.out;
  fs::write_atomic(items, text);
  edit_meta(idx, [](json& m) { m["embed_dim"] = "32"; });
  r = run(search_cmd(idx));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("meta.json: \"embed_dim\" must be an integer, got \"32\""), std::string::npos) << r.out;
  edit_meta(idx, [](json& m) { m["embed_dim"] = 32, m["count"] = -1; });
  EXPECT_NE(run(search_cmd(idx)).out.find("\"count\" is out of range: -1"), std::string::npos);
  edit_meta(idx, [](json& m) { m["count"] = 3; });
  std::string t = text;
  t.replace(t.find("\"caption\":\"\""), 12, "\"caption\":7");
  fs::write_atomic(items, t);
  edit_meta(idx, [](json&) {}, true);
  r = run(search_cmd(idx));
  EXPECT_NE(r.out.find("items.jsonl line 1 (byte 0): \"caption\" must be a string, got 7"), std::string::npos) << r.out;
}

TEST(HostileIndex, ItemsOutsideTheRootsAreNotServed) {
  auto f = make_fixture("hidx_roots", 3);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img/sub", idx)).status, 0);
  EXPECT_EQ(index::read_meta(idx).roots, std::vector<std::string>{f.dir + "/img/sub"});
  // A ".." in --images is resolved on disk before it is recorded.
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img/sub/../sub", f.dir + "/idx2")).status, 0);
  EXPECT_EQ(index::read_meta(f.dir + "/idx2").roots[0].find(".."), std::string::npos);
  for (const std::string& path : {std::string("/etc/passwd"), f.dir + "/img/sub/../../w.safetensors", f.dir + "/img/subway.png"}) {
    const std::string items = current(idx, "items.jsonl");
    std::string t = fs::read_text(items).value();
    auto j = json::parse(t.substr(0, t.find('\n')));
    j["path"] = path;
    fs::write_atomic(items, j.dump() + "\n");
    edit_meta(idx, [](json& m) { m["count"] = 1; }, true);
    try {
      index::Searcher s(idx);
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("line 1: \"path\" " + path + " is not under the folders and shards"),
                std::string::npos)
          << e.what();
    }
  }
  // A shard member claiming 1 TB: the size is checked against the shard, nothing allocated.
  fs::write_atomic(f.dir + "/s.tar", std::string(2048, '\0'));
  auto bytes = index::read_item_bytes({"k", f.dir + "/s.tar", "", 512, uint64_t(1) << 40}, {f.dir});
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().find("runs past the end of the file (2048 bytes)"), std::string::npos) << bytes.error();
  EXPECT_FALSE(index::read_item_bytes({"k", "/dev/zero", "", 0, 16}, {"/"}).ok());
}

TEST(HostileIndex, EmbeddingSizeOfTheModelIsCheckedAgainstTheIndex) {
  auto f = make_fixture("hidx_dim", 3);
  const std::string cfg = f.dir + "/tiny.json";
  auto c = read_json(std::string(OPENCLIP_TEST_DIR) + "/../configs/models/test-tiny.json");
  write_json(cfg, c);
  const std::string idx = f.dir + "/idx";
  auto b = run(test::openclip() + " index build --model " + cfg + " --pretrained " + f.weights + " --images " + f.dir +
               "/img --out " + idx);
  ASSERT_EQ(b.status, 0) << b.out;
  c["embed_dim"] = 16;  // the config was edited after the build: a smaller model
  write_json(cfg, c);
  auto r = run(search_cmd(idx));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("the index holds 32-float embeddings but model " + cfg + " gives 16"), std::string::npos) << r.out;
}

TEST(HostileIndex, WeightsThatAreDevicesOrFifosFailFast) {
  auto f = make_fixture("hidx_dev", 2);
  const std::string idx = f.dir + "/idx";
  auto r = run("timeout 60 " + build_cmd(f, f.dir + "/img", idx, "/dev/zero"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("/dev/zero is not a regular file"), std::string::npos) << r.out;
  ASSERT_EQ(::mkfifo((f.dir + "/fifo").c_str(), 0600), 0);
  r = run("timeout 60 " + build_cmd(f, f.dir + "/img", idx, f.dir + "/fifo"));
  EXPECT_EQ(r.status, 1) << r.out;  // 124: blocked on the FIFO
  EXPECT_NE(r.out.find("fifo is not a regular file"), std::string::npos) << r.out;
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx)).status, 0);
  edit_meta(idx, [](json& m) { m["weights"] = "/dev/zero"; });
  r = run("timeout 60 " + search_cmd(idx));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("/dev/zero is not a regular file"), std::string::npos) << r.out;
}

// Every item's embedding is its own image's (as in a reference index of all the images)
// and the faiss index finds each item as its own nearest neighbour.
void expect_consistent(const std::string& idx, const std::string& ref) {
  auto got = index::load_index(idx);
  auto want = index::load_index(ref);
  const size_t E = size_t(got.meta.embed_dim);
  index::Searcher s(idx);
  for (size_t i = 0; i < got.items.size(); ++i) {
    size_t j = 0;
    while (j < want.items.size() && want.items[j].key != got.items[i].key) ++j;
    ASSERT_LT(j, want.items.size()) << got.items[i].key;
    for (size_t k = 0; k < E; ++k)  // batch composition differs: GEMM rounding may differ in the last bits
      ASSERT_NEAR(got.embeddings[i * E + k], want.embeddings[j * E + k], 1e-4) << got.items[i].key;
    auto hits = s.search(&got.embeddings[i * E], 1);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].item->key, got.items[i].key);
  }
}

std::set<std::string> keys(const std::string& idx) {
  std::set<std::string> k;
  for (auto& it : index::load_index(idx, false).items) k.insert(it.key);
  return k;
}

TEST(HostileIndex, TwoConcurrentBuildsNeverLoseOrMixData) {
  auto f = make_fixture("hidx_two", 12);
  const std::string ref = f.dir + "/ref";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", ref)).status, 0);
  std::set<std::string> sub, top;
  for (auto& im : f.images) (im.find("/sub/") != std::string::npos ? sub : top).insert(im);
  ASSERT_EQ(keys(f.dir + "/ref").size(), 12u);
  for (int trial = 0; trial < 3; ++trial) {
    const std::string idx = f.dir + "/idx" + std::to_string(trial);
    auto r = run("(" + build_cmd(f, f.dir + "/img/sub", idx) + "; echo rc=$?) > " + idx + ".a 2>&1 & (" +
                 build_cmd(f, f.dir + "/img/*.png", idx) + "; echo rc=$?) > " + idx + ".b 2>&1; wait");
    ASSERT_EQ(r.status, 0);
    std::set<std::string> want;
    for (auto [log, set] : {std::pair{idx + ".a", &sub}, {idx + ".b", &top}}) {
      const std::string out = fs::read_text(log).value();
      if (out.find("rc=0") != std::string::npos) {
        want.insert(set->begin(), set->end());
      } else {
        EXPECT_NE(out.find("is in use by another index build"), std::string::npos) << out;
        EXPECT_NE(out.find("rc=1"), std::string::npos) << out;
      }
    }
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(keys(idx), want) << "trial " << trial;
    expect_consistent(idx, ref);
  }
}

// No temporary files, and only the current and previous generations.
void expect_clean(const std::string& idx) {
  const int64_t g = index::read_meta(idx).generation;
  for (auto& e : std::filesystem::recursive_directory_iterator(idx)) {
    const std::string n = e.path().filename().string();
    EXPECT_EQ(n.find(".tmp-"), std::string::npos) << e.path();
    if (e.is_directory()) {
      EXPECT_TRUE(n == fmt::format("gen-{:06d}", g) || n == fmt::format("gen-{:06d}", g - 1)) << e.path();
    }
  }
}

TEST(HostileIndex, AppendKilledAtEveryStepLeavesAFolderSearchAndBuildAccept) {
  auto f = make_fixture("hidx_kill", 12);
  const std::string ref = f.dir + "/ref";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", ref)).status, 0);
  const std::string query = *std::find_if(f.images.begin(), f.images.end(), [](auto& p) { return p.find("/sub/") != std::string::npos; });
  for (const std::string step : {"embeddings", "items", "faiss", "commit"}) {
    const std::string idx = f.dir + "/idx-" + step;
    ASSERT_EQ(run(build_cmd(f, f.dir + "/img/sub", idx)).status, 0);
    auto k = run("OPENCLIP_DEBUG_INDEX_KILL_AFTER=" + step + " " + build_cmd(f, f.dir + "/img", idx));
    ASSERT_EQ(k.status, 128 + 9) << step << ": " << k.out;
    // Before the commit the first build is current, after it the append.
    EXPECT_EQ(keys(idx).size(), step == "commit" ? 12u : 4u) << step;
    auto s = run(search_cmd(idx, "--image " + query + " -k 1 --json"));  // in both builds
    ASSERT_EQ(s.status, 0) << step << ": " << s.out;
    EXPECT_EQ(json::parse(s.out)["results"][0]["key"], query);
    auto again = run(build_cmd(f, f.dir + "/img", idx));
    ASSERT_EQ(again.status, 0) << step << ": " << again.out;
    EXPECT_EQ(last_json_line(again.out)["total"], 12);
    EXPECT_EQ(keys(idx).size(), 12u);
    expect_consistent(idx, ref);
    expect_clean(idx);
  }
}

}  // namespace
}  // namespace oc
