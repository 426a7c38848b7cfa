// The fixed recipes of `openclip demo` (README "The main job"): named JSON files under
// configs/recipes/, compiled into the binary so they run from anywhere; the default is the
// first of kBuiltinRecipes (demo_recipe.cpp), `openclip demo --recipe NAME|FILE` picks another
// built-in one by its "name" or reads a file. The demo's defaults all come from the recipe;
// flags given on the command line override single fields. The runs that chose them are in
// docs/BENCHMARKS.md ("The main job").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace oc::cli {

struct DemoRecipe {
  std::string name;       // printed in the JSON line, the log and the run's params.txt
  std::string source;     // where it was read from (errors name it)
  std::string model;      // a model config name (configs/models/) or a JSON path
  int batch_size = 0;
  double lr = 0, wd = 0;
  int64_t warmup = 0;     // optimizer steps of linear warm-up, then lr_scheduler
  std::string lr_scheduler = "cosine";
  std::string precision;  // --precision's values
  std::string aug_cfg;    // OpenCLIP's --aug-cfg syntax ("scale=(0.9,1.0)"); "": its defaults
  int64_t samples = 0;    // training samples of the fixed run (seed `seed`)
  int epochs = 0;         // evaluation points: the samples are split into this many epochs
  double max_passes = 0;  // at most this many passes over the training images
  int seed = 0;
  // What the recipe's training took where it was measured: `measured_seconds` for
  // `measured_samples` on `measured_cpu` (the printed estimate scales it to the run); the
  // file's optional "measured.how" says how the figure was taken.
  double measured_seconds = 0;
  int64_t measured_samples = 0;
  std::string measured_cpu;
  double seconds_per_sample() const { return measured_seconds / double(measured_samples); }
};

// Parses a recipe; every field is required and unknown fields are errors (a typo must not
// silently fall back to a default). `where` names the file in errors.
DemoRecipe parse_demo_recipe(const std::string& json_text, const std::string& where);
// The default built-in recipe when `name_or_path` is empty, the built-in recipe of that
// "name", else the file.
DemoRecipe load_demo_recipe(const std::string& name_or_path);
std::vector<std::string> builtin_demo_recipe_names();  // the default first

// The model the demo trains: `model` (a built-in config name or a JSON path) as
// load_model_config reads it. An unknown name, a model family or tower openclip-cpp does not
// build or train (hf_model_name, a timm tower other than SigLIP's ViTs, a bad field) is an
// error naming `field` (the recipe file's "model", or --model) before anything runs.
ModelCfg demo_model_config(const std::string& model, const std::string& field);

}  // namespace oc::cli
