#include "cli/demo_recipe.h"

#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "core/options.h"
#include "image/transform.h"

namespace oc::cli {

// configs/recipes/*.json (oc_embed_assets in CMakeLists.txt)
std::string_view demo_recipe_v1_json();
std::string_view demo_recipe_v2_json();
std::string_view demo_recipe_v3_json();

namespace {
using nlohmann::json;

// The built-in recipes, the default first; each is also loadable by its "name".
struct BuiltinRecipe {
  const char* file;
  std::string_view (*text)();
};
constexpr BuiltinRecipe kBuiltinRecipes[] = {{"configs/recipes/fmnist-demo-v3.json", demo_recipe_v3_json},
                                             {"configs/recipes/fmnist-demo-v2.json", demo_recipe_v2_json},
                                             {"configs/recipes/fmnist-demo.json", demo_recipe_v1_json}};

DemoRecipe builtin(const BuiltinRecipe& b) {
  return parse_demo_recipe(std::string(b.text()), std::string(b.file) + " (built in)");
}

// Reads one required field; `ok` checks its JSON type.
template <class T>
T field(const json& j, const char* key, bool (json::*ok)() const noexcept, const char* what, const std::string& where) {
  if (!j.contains(key)) OC_USER_ERROR("{}: the recipe has no \"{}\" ({})", where, key, what);
  if (!(j[key].*ok)()) OC_USER_ERROR("{}: \"{}\" must be {}, got {}", where, key, what, j[key].dump());
  if constexpr (std::is_integral_v<T>)
    return json_int<T>(j[key], where, fmt::format("\"{}\"", key));  // 2^32 + 128 is refused, not read as 128
  else
    return j[key].get<T>();
}
}  // namespace

DemoRecipe parse_demo_recipe(const std::string& text, const std::string& where) {
  const json j = parse_json(text, where);
  if (!j.is_object()) OC_USER_ERROR("{}: not a JSON object", where);
  const std::set<std::string> known = {"name",    "description", "model",  "batch_size", "lr",         "wd",
                                       "warmup",  "lr_scheduler", "precision", "aug_cfg", "samples", "epochs",
                                       "max_passes", "seed", "measured"};
  for (auto& [k, _] : j.items())
    if (!known.count(k)) OC_USER_ERROR("{}: unknown field \"{}\"", where, k);
  const auto str = &json::is_string;
  const auto integer = &json::is_number_integer;
  const auto number = &json::is_number;
  DemoRecipe r;
  r.source = where;
  r.name = field<std::string>(j, "name", str, "a string", where);
  r.model = field<std::string>(j, "model", str, "a model config name", where);
  r.batch_size = field<int>(j, "batch_size", integer, "an integer", where);
  r.lr = field<double>(j, "lr", number, "a number", where);
  r.wd = field<double>(j, "wd", number, "a number", where);
  r.warmup = field<int64_t>(j, "warmup", integer, "an integer", where);
  r.lr_scheduler = field<std::string>(j, "lr_scheduler", str, "a string", where);
  r.precision = field<std::string>(j, "precision", str, "a string", where);
  r.aug_cfg = field<std::string>(j, "aug_cfg", str, "a string in --aug-cfg syntax", where);
  r.samples = field<int64_t>(j, "samples", integer, "an integer", where);
  r.epochs = field<int>(j, "epochs", integer, "an integer", where);
  r.max_passes = field<double>(j, "max_passes", number, "a number", where);
  r.seed = field<int>(j, "seed", integer, "an integer", where);
  const json m = j.contains("measured") ? j["measured"] : json();
  if (!m.is_object()) OC_USER_ERROR("{}: \"measured\" must be an object (train_seconds, samples, cpu)", where);
  for (auto& [k, _] : m.items())
    if (k != "train_seconds" && k != "samples" && k != "cpu" && k != "how")
      OC_USER_ERROR("{}: unknown field \"measured.{}\"", where, k);
  r.measured_seconds = field<double>(m, "train_seconds", number, "a number", where + " measured");
  r.measured_samples = field<int64_t>(m, "samples", integer, "an integer", where + " measured");
  r.measured_cpu = field<std::string>(m, "cpu", str, "a string", where + " measured");
  if (r.model.empty()) OC_USER_ERROR("{}: \"model\" must not be empty", where);
  // The name starts the default run folder's name (<name>-<date>).
  if (std::string why = why_not_plain_name(r.name); !why.empty()) OC_USER_ERROR("{}: \"name\": {}", where, why);
  PreprocessCfg aug;
  if (Status st = parse_aug_cfg(r.aug_cfg, &aug); !st) OC_USER_ERROR("{}: \"aug_cfg\": {}", where, st.error());
  if (r.lr_scheduler != "cosine" && r.lr_scheduler != "const")
    OC_USER_ERROR("{}: \"lr_scheduler\" is {}; the demo runs cosine or const", where, r.lr_scheduler);
  if (r.batch_size <= 0 || r.samples <= 0 || r.epochs <= 0 || r.max_passes <= 0 || r.warmup < 0)
    OC_USER_ERROR("{}: batch_size, samples, epochs and max_passes must be positive, warmup not negative", where);
  if (!(r.lr > 0) || !(r.wd >= 0)) OC_USER_ERROR("{}: lr must be positive and wd not negative", where);
  if (!(r.measured_seconds > 0) || r.measured_samples <= 0)
    OC_USER_ERROR("{}: measured train_seconds and samples must be positive", where);
  return r;
}

DemoRecipe load_demo_recipe(const std::string& name_or_path) {
  if (name_or_path.empty()) return builtin(kBuiltinRecipes[0]);
  for (const BuiltinRecipe& b : kBuiltinRecipes)
    if (DemoRecipe r = builtin(b); r.name == name_or_path) return r;
  if (!fs::exists(name_or_path)) {
    std::string names;
    for (const std::string& n : builtin_demo_recipe_names()) names += (names.empty() ? "" : ", ") + n;
    OC_USER_ERROR("--recipe {}: not a built-in recipe ({}) and not a file", name_or_path, names);
  }
  auto text = fs::read_text(name_or_path);
  if (!text) OC_USER_ERROR("--recipe: {}", text.error());
  return parse_demo_recipe(text.value(), name_or_path);
}

std::vector<std::string> builtin_demo_recipe_names() {
  std::vector<std::string> names;
  for (const BuiltinRecipe& b : kBuiltinRecipes) names.push_back(builtin(b).name);
  return names;
}

ModelCfg demo_model_config(const std::string& model, const std::string& field) {
  try {
    return load_model_config(model);
  } catch (const Error& e) {
    OC_USER_ERROR("{} {}: {}", field, model, e.what());
  }
}

}  // namespace oc::cli
