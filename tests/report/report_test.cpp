// The report end to end on a fixture run folder: the run's settings and final zero-shot
// numbers, every chart, the confusion matrix counts, the example images, escaping of
// names from the files, NaN notes, graceful notes for missing pieces, clear errors for a
// missing folder, and the CLI command.
#include <gtest/gtest.h>

#include <regex>

#include "core/check.h"
#include "core/fs.h"
#include "fixture.h"
#include "markup_check.h"
#include "report/report.h"
#include "test_util.h"

namespace oc::report {
namespace {

using test::check_markup;
using test::count;

std::string render(const std::string& dir) {
  ReportOptions o;
  o.generated_at = "2026-01-01 00:00:00";
  return render_report(load_run(dir), o);
}

TEST(ReportData, ParseParams) {
  auto p = parse_params("batch_size: 256\r\ncsv_separator: \t\nname: a: b\nimage_mean: None\nempty:\nnot a pair\n");
  EXPECT_EQ(p["batch_size"], "256");
  EXPECT_EQ(p["csv_separator"], "\t");
  EXPECT_EQ(p["name"], "a: b");
  EXPECT_EQ(p["image_mean"], "None");
  EXPECT_EQ(p["empty"], "");
  EXPECT_EQ(p.count("not a pair"), 0u);
}

TEST(ReportData, ParsePredictions) {
  auto j = test::predictions_json();
  auto p = parse_predictions(j.dump(), "x.json");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->task, "fashion-mnist");
  EXPECT_EQ(p->classnames.size(), 4u);
  EXPECT_EQ(p->confusion.size(), 16u);
  EXPECT_EQ(p->confusion[1 * 4 + 3], 5);
  EXPECT_EQ(p->examples.size(), 4u);
  EXPECT_EQ(p->examples[2].top[0].cls, 3);
  EXPECT_TRUE(p->warnings.empty());

  // null (how NaN is written) reads as NaN; a missing per_class_top1 comes from the matrix.
  j["top1"] = nullptr;
  j.erase("per_class_top1");
  j["examples"][1]["png_base64"] = "\"><script>alert(1)</script>";
  j["examples"][3]["label"] = 9;
  p = parse_predictions(j.dump(), "x.json");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(std::isnan(p->top1));
  ASSERT_EQ(p->per_class_top1.size(), 4u);
  EXPECT_DOUBLE_EQ(p->per_class_top1[0], 37.0 / 50.0);
  EXPECT_EQ(p->examples.size(), 3u);  // label 9 of 4 classes: skipped
  EXPECT_TRUE(p->examples[1].png_base64.empty());
  ASSERT_EQ(p->warnings.size(), 2u);
  EXPECT_NE(p->warnings[0].find("not base64"), std::string::npos);
  EXPECT_NE(p->warnings[1].find("examples[3]"), std::string::npos);
}

TEST(ReportData, BadPredictionsAreErrorsNamingFileAndKey) {
  auto bad = parse_predictions("{\"classnames\": [\"a\"", "run/zeroshot_x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("run/zeroshot_x.json: not valid JSON"), std::string::npos) << bad.error();
  auto j = test::predictions_json();
  j["confusion"][2] = {1, 2, 3};
  bad = parse_predictions(j.dump(), "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("\"confusion\"[2] must hold 4 counts"), std::string::npos) << bad.error();
  j = test::predictions_json();
  j["confusion"][0][1] = -3;
  EXPECT_FALSE(parse_predictions(j.dump(), "p.json").ok());
  j = test::predictions_json();
  j.erase("classnames");
  bad = parse_predictions(j.dump(), "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("no \"classnames\""), std::string::npos);
}

