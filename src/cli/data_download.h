// openclip data download: URL list -> webdataset shards (img2dataset's options and layout).
#pragma once
#include <string>
#include <vector>

namespace oc::cli {
int run_data_download(const std::vector<std::string>& args);
}
