// Reading a run folder for the report: params.txt, TensorBoard scalars, predictions files (see run_data.h).
#include "report/run_data.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/check.h"
#include "core/fs.h"
#include "report/html.h"

namespace oc::report {

namespace {

using json = nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// nlohmann writes NaN and inf as null, so null reads back as NaN.
double number_or_nan(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNaN;
  return it->get<double>();
}

std::string string_or_empty(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::vector<std::string>> string_list(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return std::vector<std::string>{};
  if (!it->is_array()) return Err{fmt::format("{}: \"{}\" is not an array", where, key)};
  std::vector<std::string> out;
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) return Err{fmt::format("{}: \"{}\"[{}] is not a string", where, key, i)};
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) out.push_back(e->d_name);
  std::sort(out.begin(), out.end());
  return out;
}

// The run's start: out.log's first timestamp ("2026-11-29,23:02:22 | INFO | ..."), else the
// date in the run name (OpenCLIP's default names hold "2026_11_29-23_02_22"), else the
// modification time of params.txt.
std::string run_date(const std::string& dir, const std::string& name) {
  static const std::regex log_ts(R"(^(\d{4}-\d{2}-\d{2}),(\d{2}:\d{2}:\d{2}))");
  static const std::regex name_ts(R"((\d{4})_(\d{2})_(\d{2})-(\d{2})_(\d{2})_(\d{2}))");
  if (auto log = fs::read_text(fs::join(dir, "out.log"))) {
    std::smatch m;
    const std::string head = log->substr(0, 64);
    if (std::regex_search(head, m, log_ts)) return m[1].str() + " " + m[2].str();
  }
  std::smatch m;
  if (std::regex_search(name, m, name_ts))
    return fmt::format("{}-{}-{} {}:{}:{}", m[1].str(), m[2].str(), m[3].str(), m[4].str(), m[5].str(), m[6].str());
  struct stat st {};
  if (::stat(fs::join(dir, "params.txt").c_str(), &st) == 0) {
    std::tm tm{};
    localtime_r(&st.st_mtime, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
  }
  return "";
}

// "confusion": C rows of C non-negative counts (row: true class, column: predicted).
Status read_confusion(const json& j, const std::string& where, Predictions& p) {
  const size_t C = p.classnames.size();
  auto it = j.find("confusion");
  if (it == j.end()) return Status::success();
  if (!it->is_array() || it->size() != C)
    return Err{fmt::format("{}: \"confusion\" must be {} rows (one per class)", where, C)};
  p.confusion.reserve(C * C);
  for (size_t r = 0; r < C; ++r) {
    const json& row = (*it)[r];
    if (!row.is_array() || row.size() != C)
      return Err{fmt::format("{}: \"confusion\"[{}] must hold {} counts", where, r, C)};
    for (size_t k = 0; k < C; ++k) {
      if (!row[k].is_number_integer() || row[k].get<int64_t>() < 0)
        return Err{fmt::format("{}: \"confusion\"[{}][{}] is not a non-negative integer", where, r, k)};
      p.confusion.push_back(row[k].get<int64_t>());
    }
  }
  return Status::success();
}

// "per_class_top1" as given (null: NaN), else from the confusion matrix's rows.
Status read_per_class_top1(const json& j, const std::string& where, Predictions& p) {
  const size_t C = p.classnames.size();
  if (auto it = j.find("per_class_top1"); it != j.end()) {
    if (!it->is_array() || it->size() != C)
      return Err{fmt::format("{}: \"per_class_top1\" must hold {} values (one per class)", where, C)};
    for (auto& v : *it) p.per_class_top1.push_back(v.is_number() ? v.get<double>() : kNaN);
  } else if (!p.confusion.empty()) {
    for (size_t r = 0; r < C; ++r) {
      int64_t n = 0;
      for (size_t k = 0; k < C; ++k) n += p.confusion[r * C + k];
      p.per_class_top1.push_back(n ? double(p.confusion[r * C + r]) / double(n) : kNaN);
    }
  }
  return Status::success();
}

// An example's top predictions; a missing name is the class's.
std::vector<TopPrediction> read_top(const json& e, const std::vector<std::string>& classnames) {
  std::vector<TopPrediction> top;
  const size_t C = classnames.size();
  auto t = e.find("top");
  if (t == e.end() || !t->is_array()) return top;
  for (auto& tp : *t) {
    if (!tp.is_object()) continue;
    TopPrediction pr;
    const double cls = number_or_nan(tp, "class");
    pr.cls = std::isfinite(cls) ? int64_t(cls) : -1;
    pr.name = string_or_empty(tp, "name");
    if (pr.name.empty() && pr.cls >= 0 && pr.cls < int64_t(C)) pr.name = classnames[size_t(pr.cls)];
    pr.caption = string_or_empty(tp, "caption");
    pr.prob = number_or_nan(tp, "prob");
    top.push_back(std::move(pr));
  }
  return top;
}

// "examples": each with a label in 0..C-1 (else skipped with a warning), its image (left out
// with a warning when not base64) and its top predictions.
void read_examples(const json& j, Predictions& p) {
  const size_t C = p.classnames.size();
  auto it = j.find("examples");
  if (it == j.end() || !it->is_array()) return;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    auto lab = e.is_object() ? e.find("label") : e.end();
    if (!e.is_object() || lab == e.end() || !lab->is_number_integer() || lab->get<int64_t>() < 0 ||
        lab->get<int64_t>() >= int64_t(C)) {
      p.warnings.push_back(fmt::format("examples[{}]: skipped (no label in 0..{})", i, C - 1));
      continue;
    }
    Example ex;
    ex.key = string_or_empty(e, "key");
    ex.label = lab->get<int64_t>();
    ex.png_base64 = string_or_empty(e, "png_base64");
    if (!is_base64(ex.png_base64)) {
      p.warnings.push_back(fmt::format("examples[{}] ({}): image left out (png_base64 is not base64)", i, ex.key));
      ex.png_base64.clear();
    }
    ex.top = read_top(e, p.classnames);
    p.examples.push_back(std::move(ex));
  }
}

}  // namespace

