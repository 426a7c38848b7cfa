// The search page of `openclip serve` in headless Chromium: the page runs the query from
// ?q=, fetches /v1/search and draws the grid; the DOM after rendering must hold one figure
// per result with a loaded image, a score and a caption. Label: browser.
// With OPENCLIP_FMNIST_WEIGHTS and OPENCLIP_FMNIST_INDEX (the demo's fmnist-S weights and an
// index of Fashion-MNIST test images), a query for sneakers must return mostly sneakers.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cstdlib>

#include "server_fixture.h"

namespace oc {
namespace {

std::string chromium() {
  if (const char* env = std::getenv("OPENCLIP_CHROMIUM"); env && *env) return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  return "";
}

// The DOM after the page's scripts ran; a fresh profile per call, no sandbox (tests may run
// as root), virtual time so the fetches finish before the dump.
std::string dump_dom(const std::string& work, const std::string& url) {
  auto r = test::run("timeout 120 '" + chromium() + "' --headless --no-sandbox --disable-gpu --no-first-run "
                     "--disable-extensions --disable-dev-shm-usage --user-data-dir='" + work + "/profile' "
                     "--virtual-time-budget=15000 --dump-dom '" + url + "' 2>'" + work + "/chromium.log'");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ServePage, QueryDrawsTheGrid) {
  if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  auto f = test::make_files("serve_page", 9);
  auto b = test::run(test::openclip() + " index build --model test-tiny --pretrained " + f.weights + " --images " + f.dir +
                     "/img --out " + f.dir + "/idx");
  ASSERT_EQ(b.status, 0) << b.out;
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  auto dom = dump_dom(f.dir, "http://127.0.0.1:" + std::to_string(s.port()) + "/?q=a%20photo%20of%20a%20sneaker");
  EXPECT_NE(dom.find("9 results"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, "<figure class=\"hit\">"), 9u) << dom;
  EXPECT_EQ(count(dom, "src=\"/v1/images/"), 9u) << dom;
  EXPECT_EQ(count(dom, "<span class=\"score\">"), 9u) << dom;
  // The images were fetched from the server (the access counter in /metrics).
  httplib::Client c("127.0.0.1", s.port());
  auto m = c.Get("/metrics")->body;
  EXPECT_NE(m.find("openclip_requests_total{endpoint=\"/v1/images\",code=\"200\"}"), std::string::npos) << m;
}

TEST(ServePage, FashionMnistSneakersWithTheDemoModel) {
  const char* w = std::getenv("OPENCLIP_FMNIST_WEIGHTS");
  const char* idx = std::getenv("OPENCLIP_FMNIST_INDEX");
  if (!w || !idx || chromium().empty()) GTEST_SKIP() << "set OPENCLIP_FMNIST_WEIGHTS and OPENCLIP_FMNIST_INDEX";
  const std::string work = test::fresh_dir("serve_page_fmnist");
  test::ServerProc s(std::string("--model fmnist-S --pretrained ") + w + " --index " + idx, work + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  auto dom = dump_dom(work, "http://127.0.0.1:" + std::to_string(s.port()) + "/?q=a%20photo%20of%20a%20sneaker");
  const size_t hits = count(dom, "<figure class=\"hit\">");
  size_t sneakers = 0;
  for (size_t p = dom.find("<figcaption>"); p != std::string::npos; p = dom.find("<figcaption>", p + 1))
    sneakers += dom.substr(p, dom.find("</figcaption>", p) - p).find("neaker") != std::string::npos;
  EXPECT_EQ(hits, 24u);
  EXPECT_GT(sneakers * 2, hits) << dom;  // "mostly sneakers"
}

}  // namespace
}  // namespace oc
