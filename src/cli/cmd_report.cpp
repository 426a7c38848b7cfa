// openclip report RUN_DIR [--out FILE] [--title S]: one self-contained HTML page about a
// training run (curves, zero-shot accuracy, confusion matrix, example predictions).
#include <cstdio>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "report/report.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  RunToolArgs o;
  if (!parse_flags("report", args, &o)) return 0;
  if (o.positional.size() != 1) OC_USER_ERROR("report takes one run folder (e.g. logs/<name>); got {}", o.positional.size());
  report::ReportOptions ro;
  ro.title = o.title;
  std::printf("%s\n", report::write_report(o.positional[0], o.out, ro).c_str());
  return 0;
}

OC_REGISTER_COMMAND("report", "write a self-contained HTML report of a training run (charts, zero-shot results)", run);

}  // namespace
}  // namespace oc::cli
