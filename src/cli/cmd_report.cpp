// openclip report RUN_DIR [--out FILE] [--title S]: one self-contained HTML page about a
// training run (curves, zero-shot accuracy, confusion matrix, example predictions).
#include <cstdio>

#include "cli/command.h"
#include "core/check.h"
#include "core/options.h"
#include "report/report.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  Options o("report",
            "Write a self-contained HTML report of a run: settings, training curves, zero-shot accuracy per epoch, "
            "and from RUN_DIR/zeroshot_<task>.json per-class accuracy, the confusion matrix and example predictions.",
            {{"out", OptType::String, "", "output file (default RUN_DIR/report.html)"},
             {"title", OptType::String, "", "page title (default: the run's name)"}},
            "RUN_DIR");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (o.positional().size() != 1) OC_USER_ERROR("report takes one run folder (e.g. logs/<name>); got {}", o.positional().size());
  report::ReportOptions ro;
  ro.title = o.get("title");
  std::printf("%s\n", report::write_report(o.positional()[0], o.get("out"), ro).c_str());
  return 0;
}

OC_REGISTER_COMMAND("report", "write a self-contained HTML report of a training run (charts, zero-shot results)", run);

}  // namespace
}  // namespace oc::cli
