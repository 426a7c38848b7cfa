// `openclip serve` over real HTTP on 127.0.0.1 with test-tiny: every endpoint, results equal
// to `openclip embed` / `classify` / `index search`, concurrent clients get their own rows,
// bad input gets a 4xx JSON error while the server keeps serving, a full queue gives 503 +
// Retry-After, and SIGTERM finishes the queued requests.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zlib.h>

#include <future>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "io/safetensors.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::run;

std::vector<std::vector<float>> cli_embed(const test::Files& f, const std::string& what, const std::string& arg) {
  const std::string out = f.dir + "/cli_" + what + ".safetensors";
  auto r = run(test::openclip() + " embed --model test-tiny --pretrained " + f.weights + " --" + what + " " + arg + " --out " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  auto st = io::read_safetensors(out);
  EXPECT_TRUE(st.ok());
  auto& t = st.value().tensors.at(0).second;
  std::vector<std::vector<float>> rows;
  for (int64_t i = 0; i < t.shape[0]; ++i) rows.emplace_back(t.f32() + i * t.shape[1], t.f32() + (i + 1) * t.shape[1]);
  return rows;
}

std::vector<std::vector<float>> embeddings(const std::string& body) {
  return json::parse(body)["embeddings"].get<std::vector<std::vector<float>>>();
}

httplib::MultipartFormDataItems upload(const std::vector<std::string>& paths) {
  httplib::MultipartFormDataItems items;
  for (auto& p : paths) items.push_back({"image", fs::read_text(p).value(), fs::basename(p), "image/png"});
  return items;
}

// The error body every 4xx/5xx carries.
void expect_error(const httplib::Result& r, int status, const std::string& needle = "") {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  auto j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
  EXPECT_EQ(j["error"]["code"], status);
  EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << r->body;
}

// Sends raw bytes and returns what the server answers (until it closes or 5 s pass).
std::string raw_exchange(int port, const std::string& bytes, bool half_close) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
  timeval tv{5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (half_close) shutdown(s, SHUT_WR);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(s, buf, sizeof buf, 0)) > 0;) out.append(buf, size_t(n));
  close(s);
  return out;
}

// A PNG header claiming width x height with all-zero rows: tiny compressed, huge decoded.
std::string png_bomb(uint32_t w, uint32_t h) {
  std::vector<uint8_t> raw(size_t(h) * (1 + w * 3), 0);
  uLongf zn = compressBound(uLong(raw.size()));
  std::vector<uint8_t> z(zn);
  compress2(z.data(), &zn, raw.data(), uLong(raw.size()), 9);
  z.resize(zn);
  auto be = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  auto chunk = [&](const std::string& type, const std::string& data) {
    std::string c = type + data;
    return be(uint32_t(data.size())) + c + be(uint32_t(crc32(0, reinterpret_cast<const Bytef*>(c.data()), uInt(c.size()))));
  };
  std::string ihdr = be(w) + be(h) + std::string{8, 2, 0, 0, 0};
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", std::string(z.begin(), z.end())) + chunk("IEND", "");
}

