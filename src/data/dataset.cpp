#include "data/dataset.h"

#include <fmt/format.h>

#include "data/csv.h"

namespace oc::data {

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

Status data_config(const DataFlags& f, bool train, DataConfig* cfg) {
  cfg->type = f.dataset_type;
  cfg->train = train;
  cfg->data = train ? f.train_data : f.val_data;
  const int64_t n = train ? f.train_num_samples : f.val_num_samples;
  cfg->num_samples = n > 0 ? n : -1;
  cfg->resampled = train && f.dataset_resampled;
  cfg->upsampling_factors = train ? f.upsampling_factors : "";
  cfg->shuffle = !f.no_shuffle;
  auto sep = parse_separator(f.csv_separator);
  if (!sep) return Err{sep.error()};
  cfg->csv_separator = *sep;
  cfg->csv_img_key = f.csv_img_key;
  cfg->csv_caption_key = f.csv_caption_key;
  cfg->csv_label_key = f.csv_label_key;
  cfg->batch_size = f.batch_size;
  cfg->workers = f.workers;
  return Status::success();
}

}  // namespace oc::data
