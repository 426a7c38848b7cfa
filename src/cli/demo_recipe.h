// The fixed recipe of `openclip demo` (README "The main job"): one named JSON file,
// configs/recipes/fmnist-demo.json, compiled into the binary so it runs from anywhere;
// `openclip demo --recipe FILE` reads another. The demo's defaults all come from it; flags
// given on the command line override single fields. The runs that chose it are in
// docs/BENCHMARKS.md ("The main job").
#pragma once
#include <cstdint>
#include <string>

namespace oc::cli {

struct DemoRecipe {
  std::string name;       // printed in the JSON line, the log and the run's params.txt
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
// The compiled-in configs/recipes/fmnist-demo.json when `path` is empty, else the file.
DemoRecipe load_demo_recipe(const std::string& path);

}  // namespace oc::cli
