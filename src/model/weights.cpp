#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/check.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "io/torch_pt.h"
#include "model/pos_embed_resize.h"
#include "model/weights_openai.h"

namespace oc {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// CLIP keeps the text tower's parameters at the top level, CustomTextCLIP under text.*
// (custom_text configs, --force-custom-text). OpenCLIP's load_checkpoint converts a CLIP-layout
// state_dict for a CustomTextCLIP (convert_to_custom_text_state_dict: these five prefixes);
// the reverse is ours, so a --force-custom-text run's checkpoint also loads into the plain config.
constexpr const char* kTextTowerPrefixes[] = {"text_projection", "positional_embedding", "token_embedding",
                                              "transformer", "ln_final"};

enum class TextLayout { Same, ToCustomText, ToClip };

TextLayout text_layout_change(const NamedTensors& sd, bool custom_text) {
  auto has = [&](const char* k) { return std::any_of(sd.begin(), sd.end(), [&](auto& kv) { return kv.first == k; }); };
  const bool top = has("positional_embedding"), text = has("text.positional_embedding");
  if (custom_text && top && !text) return TextLayout::ToCustomText;
  if (!custom_text && text && !top) return TextLayout::ToClip;
  return TextLayout::Same;
}

std::string text_layout_name(const std::string& k, TextLayout change) {
  if (change == TextLayout::Same) return k;
  for (const char* p : kTextTowerPrefixes) {
    if (change == TextLayout::ToCustomText && k.rfind(p, 0) == 0) return "text." + k;
    if (change == TextLayout::ToClip && k.rfind(std::string("text.") + p, 0) == 0) return k.substr(5);
  }
  return k;
}

bool ignored_key(const std::string& k) {
  return k == "attn_mask" || ends_with(k, ".attn_mask") || ends_with(k, "position_ids") || k == "input_resolution" ||
         k == "context_length" || k == "vocab_size";
}
}  // namespace

NamedTensors read_state_dict(const std::string& path) {
  NamedTensors out;
  if (ends_with(path, ".safetensors")) {
    auto st = io::read_safetensors(path);
    if (!st) OC_USER_ERROR("{}", st.error());
    out = std::move(st->tensors);
    // open_clip_model.safetensors is saved from an unwrapped model, but strip module. too.
    if (!out.empty() && out[0].first.rfind("module", 0) == 0)
      for (auto& [k, _] : out)
        if (k.rfind("module.", 0) == 0) k = k.substr(7);
    return out;
  }
  auto pt = io::load_pt(path);
  if (!pt) OC_USER_ERROR("{}", pt.error());
  auto sd = io::extract_state_dict(pt.value());
  if (!sd) OC_USER_ERROR("{}: {}", path, sd.error());
  for (auto& [k, rec] : sd.value()) out.emplace_back(k, std::move(rec->data));
  return out;
}

// A BatchNorm statistic that would make every embedding NaN (a negative or non-finite
// running_var: 1 / sqrt(var + eps); a non-finite running_mean) is refused naming its key.
void check_bn_statistic(const std::string& name, const std::vector<float>& v, const std::string& where) {
  const bool var = ends_with(name, ".running_var");
  if (!var && !ends_with(name, ".running_mean")) return;
  for (size_t i = 0; i < v.size(); i++)
    if (!std::isfinite(v[i]) || (var && v[i] < 0))
      OC_USER_ERROR("{}: '{}'[{}] is {}; a BatchNorm {} must be finite{} (the embeddings would be NaN)", where, name, i,
                    v[i], var ? "variance" : "mean", var ? " and >= 0" : "");
}

