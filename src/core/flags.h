// The registry of command-line flags, in the style of llama.cpp's common arguments: every
// flag of every `openclip` command is declared ONCE (name, aliases, type, default, help that
// lists the accepted values, validation, the commands that take it) together with the typed
// field it writes (`.bind(&TrainArgs::lr)`, or a handler `[](TrainArgs& a, double v) {...}`).
// A command parses into its settings struct with parse_flags("serve", args, &a) and then reads
// fields, never flags by name. Cross-flag rules ("--a needs --b") are checked in one place
// (flags.cpp) when a command parses. `openclip help <command>`, `--help`, docs/CLI.md and the
// README's flag table are generated from the registry.
//
// Adding a flag: one line in src/cli/flags_train.cpp (train/eval/data) or src/cli/flags_tools.cpp
// (the other commands), plus the field in the command's settings struct if it is new (TrainArgs,
// data::DataFlags, or src/cli/args.h), e.g.
//   add("max-wait-ms", T::Int, "5", "how long a request waits").on({"serve"})
//       .bind(&serve::ServeOptions::max_wait_ms);
// then regenerate the docs (cmake --build build --target cli-docs). The default is the
// registry's (written into the field when the flag is not given); a flag whose default is
// empty ("None") leaves the field as the struct initializes it.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/options.h"

namespace oc {

// Caps on thread counts that flags may ask for (beyond them libgomp crashes, thread creation
// fails with EAGAIN): the messages name the flag and the cap.
inline constexpr int kMaxThreads = 1024;  // --threads, --http-threads, --processes-count
inline constexpr int kMaxWorkers = 256;   // --workers (loader threads, each with its own decode buffers)

// A flag's value as parsed: the command, the flag and its text values (one for most flags,
// several for a List; {"true"} or {"false"} for a switch). A binding converts them.
struct FlagText {
  const std::string& command;
  const OptionSpec& spec;
  const std::vector<std::string>& values;
  bool given;  // on the command line (else the default)
};

namespace flag_detail {
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class F> struct handler;  // the settings struct and value type of a handler lambda
template <class L, class S, class V> struct handler<void (L::*)(S&, V) const> {
  using settings = S;
  using value = std::remove_cvref_t<V>;
};
std::string joined(const FlagText& t);             // the values joined by spaces
int64_t as_int(const FlagText& t);                 // already range-checked by the parser
double as_double(const FlagText& t);               // already checked finite by the parser
std::vector<double> as_doubles(const FlagText& t); // a user error naming the flag on a bad value
[[noreturn]] void not_in_table(const FlagText& t);

// The value of `t` as a V: bool, int (a narrow Int flag), int64_t (a wide one), double,
// std::string, std::vector<std::string>, std::vector<double>, or an std::optional of these
// (set only when the flag is given: None otherwise, whatever the default).
template <class V> V convert(const FlagText& t) {
  if constexpr (is_optional<V>::value) {
    return V(convert<typename V::value_type>(t));
  } else if constexpr (std::is_same_v<V, bool>) {
    return t.values.at(0) == "true";
  } else if constexpr (std::is_same_v<V, int> || std::is_same_v<V, int64_t>) {
    return V(as_int(t));
  } else if constexpr (std::is_same_v<V, double>) {
    return as_double(t);
  } else if constexpr (std::is_same_v<V, std::string>) {
    return joined(t);
  } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
    return t.values;
  } else if constexpr (std::is_same_v<V, std::vector<double>>) {
    return as_doubles(t);
  } else {
    static_assert(sizeof(V) == 0, "no conversion from a flag to this type: bind a handler");
  }
}
template <class V> struct value_of { using type = V; };
template <class V> struct value_of<std::optional<V>> { using type = V; };
}  // namespace flag_detail

// How a flag reaches a settings struct: the struct's type and a writer of the parsed value.
struct FlagBinding {
  std::type_index target;
  std::function<void(void* settings, const FlagText& value)> write;
};

struct Flag {
  OptionSpec spec;                                 // name, type, default, help, aliases, choices, min
  std::vector<std::string> commands;               // the commands that take it: "train", "bench train", ...
  std::map<std::string, std::string> default_in;   // command -> its default where it differs from spec's
  std::string section;                             // grouping in the README's table (train flags)
  std::string status;                              // README status: "yes", "no-op", "*ours*" (not_built: refused)
  std::string origin = "2.24";                     // README: OpenCLIP 2.24's flag, "3.x" (added later), "ours"

  Flag& on(std::vector<std::string> cmds) { return commands = std::move(cmds), *this; }
  Flag& def(const std::string& command, std::string value) { return default_in[command] = std::move(value), *this; }
  Flag& not_built(std::string why) { return spec.not_built = std::move(why), *this; }
  Flag& choices(std::vector<std::string> v) { return spec.choices = std::move(v), *this; }
  Flag& aliases(std::vector<std::string> v) { return spec.aliases = std::move(v), *this; }
  Flag& at_least(double v) { return spec.min = v, *this; }
  // The largest value, and what it is ("the cap on compute threads"): the message names both.
  Flag& at_most(double v, std::string why = "") { return spec.max = v, spec.max_why = std::move(why), *this; }
  Flag& plain_name() { return spec.plain_name = true, *this; }  // OptionSpec::plain_name
  Flag& wide() { return spec.wide = true, *this; }  // an int64 count, not an int (OptionSpec::wide)
  Flag& ours() { return status = "*ours*", origin = "ours", *this; }
  Flag& v3() { return origin = "3.x", *this; }  // an OpenCLIP 3.x flag that 2.24 does not have
  Flag& no_op() { return status = "no-op", *this; }
  bool used_by(const std::string& command) const;

