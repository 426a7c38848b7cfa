// The report's SVG charts and text helpers: tick choice, number formatting, escaping,
// and that each chart is well-formed with the expected number of points, bars and cells,
// including NaN/inf, empty, single-point and very long series.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "markup_check.h"
#include "report/html.h"
#include "report/svg.h"

namespace oc::report {
namespace {

using test::check_markup;
using test::count;

// The coordinate pairs of the n-th polyline's points attribute.
size_t polyline_pairs(const std::string& svg, size_t n = 0) {
  size_t p = 0;
  for (size_t k = 0; k <= n; ++k) {
    p = svg.find("<polyline", p);
    if (p == std::string::npos) return 0;
    if (k < n) ++p;
  }
  const size_t a = svg.find(" points=\"", p) + 9, b = svg.find('"', a);
  return count(svg.substr(a, b - a), ",");
}

TEST(ReportText, Escape) {
  EXPECT_EQ(escape("<b a='1'>x & \"y\"</b>"), "&lt;b a=&#39;1&#39;&gt;x &amp; &quot;y&quot;&lt;/b&gt;");
  EXPECT_EQ(escape("T-shirt/top"), "T-shirt/top");
}

TEST(ReportText, Base64Check) {
  EXPECT_TRUE(is_base64("iVBORw0KGgo="));
  EXPECT_TRUE(is_base64("QUJD"));
  EXPECT_FALSE(is_base64(""));
  EXPECT_FALSE(is_base64("QUJ"));                 // length not a multiple of 4
  EXPECT_FALSE(is_base64("QU\"><script>a</s"));   // markup is not base64
  EXPECT_FALSE(is_base64("Q==="));
  EXPECT_FALSE(is_base64("=QUJ"));
}

TEST(ReportText, FormatNumber) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(0.001), "0.001");
  EXPECT_EQ(format_number(0.0002), "2e-4");
  EXPECT_EQ(format_number(5.66008949), "5.66");
  EXPECT_EQ(format_number(12345), "12345");
  EXPECT_EQ(format_number(0.5), "0.5");
  EXPECT_EQ(format_number(-1.25), "-1.25");
  EXPECT_EQ(format_number(2.5e7), "2.5e7");
  EXPECT_EQ(format_number(1.7134e-07), "1.713e-7");
  EXPECT_EQ(format_number(std::nan("")), "NaN");
  EXPECT_EQ(format_number(-INFINITY), "-inf");
  EXPECT_EQ(format_percent(0.8812), "88.1%");
  EXPECT_EQ(format_duration(200), "3 min 20 s");
}

TEST(ReportSvg, NiceTicks) {
  auto t = nice_ticks(0, 1, 5);
  ASSERT_EQ(t.size(), 6u);
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], 0.2 * double(i), 1e-12);
  t = nice_ticks(0, 97, 5);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_EQ(t.back(), 80);
  t = nice_ticks(3.3, 3.7, 4);  // steps of 0.1
  ASSERT_EQ(t.size(), 5u);
  EXPECT_NEAR(t[0], 3.3, 1e-12);
  EXPECT_EQ(nice_ticks(2, 2), (std::vector<double>{2}));
  EXPECT_TRUE(nice_ticks(0, INFINITY).empty());
}

TEST(ReportSvg, LineChartPointsAndWellFormed) {
  LineChart lc;
  lc.x_label = "step";
  lc.y_label = "loss <nats>";
  for (int s = 0; s < 2; ++s) {
    Series se;
    se.name = s ? "b & c" : "a";
    for (int i = 0; i < 10; ++i) se.x.push_back(i), se.y.push_back(std::sin(i + s));
    lc.series.push_back(se);
  }
  const Chart c = line_chart(lc);
  EXPECT_EQ(check_markup(c.svg), "") << c.svg;
  EXPECT_EQ(c.points, 20u);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_EQ(count(c.svg, "<polyline"), 2u);
  EXPECT_EQ(polyline_pairs(c.svg, 0), 10u);
  EXPECT_EQ(polyline_pairs(c.svg, 1), 10u);
  EXPECT_NE(c.svg.find("loss &lt;nats&gt;"), std::string::npos);  // the axis title, escaped
  EXPECT_NE(c.svg.find(">b &amp; c</text>"), std::string::npos);  // the legend, escaped
  EXPECT_GE(count(c.svg, "class=\"gridline\""), 3u);              // y gridlines
  EXPECT_GE(count(c.svg, "class=\"tick\""), 6u);
}

TEST(ReportSvg, LineChartSkipsNonFinite) {
  LineChart lc;
  Series se;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  se.x = {0, 1, 2, 3, 4, 5};
  se.y = {1.0, nan, 0.8, INFINITY, 0.6, 0.5};
  lc.series.push_back(se);
  const Chart c = line_chart(lc);
  EXPECT_EQ(c.skipped, 2u);
  EXPECT_EQ(c.points, 4u);
  EXPECT_EQ(polyline_pairs(c.svg), 4u);
  EXPECT_EQ(c.svg.find("nan"), std::string::npos);
  EXPECT_EQ(c.svg.find("inf"), std::string::npos);
  EXPECT_EQ(check_markup(c.svg), "");
}

