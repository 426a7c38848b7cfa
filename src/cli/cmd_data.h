// `openclip data <tool>`: the subcommands of the data command, one file each
// (cmd_data_*.cpp); cmd_data.cpp registers "data" and dispatches.
#pragma once
#include <string>
#include <vector>

namespace oc::cli {

int data_fashion_mnist(const std::vector<std::string>& args);
int data_shards(const std::vector<std::string>& args);
int data_split(const std::vector<std::string>& args);
int data_inspect(const std::vector<std::string>& args);

}  // namespace oc::cli
