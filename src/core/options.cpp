#include "core/options.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "core/check.h"

namespace oc {

void append_missing_specs(std::vector<OptionSpec>* specs, const std::vector<OptionSpec>& extra) {
  for (auto& s : extra) {
    bool dup = false;
    for (auto& t : *specs) dup |= t.name == s.name;
    if (!dup) specs->push_back(s);
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Options::Options(std::string command, std::string summary, std::vector<OptionSpec> specs,
                 std::string positional_help)
    : command_(std::move(command)), summary_(std::move(summary)),
      positional_help_(std::move(positional_help)), specs_(std::move(specs)) {
  for (size_t i = 0; i < specs_.size(); ++i)
    for (size_t j = i + 1; j < specs_.size(); ++j)
      OC_CHECK(specs_[i].name != specs_[j].name, "option --{} declared twice in '{}'", specs_[i].name, command_);
}

const OptionSpec& Options::spec(const std::string& name) const {
  for (auto& s : specs_)
    if (s.name == name) return s;
  OC_FAIL("'{}' has no option --{} (a bug: the code asks for an undeclared option)", command_, name);
}

void Options::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      return;
    }
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      if (!positional_help_.empty()) {
        positional_.push_back(a);
        continue;
      }
      OC_USER_ERROR("openclip {}: unexpected argument '{}' (flags start with --; see --help)", command_, a);
    }
    std::string name = a.substr(2), inline_value;
    bool has_inline = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    std::replace(name.begin(), name.end(), '_', '-');  // --train_data works too
    const OptionSpec* s = nullptr;
    for (auto& sp : specs_)
      if (sp.name == name) s = &sp;
    if (!s) {
      std::string best;
      size_t best_d = SIZE_MAX;
      for (auto& sp : specs_) {
        size_t d = edit_distance(name, sp.name);
        if (d < best_d) best_d = d, best = sp.name;
      }
      if (best_d <= std::max<size_t>(2, name.size() / 3))
        OC_USER_ERROR("openclip {}: unknown flag --{}; did you mean --{}?", command_, name, best);
      OC_USER_ERROR("openclip {}: unknown flag --{} (see openclip {} --help)", command_, name, command_);
    }
    std::vector<std::string> vals;
    if (s->type == OptType::Flag) {
      if (has_inline) {
        if (inline_value != "true" && inline_value != "false" && inline_value != "1" && inline_value != "0")
          OC_USER_ERROR("openclip {}: --{} is a switch; it takes no value (got '{}')", command_, name, inline_value);
        vals.push_back(inline_value == "true" || inline_value == "1" ? "true" : "false");
      } else {
        vals.push_back("true");
      }
    } else if (has_inline) {
      vals.push_back(inline_value);
    } else if (s->type == OptType::List) {
      while (i + 1 < args.size() && !(args[i + 1].rfind("--", 0) == 0 && args[i + 1].size() > 2)) vals.push_back(args[++i]);
      if (vals.empty()) OC_USER_ERROR("openclip {}: --{} needs at least one value", command_, name);
    } else {
      if (i + 1 >= args.size()) OC_USER_ERROR("openclip {}: --{} needs a value", command_, name);
      vals.push_back(args[++i]);
    }
    for (auto& v : vals) {
      char* end = nullptr;
      if (s->type == OptType::Int) {
        std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end) OC_USER_ERROR("openclip {}: --{} takes an integer, got '{}'", command_, name, v);
      } else if (s->type == OptType::Float) {
        std::strtod(v.c_str(), &end);
        if (v.empty() || *end) OC_USER_ERROR("openclip {}: --{} takes a number, got '{}'", command_, name, v);
      }
    }
    if (!s->not_built.empty() && !(s->type == OptType::Flag && vals[0] == "false"))
      OC_USER_ERROR("openclip {}: --{} is not available yet: {}", command_, name, s->not_built);
    values_[name] = std::move(vals);
  }
}

bool Options::given(const std::string& name) const {
  spec(name);
  return values_.count(name) > 0;
}

