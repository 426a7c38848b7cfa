// The hub downloader against a fake hub on 127.0.0.1 (tests/hub/fake_hub.h): the cache layout
// huggingface_hub writes, resuming, checksums, and hostile servers and caches.
#include "hub/hub.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/fs.h"
#include "error_of.h"
#include "hub/cache.h"
#include "hub/fake_hub.h"
#include "test_util.h"

namespace oc::hub {
namespace {
namespace sfs = std::filesystem;
using test::FakeHub;

std::string read(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

struct HubTest : ::testing::Test {
  FakeHub server;
  HubOptions o;
  std::string blob_data = std::string(300000, 'x') + "end";
  void SetUp() override {
    o.endpoint = server.endpoint();
    o.cache = test::fresh_dir("hub_cache");
    o.backoff_s = 0.001;
    o.retries = 2;
    o.progress = false;
    server.files["org/tiny/open_clip_config.json"] = "{\"model_cfg\": {}}";
    server.files["org/tiny/open_clip_model.safetensors"] = blob_data;
  }
  std::string folder() const { return o.cache + "/models--org--tiny"; }
  // blobs/ and snapshots/ hold nothing (an .incomplete may stay in blobs/ for a resume only where said).
  int entries(const std::string& sub, bool count_incomplete = true) const {
    int n = 0;
    std::error_code ec;
    if (sfs::is_directory(folder() + "/" + sub, ec))
      for (auto& e : sfs::recursive_directory_iterator(folder() + "/" + sub, ec))
        if (!sfs::is_directory(sfs::symlink_status(e.path())) &&
            (count_incomplete || e.path().extension() != ".incomplete"))
          ++n;
    return n;
  }
};

TEST_F(HubTest, DownloadsIntoTheHuggingFaceCacheLayout) {
  const std::string p = hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o);
  EXPECT_EQ(p, folder() + "/snapshots/" + server.commit + "/open_clip_model.safetensors");
  EXPECT_TRUE(sfs::is_symlink(p));
  EXPECT_EQ(sfs::read_symlink(p).string(),
            "../../blobs/" + FakeHub::sha256(blob_data));  // relative, as huggingface_hub
  EXPECT_EQ(read(p), blob_data);
  EXPECT_EQ(read(folder() + "/refs/main"), server.commit);
  EXPECT_TRUE(fs::exists(o.cache + "/.locks/models--org--tiny/" + FakeHub::sha256(blob_data) + ".lock"));
  EXPECT_EQ(entries("blobs"), 1);
}

TEST_F(HubTest, CachedFileIsUsedWhenTheServerIsGoneAndOfflineMakesNoRequest) {
  const std::string p = hf_hub_download("org/tiny", "open_clip_config.json", "main", o);
  const int requests = server.heads + server.gets;
  setenv("HF_HUB_OFFLINE", "1", 1);
  HubOptions off = hub_options_from_env(o.cache);
  unsetenv("HF_HUB_OFFLINE");
  off.endpoint = o.endpoint;
  EXPECT_TRUE(off.offline);
  EXPECT_EQ(hf_hub_download("org/tiny", "open_clip_config.json", "main", off), p);
  EXPECT_EQ(server.heads + server.gets, requests);
  EXPECT_THROW(hf_hub_download("org/tiny", "other.json", "main", off), NotFound);
  server.stop();
  o.retries = 0;
  EXPECT_EQ(hf_hub_download("org/tiny", "open_clip_config.json", "main", o), p);  // connection refused: the cache
  EXPECT_EQ(hf_hub_download("org/tiny", "open_clip_config.json", server.commit, o), p);
}

TEST_F(HubTest, DroppedConnectionResumesWithARangeRequest) {
  std::vector<std::string> ranges;
  server.behave = [&](const test::HubRequest& r, int) {
    if (r.method == "GET") ranges.push_back(r.range);
    return false;
  };
  server.cut_after = 100000;
  const std::string p = hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o);
  EXPECT_EQ(read(p), blob_data);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=100000-");
}

TEST_F(HubTest, ServerIgnoringTheRangeRestartsTheFile) {
  server.cut_after = 100000;
  server.ignore_range = true;  // the resume gets a 200 with the whole body: written from byte 0
  EXPECT_EQ(read(hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o)), blob_data);
  EXPECT_EQ(server.gets.load(), 2);
}

