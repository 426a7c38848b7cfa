// The loader end to end on small generated shards: determinism for a (seed, epoch, rank,
// workers), exact resume from a saved position, OpenCLIP's epoch sizing, the bad-data
// fixtures (the run goes on, counts are right), CSV and synthetic datasets, errors.
#include "data/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "core/check.h"
#include "data/helpers.h"
#include "data/tar.h"
#include "data/synthetic.h"
#include "image/codec.h"
#include "image/transform.h"
#include "text/text_tokenizer.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;

std::shared_ptr<const TextTokenizer> tokenizer() {
  static std::shared_ptr<const TextTokenizer> t = make_text_tokenizer("", false, 77);
  return t;
}

ImageU8 test_image(int i, int w = 20, int h = 16) {
  ImageU8 im;
  im.width = w;
  im.height = h;
  im.rgb.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = im.row(y) + 3 * x;
      p[0] = uint8_t(i * 37 + x * 5);
      p[1] = uint8_t(i * 11 + y * 7);
      p[2] = uint8_t(i * 3);
    }
  return im;
}

// 8 shards x 20 samples: keys "s<shard>_<i>", png images, captions, .cls labels.
const std::string& shard_dir() {
  static std::string dir = [] {
    std::string d = temp_dir("loader_shards");
    nlohmann::json sizes;
    for (int s = 0; s < 8; ++s) {
      std::string name = fmt::format("{:05d}.tar", s);
      fs::write_atomic(d + "/" + name, [&](const fs::Sink& sink) {
        TarWriter w(sink);
        for (int i = 0; i < 20; ++i) {
          int id = s * 20 + i;
          std::string key = fmt::format("s{}_{:02d}", s, i);
          auto png = encode_image(test_image(id), ImageFormat::Png);
          OC_CHECK(png.ok(), "{}", png.error());
          w.add(key + ".png", *png);
          w.add(key + ".txt", fmt::format("sample number {}", id));
          w.add(key + ".cls", std::to_string(id % 5));
        }
        w.finish();
      });
      sizes[name] = 20;
    }
    write_text(d + "/sizes.json", sizes.dump());
    return d;
  }();
  return dir;
}

DataConfig base_cfg() {
  DataConfig c;
  c.type = DatasetType::Auto;
  c.data = shard_dir() + "/{00000..00007}.tar";
  c.batch_size = 4;
  c.workers = 2;
  c.seed = 3;
  c.preprocess.size = 8;
  c.context_length = 16;
  c.warn_full = 1;
  return c;
}

std::vector<Batch> run_epoch(DataLoader& dl, int64_t epoch, int64_t limit = -1) {
  dl.start_epoch(epoch);
  std::vector<Batch> out;
  while (limit < 0 || int64_t(out.size()) < limit) {
    auto b = dl.next();
    if (!b) break;
    out.push_back(std::move(*b));
  }
  return out;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].keys, b[i].keys) << what << " batch " << i;
    EXPECT_EQ(a[i].images, b[i].images) << what << " batch " << i;  // same crops, bit for bit
    EXPECT_EQ(a[i].tokens, b[i].tokens) << what << " batch " << i;
    EXPECT_EQ(a[i].labels, b[i].labels) << what << " batch " << i;
  }
}

TEST(Loader, EpochSizeAndContents) {
  DataLoader dl(base_cfg(), tokenizer());
  // 160 samples / 4 = 40 batches, already a multiple of 2 workers.
  EXPECT_EQ(dl.num_batches(), 40);
  EXPECT_EQ(dl.num_samples(), 160);
  auto e = run_epoch(dl, 0);
  ASSERT_EQ(e.size(), 40u);
  std::set<std::string> keys;
  for (auto& b : e) {
    EXPECT_EQ(b.size, 4);
    EXPECT_EQ(b.images.size(), 4u * 3 * 8 * 8);
    EXPECT_EQ(b.tokens.size(), 4u * 16);
    for (int r = 0; r < b.size; ++r) {
      keys.insert(b.keys[size_t(r)]);
      // The label is the .cls, and the caption names the sample: "sample number <id>".
      int s = std::stoi(b.keys[size_t(r)].substr(1)), i = std::stoi(b.keys[size_t(r)].substr(3));
      EXPECT_EQ(b.labels[size_t(r)], (s * 20 + i) % 5);
      std::vector<int32_t> want(16);
      ASSERT_TRUE(tokenizer()->tokenize(fmt::format("sample number {}", s * 20 + i), want).ok());
      EXPECT_EQ(std::vector<int32_t>(b.tokens.begin() + r * 16, b.tokens.begin() + (r + 1) * 16), want);
    }
  }
  EXPECT_EQ(keys.size(), 160u);  // one pass, every sample once
  // Round-robin: batch i came from worker i % 2.
  for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(e[i].worker, int(i % 2));
  EXPECT_EQ(dl.stats().skipped_samples(), 0);
}

