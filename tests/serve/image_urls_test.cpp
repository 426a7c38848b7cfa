// /v1/embeddings with {"image": "http://..."} (issue 37): fetched only with
// --allow-image-urls, from private addresses (this test's origin on 127.0.0.1) only with
// --allow-private-image-urls too; the fetched image embeds as the same bytes sent as a data:
// URL do. Uploads that are cut short or damaged get a 400 that names the problem.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "core/base64.h"
#include "raw_http.h"
#include "server_fixture.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::http_request;
using test::raw_request;

const std::string kJson = "Content-Type: application/json\r\n";

struct Origin {
  httplib::Server srv;
  std::thread th;
  int port = 0;
  explicit Origin(const std::string& png) {
    srv.Get("/cat.png", [png](const httplib::Request&, httplib::Response& r) { r.set_content(png, "image/png"); });
    srv.Get("/big.png", [png](const httplib::Request&, httplib::Response& r) {
      r.set_content(png + std::string(3 * png.size(), '\0'), "image/png");  // over --max-body-bytes below
    });
    srv.Get("/to-cat", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/cat.png"); });
    port = srv.bind_to_any_port("127.0.0.1");
    th = std::thread([this] { srv.listen_after_bind(); });
    while (!srv.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Origin() {
    srv.stop();
    th.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

test::RawAnswer embed(int port, const json& input) {
  const std::string body = json{{"model", "test-tiny"}, {"input", input}}.dump();
  return raw_request(port, http_request("POST", "/v1/embeddings", port, kJson, body));
}

std::string error_message(const test::RawAnswer& a) {
  auto j = json::parse(a.body(), nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"].value("message", "") : a.text.substr(0, 300);
}

TEST(ServeImageUrls, FetchedOnlyWhenAllowed) {
  auto f = test::make_files("serve_image_urls", 1);
  const std::string png = fs::read_text(f.images[0]).value();
  Origin origin(png);
  ASSERT_GT(origin.port, 0);
  const json by_url = json::array({{{"image", origin.url("/cat.png")}}});
  {  // Off by default: a 400 that names the flag.
    test::ServerProc s("--pretrained " + f.weights, f.dir + "/log0");
    ASSERT_GT(s.port(), 0) << s.log();
    auto a = embed(s.port(), by_url);
    EXPECT_EQ(a.status(), 400) << a.text.substr(0, 300);
    EXPECT_NE(error_message(a).find("--allow-image-urls"), std::string::npos) << error_message(a);
  }
  {  // Public addresses only: the origin on 127.0.0.1 is refused, naming the address and the flag.
    test::ServerProc s("--pretrained " + f.weights + " --allow-image-urls", f.dir + "/log1");
    ASSERT_GT(s.port(), 0) << s.log();
    auto a = embed(s.port(), by_url);
    EXPECT_EQ(a.status(), 400) << a.text.substr(0, 300);
    EXPECT_NE(error_message(a).find("127.0.0.1"), std::string::npos) << error_message(a);
    EXPECT_NE(error_message(a).find("--allow-private-image-urls"), std::string::npos) << error_message(a);
  }
  test::ServerProc s("--pretrained " + f.weights + " --allow-image-urls --allow-private-image-urls --max-body-bytes " +
                         std::to_string(2 * png.size() + 1000),  // a base64 upload fits, /big.png does not
                     f.dir + "/log2");
  ASSERT_GT(s.port(), 0) << s.log();
  const std::string data_url =
      "data:image/png;base64," + base64_encode({reinterpret_cast<const uint8_t*>(png.data()), png.size()});
  auto want = embed(s.port(), json::array({{{"image", data_url}}}));
  ASSERT_EQ(want.status(), 200) << want.text.substr(0, 300);
  for (const char* path : {"/cat.png", "/to-cat"}) {
    auto got = embed(s.port(), json::array({{{"image", origin.url(path)}}}));
    ASSERT_EQ(got.status(), 200) << path << ": " << got.text.substr(0, 300);
    EXPECT_EQ(json::parse(got.body())["data"][0]["embedding"], json::parse(want.body())["data"][0]["embedding"])
        << path;
  }
  // An image over --max-body-bytes is not fetched whole; a missing one names the status.
  auto big = embed(s.port(), json::array({{{"image", origin.url("/big.png")}}}));
  EXPECT_EQ(big.status(), 400);
  EXPECT_NE(error_message(big).find("--max-body-bytes"), std::string::npos) << error_message(big);
  auto missing = embed(s.port(), json::array({{{"image", origin.url("/nothing.png")}}}));
  EXPECT_EQ(missing.status(), 400);
  EXPECT_NE(error_message(missing).find("HTTP 404"), std::string::npos) << error_message(missing);
}

TEST(ServeImageUrls, CutShortOrDamagedUploadsAreNamed400s) {
  auto f = test::make_files("serve_bad_uploads", 1);
  const std::string png = fs::read_text(f.images[0]).value();
  test::ServerProc s("--pretrained " + f.weights, f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  const int p = s.port();
  std::string damaged = png;
  for (size_t i = 60; i < damaged.size() - 20; i += 7) damaged[i] = char(damaged[i] ^ 0x5a);  // CRCs fail
  for (const std::string& bytes : {png.substr(0, png.size() / 2), damaged}) {
    const std::string b64 = base64_encode({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    auto a = embed(p, json::array({{{"image", "data:image/png;base64," + b64}}}));
    EXPECT_EQ(a.status(), 400) << a.text.substr(0, 300);
    EXPECT_NE(error_message(a).find("PNG"), std::string::npos) << error_message(a);
    auto own = raw_request(p, http_request("POST", "/v1/embed/image", p, kJson, json{{"image", b64}}.dump()));
    EXPECT_EQ(own.status(), 400) << own.text.substr(0, 300);
    EXPECT_NE(own.body().find("not a readable JPEG, PNG or WebP"), std::string::npos) << own.body();
  }
}

}  // namespace
}  // namespace oc
