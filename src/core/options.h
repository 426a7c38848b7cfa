// The parser of command-line options. The flags themselves are declared once, in the
// registry (core/flags.h), which builds one Options per command; this file parses argv
// against them, prints --help and the settings table. Flags are spelled as OpenCLIP spells
// them (--train-data, --batch-size, ...; --train_data works too). An unknown flag is an
// error that names the closest known one.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oc {

enum class OptType { Flag, Int, Float, String, List };  // List: one or more values (nargs='+')

struct OptionSpec {
  std::string name;           // without the leading "--"
  OptType type = OptType::String;
  std::string default_value;  // "" = None; flags: "" or "true"
  std::string help;
  // Empty when built; otherwise the reason it is not available yet (parsing still accepts
  // the flag, and using it with a non-default value is an error that says this).
  std::string not_built;
  std::vector<std::string> aliases;  // other spellings (without "--"), e.g. a short name
  std::vector<std::string> choices;  // the accepted values (listed in --help, checked on parse); empty: any
  std::optional<double> min;         // Int/Float: the smallest accepted value
  std::optional<double> max;         // Int/Float: the largest accepted value
  std::string max_why;               // what the largest value is, for the message ("the cap on ...")
  // Int: the value's type. An Int is read into an int (counts, sizes, ports) unless `wide`
  // (int64: sample counts, byte limits); a value outside the type is an error at parse, never
  // a wrapped number. Float values must be finite.
  bool wide = false;
  bool plain_name = false;  // String: a file name that becomes one folder level (why_not_plain_name)
};

// "" when `v` names one entry inside a folder (no '/' or '\\', not "", "." or ".."), else why not:
// a run name such as "../x" or "/tmp/x" would write outside --logs, "." into --logs itself.
std::string why_not_plain_name(const std::string& v);

class Options {
 public:
  Options(std::string command, std::string summary, std::vector<OptionSpec> specs,
          std::string positional_help = "");

  // Parses argv (without the program and command names). Throws oc::Error on an unknown
  // flag (with a suggestion), a missing or malformed value, or a flag that is not built.
  // "--help"/"-h" sets help_requested() and stops.
  // After parsing, the cross-flag rules (core/flags.cpp) run; each throws a user error.
  void parse(const std::vector<std::string>& args);
  void add_rule(std::function<void(const Options&)> rule) { rules_.push_back(std::move(rule)); }
  bool help_requested() const { return help_; }

  bool has(const std::string& name) const;  // given on the command line or non-empty default
  bool given(const std::string& name) const;  // given on the command line
  bool flag(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  std::string get(const std::string& name) const;
  std::vector<std::string> list(const std::string& name) const;
  std::vector<double> float_list(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The text values of a flag: as given, else its default (a List's split at spaces; a
  // switch's {"true"} or {"false"}); empty when it has neither (None).
  std::vector<std::string> text(const std::string& name) const;
  void set(const std::string& name, const std::string& value);  // programmatic override

  std::string help() const;
  // "name: value" lines sorted by name, as OpenCLIP's params.txt.
  std::string settings_table() const;
  std::map<std::string, std::string> values() const;
  std::string markdown() const;  // one section of docs/CLI.md
  const std::vector<OptionSpec>& specs() const { return specs_; }
  const std::string& command() const { return command_; }

 private:
  const OptionSpec& spec(const std::string& name) const;
  void check_value(const OptionSpec& s, const std::string& v) const;
  std::string command_, summary_, positional_help_;
  std::vector<OptionSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;  // given on the command line
  std::vector<std::string> positional_;
  std::vector<std::function<void(const Options&)>> rules_;
  bool help_ = false;
};

// Escapes '|' for a Markdown table cell.
std::string markdown_cell(const std::string& text);

// Levenshtein distance (for "did you mean").
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace oc