TEST_F(HubTest, InterruptedRunIsResumedByTheNextRun) {
  o.retries = 0;
  server.cut_after = 120000;
  const std::string err =
      test::error_of([&] { hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o); });
  EXPECT_NE(err.find("the next run resumes"), std::string::npos) << err;
  const std::string inc = folder() + "/blobs/" + FakeHub::sha256(blob_data) + ".incomplete";
  EXPECT_EQ(fs::file_size(inc), 120000);
  EXPECT_EQ(entries("snapshots"), 0);
  std::string range;
  server.behave = [&](const test::HubRequest& r, int) {
    if (r.method == "GET") range = r.range;
    return false;
  };
  EXPECT_EQ(read(hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o)), blob_data);
  EXPECT_EQ(range, "bytes=120000-");
  EXPECT_FALSE(fs::exists(inc));
}

TEST_F(HubTest, CorruptedBlobIsRefusedAndDeleted) {
  const std::string good = blob_data;
  server.behave = [&](const test::HubRequest& r, int fd) {  // the etag of the good file, other bytes
    std::string bad = good;
    bad[1000] = 'y';
    const std::string h = "HTTP/1.1 200 OK\r\nX-Repo-Commit: " + server.commit + "\r\nETag: \"" +
                          FakeHub::sha256(good) + "\"\r\nContent-Length: " + std::to_string(bad.size()) +
                          "\r\nConnection: close\r\n\r\n";
    FakeHub::send_all(fd, r.method == "HEAD" ? h : h + bad);
    return true;
  };
  const std::string err =
      test::error_of([&] { hf_hub_download("org/tiny", "open_clip_model.safetensors", "main", o); });
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  EXPECT_EQ(entries("blobs"), 0);
  EXPECT_EQ(entries("snapshots"), 0);
}

// A server that announces `announced` bytes and sends `body` (no Content-Length on the GET when chunkless).
void lie(FakeHub& s, int64_t announced, const std::string& body, bool endless = false) {
  s.behave = [&s, announced, body, endless](const test::HubRequest& r, int fd) {
    std::string h = "HTTP/1.1 200 OK\r\nX-Repo-Commit: " + s.commit + "\r\nETag: \"" + std::string(64, 'a') +
                    "\"\r\nX-Linked-Size: " + std::to_string(announced) + "\r\nConnection: close\r\n";
    if (r.method == "HEAD")
      return FakeHub::send_all(fd, h + "Content-Length: " + std::to_string(announced) + "\r\n\r\n"), true;
    if (!endless) return FakeHub::send_all(fd, h + "\r\n" + body), true;
    FakeHub::send_all(fd, h + "\r\n");
    const std::string chunk(1 << 16, 'z');
    for (int i = 0; i < 100000 && FakeHub::send_all(fd, chunk); ++i) {
    }
    return true;
  };
}

TEST_F(HubTest, ServerSendingMoreThanItAnnouncedIsStopped) {
  lie(server, 1000, std::string(5000, 'q'));
  const std::string err = test::error_of([&] { hf_hub_download("org/tiny", "f.bin", "main", o); });
  EXPECT_NE(err.find("more than the 1000 bytes it announced"), std::string::npos) << err;
  EXPECT_EQ(entries("blobs"), 0);
  EXPECT_EQ(entries("snapshots"), 0);
}

TEST_F(HubTest, EndlessBodyIsBoundedByTheAnnouncedSize) {
  lie(server, 70000, "", /*endless=*/true);
  const std::string err = test::error_of([&] { hf_hub_download("org/tiny", "f.bin", "main", o); });
  EXPECT_NE(err.find("more than the 70000 bytes"), std::string::npos) << err;
  EXPECT_EQ(entries("blobs"), 0);
}

TEST_F(HubTest, ShortBodyIsNotCachedAndAnnouncedSizeOverTheLimitIsRefused) {
  lie(server, 5000, std::string(1000, 'q'));
  std::string err = test::error_of([&] { hf_hub_download("org/tiny", "f.bin", "main", o); });
  EXPECT_NE(err.find("1000 of 5000 bytes"), std::string::npos) << err;
  EXPECT_EQ(entries("blobs", /*count_incomplete=*/false), 0);  // only the .incomplete, for a resume
  EXPECT_EQ(entries("snapshots"), 0);
  o.max_bytes = 4000;
  err = test::error_of([&] { hf_hub_download("org/tiny", "f.bin", "main", o); });
  EXPECT_NE(err.find("more than the 4000-byte limit"), std::string::npos) << err;
}

