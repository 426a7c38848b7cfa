// The report page: header with settings and big numbers, training curves, zero-shot per epoch, notes
// for what is missing; the predictions section is in report_predictions.cpp.
#include "report/report.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <regex>

#include "core/check.h"
#include "core/fs.h"
#include "report/html.h"
#include "report/report_internal.h"
#include "report/svg.h"

namespace oc::report {

namespace detail {

std::string card(std::string_view title, const std::string& body_html, const std::string& foot_html,
                 std::string_view extra_class) {
  std::string s = fmt::format("<section class=\"card{}{}\">\n<h3>{}</h3>\n", extra_class.empty() ? "" : " ",
                              extra_class, escape(title));
  s += body_html;
  if (!foot_html.empty()) s += "<div class=\"foot\">" + foot_html + "</div>\n";
  return s + "</section>\n";
}

std::string note(const std::string& html) { return "<p class=\"note\">" + html + "</p>\n"; }
std::string code(std::string_view text) { return "<code>" + escape(text) + "</code>"; }

}  // namespace detail

namespace {

using detail::card;
using detail::code;
using detail::note;

constexpr const char* kBlue = "#2563eb";
constexpr const char* kOrange = "#ea580c";
constexpr const char* kGreen = "#16a34a";
constexpr const char* kPurple = "#7c3aed";

struct ZeroShotTags {
  const ScalarSeries* top1 = nullptr;
  const ScalarSeries* top5 = nullptr;
};

// val/<task>-zeroshot-top1 (ours and OpenCLIP's custom tasks) and
// val/<task>-zeroshot-val-top1 (OpenCLIP's imagenet-zeroshot-val-top1).
std::map<std::string, ZeroShotTags> zeroshot_tags(const RunData& run) {
  static const std::regex re(R"(^val/(.+)-zeroshot(-val)?-top([15])$)");
  std::map<std::string, ZeroShotTags> out;
  for (auto& [tag, series] : run.scalars) {
    std::smatch m;
    if (!std::regex_match(tag, m, re)) continue;
    (m[3].str() == "1" ? out[m[1].str()].top1 : out[m[1].str()].top5) = &series;
  }
  return out;
}

// The last finite value of a series, and its step.
bool last_finite(const ScalarSeries& s, double* value, int64_t* step) {
  for (auto it = s.by_step.rbegin(); it != s.by_step.rend(); ++it)
    if (std::isfinite(it->second)) return *value = it->second, *step = it->first, true;
  return false;
}

Series to_series(const ScalarSeries& s, std::string name, std::string color) {
  Series out;
  out.name = std::move(name);
  out.color = std::move(color);
  for (auto& [step, v] : s.by_step) out.x.push_back(double(step)), out.y.push_back(double(v));
  return out;
}

// TensorBoard's smoothing (debiased exponential moving average), over finite values only.
Series ema(const Series& s, double weight) {
  Series out = s;
  out.name = fmt::format("smoothed (EMA {})", weight);
  double acc = 0;
  int n = 0;
  for (size_t i = 0; i < s.y.size(); ++i) {
    if (!std::isfinite(s.y[i])) continue;
    acc = acc * weight + (1 - weight) * s.y[i];
    ++n;
    out.y[i] = acc / (1 - std::pow(weight, n));
  }
  return out;
}

// `skipped`: non-finite values of the logged series (a smoothed copy repeats them, so the
// chart's own count would say twice as many).
std::string chart_foot(size_t skipped, const std::vector<std::string>& extra) {
  std::string foot;
  for (auto& e : extra) foot += (foot.empty() ? "" : " · ") + e;
  if (skipped)
    foot += fmt::format("{}<span class=\"warn\">{} non-finite value{} (NaN/inf) left out</span>", foot.empty() ? "" : " · ",
                        skipped, skipped == 1 ? "" : "s");
  return foot;
}

size_t non_finite(const ScalarSeries& s) {
  size_t n = 0;
  for (auto& [step, v] : s.by_step) n += !std::isfinite(v);
  return n;
}

std::string training_card(const RunData& run, const std::string& tag, const std::string& title, const std::string& y_label,
                          const char* color, bool smooth) {
  auto it = run.scalars.find(tag);
  if (it == run.scalars.end() || it->second.by_step.empty())
    return card(title, note(fmt::format("No {} in this run's TensorBoard logs.", code(tag))), "", "missing");
  const ScalarSeries& s = it->second;
  LineChart lc;
  lc.x_label = "step";
  lc.x_integer = true;
  lc.y_label = y_label;
  Series raw = to_series(s, title, color);
  raw.markers = raw.y.size() <= 30;  // a short run's few points stay visible as points
  if (smooth && raw.y.size() >= 50) {
    raw.name = "raw";
    raw.opacity = 0.35;
    raw.stroke_width = 1.25;
    lc.series.push_back(raw);
    Series sm = ema(raw, 0.9);
    sm.opacity = 1.0;
    sm.stroke_width = 2;
    lc.series.push_back(sm);
  } else {
    lc.series.push_back(raw);
  }
  const Chart c = line_chart(lc);
  std::vector<std::string> extra{fmt::format("{} point{}, steps {}–{}", s.by_step.size(), s.by_step.size() == 1 ? "" : "s",
                                             s.by_step.begin()->first, s.by_step.rbegin()->first)};
  double v;
  int64_t step;
  if (last_finite(s, &v, &step)) extra.push_back(fmt::format("last {} at step {}", escape(format_number(v, 5)), step));
  extra[0] = code(tag) + " · " + extra[0];
  return card(title, "<div class=\"chart-box\">" + c.svg + "</div>\n", chart_foot(non_finite(s), extra));
}

std::string fact(std::string_view label, const std::string& value) {
  return fmt::format("<div class=\"fact\"><dt>{}</dt><dd>{}</dd></div>", escape(label),
                     value.empty() ? std::string("—") : escape(value));
}

std::string header(const RunData& run, const ReportOptions& opt, const std::map<std::string, ZeroShotTags>& zs) {
  auto param = [&](const char* k) {
    auto it = run.params.find(k);
    return it == run.params.end() || it->second == "None" ? std::string() : it->second;
  };
  const std::string title = opt.title.empty() ? run.name : opt.title;
  std::string s = "<header class=\"top card\">\n<div class=\"title-row\">\n<div class=\"title\">";
  s += fmt::format("<div class=\"eyebrow\">openclip training report</div><h1>{}</h1>", escape(title));
  s += fmt::format("<div class=\"sub\">{}{}{}</div></div>\n", code(run.dir), run.date.empty() ? "" : " · started ",
                   escape(run.date));

  // Big numbers: the last logged zero-shot accuracy of each task, else the predictions file's.
  std::string kpis;
  auto kpi = [&](const std::string& label, double v, const std::string& sub) {
    kpis += fmt::format("<div class=\"kpi\"><div class=\"kpi-label\">{}</div><div class=\"kpi-value\">{}</div>"
                        "<div class=\"kpi-sub\">{}</div></div>\n",
                        escape(label), escape(format_percent(v)), escape(sub));
  };
  std::map<std::string, bool> shown;
  for (auto& [task, t] : zs) {
    double v;
    int64_t step;
    if (t.top1 && last_finite(*t.top1, &v, &step)) kpi(task + " zero-shot top-1", v, fmt::format("epoch {}", step));
    if (t.top5 && last_finite(*t.top5, &v, &step)) kpi(task + " zero-shot top-5", v, fmt::format("epoch {}", step));
    shown[task] = true;
  }
  for (const Predictions& p : run.predictions) {
    if (shown.count(p.task)) continue;
    const std::string from = fs::basename(p.path);
    if (std::isfinite(p.top1)) kpi(p.task + " zero-shot top-1", p.top1, from);
    if (std::isfinite(p.top5)) kpi(p.task + " zero-shot top-5", p.top5, from);
  }
  if (kpis.empty())
    kpis = "<div class=\"kpi kpi-empty\"><div class=\"kpi-label\">zero-shot top-1 / top-5</div>"
           "<div class=\"kpi-value\">—</div><div class=\"kpi-sub\">not evaluated</div></div>\n";
  s += "<div class=\"kpis\">\n" + kpis + "</div>\n</div>\n<dl class=\"facts\">\n";

  std::string steps, final_loss;
  if (auto it = run.scalars.find("train/loss"); it != run.scalars.end() && !it->second.by_step.empty()) {
    steps = std::to_string(it->second.by_step.rbegin()->first + 1);
    double v;
    int64_t st;
    if (last_finite(it->second, &v, &st)) final_loss = format_number(v, 4);
  }
  s += fact("model", param("model")) + fact("precision", param("precision")) + fact("batch size", param("batch_size")) +
       fact("epochs", param("epochs")) + fact("learning rate", param("lr")) +
       fact("samples / epoch", param("train_num_samples")) + fact("steps logged", steps) + fact("final loss", final_loss);
  // `openclip demo` runs: which recipe and which CPU their figures are from.
  if (!param("demo_recipe").empty()) s += fact("demo recipe", param("demo_recipe")) + fact("CPU", param("demo_cpu"));
  s += "\n</dl>\n";
  if (!run.has_params)
    s += note("No <code>params.txt</code> in this folder, so the run's settings are unknown. " +
              std::string(detail::kHowParams));
  return s + "</header>\n";
}

std::string training_section(const RunData& run) {
  std::string s = "<h2>Training</h2>\n";
  if (!run.has_scalars)
    return s + card("Training curves", note("No TensorBoard event files in " + code(run.dir + "/tensorboard") + ". " +
                                            std::string(detail::kHowTensorboard)),
                    "", "missing");
  s += "<div class=\"grid\">\n";
  s += training_card(run, "train/loss", "Training loss", "loss", kBlue, true);
  s += training_card(run, "train/lr", "Learning rate", "lr", kPurple, false);
  s += training_card(run, "train/samples_per_second", "Throughput", "samples / s", kGreen, true);
  if (run.scalars.count("train/scale")) s += training_card(run, "train/scale", "Logit scale", "exp(logit_scale)", kOrange, false);
  return s + "</div>\n";
}

std::string zeroshot_section(const RunData& run, const std::map<std::string, ZeroShotTags>& zs) {
  std::string s = "<h2>Zero-shot accuracy per epoch</h2>\n<div class=\"grid\">\n";
  if (zs.empty()) {
    std::string why = run.has_scalars ? "No zero-shot accuracy in this run's TensorBoard logs. "
                                      : "No TensorBoard logs, so no zero-shot accuracy per epoch. ";
    return s + card("Zero-shot accuracy", note(why + std::string(detail::kHowZeroShotLogs)), "", "missing") + "</div>\n";
  }
  for (auto& [task, t] : zs) {
    LineChart lc;
    lc.x_label = "epoch";
    lc.y_label = "accuracy";
    lc.y_min = 0, lc.y_max = 1;
    lc.y_percent = true;
    lc.x_integer = true;
    std::vector<std::string> extra;
    for (auto [series, name, color] : {std::tuple{t.top1, "top-1", kBlue}, std::tuple{t.top5, "top-5", kOrange}}) {
      if (!series) continue;
      Series se = to_series(*series, name, color);
      se.markers = true;
      lc.series.push_back(se);
      double v;
      int64_t step;
      if (last_finite(*series, &v, &step))
        extra.push_back(fmt::format("{} {} at epoch {}", name, escape(format_percent(v)), step));
    }
    const Chart c = line_chart(lc);
    s += card(task + " zero-shot", "<div class=\"chart-box\">" + c.svg + "</div>\n", chart_foot(c.skipped, extra));
  }
  return s + "</div>\n";
}

// Validation metrics other than zero-shot accuracy (retrieval recall, val loss): last values.
std::string other_val_section(const RunData& run) {
  static const std::regex zs(R"(^val/.+-zeroshot(-val)?-top[15]$)");
  std::string rows;
  for (auto& [tag, s] : run.scalars) {
    if (tag.rfind("val/", 0) != 0 || std::regex_match(tag, zs) || s.by_step.empty()) continue;
    rows += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n", code(tag),
                        escape(format_number(s.by_step.rbegin()->second, 5)), s.by_step.rbegin()->first);
  }
  if (rows.empty()) return "";
  return card("Other validation metrics",
              "<table class=\"table\"><thead><tr><th>tag</th><th class=\"num\">last value</th><th class=\"num\">epoch</th>"
              "</tr></thead><tbody>\n" + rows + "</tbody></table>\n");
}

std::string now_string() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string render_report(const RunData& run, const ReportOptions& opt) {
  const auto zs = zeroshot_tags(run);
  const std::string title = opt.title.empty() ? run.name : opt.title;
  std::string s = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += fmt::format("<title>{} · openclip report</title>\n<style>\n{}</style>\n</head>\n<body>\n<main>\n", escape(title),
                   detail::page_css());
  s += header(run, opt, zs);
  if (!run.notes.empty()) {
    std::string items;
    for (auto& n : run.notes) items += "<li>" + escape(n) + "</li>\n";
    s += card("Problems reading this run", "<ul class=\"problems\">\n" + items + "</ul>\n", "", "problems");
  }
  s += training_section(run);
  s += zeroshot_section(run, zs);
  s += other_val_section(run);
  if (run.predictions.empty()) {
    s += "<h2>Zero-shot predictions</h2>\n";
    s += card("Per-class accuracy, confusion matrix, examples",
              note("No predictions file " + code(run.dir + "/zeroshot_<task>.json") + " in this run. " +
                   std::string(detail::kHowPredictions)),
              "", "missing");
  }
  for (const Predictions& p : run.predictions) s += detail::predictions_section(p);
  s += fmt::format("<footer>Generated by <code>openclip report</code> {} on {} from {}. Self-contained: no network, "
                   "charts are inline SVG.</footer>\n",
                   escape(OPENCLIP_VERSION), escape(opt.generated_at.empty() ? now_string() : opt.generated_at),
                   code(run.dir));
  s += fmt::format("</main>\n<script>\n{}</script>\n</body>\n</html>\n", detail::page_script());
  return s;
}

std::string write_report(const std::string& run_dir, const std::string& out_path, const ReportOptions& opt) {
  const RunData run = load_run(run_dir);
  const std::string out = out_path.empty() ? fs::join(run_dir, "report.html") : out_path;
  fs::write_atomic(out, render_report(run, opt));
  return out;
}

}  // namespace oc::report
