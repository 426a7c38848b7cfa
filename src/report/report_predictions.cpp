// The report's zero-shot predictions section, from one zeroshot_<task>.json: a summary,
// per-class top-1 bars, the confusion matrix (a heat map up to kMaxHeatMapClasses
// classes, the most frequent confusions as a table beyond), and the example images with
// their top-3 predictions.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/fs.h"
#include "report/html.h"
#include "report/report_internal.h"
#include "report/svg.h"

namespace oc::report::detail {

namespace {

constexpr size_t kMaxHeatMapClasses = 40;  // beyond this the cells are too small to read
constexpr size_t kMaxBars = 60;
constexpr size_t kMaxExamples = 240;       // keeps the page a few MB at most

std::string stat(std::string_view label, const std::string& value) {
  return fmt::format("<div class=\"stat\"><div class=\"stat-label\">{}</div><div class=\"stat-value\">{}</div></div>",
                     escape(label), escape(value));
}

std::string class_name(const Predictions& p, int64_t c) {
  return c >= 0 && c < int64_t(p.classnames.size()) ? p.classnames[size_t(c)] : fmt::format("class {}", c);
}

std::string summary_card(const Predictions& p) {
  std::string body = "<div class=\"stats\">";
  body += stat("samples", p.samples ? std::to_string(p.samples) : "");
  body += stat("top-1", format_percent(p.top1)) + stat("top-5", format_percent(p.top5));
  body += stat("classes", std::to_string(p.classnames.size())) + stat("templates", std::to_string(p.templates.size()));
  body += stat("images / s", std::isfinite(p.images_per_second) ? format_number(p.images_per_second, 4) : "—");
  body += stat("classifier", std::isfinite(p.classifier_seconds) ? format_number(p.classifier_seconds, 3) + " s" : "—");
  body += "</div>\n<dl class=\"facts small\">";
  auto fact = [&](std::string_view k, const std::string& v) {
    body += fmt::format("<div class=\"fact\"><dt>{}</dt><dd>{}</dd></div>", escape(k), v.empty() ? "—" : code(v));
  };
  fact("checkpoint", p.checkpoint);
  fact("data", p.data);
  fact("template", p.templates.empty() ? "" : p.templates[0] + (p.templates.size() > 1 ? fmt::format("  (+{} more)", p.templates.size() - 1) : ""));
  fact("file", p.path);
  body += "</dl>\n";
  if (!p.warnings.empty()) {
    body += "<ul class=\"problems\">";
    for (size_t i = 0; i < std::min<size_t>(p.warnings.size(), 20); ++i) body += "<li>" + escape(p.warnings[i]) + "</li>";
    if (p.warnings.size() > 20) body += fmt::format("<li>… and {} more</li>", p.warnings.size() - 20);
    body += "</ul>\n";
  }
  return card("Summary", body, "", "wide");
}

std::string per_class_card(const Predictions& p) {
  if (p.per_class_top1.empty())
    return card("Per-class top-1", note("This predictions file has neither <code>per_class_top1</code> nor "
                                        "<code>confusion</code>."), "", "missing");
  std::vector<size_t> idx(p.classnames.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::string foot;
  if (idx.size() > kMaxBars) {
    // Lowest first: the classes worth looking at. NaN (no samples) sorts last.
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const double x = p.per_class_top1[a], y = p.per_class_top1[b];
      return std::isnan(y) ? !std::isnan(x) : (!std::isnan(x) && x < y);
    });
    idx.resize(kMaxBars / 2);
    foot = fmt::format("The {} classes with the lowest top-1 of {}.", idx.size(), p.classnames.size());
  }
  BarChart bc;
  for (size_t i : idx) bc.labels.push_back(p.classnames[i]), bc.values.push_back(p.per_class_top1[i]);
  const Chart c = bar_chart(bc);
  if (c.skipped)
    foot += fmt::format("{}<span class=\"warn\">{} class{} without a value (no test samples, or NaN)</span>",
                        foot.empty() ? "" : " · ", c.skipped, c.skipped == 1 ? "" : "es");
  return card("Per-class top-1", "<div class=\"chart-box\">" + c.svg + "</div>\n", foot);
}

std::string confusion_card(const Predictions& p) {
  const size_t C = p.classnames.size();
  if (p.confusion.empty())
    return card("Confusion matrix", note("This predictions file has no <code>confusion</code> matrix."), "", "missing");
  const int64_t total = std::accumulate(p.confusion.begin(), p.confusion.end(), int64_t(0));
  if (C <= kMaxHeatMapClasses) {
    HeatMap h;
    h.row_labels = h.col_labels = p.classnames;
    h.counts = p.confusion;
    const Chart c = heat_map(h);
    return card("Confusion matrix", "<div class=\"chart-box\">" + c.svg + "</div>\n",
                fmt::format("{} samples · rows: true class, columns: predicted class · colour: share of the row", total));
  }
  struct Cell {
    size_t t, pr;
    int64_t n;
  };
  std::vector<Cell> off;
  std::vector<int64_t> row(C, 0);
  for (size_t r = 0; r < C; ++r)
    for (size_t k = 0; k < C; ++k) {
      const int64_t n = p.confusion[r * C + k];
      row[r] += n;
      if (r != k && n > 0) off.push_back({r, k, n});
    }
  std::sort(off.begin(), off.end(), [](const Cell& a, const Cell& b) { return a.n > b.n; });
  off.resize(std::min<size_t>(off.size(), 25));
  std::string rows;
  for (const Cell& c : off)
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                        escape(p.classnames[c.t]), escape(p.classnames[c.pr]), c.n,
                        escape(format_percent(double(c.n) / double(std::max<int64_t>(row[c.t], 1)))));
  return card("Most frequent confusions",
              "<table class=\"table\"><thead><tr><th>true class</th><th>predicted</th><th class=\"num\">count</th>"
              "<th class=\"num\">of true class</th></tr></thead><tbody>\n" + rows + "</tbody></table>\n",
              fmt::format("{} classes: too many for a readable {}×{} heat map, so the {} largest off-diagonal cells "
                          "of the confusion matrix ({} samples).", C, C, C, off.size(), total));
}