std::map<std::string, std::string> parse_params(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // OpenCLIP writes f"{name}: {val}"; an empty value leaves "key: " or, trimmed, "key:".
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && colon > 0) {
      std::string_view value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      out[std::string(line.substr(0, colon))] = std::string(value);
    }
    pos = end + 1;
  }
  return out;
}

Result<Predictions> parse_predictions(std::string_view json_text, const std::string& where) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return Err{fmt::format("{}: not valid JSON ({})", where, e.what())};
  }
  if (!j.is_object()) return Err{fmt::format("{}: the top level is not a JSON object", where)};
  Predictions p;
  p.path = where;
  p.task = string_or_empty(j, "task");
  p.data = string_or_empty(j, "data");
  p.checkpoint = string_or_empty(j, "checkpoint");
  auto classes = string_list(j, "classnames", where);
  if (!classes) return Err{classes.error()};
  p.classnames = std::move(classes.value());
  if (p.classnames.empty()) return Err{fmt::format("{}: no \"classnames\"", where)};
  auto templates = string_list(j, "templates", where);
  if (!templates) return Err{templates.error()};
  p.templates = std::move(templates.value());
  const double samples = number_or_nan(j, "samples");
  p.samples = std::isfinite(samples) ? int64_t(samples) : 0;
  p.top1 = number_or_nan(j, "top1");
  p.top5 = number_or_nan(j, "top5");
  p.images_per_second = number_or_nan(j, "images_per_second");
  p.classifier_seconds = number_or_nan(j, "classifier_seconds");
  if (Status s = read_confusion(j, where, p); !s) return Err{s.error()};
  if (Status s = read_per_class_top1(j, where, p); !s) return Err{s.error()};
  read_examples(j, p);
  return p;
}

RunData load_run(const std::string& dir) {
  if (!fs::exists(dir)) OC_USER_ERROR("run folder {} does not exist", dir);
  if (!fs::is_dir(dir)) OC_USER_ERROR("{} is not a folder (give the run folder, e.g. logs/<name>)", dir);
  RunData r;
  r.dir = dir;
  if (auto text = fs::read_text(fs::join(dir, "params.txt"))) {
    r.params = parse_params(text.value());
    r.has_params = true;
  }
  r.name = r.params.count("name") ? r.params["name"] : fs::basename(dir);
  if (r.name.empty()) r.name = dir;
  r.date = run_date(dir, r.name);

  bool have_events = false;
  for (const std::string& sub : {fs::join(dir, "tensorboard"), dir})
    for (const std::string& f : list_dir(sub)) have_events |= f.find("tfevents") != std::string::npos;
  if (have_events) {
    try {
      r.scalars = read_run_scalars(dir);
      r.has_scalars = true;
    } catch (const Error& e) {
      r.notes.push_back(fmt::format("The TensorBoard logs could not be read: {}", e.what()));
    }
  }

  for (const std::string& f : list_dir(dir)) {
    if (f.rfind("zeroshot_", 0) != 0 || f.size() < 15 || f.substr(f.size() - 5) != ".json") continue;
    const std::string path = fs::join(dir, f);
    auto text = fs::read_text(path);
    if (!text) {
      r.notes.push_back(text.error());
      continue;
    }
    auto p = parse_predictions(text.value(), path);
    if (!p) {
      r.notes.push_back(p.error());
      continue;
    }
    if (p->task.empty()) p->task = f.substr(9, f.size() - 14);
    r.predictions.push_back(std::move(p.value()));
  }
  return r;
}

}  // namespace oc::report