TEST_F(HubTest, RedirectsToAnotherHostAreRefusedSameHostOnesFollowed) {
  const int port = server.port();
  server.behave = [port](const test::HubRequest& r, int fd) {
    if (r.path.find("/moved/") == 0) {  // a renamed repository: relative redirect
      FakeHub::send_all(fd,
                        "HTTP/1.1 307 Temporary Redirect\r\nLocation: /org/tiny/resolve/main/open_clip_config.json\r\n"
                        "Content-Length: 0\r\nConnection: close\r\n\r\n");
      return true;
    }
    if (r.path.find("/away/") == 0) {
      FakeHub::send_all(
          fd, "HTTP/1.1 302 Found\r\nX-Repo-Commit: " + std::string(40, 'b') + "\r\nX-Linked-Etag: \"" +
                  std::string(64, 'c') +
                  "\"\r\nX-Linked-Size: 17\r\nLocation: http://localhost:" + std::to_string(port) +
                  "/org/tiny/resolve/main/open_clip_config.json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return true;
    }
    return false;
  };
  EXPECT_EQ(read(hf_hub_download("moved/tiny", "open_clip_config.json", "main", o)), "{\"model_cfg\": {}}");
  const std::string err = test::error_of([&] { hf_hub_download("away/tiny", "open_clip_config.json", "main", o); });
  EXPECT_NE(err.find("another host (localhost"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(o.cache + "/models--away--tiny/blobs"));
}

TEST_F(HubTest, HostileEtagAndNamesAreRefused) {
  server.behave = [&](const test::HubRequest&, int fd) {
    FakeHub::send_all(fd, "HTTP/1.1 200 OK\r\nX-Repo-Commit: " + server.commit +
                              "\r\nETag: \"../../../escape\"\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
    return true;
  };
  std::string err = test::error_of([&] { hf_hub_download("org/tiny", "f.bin", "main", o); });
  EXPECT_NE(err.find("cannot name a file in the cache"), std::string::npos) << err;
  EXPECT_NE(test::error_of([&] { hf_hub_download("org/../x", "f", "main", o); }), "");
  EXPECT_NE(test::error_of([&] { hf_hub_download("org/tiny", "../f", "main", o); }), "");
  EXPECT_NE(test::error_of([&] { hf_hub_download("org/tiny", "f", "../../main", o); }), "");
}

TEST_F(HubTest, SnapshotEntriesOutsideTheRepositoryOrLoopingAreRefused) {
  const std::string snap = folder() + "/snapshots/" + server.commit;
  fs::make_dirs(snap);
  fs::make_dirs(folder() + "/refs");
  fs::write_atomic(folder() + "/refs/main", server.commit);
  const std::string outside = o.cache + "/secret.txt";
  fs::write_atomic(outside, std::string("secret"));
  sfs::create_symlink("../../../secret.txt", snap + "/escape.json");
  sfs::create_symlink("loop2.json", snap + "/loop1.json");
  sfs::create_symlink("loop1.json", snap + "/loop2.json");
  o.offline = true;
  std::string err = test::error_of([&] { hf_hub_download("org/tiny", "escape.json", "main", o); });
  EXPECT_NE(err.find("outside its repository's folder"), std::string::npos) << err;
  err = test::error_of([&] { hf_hub_download("org/tiny", "loop1.json", "main", o); });
  EXPECT_NE(err.find("symlink loop"), std::string::npos) << err;
  fs::write_atomic(folder() + "/refs/main", std::string("../../etc"));
  err = test::error_of([&] { hf_hub_download("org/tiny", "escape.json", "main", o); });
  EXPECT_NE(err.find("not a commit hash"), std::string::npos) << err;
}

TEST_F(HubTest, NotFoundAndTokenGoesToTheEndpointOnly) {
  EXPECT_THROW(hf_hub_download("org/tiny", "missing.bin", "main", o), NotFound);
  std::string auth;
  server.behave = [&](const test::HubRequest& r, int) {
    auth = r.authorization;
    return false;
  };
  o.token = "hf_secret";
  (void)hf_hub_download("org/tiny", "open_clip_config.json", "main", o);
  EXPECT_EQ(auth, "Bearer hf_secret");
}

TEST_F(HubTest, UrlDownloadChecksTheSha256Prefix) {
  const std::string url = server.endpoint() + "/files/x/resolve/main/RN50.pt";
  const std::string dir = test::fresh_dir("hub_url");
  server.files["files/x/RN50.pt"] = "weights";
  const std::string sha = FakeHub::sha256("weights");
  EXPECT_EQ(read(download_url(url, dir, sha, o)), "weights");
  EXPECT_EQ(read(download_url(url, dir, sha.substr(0, 8), o)), "weights");  // kept, no new request needed
  sfs::remove(dir + "/RN50.pt");
  const std::string err = test::error_of([&] { download_url(url, dir, "deadbeef", o); });
  EXPECT_NE(err.find("does not start with deadbeef"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + "/RN50.pt"));
  EXPECT_FALSE(fs::exists(dir + "/RN50.pt.incomplete"));
}

}  // namespace
}  // namespace oc::hub
