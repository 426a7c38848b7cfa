#include "eval/zeroshot.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "core/machine.h"
#include "core/progress.h"

namespace oc {

ZeroShotTask load_zeroshot_task(const std::string& path) {
  auto text = fs::read_text(path);
  if (!text) OC_USER_ERROR("{}", text.error());
  nlohmann::json j = parse_json(text.value(), path);
  ZeroShotTask t;
  if (!j.is_object() || !j.contains("classnames") || !j["classnames"].is_array())
    OC_USER_ERROR("{}: expected {{\"classnames\": [...], \"templates\": [...]}}", path);
  for (auto& c : j["classnames"]) t.classnames.push_back(c.get<std::string>());
  if (j.contains("templates"))
    for (auto& c : j["templates"]) t.templates.push_back(c.get<std::string>());
  if (j.contains("name") && j["name"].is_string()) t.name = j["name"].get<std::string>();
  if (t.templates.empty()) t.templates = {"{c}"};
  if (t.classnames.empty()) OC_USER_ERROR("{}: no class names", path);
  return t;
}

ZeroShotTask imagenet_task() {
  std::string p = find_data_file("imagenet_zeroshot.json");
  if (p.empty())
    OC_USER_ERROR("imagenet_zeroshot.json not found in the data folders (run scripts/setup.sh, or set "
                  "OPENCLIP_DATA_DIR)");
  ZeroShotTask t = load_zeroshot_task(p);
  t.name = "imagenet";
  return t;
}

namespace {
std::vector<std::string> read_lines(const std::string& path) {
  auto text = fs::read_text(path);
  if (!text) OC_USER_ERROR("{}", text.error());
  std::vector<std::string> out;
  size_t p = 0;
  const std::string& s = text.value();
  while (p < s.size()) {
    size_t q = s.find('\n', p);
    if (q == std::string::npos) q = s.size();
    std::string line = s.substr(p, q - p);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
    p = q + 1;
  }
  if (out.empty()) OC_USER_ERROR("{}: empty", path);
  return out;
}
}  // namespace

void override_task(ZeroShotTask* task, const std::string& classnames_file, const std::string& templates_file) {
  if (!classnames_file.empty()) {
    if (classnames_file.size() > 5 && classnames_file.substr(classnames_file.size() - 5) == ".json")
      task->classnames = load_zeroshot_task(classnames_file).classnames;
    else
      task->classnames = read_lines(classnames_file);
  }
  if (!templates_file.empty()) task->templates = read_lines(templates_file);
}

std::string fill_template(const std::string& tmpl, const std::string& c) {
  std::string out = tmpl;
  for (const char* key : {"{c}", "{}"}) {
    size_t p;
    while ((p = out.find(key)) != std::string::npos) out.replace(p, std::string(key).size(), c);
  }
  return out;
}

std::vector<float> zeroshot_classifier(Clip& model, const TextTokenizer& tok, const ZeroShotTask& task,
                                       int64_t batch_size) {
  OC_CHECK(!task.classnames.empty() && !task.templates.empty(), "zero-shot task without classes or templates");
  const int64_t C = int64_t(task.classnames.size()), T = int64_t(task.templates.size()), E = model.cfg().embed_dim;
  OC_CHECK(tok.context_length() == model.cfg().text.context_length, "tokenizer context {} for a model of {}",
           tok.context_length(), model.cfg().text.context_length);
  std::vector<std::string> prompts;
  prompts.reserve(size_t(C * T));
  for (auto& c : task.classnames)
    for (auto& t : task.templates) prompts.push_back(fill_template(t, c));
  std::vector<float> W(size_t(C * E), 0.0f), feats;
  Progress bar("zero-shot classifier", C * T, "prompts");
  for (int64_t p0 = 0; p0 < C * T; p0 += batch_size, bar.update(std::min(p0, C * T))) {
    const int64_t n = std::min(batch_size, C * T - p0);
    std::vector<size_t> bad;
    std::vector<int32_t> ids = tok.tokenize_batch({prompts.data() + p0, size_t(n)}, &bad);
    if (!bad.empty()) OC_USER_ERROR("zero-shot prompt '{}' is not valid UTF-8", prompts[size_t(p0) + bad[0]]);
    feats.resize(size_t(n * E));
    model.encode_text(ids.data(), n, feats.data(), /*normalize=*/true);
    for (int64_t i = 0; i < n; ++i) {
      float* w = W.data() + ((p0 + i) / T) * E;
      for (int64_t e = 0; e < E; ++e) w[e] += feats[size_t(i * E + e)];
    }
  }
  for (int64_t c = 0; c < C; ++c) {  // mean over templates, then renormalize (the mean's 1/T cancels)
    float* w = W.data() + c * E;
    double s = 0;
    for (int64_t e = 0; e < E; ++e) s += double(w[e]) * w[e];
    const float inv = float(1.0 / std::max(std::sqrt(s), 1e-12));
    for (int64_t e = 0; e < E; ++e) w[e] *= inv;
  }
  return W;
}

ZeroShotLogits::ZeroShotLogits(ops::Backend& be, std::span<const float> W, int64_t C, int64_t E)
    : be_(be), C_(C), E_(E), w_(be, "the zero-shot classifier"), features_(be, "zero-shot image features"),
      logits_(be, "zero-shot logits") {
  OC_CHECK(int64_t(W.size()) == C * E, "zero-shot classifier of {} floats for {} classes x {}", W.size(), C, E);
  w_dev_ = w_.upload(W);
}

void ZeroShotLogits::operator()(std::span<const float> features, int64_t n, std::span<float> logits) {
  OC_CHECK(int64_t(features.size()) >= n * E_ && int64_t(logits.size()) >= n * C_,
           "zero-shot logits of {} rows: {} features, {} logits", n, features.size(), logits.size());
  const float* f = features_.upload(features.first(size_t(n * E_)));
  float* l = logits_.output(logits.first(size_t(n * C_)));
  be_.run(ops::GemmArgs{
      .ta = false, .tb = true, .M = n, .N = C_, .K = E_, .alpha = 100.0f, .A = f, .lda = E_, .B = w_dev_, .ldb = E_,
      .beta = 0.0f, .C = l, .ldc = C_});
  logits_.download();
}

}  // namespace oc
