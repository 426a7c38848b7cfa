// What the HTML report shows, read from a run folder into plain structs: params.txt
// (OpenCLIP's `key: value` lines), the TensorBoard scalars, and the zero-shot predictions
// files (`zeroshot_<task>.json`, written by the evaluation). Pieces that are missing or
// malformed become notes on the RunData, not errors: the page still renders without them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "io/run_logs.h"

namespace oc::report {

struct TopPrediction {
  int64_t cls = -1;
  std::string name, caption;
  double prob = 0;
};

struct Example {
  std::string key;
  int64_t label = -1;
  std::string png_base64;  // checked: plain base64 (empty when the file's value was not)
  std::vector<TopPrediction> top;
};

struct Predictions {
  std::string path;  // the file it came from
  std::string task, data, checkpoint;
  std::vector<std::string> classnames, templates;
  int64_t samples = 0;
  double top1 = 0, top5 = 0, images_per_second = 0, classifier_seconds = 0;  // NaN when absent
  std::vector<int64_t> confusion;  // C x C, [true][predicted], row-major; empty when absent
  std::vector<double> per_class_top1;
  std::vector<Example> examples;
  std::vector<std::string> warnings;  // parts that were skipped, and why
};

// Parses one predictions file. Structural problems (not JSON, no classnames, a confusion
// matrix of the wrong shape) are errors naming `where` and the key; a bad example is
// skipped with a warning.
Result<Predictions> parse_predictions(std::string_view json_text, const std::string& where);

struct RunData {
  std::string dir, name, date;
  std::map<std::string, std::string> params;  // empty when params.txt is missing
  std::map<std::string, ScalarSeries> scalars;
  std::vector<Predictions> predictions;  // sorted by file name
  std::vector<std::string> notes;        // what could not be read, said plainly
  bool has_params = false, has_scalars = false;
};

// `key: value` lines; lines without ": " are ignored (a value may itself contain ": ").
std::map<std::string, std::string> parse_params(std::string_view text);

// Reads everything the report needs from `dir`. Throws oc::Error (naming `dir`) only when
// `dir` is not a folder; anything missing inside it becomes a note.
RunData load_run(const std::string& dir);

}  // namespace oc::report
