#include "core/options.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"

namespace oc {

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
  std::vector<std::string> names;
  for (auto& s : specs_) {
    names.push_back(s.name);
    for (auto& a : s.aliases) names.push_back(a);
  }
  std::sort(names.begin(), names.end());
  for (size_t i = 1; i < names.size(); ++i)
    OC_CHECK(names[i - 1] != names[i], "option --{} declared twice in '{}'", names[i], command_);
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
      if (sp.name == name || std::find(sp.aliases.begin(), sp.aliases.end(), name) != sp.aliases.end()) s = &sp;
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
    name = s->name;  // an alias stores under the flag's name
    for (auto& v : vals) check_value(*s, v);
    if (!s->not_built.empty() && !(s->type == OptType::Flag && vals[0] == "false"))
      OC_USER_ERROR("openclip {}: --{} is not available yet: {}", command_, name, s->not_built);
    values_[name] = std::move(vals);
  }
  for (auto& rule : rules_) rule(*this);
}

namespace {
// An Int flag's value in its own type: an int unless the flag is wide (int64). Outside it is
// an error giving the range accepted, never a wrapped value.
long long int_in_type(const std::string& command, const OptionSpec& s, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) OC_USER_ERROR("openclip {}: --{} takes an integer, got '{}'", command, s.name, v);
  long long lo = s.wide ? INT64_MIN : INT_MIN, hi = s.wide ? INT64_MAX : INT_MAX;
  if (errno == ERANGE || n < lo || n > hi) {
    if (s.min) lo = std::max(lo, (long long)std::ceil(*s.min));
    if (s.max) hi = std::min(hi, (long long)std::floor(*s.max));
    OC_USER_ERROR("openclip {}: --{} {} is out of range: it must be an integer from {} to {}", command, s.name, v, lo,
                  hi);
  }
  return n;
}
}  // namespace

void Options::check_value(const OptionSpec& s, const std::string& v) const {
  double number = 0;
  if (s.type == OptType::Int) {
    number = double(int_in_type(command_, s, v));
  } else if (s.type == OptType::Float) {
    char* end = nullptr;
    number = std::strtod(v.c_str(), &end);
    if (v.empty() || *end) OC_USER_ERROR("openclip {}: --{} takes a number, got '{}'", command_, s.name, v);
    if (!std::isfinite(number)) OC_USER_ERROR("openclip {}: --{} takes a finite number, got '{}'", command_, s.name, v);
  }
  const bool numeric = s.type == OptType::Int || s.type == OptType::Float;
  if (numeric && s.min && !(number >= *s.min))
    OC_USER_ERROR("openclip {}: --{} must be >= {}, got {}", command_, s.name, *s.min, v);
  if (numeric && s.max && !(number <= *s.max))
    OC_USER_ERROR("openclip {}: --{} must be <= {}{}, got {}", command_, s.name, *s.max,
                  s.max_why.empty() ? "" : " (" + s.max_why + ")", v);
  if (!s.choices.empty() && std::find(s.choices.begin(), s.choices.end(), v) == s.choices.end())
    OC_USER_ERROR("openclip {}: --{} {}: choose one of {}", command_, s.name, v, fmt::join(s.choices, ", "));
  if (s.plain_name && !v.empty())  // "": the default name
    if (std::string why = why_not_plain_name(v); !why.empty())
      OC_USER_ERROR("openclip {}: --{} '{}' {}", command_, s.name, v, why);
}

std::string why_not_plain_name(const std::string& v) {
  if (v.empty()) return "is empty; a name is needed";
  if (v == "." || v == "..") return "is not a name: it must name a folder of its own, not '.' or '..'";
  if (v.find_first_of("/\\") != std::string::npos)
    return "must be a plain name without '/' or '\\' (it names one folder under --logs; use --logs to choose where)";
  return "";
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

std::vector<std::string> Options::text(const std::string& name) const {
  const auto& s = spec(name);
  if (s.type == OptType::Flag) return {flag(name) ? "true" : "false"};
  if (s.type == OptType::List) return list(name);
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (s.default_value.empty()) return {};
  return {s.default_value};
}

std::vector<double> Options::float_list(const std::string& name) const {
  std::vector<double> out;
  for (auto& v : list(name)) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(d))
      OC_USER_ERROR("openclip {}: --{} takes finite numbers, got '{}'", command_, name, v);
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
// The help of one flag: its text, the accepted values, the default and what is not built.
std::string describe(const OptionSpec& s, bool markdown) {
  std::string out = s.help;
  if (!s.choices.empty()) out += fmt::format(" (one of: {})", fmt::join(s.choices, ", "));
  if (!s.aliases.empty()) out += fmt::format(" (also --{})", fmt::join(s.aliases, ", --"));
  if (!markdown && !s.default_value.empty() && s.type != OptType::Flag)
    out += fmt::format(" (default: {})", s.default_value);
  if (!s.not_built.empty()) out += markdown ? " *(not available yet: " + s.not_built + ")*" : " [not available yet: " + s.not_built + "]";
  return out;
}

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

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '_' ? std::string("\\_") : std::string(1, c);
  return out;
}

std::string Options::help() const {
  std::string out = fmt::format("usage: openclip {} [options]{}\n\n{}\n\noptions:\n", command_,
                                positional_help_.empty() ? "" : " " + positional_help_, summary_);
  for (auto& s : specs_) {
    std::string left = "--" + s.name + type_name(s.type);
    out += fmt::format("  {:<34} {}\n", left, describe(s, false));
  }
  return out;
}

std::string Options::markdown() const {
  std::string out = fmt::format("## openclip {}\n\n`openclip {} [options]{}`\n\n{}\n\n", command_, command_,
                                positional_help_.empty() ? "" : " " + positional_help_, summary_);
  if (specs_.empty()) return out + "No options.\n\n";
  out += "| flag | default | meaning |\n|---|---|---|\n";
  for (auto& s : specs_) {
    std::string def = s.default_value == "\t" ? "TAB" : s.default_value;
    out += fmt::format("| `--{}{}` | {} | {} |\n", s.name, type_name(s.type), def.empty() ? "" : "`" + def + "`",
                       markdown_cell(describe(s, true)));
  }
  return out + "\n";
}

}  // namespace oc
