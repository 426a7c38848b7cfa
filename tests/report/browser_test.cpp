// The report as a person sees it: headless Chromium (Debian's `chromium`, installed by
// scripts/setup.sh) renders the fixture run's page; the DOM after rendering must hold the
// charts, the confusion matrix and the example images, the hover script must have run,
// and the screenshot must not be blank. The screenshot is kept at
// ${CMAKE_BINARY_DIR}/report_screenshot.png for a person to look at. Label: browser.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/fs.h"
#include "fixture.h"
#include "image/codec.h"
#include "markup_check.h"
#include "report/report.h"
#include "test_util.h"

namespace oc::report {
namespace {

using test::count;

std::string chromium() {
  if (const char* env = std::getenv("OPENCLIP_CHROMIUM"); env && *env) return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  return "";
}

std::string chromium_cmd(const std::string& work, const std::string& what, const std::string& html) {
  // A fresh profile per call so parallel ctest runs never share one; no sandbox because
  // tests may run as root (CI containers), where Chromium refuses to start with it.
  return "timeout 120 '" + chromium() + "' --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
         "--disable-extensions --disable-dev-shm-usage --user-data-dir='" + work + "/profile' --window-size=1400,3000 " +
         what + " 'file://" + html + "' 2>'" + work + "/chromium.log'";
}

std::string dump_dom(const std::string& work, const std::string& html) {
  auto r = oc::test::run(chromium_cmd(work, "--dump-dom", html));
  EXPECT_EQ(r.status, 0) << r.out;
  return r.out;
}

ImageU8 screenshot(const std::string& work, const std::string& html, const std::string& png) {
  std::remove(png.c_str());
  auto r = oc::test::run(chromium_cmd(work, "--screenshot='" + png + "'", html));
  EXPECT_EQ(r.status, 0) << r.out;
  auto img = decode_image_file(png);
  EXPECT_TRUE(img.ok()) << png << ": " << img.error();
  return img.ok() ? std::move(img.value()) : ImageU8{};
}

// What the rendered DOM must contain; "" when all of it is there.
std::string check_dom(const std::string& dom) {
  std::string bad;
  auto need = [&](const std::string& what, size_t want, bool at_least = false) {
    const size_t n = count(dom, what);
    if (at_least ? n < want : n != want) bad += "  " + what + ": " + std::to_string(n) + (at_least ? ", want >= " : ", want ") +
                                               std::to_string(want) + "\n";
  };
  need("<svg class=\"chart line-chart\"", 5);    // loss, lr, throughput, scale, zero-shot
  need("<polyline class=\"series\"", 8);         // raw + smoothed loss and throughput, lr, scale, top-1, top-5
  need("<svg class=\"chart bar-chart\"", 1);
  need("<rect class=\"bar\"", 4);
  need("<svg class=\"chart heat-map\"", 1);
  need("<rect class=\"cell", 16);                // the 4 x 4 confusion matrix
  need("<text class=\"count\"", 16);             // a count in every cell, zeros too
  need("<img src=\"data:image/png;base64,", 4);
  need("<div class=\"kpi-value\">86.0%</div>", 1);
  need("class=\"tip\"", 5);                      // the hover script ran: one tooltip per line chart
  need("class=\"hover-line\"", 5);
  return bad;
}

// Colours of the screenshot and the share of pixels that are not page background.
struct Ink {
  size_t colours = 0;
  double non_background = 0;
};
Ink ink(const ImageU8& img) {
  std::set<uint32_t> colours;
  size_t ink = 0;
  for (size_t i = 0; i + 2 < img.rgb.size(); i += 3) {
    const uint8_t r = img.rgb[i], g = img.rgb[i + 1], b = img.rgb[i + 2];
    colours.insert(uint32_t(r) << 16 | uint32_t(g) << 8 | b);
    const bool page = (r == 0xf4 && g == 0xf5 && b == 0xf7) || (r == 255 && g == 255 && b == 255);  // --bg and cards
    ink += !page;
  }
  return {colours.size(), img.rgb.empty() ? 0.0 : double(ink) / double(img.rgb.size() / 3)};
}

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(chromium().empty())
        << "headless Chromium not found (/usr/bin/chromium): scripts/setup.sh installs it (Debian package "
           "`chromium`), or set OPENCLIP_CHROMIUM to a Chromium/Chrome binary";
    // One folder per test: ctest runs the tests in parallel processes.
    work_ = test::fresh_dir(std::string("report_browser_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string work_;
};

TEST_F(ReportBrowser, RendersChartsTablesAndImages) {
  const std::string run = test::make_run("report_browser_run");
  const std::string html = write_report(run, "");
  const std::string dom = dump_dom(work_, html);
  EXPECT_EQ(check_dom(dom), "") << "the rendered DOM lacks:\n" << check_dom(dom);

  const std::string png = std::string(OPENCLIP_BUILD_DIR) + "/report_screenshot.png";
  const ImageU8 img = screenshot(work_, html, png);
  ASSERT_EQ(img.width, 1400);
  ASSERT_EQ(img.height, 3000);
  const Ink k = ink(img);
  // A blank page has 1 colour and no ink (see BrokenPagesFailTheChecks). The rendered report
  // measured ~5,400 colours (anti-aliased text and lines, the example images) and ~10% ink
  // (text, charts, borders, images); the bounds leave room for other fonts and sit far
  // above a blank page.
  EXPECT_GE(k.colours, 500u);
  EXPECT_GE(k.non_background, 0.03);
  fs::write_atomic(std::string(OPENCLIP_BUILD_DIR) + "/report_screenshot.html", *fs::read_text(html));
  std::printf("report screenshot: %s (%zu colours, %.1f%% ink)\n", png.c_str(), k.colours, 100 * k.non_background);
}

// The checks above can fail: a page whose charts are gone fails the DOM check, and an empty
// page fails the screenshot check.
TEST_F(ReportBrowser, BrokenPagesFailTheChecks) {
  const std::string run = test::make_run("report_browser_broken");
  std::string page = render_report(load_run(run), {});
  for (size_t a; (a = page.find("<svg")) != std::string::npos;) page.erase(a, page.find("</svg>", a) + 6 - a);
  const std::string broken = work_ + "/broken.html";
  fs::write_atomic(broken, page);
  const std::string problems = check_dom(dump_dom(work_, broken));
  EXPECT_NE(problems.find("<svg class=\"chart line-chart\": 0, want 5"), std::string::npos) << problems;
  EXPECT_NE(problems.find("<rect class=\"cell: 0, want 16"), std::string::npos) << problems;

  const std::string blank = work_ + "/blank.html";
  fs::write_atomic(blank, std::string("<!doctype html><html><body></body></html>"));
  const Ink k = ink(screenshot(work_, blank, work_ + "/blank.png"));
  EXPECT_LT(k.colours, 500u);
  EXPECT_LT(k.non_background, 0.03);
}

}  // namespace
}  // namespace oc::report
