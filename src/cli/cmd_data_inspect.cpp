// openclip data inspect PATTERN: a shard set's contents and problems (from cmd_data.cpp).
#include <cstdio>

#include "cli/args.h"
#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/csv.h"
#include "data/inspect.h"
#include "data/urls.h"

namespace oc::cli {

int data_inspect(const std::vector<std::string>& args) {
  DataToolArgs a;
  if (!parse_flags("data inspect", args, &a)) return 0;
  if (a.positional.size() != 1) OC_USER_ERROR("data inspect: give one shard pattern, e.g. 'shards/{{00000..00009}}.tar'");
  const std::string& pat = a.positional[0];
  const bool csv = pat.size() > 4 && (pat.ends_with(".csv") || pat.ends_with(".tsv"));
  if (csv) {
    auto sep = data::parse_separator(a.csv_separator);
    if (!sep) OC_USER_ERROR("{}", sep.error());
    auto rep = data::inspect_csv(pat, *sep, a.csv_img_key, a.csv_caption_key, a.decode);
    if (a.json) std::printf("%s\n", rep.json().dump().c_str());
    else std::printf("%s", rep.text().c_str());
    return 0;
  }
  auto list = data::expand_shards(pat);
  if (!list) OC_USER_ERROR("{}", list.error());
  auto rep = data::inspect_shards(list->urls, a.decode);
  if (a.json) std::printf("%s\n", rep.json().dump().c_str());
  else std::printf("%s", rep.text().c_str());
  return 0;
}

}  // namespace oc::cli