std::string example_html(const Predictions& p, const Example& e) {
  const bool correct = !e.top.empty() && e.top[0].cls == e.label;
  std::string s = fmt::format("<figure class=\"example {}\">", correct ? "ok" : "bad");
  if (!e.png_base64.empty())
    s += fmt::format("<img src=\"data:image/png;base64,{}\" alt=\"{}\">", e.png_base64, escape(e.key));
  else
    s += "<div class=\"noimg\">no image</div>";
  s += fmt::format("<figcaption><div class=\"truth\"><span class=\"badge\">{}</span>true: <b>{}</b></div><ol class=\"top\">",
                   correct ? "✓" : "✗", escape(class_name(p, e.label)));
  for (const TopPrediction& t : e.top) {
    const double pr = std::isfinite(t.prob) ? std::clamp(t.prob, 0.0, 1.0) : 0.0;
    const std::string text = t.caption.empty() ? t.name : t.caption;
    s += fmt::format("<li class=\"{}\"><div class=\"line\"><span class=\"cap\" title=\"{}\">{}</span>"
                     "<span class=\"prob\">{}</span></div><div class=\"pbar\"><i style=\"width:{:.1f}%\"></i></div></li>",
                     t.cls == e.label ? "hit" : "miss", escape(t.name), escape(text), escape(format_percent(t.prob)),
                     pr * 100);
  }
  s += fmt::format("</ol><div class=\"key\">{}</div></figcaption></figure>\n", escape(e.key));
  return s;
}

std::string examples_card(const Predictions& p) {
  if (p.examples.empty())
    return card("Examples", note("This predictions file has no <code>examples</code>."), "", "wide missing");
  const size_t n = std::min(p.examples.size(), kMaxExamples);
  size_t correct = 0;
  for (const Example& e : p.examples) correct += !e.top.empty() && e.top[0].cls == e.label;
  std::string body = "<div class=\"examples\">\n";
  for (size_t i = 0; i < n; ++i) body += example_html(p, p.examples[i]);
  body += "</div>\n";
  std::string foot = fmt::format("{} example{}, {} correct at top-1 · each shows the true class and the top-3 captions "
                                 "with their probabilities (green: the true class)",
                                 p.examples.size(), p.examples.size() == 1 ? "" : "s", correct);
  if (n < p.examples.size()) foot += fmt::format(" · the first {} are shown", n);
  return card("Examples", body, foot, "wide");
}

}  // namespace

std::string predictions_section(const Predictions& p) {
  std::string s = fmt::format("<h2>Zero-shot predictions: {}</h2>\n<div class=\"grid\">\n", escape(p.task));
  s += summary_card(p);
  s += per_class_card(p);
  s += confusion_card(p);
  s += examples_card(p);
  return s + "</div>\n";
}

}  // namespace oc::report::detail