TEST(Report, FullRun) {
  const std::string dir = test::make_run("report_full");
  const std::string html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  // Header: settings from params.txt and the last zero-shot numbers from the logs.
  EXPECT_NE(html.find("<h1>fixture &lt;run&gt; &amp; co</h1>"), std::string::npos);
  EXPECT_EQ(html.find("fixture <run>"), std::string::npos);
  for (const char* v : {">fmnist-S<", ">amp_bf16<", ">256<", ">0.001<", ">60000<", ">120<"})
    EXPECT_NE(html.find(v), std::string::npos) << v;
  EXPECT_NE(html.find("<div class=\"kpi-value\">86.0%</div>"), std::string::npos);  // top-1 at epoch 3
  EXPECT_NE(html.find("<div class=\"kpi-value\">97.0%</div>"), std::string::npos);  // top-5 at epoch 3
  // Charts: loss (raw + smoothed), lr, throughput (raw + smoothed), scale, zero-shot (top-1 + top-5),
  // per-class bars, confusion heat map.
  EXPECT_EQ(count(html, "<svg class=\"chart line-chart\""), 5u);
  EXPECT_EQ(count(html, "<polyline class=\"series\""), 8u);
  EXPECT_EQ(count(html, "<svg class=\"chart bar-chart\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"bar\""), 4u);
  EXPECT_EQ(count(html, "<svg class=\"chart heat-map\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"cell"), 16u);
  for (auto& row : test::confusion())
    for (int64_t n : row) {
      if (n > 0) {
        EXPECT_NE(html.find(">" + std::to_string(n) + "</text>"), std::string::npos) << n;
      }
    }
  // The NaN loss at step 50 is left out, and the page says so.
  EXPECT_NE(html.find("1 non-finite value (NaN/inf) left out"), std::string::npos);
  // Examples: four images as data: URIs, two right and two wrong at top-1.
  EXPECT_EQ(count(html, "<img src=\"data:image/png;base64,iVBORw0KGgo"), 4u);
  EXPECT_EQ(count(html, "<figure class=\"example ok\">"), 2u);
  EXPECT_EQ(count(html, "<figure class=\"example bad\">"), 2u);
  EXPECT_NE(html.find("a photo of a &lt;b&gt;pull &amp; over&lt;/b&gt;."), std::string::npos);
  EXPECT_EQ(html.find("<b>pull"), std::string::npos);
  EXPECT_NE(html.find("71.0%"), std::string::npos);
  // Self-contained: no external resource of any kind.
  for (const char* ext : {"src=\"http", "href=", "@import", "url(", "<link", "<script src"})
    EXPECT_EQ(html.find(ext), std::string::npos) << ext;
  // No notes about missing pieces.
  EXPECT_EQ(count(html, "class=\"note\""), 0u);
}

TEST(Report, WritesFileAndReturnsPath) {
  const std::string dir = test::make_run("report_write");
  EXPECT_EQ(write_report(dir, ""), dir + "/report.html");
  EXPECT_GT(fs::file_size(dir + "/report.html"), 10000);
  const std::string other = ::testing::TempDir() + "/report_other.html";
  EXPECT_EQ(write_report(dir, other, {"My <title>", ""}), other);
  auto text = fs::read_text(other);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("<h1>My &lt;title&gt;</h1>"), std::string::npos);
}

TEST(Report, MissingPiecesBecomeNotes) {
  // Only params.txt: no curves, no zero-shot, no predictions; each says which command helps.
  std::string dir = test::fresh_dir("report_params_only");
  test::write_params(dir);
  std::string html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  EXPECT_EQ(count(html, "<svg"), 0u);
  EXPECT_NE(html.find("No TensorBoard event files"), std::string::npos);
  EXPECT_NE(html.find("--report-to tensorboard"), std::string::npos);
  EXPECT_NE(html.find("--zeroshot-frequency N"), std::string::npos);
  EXPECT_NE(html.find("No predictions file"), std::string::npos);
  EXPECT_NE(html.find("not evaluated"), std::string::npos);

  // Curves but no val tags and no predictions file.
  dir = test::fresh_dir("report_no_val");
  test::write_events(dir, /*with_val=*/false);
  html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  EXPECT_EQ(count(html, "<svg class=\"chart line-chart\""), 4u);
  EXPECT_NE(html.find("No zero-shot accuracy in this run's TensorBoard logs"), std::string::npos);
  EXPECT_NE(html.find("No predictions file"), std::string::npos);
  EXPECT_NE(html.find("No <code>params.txt</code>"), std::string::npos);
  EXPECT_NE(html.find("<h1>report_no_val</h1>"), std::string::npos);  // the folder's name

  // A single logged step: still charts (one marker each), no NaN in the page.
  dir = test::fresh_dir("report_one_step");
  test::write_events(dir, false, 1);
  html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  EXPECT_EQ(count(html, "<circle class=\"marker\""), 4u);
  EXPECT_EQ(html.find("nan"), std::string::npos);

  // A broken predictions file is reported with its path; the rest still renders.
  dir = test::make_run("report_bad_predictions");
  fs::write_atomic(dir + "/zeroshot_other.json", std::string("{\"classnames\": 3}"));
  html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  EXPECT_NE(html.find("Problems reading this run"), std::string::npos);
  EXPECT_NE(html.find(dir + "/zeroshot_other.json: &quot;classnames&quot; is not an array"), std::string::npos);
  EXPECT_EQ(count(html, "<svg class=\"chart heat-map\""), 1u);

  // A predictions file alone (no logs): its numbers become the big numbers.
  dir = test::fresh_dir("report_predictions_only");
  fs::write_atomic(dir + "/zeroshot_fashion-mnist.json", test::predictions_json().dump());
  html = render(dir);
  EXPECT_NE(html.find("<div class=\"kpi-value\">75.0%</div>"), std::string::npos);
  EXPECT_NE(html.find("zeroshot_fashion-mnist.json</div>"), std::string::npos);
}

TEST(Report, ManyClassesUseTablesNotAHugeGrid) {
  const std::string dir = test::fresh_dir("report_many_classes");
  const int C = 100;
  nlohmann::json j = {{"task", "big"}, {"classnames", nlohmann::json::array()}, {"confusion", nlohmann::json::array()}};
  for (int c = 0; c < C; ++c) {
    j["classnames"].push_back("class " + std::to_string(c));
    std::vector<int64_t> row(C, 0);
    row[c] = 10;
    row[(c + 1) % C] = c == 7 ? 9 : 1;
    j["confusion"].push_back(row);
  }
  fs::write_atomic(dir + "/zeroshot_big.json", j.dump());
  const std::string html = render(dir);
  EXPECT_EQ(check_markup(html), "");
  EXPECT_EQ(count(html, "<rect class=\"cell"), 0u);
  EXPECT_NE(html.find("Most frequent confusions"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>class 7</td><td>class 8</td><td class=\"num\">9</td>"), std::string::npos);
  EXPECT_EQ(count(html, "<rect class=\"track\""), 30u);  // the 30 lowest of 100 classes
  EXPECT_NE(html.find("lowest top-1 of 100"), std::string::npos);
  EXPECT_NE(html.find("has no <code>examples</code>"), std::string::npos);
}

TEST(Report, MissingRunDirIsAClearError) {
  try {
    (void)write_report("/nonexistent/run_xyz", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/run_xyz does not exist"), std::string::npos) << e.what();
  }
  const std::string file = ::testing::TempDir() + "/report_not_a_dir.txt";
  fs::write_atomic(file, std::string("x"));
  EXPECT_THROW((void)load_run(file), Error);
}

TEST(Report, Cli) {
  if (!fs::exists(OPENCLIP_BINARY)) GTEST_SKIP() << "the CLI is not built (the full build builds it)";
  const std::string dir = test::make_run("report_cli");
  auto r = oc::test::run(std::string(OPENCLIP_BINARY) + " report '" + dir + "' --title 'CLI title'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, dir + "/report.html\n");
  auto text = fs::read_text(dir + "/report.html");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("<h1>CLI title</h1>"), std::string::npos);
  r = oc::test::run(std::string(OPENCLIP_BINARY) + " report /nonexistent/run_cli");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("/nonexistent/run_cli does not exist"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace oc::report
