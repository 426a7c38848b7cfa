// The settings structs of the commands: what each command's flags fill (the registry,
// core/flags*.cpp, binds every flag to its field). A struct that derives from a library's
// settings lists those bases in FlagParts, and its flags write the library's fields directly.
#pragma once
#include <string>
#include <tuple>

#include "data/dataset.h"
#include "eval/eval_run.h"

namespace oc::cli {

// openclip eval: the library's EvalArgs, the data flags it shares with train, and the output.
struct EvalCommandArgs : EvalArgs, data::DataFlags {
  using FlagParts = std::tuple<EvalArgs, data::DataFlags>;
  bool json = false;
};

}  // namespace oc::cli
