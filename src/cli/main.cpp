// openclip: one binary, many subcommands (see command.h). Errors end as one line on
// stderr and exit status 1 (2 for usage errors); nothing is thrown past run_main, which
// entry.cpp's main() calls (and the Python module's cli_main, for `python -m openclip_cpp`).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"

namespace oc::cli {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace oc::cli

namespace {
void usage() {
  auto cmds = oc::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::fprintf(stderr, "openclip %s: train, evaluate and serve CLIP models (OpenCLIP-compatible)\n\n"
               "usage: openclip <command> [options]   (openclip <command> --help for its options)\n\ncommands:\n",
               OPENCLIP_VERSION);
  for (auto& c : cmds) std::fprintf(stderr, "  %-12s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(stderr, "\nopenclip help <command> prints a command's options (docs/CLI.md has them all)\n");
}

// `openclip help [COMMAND...]`: the usage, or one command's options from the flag
// registry; `--markdown` prints docs/CLI.md and `--readme-table` the README's flag table
// (the cli-docs build target writes both).
int help(const std::vector<std::string>& args) {
  if (args.empty()) return usage(), 0;
  if (args[0] == "--markdown") return std::printf("%s", oc::cli_markdown().c_str()), 0;
  if (args[0] == "--readme-table") return std::printf("%s", oc::readme_flag_table().c_str()), 0;
  std::string name;
  for (auto& a : args) name += (name.empty() ? "" : " ") + a;
  for (auto& c : oc::command_infos())
    if (c.name == name) return std::printf("%s", oc::options_for(name).help().c_str()), 0;
  // A group (index, data, bench, logs): each of its subcommands' options.
  std::string group;
  for (auto& c : oc::command_infos())
    if (c.name.rfind(name + " ", 0) == 0)
      group += (group.empty() ? "" : "\n") + oc::options_for(c.name).help();
  if (!group.empty()) return std::printf("%s", group.c_str()), 0;
  std::fprintf(stderr, "openclip help: no command '%s' (openclip --help lists them)\n", name.c_str());
  return 2;
}
}  // namespace

int oc::cli::run_main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "help") return help(std::vector<std::string>(argv + 2, argv + argc));
  std::string name = argv[1];
  if (name == "--version" || name == "-V") {
    std::printf("openclip %s\n", OPENCLIP_VERSION);
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (auto& c : oc::cli::registry()) {
    if (c.name != name) continue;
    try {
      return c.run(args);
    } catch (const std::exception& e) {  // oc::Error and the rest
      // Flag errors name the (sub)command already ("openclip index build: unknown flag ...", as
      // Python's train() raises them): said once.
      std::string cmd = name, msg = e.what();
      if (const size_t colon = msg.find(": "); msg.rfind("openclip " + name, 0) == 0 && colon != std::string::npos)
        cmd = msg.substr(9, colon - 9), msg.erase(0, colon + 2);
      std::fprintf(stderr, "openclip %s: error: %s\n", cmd.c_str(), msg.c_str());
      return 1;
    }
  }
  std::string best;
  size_t best_d = SIZE_MAX;
  for (auto& c : oc::cli::registry()) {
    size_t d = oc::edit_distance(name, c.name);
    if (d < best_d) best_d = d, best = c.name;
  }
  std::fprintf(stderr, "openclip: unknown command '%s'%s (openclip --help lists them)\n", name.c_str(),
               best_d <= 3 ? (std::string("; did you mean '") + best + "'?").c_str() : "");
  return 2;
}