TEST(Loader, DeterministicForSeedEpochWorkersRegardlessOfTiming) {
  DataLoader a(base_cfg(), tokenizer()), b(base_cfg(), tokenizer());
  auto ea = run_epoch(a, 1);
  b.start_epoch(1);
  std::vector<Batch> eb;
  int i = 0;
  while (auto x = b.next()) {  // a slow consumer: the workers run ahead differently
    if (++i % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    eb.push_back(std::move(*x));
  }
  expect_same(ea, eb, "same seed/epoch");
  auto e2 = run_epoch(a, 2);
  EXPECT_NE(ea[0].keys, e2[0].keys);  // another epoch: another order
  auto cfg = base_cfg();
  cfg.seed = 4;
  DataLoader c(cfg, tokenizer());
  EXPECT_NE(run_epoch(c, 1)[0].keys, ea[0].keys);
  // Workers = 0 (in the caller's thread) equals one worker thread.
  cfg = base_cfg();
  cfg.workers = 0;
  DataLoader z(cfg, tokenizer());
  cfg.workers = 1;
  DataLoader o(cfg, tokenizer());
  expect_same(run_epoch(z, 0), run_epoch(o, 0), "workers 0 vs 1");
}

TEST(Loader, ResumeRestoresTheExactPosition) {
  for (size_t buf : {size_t(5000), size_t(7)}) {
    auto cfg = base_cfg();
    cfg.num_samples = 200;  // 50 batches -> 25 per worker: wraps around (160 samples in the shards)
    cfg.sample_shuffle_size = buf;
    cfg.sample_shuffle_initial = std::min<size_t>(buf, 1000);
    DataLoader full(cfg, tokenizer());
    auto all = run_epoch(full, 5);
    ASSERT_EQ(all.size(), 50u);
    for (int64_t stop_at : {1, 2, 7, 20, 41, 49}) {
      DataLoader first(cfg, tokenizer());
      auto head = run_epoch(first, 5, stop_at);
      std::string saved = first.position().to_json().dump();
      DataLoader second(cfg, tokenizer());
      auto pos = LoaderPosition::from_json(nlohmann::json::parse(saved));
      ASSERT_TRUE(pos.ok()) << pos.error();
      auto st = second.resume(*pos);
      ASSERT_TRUE(st.ok()) << st.error();
      std::vector<Batch> tail;
      while (auto b = second.next()) tail.push_back(std::move(*b));
      ASSERT_EQ(head.size() + tail.size(), all.size()) << "stop at " << stop_at;
      std::vector<Batch> rest(all.begin() + stop_at, all.end());
      expect_same(rest, tail, fmt::format("resume at {} (buffer {})", stop_at, buf));
      EXPECT_EQ(tail.empty() ? 50 : tail.front().index, stop_at);
    }
  }
  // Another layout is refused with the reason.
  DataLoader a(base_cfg(), tokenizer());
  run_epoch(a, 0, 3);
  auto cfg = base_cfg();
  cfg.workers = 4;
  DataLoader b(cfg, tokenizer());
  auto st = b.resume(a.position());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("workers 2 (now 4)"), std::string::npos) << st.error();
}

TEST(Loader, RanksGetDisjointShards) {
  std::set<std::string> seen;
  for (int rank = 0; rank < 2; ++rank) {
    auto cfg = base_cfg();
    cfg.world_size = 2;
    cfg.rank = rank;
    DataLoader dl(cfg, tokenizer());
    EXPECT_EQ(dl.num_batches(), 20);  // 160 / (4 x 2)
    for (auto& b : run_epoch(dl, 0))
      for (auto& k : b.keys) EXPECT_TRUE(seen.insert(k).second) << "rank " << rank << " repeats " << k;
  }
  EXPECT_EQ(seen.size(), 160u);
}

