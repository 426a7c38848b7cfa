#include "data/dataset.h"

#include <fmt/format.h>

#include "data/csv.h"

namespace oc::data {

Result<DatasetType> parse_dataset_type(const std::string& n) {
  if (n == "auto") return DatasetType::Auto;
  if (n == "webdataset") return DatasetType::WebDataset;
  if (n == "csv") return DatasetType::Csv;
  if (n == "synthetic") return DatasetType::Synthetic;
  if (n == "synthetic-learnable") return DatasetType::SyntheticLearnable;
  return Err{fmt::format("--dataset-type '{}': choose auto, webdataset, csv, synthetic or synthetic-learnable", n)};
}

const char* dataset_type_name(DatasetType t) {
  switch (t) {
    case DatasetType::Auto: return "auto";
    case DatasetType::WebDataset: return "webdataset";
    case DatasetType::Csv: return "csv";
    case DatasetType::Synthetic: return "synthetic";
    case DatasetType::SyntheticLearnable: return "synthetic-learnable";
  }
  return "?";
}

Result<DatasetType> resolve_dataset_type(DatasetType t, const std::string& data) {
  if (t != DatasetType::Auto) return t;
  // OpenCLIP: ext = data_path.split('.')[-1].
  size_t dot = data.rfind('.');
  std::string ext = dot == std::string::npos ? data : data.substr(dot + 1);
  if (ext == "csv" || ext == "tsv") return DatasetType::Csv;
  if (ext == "tar") return DatasetType::WebDataset;
  // Also a brace pattern or a pipe: command (shards that do not end in .tar).
  if (data.rfind("pipe:", 0) == 0 || (data.find('{') != std::string::npos && data.find('}') != std::string::npos))
    return DatasetType::WebDataset;
  return Err{fmt::format(
      "tried to figure out the dataset type of '{}' from its extension '{}' and failed: "
      "name .tar shards or a .csv/.tsv file, or pass --dataset-type", data, ext)};
}

std::vector<OptionSpec> data_option_specs() {
  return {
      {"train-data", OptType::String, "", "training data: webdataset shards (brace pattern, `::` between sources) or a csv/tsv file", ""},
      {"train-data-upsampling-factors", OptType::String, "", "`::`-separated weight per source (needs --dataset-resampled)", ""},
      {"val-data", OptType::String, "", "validation data (same formats)", ""},
      {"train-num-samples", OptType::Int, "", "samples per epoch (default: sizes.json or __len__ next to the shards)", ""},
      {"val-num-samples", OptType::Int, "", "validation samples (webdataset)", ""},
      {"dataset-type", OptType::String, "auto", "auto, webdataset, csv, synthetic, synthetic-learnable", ""},
      {"dataset-resampled", OptType::Flag, "", "sample shards with replacement (webdataset training)", ""},
      {"no-shuffle", OptType::Flag, "", "no shard or sample shuffling (also no CSV shuffling)", ""},
      {"csv-separator", OptType::String, "\t", "CSV separator (default TAB)", ""},
      {"csv-img-key", OptType::String, "filepath", "CSV column with image paths (relative to the CSV's folder)", ""},
      {"csv-caption-key", OptType::String, "title", "CSV column with captions", ""},
      {"csv-label-key", OptType::String, "", "optional CSV column with integer class labels (zero-shot evaluation)", ""},
      {"workers", OptType::Int, "4", "data loader threads per process (0: in the training thread)", ""},
  };
}

Status apply_data_options(const Options& o, bool train, DataConfig* cfg) {
  auto type = parse_dataset_type(o.get("dataset-type"));
  if (!type) return Err{type.error()};
  cfg->type = *type;
  cfg->train = train;
  cfg->data = o.get(train ? "train-data" : "val-data");
  std::string n = train ? "train-num-samples" : "val-num-samples";
  cfg->num_samples = o.has(n) ? o.get_int(n) : -1;
  cfg->resampled = train && o.flag("dataset-resampled");
  cfg->upsampling_factors = train ? o.get("train-data-upsampling-factors") : "";
  if (!cfg->upsampling_factors.empty() && !cfg->resampled)
    return Err{"--train-data-upsampling-factors needs --dataset-resampled (as in OpenCLIP)"};
  cfg->shuffle = !o.flag("no-shuffle");
  auto sep = parse_separator(o.get("csv-separator"));
  if (!sep) return Err{sep.error()};
  cfg->csv_separator = *sep;
  cfg->csv_img_key = o.get("csv-img-key");
  cfg->csv_caption_key = o.get("csv-caption-key");
  cfg->csv_label_key = o.get("csv-label-key");
  cfg->workers = int(o.get_int("workers"));
  if (cfg->workers < 0) return Err{"--workers must be >= 0"};
  return Status::success();
}

}  // namespace oc::data
