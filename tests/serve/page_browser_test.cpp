// The search page of `openclip serve` in headless Chromium: the page runs the query from
// ?q=, fetches /v1/search and draws the grid; the DOM after rendering must hold one figure
// per result with a loaded image, a score and a caption. Label: browser.
// The same page with a trained model: page_fmnist_long_test.cpp (labels long, browser).
#include <gtest/gtest.h>

#include <httplib.h>

#include <cstdlib>

#include "browser_util.h"

namespace oc {
namespace {

using test::chromium;
using test::count;
using test::dump_dom;

TEST(ServePage, QueryDrawsTheGrid) {
  if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  auto f = test::make_files("serve_page", 9);
  ASSERT_FALSE(test::build_index(f).empty());
  test::ServerProc s("--pretrained " + f.weights + " --index " + f.dir + "/idx", f.dir + "/log");
  ASSERT_GT(s.port(), 0) << s.log();
  auto dom = dump_dom(f.dir, "http://127.0.0.1:" + std::to_string(s.port()) + "/?q=a%20photo%20of%20a%20sneaker");
  EXPECT_NE(dom.find("9 results"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, "<figure class=\"hit\">"), 9u) << dom;
  EXPECT_EQ(count(dom, "src=\"/v1/images/"), 9u) << dom;
  EXPECT_EQ(count(dom, "<span class=\"score\">"), 9u) << dom;
  // The images were fetched from the server (the access counter in /metrics).
  const std::string want = "openclip_requests_total{endpoint=\"/v1/images\",code=\"200\"}";
  const std::string m = test::metrics_with(s.port(), {want});
  EXPECT_NE(m.find(want), std::string::npos) << m;
}

}  // namespace
}  // namespace oc