TEST(Loader, TooFewShardsIsOpenClipsError) {
  auto cfg = base_cfg();
  cfg.data = shard_dir() + "/{00000..00002}.tar";
  cfg.workers = 2;
  cfg.world_size = 2;
  try {
    DataLoader dl(cfg, tokenizer());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("number of shards must be >= total workers"), std::string::npos) << e.what();
  }
  cfg.resampled = true;  // resampling has no such limit
  DataLoader dl(cfg, tokenizer());
  auto e = run_epoch(dl, 0);
  EXPECT_EQ(int64_t(e.size()), dl.num_batches());
}

TEST(Loader, ResampledWithUpsamplingIsDeterministic) {
  auto cfg = base_cfg();
  cfg.data = shard_dir() + "/{00000..00003}.tar::" + shard_dir() + "/{00004..00007}.tar";
  cfg.upsampling_factors = "1::0";  // the second source never drawn
  cfg.resampled = true;
  cfg.num_samples = 64;
  DataLoader a(cfg, tokenizer()), b(cfg, tokenizer());
  auto ea = run_epoch(a, 0), eb = run_epoch(b, 0);
  expect_same(ea, eb, "resampled");
  for (auto& bt : ea)
    for (auto& k : bt.keys) EXPECT_LT(std::stoi(k.substr(1)), 4) << k;
}

TEST(Loader, EvalKeepsOrderAndThePartialBatch) {
  auto cfg = base_cfg();
  cfg.train = false;
  cfg.batch_size = 7;
  cfg.workers = 1;
  DataLoader dl(cfg, tokenizer());
  EXPECT_EQ(dl.num_batches(), 23);  // ceil(160 / 7) from sizes.json
  auto e = run_epoch(dl, 0);
  ASSERT_EQ(e.size(), 23u);
  EXPECT_EQ(e.back().size, 160 - 22 * 7);
  EXPECT_EQ(e[0].keys[0], "s0_00");  // no shuffling
  EXPECT_EQ(e[0].keys[6], "s0_06");
}

TEST(Loader, BadDataIsSkippedAndCounted) {
  OC_NEED_FIXTURES();
  auto e = expected();
  std::string list;
  for (auto& n : e["order"]) list += (list.empty() ? "" : ",") + n.get<std::string>().substr(0, n.get<std::string>().size() - 4);
  auto cfg = base_cfg();
  cfg.data = fixture_dir() + "/{" + list + "}.tar";
  cfg.train = false;
  cfg.workers = 1;
  cfg.batch_size = 3;
  DataLoader dl(cfg, tokenizer());
  int64_t n = 0;
  dl.start_epoch(0);
  std::vector<std::string> keys;
  while (auto b = dl.next())
    for (auto& k : b->keys) keys.push_back(k), ++n;
  std::vector<std::string> want;
  std::map<std::string, int64_t> by_status;
  for (auto& s : e["stream"]["samples"]) {
    by_status[s["status"]]++;
    if (s["status"] == "ok") want.push_back(s["key"]);
  }
  EXPECT_EQ(keys, want);  // the usable samples, in order, as OpenCLIP would keep them
  auto& st = dl.stats();
  EXPECT_EQ(st.count(Skip::NoCaption), by_status["no_caption"]);
  EXPECT_EQ(st.count(Skip::NoImage), by_status["no_image"]);
  EXPECT_EQ(st.count(Skip::DecodeError), by_status["decode_error"]);  // empty + corrupt JPEG
  EXPECT_EQ(st.count(Skip::BadCaption), by_status["bad_caption"]);
  EXPECT_EQ(st.count(Skip::ShardError), 3);
  EXPECT_EQ(st.count(Skip::ShardEmpty), 1);
  EXPECT_EQ(st.count(Skip::ShardMissing), 2);
  EXPECT_EQ(by_status["decode_error"], 2);
  EXPECT_EQ(by_status["bad_caption"], 1);

  // Training over the same list (resampled, so no shard-count limit) goes on as well.
  cfg.train = true;
  cfg.resampled = true;
  cfg.num_samples = 30;
  cfg.workers = 2;
  DataLoader tr(cfg, tokenizer());
  auto ep = run_epoch(tr, 0);
  EXPECT_EQ(int64_t(ep.size()), tr.num_batches());
}