TEST(ReportSvg, SinglePointAndEmpty) {
  LineChart lc;
  lc.x_integer = true;
  Series se;
  se.x = {1};
  se.y = {0.1225};
  lc.series.push_back(se);
  Chart c = line_chart(lc);
  EXPECT_EQ(c.points, 1u);
  EXPECT_EQ(count(c.svg, "<circle"), 1u);  // a lone point gets a marker, or nothing would show
  EXPECT_EQ(c.svg.find("nan"), std::string::npos);
  EXPECT_EQ(check_markup(c.svg), "");

  LineChart empty;
  empty.series.push_back(Series{});
  c = line_chart(empty);
  EXPECT_EQ(c.points, 0u);
  EXPECT_EQ(count(c.svg, "<polyline"), 0u);
  EXPECT_NE(c.svg.find(">no data<"), std::string::npos);
  EXPECT_EQ(check_markup(c.svg), "");
  EXPECT_NE(line_chart(LineChart{}).svg.find("no data"), std::string::npos);  // no series at all
}

TEST(ReportSvg, LongSeriesIsReducedKeepingExtremes) {
  LineChart lc;
  Series se;
  for (int i = 0; i < 100000; ++i) se.x.push_back(i), se.y.push_back(i == 54321 ? 9.5 : 1.0 + 1e-6 * i);
  lc.series.push_back(se);
  const Chart c = line_chart(lc);
  EXPECT_EQ(c.points, 100000u);
  const size_t pairs = polyline_pairs(c.svg);
  EXPECT_LE(pairs, size_t(4 * lc.width));  // at most 4 points per pixel column
  EXPECT_GE(pairs, size_t(lc.width) / 2);
  EXPECT_NE(c.svg.find("54321 9.5"), std::string::npos);  // the spike survives the reduction
  EXPECT_LT(c.svg.size(), 200000u);
}

TEST(ReportSvg, FixedPercentDomain) {
  LineChart lc;
  lc.y_min = 0, lc.y_max = 1, lc.y_percent = true, lc.x_integer = true;
  Series se;
  se.x = {1, 2, 3};
  se.y = {0.4, 0.6, 0.86};
  lc.series.push_back(se);
  const Chart c = line_chart(lc);
  EXPECT_NE(c.svg.find(">0%</text>"), std::string::npos);
  EXPECT_NE(c.svg.find(">100%</text>"), std::string::npos);
  EXPECT_EQ(c.svg.find(">1.5</text>"), std::string::npos);  // epochs: whole-number ticks only
}

TEST(ReportSvg, BarChart) {
  BarChart bc;
  bc.labels = {"T-shirt/top", "trouser", "<i>x</i>", "dress", "a very long class name that does not fit the column"};
  bc.values = {0.74, 0.88, 0.62, std::nan(""), 1.0};
  const Chart c = bar_chart(bc);
  EXPECT_EQ(check_markup(c.svg), "") << c.svg;
  EXPECT_EQ(count(c.svg, "class=\"bar\""), 4u);
  EXPECT_EQ(count(c.svg, "class=\"track\""), 5u);
  EXPECT_EQ(c.skipped, 1u);
  EXPECT_NE(c.svg.find(">n/a<"), std::string::npos);
  EXPECT_NE(c.svg.find(">88.0%</text>"), std::string::npos);
  EXPECT_NE(c.svg.find(">100%</text>"), std::string::npos);  // the axis
  EXPECT_NE(c.svg.find("&lt;i&gt;x&lt;/i&gt;"), std::string::npos);
  EXPECT_EQ(c.svg.find("<i>"), std::string::npos);
}

TEST(ReportSvg, HeatMap) {
  HeatMap h;
  h.row_labels = h.col_labels = {"a", "b & c", "d"};
  h.counts = {50, 0, 0, 3, 40, 7, 0, 25, 25};
  const Chart c = heat_map(h);
  EXPECT_EQ(check_markup(c.svg), "") << c.svg;
  EXPECT_EQ(count(c.svg, "<rect class=\"cell"), 9u);
  EXPECT_EQ(count(c.svg, "class=\"cell diag\""), 3u);
  for (const char* n : {">50<", ">40<", ">7<", ">25<"}) EXPECT_NE(c.svg.find(n), std::string::npos) << n;
  // Colour by the row fraction: 50/50 is the darkest blue, 0 is white, 25/50 is in between.
  EXPECT_NE(c.svg.find("fill=\"#1d4ed8\""), std::string::npos);
  EXPECT_NE(c.svg.find("fill=\"#ffffff\""), std::string::npos);
  EXPECT_NE(c.svg.find("true b &amp; c \u2192 predicted d: 7 (14.0%)"), std::string::npos);
}

}  // namespace
}  // namespace oc::report
