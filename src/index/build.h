// `openclip index build`: embeds the images of a folder / pattern / shard set in batches and
// writes (or appends to) an index folder (store.h) with its faiss index.
#pragma once
#include <cstdint>
#include <string>

#include "model/precision.h"

namespace oc::index {

struct BuildOptions {
  std::string model = "ViT-B-32", weights;
  Precision precision = Precision::Fp32;
  std::string int8_scales;     // --int8-scales (InferenceOptions::int8_scales)
  std::string device = "cpu";  // --device (ops::resolve_device)
  std::string images;  // folder, pattern or shards
  std::string out;     // index folder (appended to when it exists)
  std::string faiss = "auto";  // auto | flat | hnsw
  int batch = 32;
  bool progress = true;  // progress on stderr: a bar on a terminal, plain lines in logs (core/progress.h)
};

struct BuildResult {
  int64_t added = 0, already = 0, failed = 0, total = 0;
  double embed_seconds = 0;  // decoding + encoding of the added images
  std::string faiss_kind;
};

BuildResult build_index(const BuildOptions& opt);

}  // namespace oc::index
