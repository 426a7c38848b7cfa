// `openclip data split`: a CSV into train and test CSVs with no group (by default, no
// image) in both, so several captions of one image never leak across the split.
#pragma once
#include <cstdint>
#include <string>

namespace oc::data {

struct SplitOptions {
  std::string csv;
  char sep = '\t';
  std::string group_by = "filepath";  // the column whose equal values stay together
  double test_size = 0;               // >= 1: that many groups in test; (0, 1): that fraction of the groups
  uint64_t seed = 0;
  std::string out_prefix;             // default: the CSV's path without its extension
};

struct SplitResult {
  std::string train_path, test_path;
  int64_t train_rows = 0, test_rows = 0, train_groups = 0, test_groups = 0;
};

// Rows keep their order and fields (re-quoted where needed); the header is copied.
// Throws oc::Error on a missing column, an impossible size or a write error.
SplitResult split_csv(const SplitOptions& opt);

}  // namespace oc::data
