#include "data/csv_split.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "core/fs.h"
#include "data/csv.h"
#include "data/epoch.h"

namespace oc::data {

SplitResult split_csv(const SplitOptions& opt) {
  auto s = open_stream(opt.csv);
  if (!s) OC_USER_ERROR("{}", s.error());
  CsvReader rd(std::move(*s), opt.csv, opt.sep);
  std::vector<std::string> header;
  auto h = rd.next(&header);
  if (!h) OC_USER_ERROR("{}", h.error());
  if (!*h) OC_USER_ERROR("{}: empty file", opt.csv);
  auto it = std::find(header.begin(), header.end(), opt.group_by);
  if (it == header.end()) {
    std::string found;
    for (auto& c : header) found += (found.empty() ? "'" : ", '") + c + "'";
    OC_USER_ERROR("{}: no column '{}' to group by (columns found: {}; separator used: {})", opt.csv, opt.group_by,
                  found, separator_name(opt.sep));
  }
  const size_t gcol = size_t(it - header.begin());
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> group_of;
  std::unordered_map<std::string, int64_t> gid;
  std::vector<std::string> row;
  for (;;) {
    auto r = rd.next(&row);
    if (!r) OC_USER_ERROR("{}", r.error());
    if (!*r) break;
    const std::string key = gcol < row.size() ? row[gcol] : std::string();
    auto [g, fresh] = gid.emplace(key, int64_t(gid.size()));
    group_of.push_back(g->second);
    rows.push_back(row);
  }
  const int64_t groups = int64_t(gid.size());
  int64_t ntest = opt.test_size >= 1 ? int64_t(opt.test_size) : int64_t(std::llround(opt.test_size * double(groups)));
  if (opt.test_size <= 0 || ntest < 1 || ntest >= groups)
    OC_USER_ERROR("--test-size {}: {} has {} distinct '{}' values; the test split needs at least 1 and leaves at least "
                  "1 for training", opt.test_size, opt.csv, groups, opt.group_by);
  // The first ntest groups of a seeded permutation go to test.
  auto perm = permutation(groups, mix_seed(opt.seed, 0x5011));
  std::vector<char> is_test(size_t(groups), 0);
  for (int64_t i = 0; i < ntest; ++i) is_test[size_t(perm[size_t(i)])] = 1;

  SplitResult res;
  std::string prefix = opt.out_prefix;
  std::string ext = ".csv";
  size_t dot = opt.csv.rfind('.');
  size_t slash = opt.csv.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) ext = opt.csv.substr(dot);
  if (prefix.empty()) prefix = opt.csv.substr(0, dot != std::string::npos && (slash == std::string::npos || dot > slash) ? dot : opt.csv.size());
  res.train_path = prefix + "_train" + ext;
  res.test_path = prefix + "_test" + ext;
  std::string train = csv_row(header, opt.sep), test = train;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (is_test[size_t(group_of[i])]) {
      test += csv_row(rows[i], opt.sep);
      ++res.test_rows;
    } else {
      train += csv_row(rows[i], opt.sep);
      ++res.train_rows;
    }
  }
  res.test_groups = ntest;
  res.train_groups = groups - ntest;
  fs::write_atomic(res.train_path, train);
  fs::write_atomic(res.test_path, test);
  return res;
}

}  // namespace oc::data