void load_state_dict(Clip& model, const NamedTensors& sd, const std::string& where) {
  const ParamTable& t = model.table();
  const TextLayout change = text_layout_change(sd, model.cfg().custom_text);
  std::map<std::string, const HostTensor*> by_name;
  for (auto& [file_name, tensor] : sd) {
    if (ignored_key(file_name)) continue;
    const std::string name = text_layout_name(file_name, change);
    if (!by_name.emplace(name, &tensor).second) OC_USER_ERROR("{}: key '{}' appears twice", where, name);
  }
  // BatchNorm statistics (ModifiedResNet) are named all at once: a file without them was
  // written by code that dropped the buffers, and each would be reported alone otherwise.
  std::string missing_stats;
  int64_t n_missing = 0;
  for (auto& p : t.params)
    if (p.buffer && !by_name.count(p.name)) missing_stats += (n_missing++ ? ", " : "") + p.name;
  if (n_missing)
    OC_USER_ERROR(
        "{}: {} BatchNorm statistics missing for model {} (running_mean / running_var / "
        "num_batches_tracked are buffers of the state_dict; save it with them): {}",
        where, n_missing, model.cfg().name, missing_stats);
  // In the model's state_dict order, so the first problem reported is the first key.
  for (auto& p : t.params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      OC_USER_ERROR("{}: missing key '{}' (shape {}) for model {}", where, p.name, shape_str(p.shape), model.cfg().name);
    const HostTensor& tensor = *it->second;
    bool ok = tensor.shape == p.shape;
    if (!ok && (p.name == "logit_scale" || p.name == "logit_bias")) ok = tensor.shape == Shape{1} || tensor.shape.empty();
    if (!ok)
      OC_USER_ERROR("{}: '{}' has shape {} in the file but {} in model {} (is this checkpoint for another model "
                    "config?)",
                    where, p.name, shape_str(tensor.shape), shape_str(p.shape), model.cfg().name);
  }
  for (auto& [name, _] : by_name)
    if (!t.find(name))
      OC_USER_ERROR("{}: unexpected key '{}' for model {} (is this checkpoint for another model config?)", where, name,
                    model.cfg().name);
  for (auto& p : t.params) {
    std::vector<float> v = by_name[p.name]->to_f32();
    if (p.buffer) check_bn_statistic(p.name, v, where);
    model.backend().copy_from_host(model.params() + p.offset, v.data(), sizeof(float) * p.numel);
  }
}

void adapt_pretrained(const Clip& model, NamedTensors& sd) {
  const ModelCfg& cfg = model.cfg();
  auto find = [&](const std::string& k) -> HostTensor* {
    for (auto& [name, t] : sd)
      if (name == k) return &t;
    return nullptr;
  };
  // "If loading a non-SigLIP model for SigLIP training" (open_clip#712): a zero logit_bias.
  if (model.table().find("logit_bias") && !find("logit_bias"))
    if (const HostTensor* scale = find("logit_scale")) {
      HostTensor zero(DType::F32, scale->shape);
      std::fill(zero.f32(), zero.f32() + zero.numel(), 0.0f);
      sd.emplace_back("logit_bias", std::move(zero));
    }
  // resize_pos_embed: OpenCLIP's own ViT only (the tower with a grid_size attribute).
  model.vision_tower().adapt_pretrained(sd);
  // resize_text_pos_embed reads state_dict['positional_embedding']: CLIP's layout (a
  // CustomTextCLIP's text.positional_embedding is never resized), same width only.
  if (!cfg.custom_text)
    if (HostTensor* pos = find("positional_embedding");
        pos && pos->shape.size() == 2 && pos->shape[0] != cfg.text.context_length && pos->shape[1] == cfg.text.width) {
      log::info("Resizing text position embedding num_pos from {} to {}", pos->shape[0], cfg.text.context_length);
      *pos = resize_text_pos_embed(*pos, cfg.text.context_length);
    }
}

void load_weights(Clip& model, const std::string& path) {
  if (io::is_torchscript_archive(path)) return load_openai_state_dict(model, read_state_dict(path), path);
  NamedTensors sd = read_state_dict(path);
  adapt_pretrained(model, sd);
  load_state_dict(model, sd, path);
}

std::vector<std::pair<std::string, TensorView>> state_dict_views(const Clip& model) {
  std::vector<std::pair<std::string, TensorView>> v;
  for (auto& p : model.table().params) v.push_back({p.name, TensorView{DType::F32, p.shape, model.params() + p.offset}});
  return v;
}

HostTensor param_to_host(ops::Backend& be, const float* arena, const ParamInfo& p) {
  HostTensor t(DType::F32, p.shape);
  be.copy_to_host(t.f32(), arena + p.offset, sizeof(float) * p.numel);
  return t;
}

NamedTensors state_dict_copy(const Clip& model) {
  NamedTensors out;
  for (auto& p : model.table().params) out.emplace_back(p.name, param_to_host(model.backend(), model.params(), p));
  return out;
}

void save_weights(const Clip& model, const std::string& path) {
  if (ends_with(path, ".safetensors")) {
    auto views = state_dict_views(model);
    // Host memory is written as it is; a device backend's one tensor at a time through a
    // host buffer of the largest tensor's size.
    io::TensorReader read;
    if (!model.backend().host_memory())
      read = [&](const TensorView& v, void* dst) { model.backend().copy_to_host(dst, v.data, v.nbytes()); };
    io::write_safetensors(path, views, {{"format", "pt"}}, read);
    return;
  }
  io::save_pt(path, io::make_state_dict(state_dict_copy(model)));
}

}  // namespace oc
