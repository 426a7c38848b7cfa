// openclip data split: a CSV -> train/test CSVs with no image in both (from cmd_data.cpp).
#include <cstdio>

#include "cli/args.h"
#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/csv.h"
#include "data/csv_split.h"

namespace oc::cli {

int data_split(const std::vector<std::string>& args) {
  DataToolArgs a;
  if (!parse_flags("data split", args, &a)) return 0;
  if (a.csv.empty() || !a.test_size) OC_USER_ERROR("data split: --csv and --test-size are required");
  data::SplitOptions s;
  s.csv = a.csv;
  auto sep = data::parse_separator(a.csv_separator);
  if (!sep) OC_USER_ERROR("{}", sep.error());
  s.sep = *sep;
  s.group_by = a.group_by.empty() ? a.csv_img_key : a.group_by;
  s.test_size = *a.test_size;
  s.seed = uint64_t(a.seed);
  s.out_prefix = a.out_prefix;
  auto r = data::split_csv(s);
  std::printf("train: %lld rows (%lld groups) -> %s\ntest:  %lld rows (%lld groups) -> %s\n", (long long)r.train_rows,
              (long long)r.train_groups, r.train_path.c_str(), (long long)r.test_rows, (long long)r.test_groups,
              r.test_path.c_str());
  return 0;
}

}  // namespace oc::cli