TEST(Loader, NothingReadableIsAnErrorNotAHang) {
  auto cfg = base_cfg();
  std::string d = temp_dir("nothing");
  cfg.data = d + "/{0..3}.tar";
  cfg.num_samples = 16;
  DataLoader dl(cfg, tokenizer());
  dl.start_epoch(0);
  try {
    dl.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without filling one batch"), std::string::npos) << e.what();
  }
}

TEST(Loader, CsvDatasetSplitsRanksAndReplacesBadRows) {
  std::string d = temp_dir("csvdata");
  ASSERT_EQ(std::system(("mkdir -p " + d + "/img").c_str()), 0);
  std::string csv = "filepath,title,label\n";
  for (int i = 0; i < 10; ++i) {
    auto png = encode_image(test_image(i), ImageFormat::Png);
    fs::write_atomic(d + fmt::format("/img/{}.png", i), *png);
    csv += fmt::format("img/{}.png,\"caption, number {}\",{}\n", i, i, i % 3);
  }
  csv += "img/missing.png,a missing file,1\n";  // 11 rows
  write_text(d + "/data.csv", csv);
  DataConfig cfg = base_cfg();
  cfg.data = d + "/data.csv";
  cfg.csv_separator = ',';
  cfg.csv_label_key = "label";
  cfg.batch_size = 2;
  cfg.world_size = 2;
  std::multiset<std::string> seen;
  for (int rank = 0; rank < 2; ++rank) {
    cfg.rank = rank;
    DataLoader dl(cfg, tokenizer());
    EXPECT_EQ(dl.num_batches(), 3);  // ceil(11/2)=6 per rank, drop_last: 3 batches of 2
    for (auto& b : run_epoch(dl, 0))
      for (int r = 0; r < b.size; ++r) {
        seen.insert(b.keys[size_t(r)]);
        EXPECT_GE(b.labels[size_t(r)], 0);
      }
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(seen.count(d + "/img/missing.png"), 0u);  // replaced by the next row that loads

  // The default TAB separator on a comma file: the error lists the columns and separator.
  cfg.csv_separator = '\t';
  try {
    DataLoader dl(cfg, tokenizer());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'filepath'"), std::string::npos) << e.what();
  }
}

TEST(Loader, SyntheticDatasets) {
  DataConfig cfg = base_cfg();
  cfg.type = DatasetType::Synthetic;
  cfg.data = "";
  cfg.num_samples = 16;
  DataLoader dl(cfg, tokenizer());
  auto e = run_epoch(dl, 0);
  ASSERT_EQ(e.size(), 4u);
  const float r0 = -cfg.preprocess.mean[0] / cfg.preprocess.std[0];
  EXPECT_NEAR(e[0].images[0], r0, 1e-5);  // a black image, normalized
  std::string text = tokenizer()->decode(std::span<const int32_t>(e[0].tokens.data(), 16));
  EXPECT_EQ(text.substr(0, text.find_last_not_of(' ') + 1), "dummy caption");

  cfg.type = DatasetType::SyntheticLearnable;
  DataLoader ll(cfg, tokenizer());
  for (auto& b : run_epoch(ll, 0))
    for (int r = 0; r < b.size; ++r) {
      int64_t lab = b.labels[size_t(r)];
      ASSERT_GE(lab, 0);
      ASSERT_LT(lab, int64_t(learnable_classnames().size()));
      std::string t = tokenizer()->decode(std::span<const int32_t>(b.tokens.data() + size_t(r) * 16, 16));
      EXPECT_NE(t.find(learnable_classnames()[size_t(lab)]), std::string::npos) << t;
    }
  cfg.num_samples = -1;
  EXPECT_THROW(DataLoader(cfg, tokenizer()), Error);
}

TEST(Loader, DatasetTypeAuto) {
  EXPECT_EQ(*resolve_dataset_type(DatasetType::Auto, "a/{0..9}.tar"), DatasetType::WebDataset);
  EXPECT_EQ(*resolve_dataset_type(DatasetType::Auto, "x.tar::y.tar"), DatasetType::WebDataset);
  EXPECT_EQ(*resolve_dataset_type(DatasetType::Auto, "x.tsv"), DatasetType::Csv);
  EXPECT_EQ(*resolve_dataset_type(DatasetType::Auto, "a/{0..9}"), DatasetType::WebDataset);
  EXPECT_FALSE(resolve_dataset_type(DatasetType::Auto, "x.parquet").ok());
  EXPECT_FALSE(resolve_dataset_type(DatasetType::Auto, "folder").ok());
  EXPECT_EQ(*resolve_dataset_type(DatasetType::Synthetic, ""), DatasetType::Synthetic);
}

// ---- http(s) shards, streamed with libcurl from a local python3 -m http.server ----
#ifdef OPENCLIP_HAVE_CURL
}  // namespace
}  // namespace oc::data
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
namespace oc::data {
namespace {

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

bool can_connect(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

struct HttpServer {
  int port = 0;
  pid_t pid = 0;
  explicit HttpServer(const std::string& dir) {
    port = free_port();
    std::string cmd = fmt::format("cd '{}' && {{ {} -m http.server {} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!; }}", dir,
                                  kPython, port);
    pid = pid_t(std::stol(run_capture(cmd)));
    for (int i = 0; i < 200 && !can_connect(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~HttpServer() {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
};

TEST(Loader, HttpShardsGiveTheSameBatchesAsLocalFiles) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3";
  HttpServer srv(shard_dir());
  ASSERT_TRUE(can_connect(srv.port)) << "http.server did not start";
  auto local = base_cfg();
  auto remote = base_cfg();
  remote.data = fmt::format("http://127.0.0.1:{}/{{00000..00007}}.tar", srv.port);
  DataLoader a(local, tokenizer()), b(remote, tokenizer());  // b's size comes from sizes.json over HTTP
  EXPECT_EQ(b.num_batches(), a.num_batches());
  expect_same(run_epoch(a, 0), run_epoch(b, 0), "http vs local");

  // A shard that is not there (404) is counted, and the rest is read.
  remote.data = fmt::format("http://127.0.0.1:{}/{{00000,00001,nothere}}.tar", srv.port);
  remote.train = false;
  remote.workers = 1;
  DataLoader c(remote, tokenizer());
  int64_t n = 0;
  for (auto& bt : run_epoch(c, 0)) n += bt.size;
  EXPECT_EQ(n, 40);
  EXPECT_EQ(c.stats().count(Skip::ShardMissing), 1);
}
#endif

// Issue 13: a CSV row naming /dev/zero is counted and skipped at once (it used to fill
// memory without bound); rows with too few or too many fields are skipped and counted.
TEST(Loader, CsvDeviceFilesAndMalformedRowsAreCountedAndSkipped) {
  std::string d = temp_dir("csvhostile");
  ASSERT_EQ(std::system(("mkdir -p " + d + "/img").c_str()), 0);
  std::string csv = "filepath,title\n";
  for (int i = 0; i < 8; ++i) {
    auto png = encode_image(test_image(i), ImageFormat::Png);
    fs::write_atomic(d + fmt::format("/img/{}.png", i), *png);
    csv += fmt::format("img/{}.png,caption {}\n", i, i);
  }
  csv += "/dev/zero,an endless file\n";
  csv += "img/0.png\n";                     // too few fields: no caption
  csv += "img/1.png,a caption,extra field\n";  // too many
  write_text(d + "/data.csv", csv);
  DataConfig cfg = base_cfg();
  cfg.data = d + "/data.csv";
  cfg.csv_separator = ',';
  cfg.batch_size = 3;
  DataLoader dl(cfg, tokenizer());
  EXPECT_EQ(dl.num_samples(), 9);  // 8 images + /dev/zero; the malformed rows are not samples
  EXPECT_EQ(dl.stats().count(Skip::MalformedRow), 2);
  std::set<std::string> seen;
  for (auto& b : run_epoch(dl, 0))
    for (int r = 0; r < b.size; ++r) seen.insert(b.keys[size_t(r)]);
  EXPECT_EQ(seen.count("/dev/zero"), 0u);
  EXPECT_EQ(dl.stats().count(Skip::FileError), 1);
}

// A worker whose shards cannot fill one batch ends its share of the epoch with a warning;
// the other worker's batches still train (it used to stop the run).
TEST(Loader, AnEmptyWorkerEndsItsShareNotTheRun) {
  std::string d = temp_dir("emptyworker");
  ASSERT_EQ(std::system(("cp '" + shard_dir() + "/00000.tar' '" + d + "/00000.tar'").c_str()), 0);
  write_text(d + "/00001.tar", std::string(3000, 'x'));  // not a tar at all
  DataConfig cfg = base_cfg();
  cfg.data = d + "/{00000..00001}.tar";
  cfg.num_samples = 40;
  cfg.train = true;
  cfg.workers = 2;
  DataLoader dl(cfg, tokenizer());
  std::vector<Batch> ep;
  ASSERT_NO_THROW(ep = run_epoch(dl, 0));
  EXPECT_EQ(ep.size(), 5u);  // the good shard's 20 samples in batches of 4
  EXPECT_GE(dl.stats().count(Skip::ShardError), 1);
}

// A HostAllocator that counts its live buffers and what it ever allocated.
class CountingAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    ++allocations, ++live;
    return plain_host_allocator().allocate(bytes);
  }
  void release(void* p, size_t bytes) noexcept override {
    if (p) --live;
    plain_host_allocator().release(p, bytes);
  }
  std::string_view name() const override { return "counting"; }
  std::atomic<int> allocations{0}, live{0};
};

// The hook a device backend's pinned memory comes through (ops::Backend::host_allocator):
// the batches' images live in the given allocator's memory, recycled batches keep it (a
// steady state allocates nothing), and the batches are bitwise those of plain memory.
TEST(Loader, BatchImagesLiveInTheGivenHostAllocator) {
  DataConfig c = base_cfg();
  c.prefetch = 1;
  DataLoader plain(c, tokenizer());
  const std::vector<Batch> want = run_epoch(plain, 1);
  CountingAllocator counting;
  {
    DataLoader dl(c, tokenizer());
    dl.set_batch_memory({.alloc = &counting, .consumer_batches = 2});
    dl.start_epoch(1);
    std::vector<Batch> got;
    while (auto b = dl.next()) {
      EXPECT_EQ(&b->images.get_allocator().allocator(), &counting);
      got.push_back(*b);  // a copy, in the same allocator (one allocation each)
      dl.recycle(std::move(*b));
    }
    expect_same(got, want, "counting allocator");
    // At most 2 workers x (1 queued + 1 being filled) + the consumer's batch exist at once,
    // and the pool (2 x (prefetch 1 + 2) + 1 = 7) keeps every recycled one: the loader's own
    // allocations stay below that bound over 40 batches, whatever the timing.
    ASSERT_EQ(got.size(), 40u);
    EXPECT_LE(counting.allocations.load() - int(got.size()), 7);
    got.clear();
  }
  EXPECT_EQ(counting.live.load(), 0);  // every buffer went back to its allocator
}

// BatchMemory::pixels: the batches carry the resized uint8 pixels, which ToTensor + Normalize
// (normalize_chw; the backend's op computes the same expression) turn into exactly the floats
// of a plain loader; everything else is the same.
TEST(Loader, PixelBatchesNormaliseToTheFloatBatches) {
  DataConfig c = base_cfg();
  DataLoader plain(c, tokenizer());
  const std::vector<Batch> want = run_epoch(plain, 2, 6);
  DataLoader dl(c, tokenizer());
  dl.set_batch_memory({.pixels = true});
  std::vector<Batch> got = run_epoch(dl, 2, 6);
  ASSERT_EQ(got.size(), want.size());
  const size_t plane = size_t(3) * 8 * 8;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].images.empty());
    ASSERT_EQ(got[i].pixels.size(), want[i].images.size());
    std::vector<float> f(got[i].pixels.size());
    for (int r = 0; r < got[i].size; ++r)
      normalize_chw(got[i].pixels.data() + r * plane, 8, c.preprocess, std::span<float>(f.data() + r * plane, plane));
    EXPECT_EQ(f, std::vector<float>(want[i].images.begin(), want[i].images.end())) << "batch " << i;
    EXPECT_EQ(got[i].keys, want[i].keys);
    EXPECT_EQ(got[i].tokens, want[i].tokens);
  }
}

}  // namespace
}  // namespace oc::data