TEST(Serve, EmbedAndClassifyEqualTheCli) {
  auto f = test::make_files("serve_equal");
  test::ServerProc s("--pretrained " + f.weights, f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  fs::write_atomic(f.dir + "/t.txt", std::string("a red square\na photo of a dog\n"));
  auto want_t = cli_embed(f, "texts", f.dir + "/t.txt");
  auto rt = c.Post("/v1/embed/text", R"({"texts": ["a red square", "a photo of a dog"]})", "application/json");
  ASSERT_TRUE(rt && rt->status == 200) << (rt ? rt->body : "no response");
  EXPECT_EQ(embeddings(rt->body), want_t);  // same code path: bit-identical
  auto want_i = cli_embed(f, "images", "'" + f.dir + "/img/{im10,im11,im12}.png'");
  auto ri = c.Post("/v1/embed/image", upload({f.images[0], f.images[1], f.images[2]}));
  ASSERT_TRUE(ri && ri->status == 200) << (ri ? ri->body : "no response");
  EXPECT_EQ(embeddings(ri->body), want_i);
  auto bytes = fs::read_file(f.images[1]).value();
  json b64 = {{"image", "data:image/png;base64," + base64_encode(bytes)}};
  auto rb = c.Post("/v1/embed/image", b64.dump(), "application/json");
  ASSERT_TRUE(rb && rb->status == 200);
  EXPECT_EQ(embeddings(rb->body)[0], want_i[1]);

  auto cl = run(test::openclip() + " classify --model test-tiny --pretrained " + f.weights + " --image " + f.images[2] +
                " --labels 'a diagram' 'a dog' 'a cat' --json");
  ASSERT_EQ(cl.status, 0) << cl.out;
  auto want_p = json::parse(cl.out)["probs"].get<std::vector<float>>();
  auto items = upload({f.images[2]});
  for (const char* l : {"a diagram", "a dog", "a cat"}) items.push_back({"labels", l, "", ""});
  auto rc = c.Post("/v1/classify", items);
  ASSERT_TRUE(rc && rc->status == 200) << (rc ? rc->body : "");
  EXPECT_EQ(json::parse(rc->body)["probs"][0].get<std::vector<float>>(), want_p);
  json jc = {{"image", base64_encode(fs::read_file(f.images[2]).value())}, {"labels", {"a diagram", "a dog", "a cat"}}};
  auto rc2 = c.Post("/v1/classify", jc.dump(), "application/json");
  ASSERT_TRUE(rc2 && rc2->status == 200) << (rc2 ? rc2->body : "");
  EXPECT_EQ(json::parse(rc2->body)["probs"][0].get<std::vector<float>>(), want_p);

  auto h = c.Get("/healthz");
  ASSERT_TRUE(h && h->status == 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  const std::vector<std::string> wants = {
      "openclip_requests_total{endpoint=\"/v1/embed/text\",code=\"200\"} 1",
      "openclip_requests_total{endpoint=\"/v1/classify\",code=\"200\"} 2",
      "openclip_request_duration_seconds_bucket{endpoint=\"/v1/embed/image\",le=\"+Inf\"} 2",
      "openclip_batch_size_count{kind=\"image\"}", "openclip_queue_depth 0"};
  const std::string m = test::metrics_with(s.port(), wants);
  for (auto& want : wants) EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  auto mt = c.Get("/metrics");
  ASSERT_TRUE(mt && mt->status == 200);
  EXPECT_NE(mt->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  auto page = c.Get("/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_NE(page->body.find("<input id=\"q\""), std::string::npos);
  for (const char* ext : {"src=\"http", "href=\"http", "url(http", "//cdn"})  // no external resources
    EXPECT_EQ(page->body.find(ext), std::string::npos) << ext;
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(Serve, ConcurrentClientsGetTheirOwnRows) {
  auto f = test::make_files("serve_concurrent", 0);
  const int N = 16;
  std::string lines;
  for (int i = 0; i < N; ++i) lines += "text number " + std::to_string(i) + " of the batch\n";
  fs::write_atomic(f.dir + "/t.txt", lines);
  auto want = cli_embed(f, "texts", f.dir + "/t.txt");
  // A long wait so the 16 requests meet in batches even on a loaded machine.
  test::ServerProc s("--pretrained " + f.weights + " --max-batch 8 --max-wait-ms 400", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  std::vector<std::future<std::vector<std::vector<float>>>> got;
  for (int i = 0; i < N; ++i)
    got.push_back(std::async(std::launch::async, [&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      json body = {{"text", "text number " + std::to_string(i) + " of the batch"}};
      auto r = c.Post("/v1/embed/text", body.dump(), "application/json");
      // No retry: the transport errors seen here under load on the httplib server (4 of 16
      // new connections) came from its listen backlog of 5; ours is 4096 (issue 25).
      if (!r || r->status != 200)
        ADD_FAILURE() << "client " << i << ": " << (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error()));
      return r && r->status == 200 ? embeddings(r->body) : std::vector<std::vector<float>>{};
    }));
  for (int i = 0; i < N; ++i) {
    auto e = got[size_t(i)].get();
    ASSERT_EQ(e.size(), 1u) << i << "\n" << s.log();
    ASSERT_EQ(e[0].size(), want[size_t(i)].size());
    // The server's passes hold other rows than the CLI's single pass of 16, and oneDNN's GEMM
    // blocking depends on the row count, so values may differ in the last bits (seen: 1e-7).
    // Another client's row differs by ~0.1 in many dimensions, so 1e-5 tells them apart.
    for (size_t k = 0; k < e[0].size(); ++k)
      ASSERT_NEAR(e[0][k], want[size_t(i)][k], 1e-5) << "client " << i << " got another client's row (dim " << k << ")";
  }
  httplib::Client c("127.0.0.1", s.port());
  auto m = c.Get("/metrics")->body;
  EXPECT_NE(m.find("openclip_batch_size_sum{kind=\"text\"} 16"), std::string::npos) << m;
  EXPECT_EQ(m.find("openclip_batch_size_count{kind=\"text\"} 16"), std::string::npos) << "no batching happened\n" << m;
}

TEST(Serve, BadInputGets4xxJsonAndTheServerKeepsServing) {
  auto f = test::make_files("serve_bad", 1);
  fs::write_atomic(f.dir + "/bomb.png", png_bomb(4000, 4000));
  test::ServerProc s("--pretrained " + f.weights + " --max-body-bytes 200000 --max-image-pixels 1000000 --max-text-bytes 100",
                     f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  expect_error(c.Post("/v1/embed/text", "{\"texts\": [\"a\"", "application/json"), 400, "not valid JSON");
  expect_error(c.Post("/v1/embed/text", "[1,2]", "application/json"), 400, "must be an object");
  expect_error(c.Post("/v1/embed/text", R"({"texts": [1]})", "application/json"), 400, "array of strings");
  expect_error(c.Post("/v1/embed/text", R"({"texts": [""]})", "application/json"), 400, "empty");
  expect_error(c.Post("/v1/embed/text", R"({})", "application/json"), 400, "no text");
  expect_error(c.Post("/v1/embed/text", json{{"text", std::string(101, 'x')}}.dump(), "application/json"), 413, "over the limit");
  expect_error(c.Post("/v1/embed/text", "{\"text\": \"\xff\xfe\"}", "application/json"), 400, "");
  expect_error(c.Post("/v1/embed/text", std::string(5000, '[') + std::string(5000, ']'), "application/json"), 400, "deeper");
  expect_error(c.Post("/v1/embed/text", std::string(300000, ' '), "application/json"), 413, "");
  httplib::MultipartFormDataItems notimg = {{"image", "this is not an image", "x.png", "image/png"}};
  expect_error(c.Post("/v1/embed/image", notimg), 400, "not a readable");
  expect_error(c.Post("/v1/embed/image", upload({f.dir + "/bomb.png"})), 413, "pixel limit");
  expect_error(c.Post("/v1/embed/image", R"({"image": "@@@not base64"})", "application/json"), 400, "base64");
  expect_error(c.Post("/v1/classify", upload({f.images[0]})), 400, "label");
  expect_error(c.Get("/v1/search?q=hello"), 404, "no index");
  expect_error(c.Get("/no/such/thing"), 404, "no such endpoint");
  // Truncated bodies: the client promises more than it sends, then closes or half-closes.
  raw_exchange(s.port(), "POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":", true);
  raw_exchange(s.port(), "POST /v1/embed/image HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
               "Content-Length: 40\r\n\r\n--zz\r\nContent-Disposition: form-da", true);
  auto garbage = raw_exchange(s.port(), "\x16\x03\x01 not http at all\r\n\r\n", true);
  // A 400, or nothing: the server closes with the request's tail unread, and the kernel's
  // RST may reach the client before it reads the answer. Either way it keeps serving.
  EXPECT_TRUE(garbage.empty() || garbage.find("HTTP/1.1 400 ") == 0) << garbage;
  auto ok = c.Post("/v1/embed/text", R"({"text": "still serving"})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_TRUE(s.alive());
}

TEST(Serve, FullQueueGives503WithRetryAfter) {
  auto f = test::make_files("serve_queue", 0);
  test::ServerProc s("--pretrained " + f.weights + " --max-queue 1 --max-batch 8 --max-wait-ms 3000", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  auto first = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(60, 0);
    auto r = c.Post("/v1/embed/text", R"({"text": "first"})", "application/json");
    return r ? r->status : -1;
  });
  // The first request waits 3 s for company; poll until it is queued, then overflow.
  httplib::Client c("127.0.0.1", s.port());
  for (int i = 0; i < 200 && json::parse(c.Get("/healthz")->body)["queue_depth"] != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto r = c.Post("/v1/embed/text", R"({"text": "second"})", "application/json");
  expect_error(r, 503, "queue is full");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(first.get(), 200);
  EXPECT_NE(c.Get("/metrics")->body.find("openclip_queue_rejected_total 1"), std::string::npos);
}

TEST(Serve, SigtermFinishesQueuedRequests) {
  auto f = test::make_files("serve_sigterm", 0);
  fs::write_atomic(f.dir + "/t.txt", std::string("one\ntwo\nthree\nfour\n"));
  auto want = cli_embed(f, "texts", f.dir + "/t.txt");
  test::ServerProc s("--pretrained " + f.weights + " --max-batch 8 --max-wait-ms 1500", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const char* texts[] = {"one", "two", "three", "four"};
  std::vector<std::future<std::pair<int, std::string>>> got;
  for (auto* t : texts)
    got.push_back(std::async(std::launch::async, [&, t] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      auto r = c.Post("/v1/embed/text", json{{"text", t}}.dump(), "application/json");
      return r ? std::make_pair(r->status, r->body) : std::make_pair(-1, std::string());
    }));
  httplib::Client c("127.0.0.1", s.port());
  for (int i = 0; i < 300 && json::parse(c.Get("/healthz")->body)["queue_depth"] != 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.signal(SIGTERM);  // while the four wait in the queue
  for (size_t i = 0; i < 4; ++i) {
    auto [status, body] = got[i].get();
    ASSERT_EQ(status, 200) << body;
    auto e = embeddings(body)[0];
    ASSERT_EQ(e.size(), want[i].size());
    for (size_t k = 0; k < e.size(); ++k) ASSERT_NEAR(e[k], want[i][k], 1e-5) << i;  // pass size may differ: see above
  }
  EXPECT_EQ(s.stop(), 0) << s.log();
  EXPECT_NE(s.log().find("serve: stopped"), std::string::npos) << s.log();
}

TEST(Serve, SearchEqualsTheCliAndServesImages) {
  auto f = test::make_files("serve_search", 8);
  ASSERT_FALSE(test::build_index(f).empty());
  auto cli = run(test::openclip() + " index search " + f.dir + "/idx --text 'a green thing' -k 4 --json");
  ASSERT_EQ(cli.status, 0) << cli.out;
  auto want = json::parse(cli.out)["results"];
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  httplib::Client c("127.0.0.1", s.port());
  auto r = c.Get("/v1/search?q=a%20green%20thing&k=4");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "");
  auto got = json::parse(r->body)["results"];
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i]["id"], want[i]["id"]);
    EXPECT_EQ(got[i]["score"], want[i]["score"]);
    auto img = c.Get(got[i]["url"].get<std::string>());
    ASSERT_TRUE(img && img->status == 200);
    EXPECT_EQ(img->get_header_value("Content-Type"), "image/png");
    EXPECT_EQ(img->body, fs::read_text(want[i]["path"].get<std::string>()).value());
  }
  auto like = c.Post("/v1/search?k=2", upload({f.images[3]}));
  ASSERT_TRUE(like && like->status == 200) << (like ? like->body : "");
  EXPECT_EQ(json::parse(like->body)["results"][0]["key"], f.images[3]);
  expect_error(c.Get("/v1/search?q=x&k=0"), 400, "k must be");
  expect_error(c.Get("/v1/search"), 400, "needs a query");
  expect_error(c.Get("/v1/images/99"), 404, "no image 99");
  // Bad starts: the same port again, an index built with other weights, a missing index.
  auto again = run(test::openclip() + " serve --model test-tiny --pretrained " + f.weights + " --port " + std::to_string(s.port()));
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.out.find("cannot listen"), std::string::npos) << again.out;
  auto other = run(test::openclip() + " serve --model test-tiny --pretrained " + f.other_weights + " --index " + f.dir + "/idx");
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.out.find("built with other weights"), std::string::npos) << other.out;
  auto missing = run(test::openclip() + " serve --model test-tiny --pretrained " + f.weights + " --index " + f.dir + "/nope");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("no such index folder"), std::string::npos) << missing.out;
}

}  // namespace
}  // namespace oc
