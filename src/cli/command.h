// Subcommand registry. Each src/cli/cmd_<name>.cpp defines one command and registers it
// with OC_REGISTER_COMMAND; main() dispatches on argv[1].
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace oc::cli {

struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args)> run;  // args after the name
};

std::vector<Command>& registry();

// `openclip ARGS...` (argv[0] is the program's name): the exit status.
int run_main(int argc, char** argv);

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

}  // namespace oc::cli

#define OC_CONCAT_(a, b) a##b
#define OC_CONCAT(a, b) OC_CONCAT_(a, b)
#define OC_REGISTER_COMMAND(name, summary, fn) \
  static ::oc::cli::Registrar OC_CONCAT(oc_registrar_, __LINE__)({name, summary, fn})
