// Issue 40, items 1 and 3; issue 42, items 6 and 15: an index lists only the files inside
// its folder (no symlink out, each real folder once), reads only files whose real path is
// under its roots (a link planted after the build is refused), bounds every HNSW field faiss
// allocates from (a named error, never SIGABRT), and refuses a faiss kind or duplicate keys
// that disagree with meta.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

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

std::string current(const std::string& dir, const std::string& file) {
  return index::data_path(dir, index::read_meta(dir), file);
}

// Re-records the SHA-256 of the current generation's files, as anyone who can write the
// folder can: the checks behind the checksums are what is tested.
void resum(const std::string& dir) {
  json m = json::parse(fs::read_text(dir + "/meta.json").value());
  const std::string gen = dir + "/" + fmt::format("gen-{:06d}", m["generation"].get<int>()) + "/";
  for (const char* f : {"embeddings.safetensors", "items.jsonl", "faiss.index"})
    m["files"][f] = index::file_sha256(gen + f, "test");
  fs::write_atomic(dir + "/meta.json", m.dump(2));
}

TEST(IndexLinks, LinksOutOfTheFolderAndLoopsAreNotIndexed) {
  auto f = make_fixture("idx_links", 6);
  fs::make_dirs(f.dir + "/outside");
  fs::write_atomic(f.dir + "/outside/o.png", fs::read_file(f.images[0]).value());
  ASSERT_EQ(::symlink((f.dir + "/outside/o.png").c_str(), (f.dir + "/img/leak.png").c_str()), 0);
  ASSERT_EQ(::symlink("..", (f.dir + "/img/sub/x").c_str()), 0);  // loops: img/sub/x/sub/x/...
  ASSERT_EQ(::symlink("..", (f.dir + "/img/sub/y").c_str()), 0);
  ASSERT_EQ(::symlink("../..", (f.dir + "/img/sub/up").c_str()), 0);  // leaves the folder
  const std::string idx = f.dir + "/idx";
  auto r = run(build_cmd(f, f.dir + "/img", idx));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["added"], 6) << r.out;  // each image once, the outside one not at all
  EXPECT_NE(r.out.find("symlink(s) that lead outside the folder"), std::string::npos) << r.out;
  for (auto& it : index::load_index(idx, false).items) EXPECT_EQ(it.path.find("leak"), std::string::npos) << it.path;
  // A pattern naming the link: listed, but its file is outside the pattern's folder: unread.
  r = run(build_cmd(f, f.dir + "/img/*.png", f.dir + "/idx2"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["failed"], 1) << r.out;
}

TEST(IndexLinks, AnImageReplacedByALinkAfterTheBuildIsNotRead) {
  auto f = make_fixture("idx_swap", 3);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx)).status, 0);
  index::Searcher s(idx);
  const index::Item& it = s.items()[0];
  ASSERT_TRUE(index::read_item_bytes(it, s.meta().roots).ok());
  fs::write_atomic(f.dir + "/secret.txt", std::string("root:x:0:0"));
  ASSERT_EQ(::unlink(it.path.c_str()), 0);
  ASSERT_EQ(::symlink((f.dir + "/secret.txt").c_str(), it.path.c_str()), 0);
  auto bytes = index::read_item_bytes(it, s.meta().roots);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().find("outside the folders the index was built from"), std::string::npos) << bytes.error();
}

// The HNSW scalars after the neighbour table: entry_point, max_level, efConstruction,
// efSearch, upper_beam (faiss 1.7's write_HNSW); the level tables before it.
size_t hnsw_tail(const std::vector<uint8_t>& b, size_t* cum_last) {
  size_t at = 37;                // fourcc + header
  for (int v = 0; v < 5; ++v) {  // assign_probas, cum_nneighbor_per_level, levels, offsets, neighbors
    uint64_t n;
    std::memcpy(&n, b.data() + at, 8);
    if (v == 1) *cum_last = at + 8 + (n - 1) * 4;
    at += 8 + n * (v == 0 || v == 3 ? 8 : 4);
  }
  return at;
}

TEST(IndexHnswFields, OutOfRangeFieldsAreNamedErrorsNotAnAbort) {
  auto f = make_fixture("idx_hnsw_fields", 6);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx) + " --faiss hnsw").status, 0);
  const std::string path = current(idx, "faiss.index");
  const auto good = fs::read_file(path).value();
  size_t cum_last = 0;
  const size_t tail = hnsw_tail(good, &cum_last);
  struct Case {
    size_t at;
    int32_t value;
    const char* message;
  };
  const Case cases[] = {
      {tail + 16, 2000000000, "HNSW field upper_beam is 2000000000, outside [1, 4096]"},
      {tail + 12, 100000000, "HNSW field efSearch is 100000000"},
      {tail + 8, -5, "HNSW field efConstruction is -5"},
      {cum_last, 2000000000, "HNSW field cum_nneighbor_per_level gives level"},
  };
  for (const Case& c : cases) {
    auto b = good;
    std::memcpy(b.data() + c.at, &c.value, 4);
    fs::write_atomic(path, b);
    resum(idx);
    // The process survives and names the field: exit 1, not SIGABRT (134) from a
    // std::bad_alloc inside faiss' OpenMP region.
    auto r = run(test::openclip() + " index search " + idx + " --text hi");
    EXPECT_EQ(r.status, 1) << c.message << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << r.out;
    if (c.at != cum_last) continue;
    // Appending is refused the same way (it was 8 GB allocated and written for one image).
    fs::write_atomic(f.dir + "/img/new.png", fs::read_file(f.images[0]).value());
    r = run(build_cmd(f, f.dir + "/img", idx) + " --faiss hnsw");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << r.out;
    ::unlink((f.dir + "/img/new.png").c_str());
  }
}

TEST(IndexHnswFields, KindAndDuplicateKeysThatDisagreeWithMetaAreRefused) {
  auto f = make_fixture("idx_kind_keys", 3);
  const std::string idx = f.dir + "/idx";
  ASSERT_EQ(run(build_cmd(f, f.dir + "/img", idx)).status, 0);  // flat
  json m = json::parse(fs::read_text(idx + "/meta.json").value());
  m["faiss"] = "hnsw";
  fs::write_atomic(idx + "/meta.json", m.dump(2));
  try {
    index::Searcher s(idx);
    ADD_FAILURE() << "an hnsw meta.json over a flat faiss.index was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("meta.json says the faiss index is \"hnsw\" but faiss.index is flat"),
              std::string::npos)
        << e.what();
  }
  m["faiss"] = "flat";
  fs::write_atomic(idx + "/meta.json", m.dump(2));
  const std::string items = current(idx, "items.jsonl");
  std::string t = fs::read_text(items).value();
  const std::string first = t.substr(0, t.find('\n') + 1);
  const size_t second_end = t.find('\n', first.size()) + 1;
  fs::write_atomic(items, first + first + t.substr(second_end));  // line 2's key is line 1's
  resum(idx);
  try {
    index::Searcher s(idx);
    ADD_FAILURE() << "duplicate keys were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: key "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is already the key of line 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oc
