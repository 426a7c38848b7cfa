// What to load and how: OpenCLIP's data flags as parsed (DataFlags), the loader's settings
// (DataConfig), the one mapping between them, and the dataset type (auto by extension, as
// OpenCLIP). The flags themselves are declared and bound in cli/flags_train.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "image/transform.h"

namespace oc::data {

enum class DatasetType { Auto, WebDataset, Csv, Synthetic, SyntheticLearnable };

// --dataset-type's spellings (the flag registry binds through this table).
inline constexpr std::pair<std::string_view, DatasetType> kDatasetTypeNames[] = {
    {"auto", DatasetType::Auto},           {"webdataset", DatasetType::WebDataset},
    {"csv", DatasetType::Csv},             {"synthetic", DatasetType::Synthetic},
    {"synthetic-learnable", DatasetType::SyntheticLearnable},
};

const char* dataset_type_name(DatasetType t);
// Auto: .csv/.tsv -> csv; .tar, a brace pattern or a pipe: command -> webdataset; anything
// else is an error that says what was tried.
Result<DatasetType> resolve_dataset_type(DatasetType t, const std::string& data);

struct DataConfig {
  DatasetType type = DatasetType::Auto;
  std::string data;             // --train-data / --val-data
  bool train = true;            // train: shuffles, drop_last, RandomResizedCrop; eval: none of these
  int64_t num_samples = -1;     // --train-num-samples / --val-num-samples (-1: sizes.json / __len__)
  int batch_size = 64;
  int workers = 4;              // 0: batches are made in the caller's thread
  int rank = 0, world_size = 1;
  uint64_t seed = 0;
  bool resampled = false;       // --dataset-resampled
  std::string upsampling_factors;
  bool shuffle = true;          // false: no shard or sample shuffling (--no-shuffle)
  size_t shard_shuffle_size = 2000, shard_shuffle_initial = 500;
  size_t sample_shuffle_size = 5000, sample_shuffle_initial = 1000;
  char csv_separator = '\t';
  std::string csv_img_key = "filepath", csv_caption_key = "title";
  std::string csv_label_key;    // optional integer label column (zero-shot evaluation)
  // CSV images go through the transform in their PIL mode, as OpenCLIP's CsvDataset
  // (Image.open, no convert); true converts to RGB first, as torchvision's ImageFolder.
  bool csv_rgb_first = false;
  PreprocessCfg preprocess;
  int context_length = 77;
  int prefetch = 2;             // ready batches queued per worker (PyTorch's prefetch_factor)
  int decode_min_side = 0;      // >0: JPEG DCT-scaled decoding down to this shortest side
  int warn_full = 5;            // skipped-sample warnings printed in full per reason
};

// The data flags that train and eval share, as parsed: each is written by its registry entry
// (cli/flags_train.cpp), with the registry's defaults. TrainArgs derives from it.
struct DataFlags {
  DatasetType dataset_type = DatasetType::Auto;
  std::string train_data, val_data, csv_separator, csv_img_key, csv_caption_key, csv_label_key,
      imagenet_val, upsampling_factors, zeroshot_data, zeroshot_classnames, zeroshot_templates;
  int64_t train_num_samples = 0, val_num_samples = 0;  // 0 = unknown (None)
  bool dataset_resampled = false, no_shuffle = false;
  bool val_dedup_images = false;  // ours: retrieval counts the captions of one image as one image
  int workers = 0, batch_size = 0;
};

// The loader's data settings from the data flags: train = true reads --train-data (its sample
// count, resampling and upsampling factors), else --val-data. Preprocessing, the seed and the
// world layout are left to the caller; the cross-flag rules (upsampling factors need
// --dataset-resampled) were checked by the parser. An unknown dataset type or separator is
// an error naming the flag.
Status data_config(const DataFlags& f, bool train, DataConfig* cfg);

}  // namespace oc::data
