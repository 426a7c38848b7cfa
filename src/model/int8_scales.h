// Static activation scales for --precision int8 (`openclip quantize`): one per-tensor scale
// for the input of each int8 GEMM, measured on calibration data with the fp32 model, so the
// producers of those inputs (LayerNorm, the c_fc epilogue, attention) write int8 directly
// instead of a per-row quantization pass on every call (ops/gemm_int8.h).
// The file is safetensors, beside the weights by default (int8_scales_beside): one F32 tensor
// of shape [1] per GEMM, named after the GEMM's weight with "weight" replaced by "input_scale"
// ("visual.transformer.resblocks.0.mlp.c_proj.weight" -> "...mlp.c_proj.input_scale",
// "...attn.in_proj_weight" -> "...attn.in_proj_input_scale", "visual.conv1.weight" ->
// "visual.conv1.input_scale"); the value is max|x| / 127 over the calibration inputs (x the
// GEMM's input: int8 q = round(x / scale), clamped to +-127). Metadata: format
// "openclip-int8-scales", format_version "1", model (the config name), calibration_images,
// calibration_texts, range ("max" or "p99.99").
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace oc {

inline constexpr const char* kInt8ScalesFormat = "openclip-int8-scales";
inline constexpr const char* kInt8ScalesVersion = "1";

struct Int8Scales {
  std::string file;   // where they were read from ("" = made here), for logs and errors
  std::string model;  // the model config they were measured on
  int64_t calib_images = 0, calib_texts = 0;
  std::string range = "max";  // what the calibration recorded: "max" (|x|) or "pNN.NN" (a percentile)
  std::map<std::string, float> scale;  // tensor name (int8_scale_name) -> input scale, finite > 0
};

// The scale tensor's name for a GEMM weight's state_dict name (see above).
std::string int8_scale_name(const std::string& weight_name);
// `<weights stem>.int8.safetensors` beside `weights` (its extension dropped); "" for "".
std::string int8_scales_beside(const std::string& weights);

// Reads and checks a scales file: its format metadata, and every tensor F32 of shape [1] (or
// a scalar) holding a finite value > 0; an error names the file and the tensor. Which tensors
// a model needs is checked where the model is known (Clip::set_int8_scales).
Int8Scales read_int8_scales(const std::string& path);
void write_int8_scales(const std::string& path, const Int8Scales& s);

}  // namespace oc
