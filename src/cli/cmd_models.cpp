// openclip models [--check FILE|NAME]: the model configs this build accepts, by image tower
// family; with --check, one config (a built-in name or a JSON file) validated without building
// the model (model/model_catalog.h): one line and exit 0, or the refusing key and exit 1.
#include <cstdio>

#include "cli/args.h"
#include "cli/command.h"
#include "core/flags.h"
#include "model/model_catalog.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  ModelsArgs opt;
  if (!parse_flags("models", args, &opt)) return 0;
  if (!opt.check.empty()) {
    const ModelCfg cfg = load_model_config(opt.check);  // throws naming the file and the key
    std::printf("%s\n", summary_line(cfg, check_model_config(cfg)).c_str());
    return 0;
  }
  size_t n = 0;
  for (const FamilyConfigs& f : builtin_configs_by_family()) {
    std::printf("%s (%zu):\n", f.family.c_str(), f.names.size());
    for (const std::string& name : f.names) std::printf("  %s\n", name.c_str());
    n += f.names.size();
  }
  std::printf(
      "%zu built-in configs; --model also takes a JSON file in OpenCLIP's format (check one with "
      "`openclip models --check FILE`)\n",
      n);
  return 0;
}

}  // namespace

OC_REGISTER_COMMAND("models", "the model configs this build accepts, by image tower family; --check one", run);

}  // namespace oc::cli