  // Writes the value into `member` of the settings struct S (converted as flag_detail::convert).
  // The bind calls come last on a registry line: they check the field against .wide() and
  // .choices().
  template <class S, class M> Flag& bind(M S::*member) {
    check_value_type<typename flag_detail::value_of<M>::type>();
    return add_binding<S>([member](S& s, const FlagText& t) {
      if (flag_detail::is_optional<M>::value && !t.given) return;
      s.*member = flag_detail::convert<M>(t);
    });
  }
  // Writes the value through a handler [](S& settings, V value) {...} (V converted as above):
  // for a conversion, a check that needs the value, or a field of a member struct.
  template <class F> Flag& bind(F handler) requires(!std::is_member_object_pointer_v<F>) {
    using H = flag_detail::handler<decltype(&F::operator())>;
    using S = typename H::settings;
    using V = typename H::value;
    check_value_type<typename flag_detail::value_of<V>::type>();
    return add_binding<S>([handler](S& s, const FlagText& t) { handler(s, flag_detail::convert<V>(t)); });
  }
  // An enum: each accepted spelling and the value it stands for (every choice must be listed).
  template <class S, class E, size_t N>
  Flag& bind(E S::*member, const std::pair<std::string_view, E> (&table)[N]) {
    for (const auto& c : spec.choices) {
      bool found = false;
      for (const auto& [name, v] : table) found |= name == c;
      OC_CHECK(found, "flag --{}: the choice '{}' is missing from its enum table", spec.name, c);
    }
    std::vector<std::pair<std::string, E>> t(std::begin(table), std::end(table));
    return add_binding<S>([member, t](S& s, const FlagText& text) {
      for (const auto& [name, v] : t)
        if (name == text.values.at(0)) return void(s.*member = v);
      flag_detail::not_in_table(text);
    });
  }

  std::vector<FlagBinding> bindings;

 private:
  template <class S, class W> Flag& add_binding(W write) {
    bindings.push_back({typeid(S), [write](void* s, const FlagText& t) { write(*static_cast<S*>(s), t); }});
    return *this;
  }
  // The field's type fits the flag's: an Int flag is read into an int, or an int64_t when wide.
  template <class V> void check_value_type() const {
    if (spec.type == OptType::Int)
      OC_CHECK((std::is_same_v<V, int> && !spec.wide) || (std::is_same_v<V, int64_t> && spec.wide),
               "flag --{}: an Int flag binds an {} field", spec.name, spec.wide ? "int64_t" : "int");
    if (spec.type == OptType::Flag) OC_CHECK((std::is_same_v<V, bool>), "flag --{}: a switch binds a bool", spec.name);
    if (spec.type == OptType::Float) OC_CHECK((std::is_same_v<V, double>), "flag --{}: a Float binds a double", spec.name);
  }
};

// The declarations, appended in help order. A name may be declared twice only when it means
// different things in commands that do not overlap (--out: a file for embed, a folder for
// data shards); the registry checks that.
class FlagList {
 public:
  Flag& add(std::string name, OptType type, std::string default_value, std::string help);
  void section(std::string name) { section_ = std::move(name); }
  const std::deque<Flag>& flags() const { return flags_; }

 private:
  std::deque<Flag> flags_;  // deque: add() hands out references that stay valid
  std::string section_;
};
// The flag tables live above core, with the structs they bind (src/cli/flags_train.cpp: train,
// eval and the data flags; src/cli/flags_tools.cpp: every other command), and register
// themselves when their objects are linked (the binary, the Python module, the cli and train
// tests): core calls nothing above it. `order` fixes the docs' order (lower first).
using FlagTable = void (*)(FlagList*);
void register_flag_table(int order, FlagTable add);

struct CommandInfo {
  std::string name, summary, positional;  // positional: e.g. "RUN_DIR" (empty: none)
};

const std::deque<Flag>& all_flags();
const std::vector<CommandInfo>& command_infos();  // every command with options, in docs order
// The parser of one command: its flags with its defaults, and the cross-flag rules that
// concern it. An unknown command is a bug (OC_FAIL).
Options options_for(const std::string& command);

void print_help(const Options& o);  // a command's --help, on stdout

// Writes every flag of the command `o` parsed into the settings structs `targets` (a struct
// and the base classes it lists in FlagParts): the given value, else the command's default; a
// flag with neither leaves its field as is. A flag of the command with no binding to any of
// them is a bug (OC_FAIL), except the ones accepted for compatibility (no-op, not built, a
// single accepted value).
void fill_flags(const Options& o, const std::vector<std::pair<std::type_index, void*>>& targets);

// Fills `settings` (type S) from parsed options. S may list base classes whose flags are bound
// to the base (`using FlagParts = std::tuple<data::DataFlags>;`).
template <class S> void fill_flags(const Options& o, S* settings) {
  std::vector<std::pair<std::type_index, void*>> targets = {{typeid(S), settings}};
  if constexpr (requires { typename S::FlagParts; }) {
    [&]<class... P>(std::tuple<P...>*) {
      (targets.emplace_back(typeid(P), static_cast<P*>(settings)), ...);
    }(static_cast<typename S::FlagParts*>(nullptr));
  }
  fill_flags(o, targets);
}

// Parses the command's arguments into `settings`. Returns false when --help was asked: the
// help is printed (stdout) and the command should return 0.
template <class S> bool parse_flags(const std::string& command, const std::vector<std::string>& args, S* settings) {
  Options o = options_for(command);
  o.parse(args);
  if (o.help_requested()) return print_help(o), false;
  fill_flags(o, settings);
  if constexpr (requires { settings->positional = o.positional(); }) settings->positional = o.positional();
  return true;
}
std::string cli_markdown();        // docs/CLI.md
std::string readme_flag_table();   // README.md, between the "generated" markers

}  // namespace oc
