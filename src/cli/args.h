// The settings structs of the commands: what each command's flags fill (the registry,
// cli/flags_*.cpp, binds every flag to its field). A struct that derives from a library's
// settings lists those bases in FlagParts, and its flags write the library's fields directly.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "data/dataset.h"
#include "download/downloader.h"
#include "eval/eval_run.h"
#include "index/build.h"
#include "model/precision.h"
#include "openclip/openclip.h"
#include "serve/server.h"

namespace oc::cli {

// openclip eval: the library's EvalArgs, the data flags it shares with train, and the output.
struct EvalCommandArgs : EvalArgs, data::DataFlags {
  using FlagParts = std::tuple<EvalArgs, data::DataFlags>;
  bool json = false;
};

// The model of classify and embed: the public API's load options, the config and the weights.
struct ModelArgs : openclip::LoadOptions {
  using FlagParts = std::tuple<openclip::LoadOptions>;
  std::string model, pretrained;
};

struct ClassifyArgs : ModelArgs {
  using FlagParts = std::tuple<ModelArgs, openclip::LoadOptions>;
  std::vector<std::string> images, labels;
  bool json = false;
};

struct EmbedArgs : ModelArgs {
  using FlagParts = std::tuple<ModelArgs, openclip::LoadOptions>;
  std::string images, texts, out;
  bool no_normalize = false;
};

// openclip quantize: the fp32 model, the calibration data and where the scales go.
struct QuantizeArgs {
  std::string model, pretrained;
  std::string calib, calib_captions, out;
  int calib_images = 512;
  double calib_percentile = 100.0;
  int batch_size = 32, threads = 0;
};

struct IndexBuildArgs : index::BuildOptions {
  using FlagParts = std::tuple<index::BuildOptions>;
  bool random_init = false, json = false;
};

struct IndexSearchArgs {
  std::vector<std::string> positional;  // INDEX_DIR
  std::optional<std::string> text, image;  // given (perhaps empty) or not
  std::string pretrained;  // "": the weights the index records
  std::string device;      // --device
  int k = 0;
  bool json = false;
};

struct ServeArgs : serve::ServeOptions {
  using FlagParts = std::tuple<serve::ServeOptions>;
  std::string api_key_file, allowed_hosts_list, cors_origin_list;  // the lists comma-separated, as given
  bool random_init = false;
};

// bench train | infer | zeroshot: a model on synthetic data.
struct BenchArgs {
  std::string model, device, text_len;
  std::string tower;       // bench infer: image, text or both
  std::string pretrained;  // bench infer / zeroshot: weights or a model source (else random weights)
  Precision precision = Precision::Fp32;
  std::string int8_scales;        // --int8-scales (InferenceOptions::int8_scales)
  std::string precision_spelled;  // --precision as given (bench zeroshot prints it)
  int batch_size = 0, steps = 0, warmup_steps = 0, seed = 0, threads = 0;
  int classes = 0, templates = 0, images = 0;  // bench zeroshot
  bool json = false, allow_tf32 = false;
  bool siglip = false;  // bench train: SigLIP's loss and logit init, as train --siglip
};

// openclip demo: the recipe file (--recipe, default the built-in one) supplies the run; a flag
// given on the command line overrides its field (the optionals: set only when given).
struct DemoArgs {
  std::string recipe, out, source, name;
  std::optional<std::string> model, precision;  // precision as spelled (the recipe's field is)
  std::optional<int> batch_size, epochs, seed;
  std::optional<int64_t> warmup;
  std::optional<double> lr, wd, max_passes;
  std::optional<double> minutes;  // time-budget mode
  int64_t samples = 0, limit = 0;
  int workers = 0, threads = 0;
  bool no_report = false;
};

// bench data: the loader's settings, filled by the flags, and the run's length.
struct BenchDataArgs : data::DataConfig {
  using FlagParts = std::tuple<data::DataConfig>;
  std::vector<std::string> positional;  // PATTERN
  int batches = 0;
  int64_t warmup = 0;
  bool json = false;
};

// data split | shards | fashion-mnist | inspect: the data tools' flags (each reads its own).
struct DataToolArgs {
  std::vector<std::string> positional;  // data inspect: PATTERN
  std::string csv, group_by, out_prefix, from_csv, from_folder, out, resize_mode, split, source;
  std::string csv_separator, csv_img_key, csv_caption_key;
  std::optional<double> test_size;
  int64_t shard_size = 0, limit = 0;
  int image_size = 0, encode_quality = 0, seed = 0;
  bool first_caption_only = false, decode = false, json = false;
};

// data download: img2dataset's options (the library's DownloadOptions) and the URL list.
struct DownloadArgs : download::DownloadOptions {
  using FlagParts = std::tuple<download::DownloadOptions>;
  std::string url_list, input_format, url_col, caption_col, output_format, encode_format, incremental_mode;
  std::string resize_mode_name, disallowed_header_directives;  // as given (a name; comma-separated)
  bool first_caption_only = false;
};

// logs export | compare, report, info.
struct RunToolArgs {
  std::vector<std::string> positional;  // RUN_DIR (logs compare: RUN_A RUN_B)
  std::string tag, format, out, title;
  double max_rel_diff = 0;
  int top = 0;
  bool json = false;
};

// models [--check FILE|NAME].
struct ModelsArgs {
  std::string check;  // a config to validate (name or JSON file); empty: list the built-in ones
};

struct TokenizeArgs {
  std::string vocab, hf_tokenizer, hf_tokenizer_vocab, model, input;
  int context_length = 0;
  std::optional<int> context_length_given;  // set when --context-length is given (with --model: overrides)
  bool strip_sep_token = false, decode = false;
};

}  // namespace oc::cli