bool Options::has(const std::string& name) const {
  const auto& s = spec(name);
  if (auto it = values_.find(name); it != values_.end()) return !(s.type == OptType::Flag && it->second[0] == "false");
  return !s.default_value.empty();
}

std::string Options::get(const std::string& name) const {
  const auto& s = spec(name);
  if (auto it = values_.find(name); it != values_.end()) {
    std::string r;
    for (size_t i = 0; i < it->second.size(); ++i) r += (i ? " " : "") + it->second[i];
    return r;
  }
  return s.default_value;
}

bool Options::flag(const std::string& name) const {
  const auto& s = spec(name);
  OC_CHECK(s.type == OptType::Flag, "--{} is not a switch", name);
  std::string v = get(name);
  return v == "true";
}

int64_t Options::get_int(const std::string& name) const {
  std::string v = get(name);
  OC_CHECK(!v.empty(), "--{} has no value and no default", name);
  return std::strtoll(v.c_str(), nullptr, 10);
}

double Options::get_float(const std::string& name) const {
  std::string v = get(name);
  OC_CHECK(!v.empty(), "--{} has no value and no default", name);
  return std::strtod(v.c_str(), nullptr);
}

std::vector<std::string> Options::list(const std::string& name) const {
  const auto& s = spec(name);
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (s.default_value.empty()) return {};
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.default_value.size()) {
    size_t q = s.default_value.find(' ', p);
    if (q == std::string::npos) q = s.default_value.size();
    if (q > p) out.push_back(s.default_value.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

std::vector<double> Options::float_list(const std::string& name) const {
  std::vector<double> out;
  for (auto& v : list(name)) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end) OC_USER_ERROR("openclip {}: --{} takes numbers, got '{}'", command_, name, v);
    out.push_back(d);
  }
  return out;
}

void Options::set(const std::string& name, const std::string& value) {
  spec(name);
  values_[name] = {value};
}

std::map<std::string, std::string> Options::values() const {
  std::map<std::string, std::string> m;
  for (auto& s : specs_) {
    std::string v = get(s.name);
    m[s.name] = v.empty() ? (s.type == OptType::Flag ? "False" : "None") : (v == "true" ? "True" : v == "false" ? "False" : v);
  }
  return m;
}

std::string Options::settings_table() const {
  std::string out;
  for (auto& [k, v] : values()) {
    std::string key = k;
    std::replace(key.begin(), key.end(), '-', '_');
    out += fmt::format("{}: {}\n", key, v);
  }
  return out;
}

namespace {
const char* type_name(OptType t) {
  switch (t) {
    case OptType::Flag: return "";
    case OptType::Int: return " N";
    case OptType::Float: return " X";
    case OptType::String: return " S";
    case OptType::List: return " V...";
  }
  return "";
}
}  // namespace

std::string Options::help() const {
  std::string out = fmt::format("usage: openclip {} [options]{}\n\n{}\n\noptions:\n", command_,
                                positional_help_.empty() ? "" : " " + positional_help_, summary_);
  for (auto& s : specs_) {
    std::string left = "--" + s.name + type_name(s.type);
    std::string right = s.help;
    if (!s.default_value.empty() && s.type != OptType::Flag) right += fmt::format(" (default: {})", s.default_value);
    if (!s.not_built.empty()) right += " [not available yet: " + s.not_built + "]";
    out += fmt::format("  {:<34} {}\n", left, right);
  }
  return out;
}

std::string Options::markdown() const {
  std::string out = fmt::format("## openclip {}\n\n{}\n\n| flag | default | meaning |\n|---|---|---|\n", command_, summary_);
  for (auto& s : specs_) {
    std::string help = s.help;
    if (!s.not_built.empty()) help += " *(not available yet: " + s.not_built + ")*";
    out += fmt::format("| `--{}{}` | {} | {} |\n", s.name, type_name(s.type),
                       s.default_value.empty() ? "" : "`" + s.default_value + "`", help);
  }
  return out + "\n";
}

}  // namespace oc
