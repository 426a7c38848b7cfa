// openclip logs export RUN --tag T [--format json|csv]; openclip logs compare A B --tag T
// --max-rel-diff X: the seed workflow's accuracy check (a run's loss curve against a
// reference within 2%), reading the TensorBoard event files of both runs.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "io/run_logs.h"

namespace oc::cli {
namespace {

int run_export(const std::vector<std::string>& args) {
  RunToolArgs o;
  if (!parse_flags("logs export", args, &o)) return 0;
  if (o.positional.size() != 1) OC_USER_ERROR("logs export takes one run folder or event file");
  auto all = read_run_scalars(o.positional[0]);
  const std::string tag = o.tag, fmt = o.format;
  if (fmt != "csv" && fmt != "json") OC_USER_ERROR("--format {}: choose csv or json", fmt);
  std::vector<std::string> tags;
  for (auto& [t, _] : all)
    if (tag == "all" || t == tag) tags.push_back(t);
  if (tags.empty()) {
    std::string have;
    for (auto& [t, _] : all) have += (have.empty() ? "" : ", ") + t;
    OC_USER_ERROR("{}: no tag '{}' (tags: {})", o.positional[0], tag, have);
  }
  if (fmt == "csv") {
    std::printf("tag,step,value,wall_time\n");
    for (auto& t : tags)
      for (auto& [s, v] : all[t].by_step) std::printf("%s,%lld,%.9g,%.3f\n", t.c_str(), (long long)s, v, all[t].wall_time[s]);
  } else {
    nlohmann::json j = nlohmann::json::object();
    for (auto& t : tags) {
      auto& arr = j[t] = nlohmann::json::array();
      for (auto& [s, v] : all[t].by_step) arr.push_back({{"step", s}, {"value", v}, {"wall_time", all[t].wall_time[s]}});
    }
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

int run_compare(const std::vector<std::string>& args) {
  RunToolArgs o;
  if (!parse_flags("logs compare", args, &o)) return 0;
  if (o.positional.size() != 2) OC_USER_ERROR("logs compare takes two runs: A (candidate) and B (reference)");
  const std::string tag = o.tag;
  auto a = read_run_scalars(o.positional[0]), b = read_run_scalars(o.positional[1]);
  if (!a.count(tag)) OC_USER_ERROR("{}: no tag '{}'", o.positional[0], tag);
  if (!b.count(tag)) OC_USER_ERROR("{}: no tag '{}'", o.positional[1], tag);
  CompareResult r = compare_series(a[tag], b[tag]);
  if (r.rows.empty()) OC_USER_ERROR("the runs have no step of '{}' in common", tag);
  const double bound = o.max_rel_diff;
  const bool pass = r.max_rel_diff <= bound;
  auto rows = r.rows;
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.rel_diff > y.rel_diff; });
  rows.resize(std::min(rows.size(), size_t(o.top)));
  if (o.json) {
    nlohmann::json j = {{"tag", tag}, {"pass", pass}, {"max_rel_diff", r.max_rel_diff}, {"bound", bound},
                        {"common_steps", r.rows.size()}, {"only_a", r.only_a}, {"only_b", r.only_b}};
    for (auto& x : rows) j["worst"].push_back({{"step", x.step}, {"a", x.a}, {"b", x.b}, {"rel_diff", x.rel_diff}});
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %zu common steps (%zu only in A, %zu only in B); max relative difference %.4g (bound %.4g): %s\n",
                tag.c_str(), r.rows.size(), r.only_a, r.only_b, r.max_rel_diff, bound, pass ? "PASS" : "FAIL");
    std::printf("  %10s %14s %14s %10s\n", "step", "A", "B", "rel diff");
    for (auto& x : rows) std::printf("  %10lld %14.6g %14.6g %10.4g\n", (long long)x.step, x.a, x.b, x.rel_diff);
  }
  return pass ? 0 : 1;
}

int run(const std::vector<std::string>& args) {
  const char* usage = "usage: openclip logs export RUN --tag T [--format csv|json]\n"
                      "       openclip logs compare A B --tag T [--max-rel-diff 0.02]\n";
  if (args.empty()) return std::fprintf(stderr, "%s", usage), 2;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "export") return run_export(rest);
  if (args[0] == "compare") return run_compare(rest);
  if (args[0] == "--help" || args[0] == "-h") return std::printf("%s", usage), 0;
  OC_USER_ERROR("logs: unknown action '{}'; choose export or compare", args[0]);
}

OC_REGISTER_COMMAND("logs", "read TensorBoard logs: export a curve, compare two runs (accuracy check)", run);

}  // namespace
}  // namespace oc::cli
