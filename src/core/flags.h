// The registry of command-line flags, in the style of llama.cpp's common arguments: every
// flag of every `openclip` command is declared ONCE (name, aliases, type, default, help that
// lists the accepted values, validation, the commands that take it), and each command asks
// for its own parser with options_for("train"). Cross-flag rules ("--a needs --b") are
// checked in one place (flags.cpp) when a command parses. `openclip help <command>`,
// `--help`, docs/CLI.md and the README's flag table are generated from it.
//
// Adding a flag: one line in flags_train.cpp (train/eval/data) or flags_tools.cpp (the other
// commands), e.g.
//   add("device", T::String, "cpu", "where to compute").on({"train", "eval"}).choices({"cpu", "cuda"});
// then read it in the command with o.get("device") and regenerate the docs
// (cmake --build build --target cli-docs).
#pragma once
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/options.h"

namespace oc {

// Caps on thread counts that flags may ask for (beyond them libgomp crashes, thread creation
// fails with EAGAIN): the messages name the flag and the cap.
inline constexpr int kMaxThreads = 1024;  // --threads, --http-threads, --processes-count
inline constexpr int kMaxWorkers = 256;   // --workers (loader threads, each with its own decode buffers)

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
void add_train_flags(FlagList* l);  // flags_train.cpp: train, eval and the data flags
void add_tool_flags(FlagList* l);   // flags_tools.cpp: every other command

struct CommandInfo {
  std::string name, summary, positional;  // positional: e.g. "RUN_DIR" (empty: none)
};

const std::deque<Flag>& all_flags();
const std::vector<CommandInfo>& command_infos();  // every command with options, in docs order
// The parser of one command: its flags with its defaults, and the cross-flag rules that
// concern it. An unknown command is a bug (OC_FAIL).
Options options_for(const std::string& command);
std::string cli_markdown();        // docs/CLI.md
std::string readme_flag_table();   // README.md, between the "generated" markers

}  // namespace oc
