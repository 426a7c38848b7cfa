// openclip data split: a CSV -> train/test CSVs with no image in both (from cmd_data.cpp).
#include <cstdio>

#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/csv.h"
#include "data/csv_split.h"

namespace oc::cli {

int data_split(const std::vector<std::string>& args) {
  Options o = options_for("data split");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (!o.has("csv") || !o.has("test-size")) OC_USER_ERROR("data split: --csv and --test-size are required");
  data::SplitOptions s;
  s.csv = o.get("csv");
  auto sep = data::parse_separator(o.get("csv-separator"));
  if (!sep) OC_USER_ERROR("{}", sep.error());
  s.sep = *sep;
  s.group_by = o.has("group-by") ? o.get("group-by") : o.get("csv-img-key");
  s.test_size = o.get_float("test-size");
  s.seed = uint64_t(o.get_int("seed"));
  s.out_prefix = o.get("out-prefix");
  auto r = data::split_csv(s);
  std::printf("train: %lld rows (%lld groups) -> %s\ntest:  %lld rows (%lld groups) -> %s\n", (long long)r.train_rows,
              (long long)r.train_groups, r.train_path.c_str(), (long long)r.test_rows, (long long)r.test_groups,
              r.test_path.c_str());
  return 0;
}

}  // namespace oc::cli
