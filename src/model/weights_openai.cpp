#include "model/weights_openai.h"

#include <fmt/format.h>

#include <algorithm>
#include <immintrin.h>
#include <set>

#include "core/check.h"
#include "io/torch_pt.h"
#include "model/openai_fields.h"
#include "model/precision.h"

namespace oc {
namespace {

// The ModelCfg fields build_model_from_openai_state_dict sets, as it infers them.
std::vector<OpenaiField> inferred_fields(const ModelCfg& cfg, const NamedTensors& sd, const std::string& w) {
  std::vector<OpenaiField> f;
  const bool vit = std::any_of(sd.begin(), sd.end(), [&](auto& kv) { return kv.first == "visual.proj"; });
  f.push_back({"vision tower is a ViT (1) or ModifiedResNet (0)", vit, !cfg.vision.resnet(), "'visual.proj' present"});
  if (!f.back().want == !f.back().have) (vit ? openai_vit_fields : openai_resnet_fields)(cfg, sd, w, &f);
  f.push_back({"vision_cfg.head_width", 64, cfg.vision.head_width, "CLIPVisionCfg's default"});
  const HostTensor& ln = openai_need(sd, "ln_final.weight", w);
  f.push_back({"embed_dim", openai_dim(openai_need(sd, "text_projection", w), 1, "text_projection", w), cfg.embed_dim,
               "text_projection"});
  f.push_back({"text_cfg.context_length",
               openai_dim(openai_need(sd, "positional_embedding", w), 0, "positional_embedding", w),
               cfg.text.context_length, "positional_embedding"});
  f.push_back({"text_cfg.vocab_size", openai_dim(openai_need(sd, "token_embedding.weight", w), 0, "token_embedding", w),
               cfg.text.vocab_size, "token_embedding.weight"});
  f.push_back({"text_cfg.width", openai_dim(ln, 0, "ln_final.weight", w), cfg.text.width, "ln_final.weight"});
  f.push_back({"text_cfg.heads", openai_dim(ln, 0, "ln_final.weight", w) / 64, cfg.text.heads, "width // 64"});
  f.push_back({"text_cfg.layers", openai_count_blocks(sd, "transformer.resblocks"), cfg.text.layers,
               "transformer.resblocks.*"});
  f.push_back({"quick_gelu", 1, cfg.quick_gelu, "OpenAI's models use QuickGELU"});
  return f;
}

// Options of ours that OpenAI's CLIP (CLIPVisionCfg / CLIPTextCfg defaults) does not have.
std::string foreign_option(const ModelCfg& c) {
  const VisionCfg& v = c.vision;
  const TextCfg& t = c.text;
  if (v.timm()) return "a timm image tower (vision_cfg.timm_model_name)";
  if (v.mlp_ratio != 4.0 || t.mlp_ratio != 4.0) return "an mlp_ratio other than 4";
  if (v.ls_init_value || t.ls_init_value) return "LayerScale (ls_init_value)";
  if (v.no_ln_pre || v.avg_pool || v.final_ln_after_pool) return "no_ln_pre / pool_type avg / final_ln_after_pool";
  if (t.no_causal_mask || t.pool != TextCfg::Pool::Argmax || t.proj_bias)
    return "text no_causal_mask / pool_type / proj_bias";
  if (v.ln_eps != 1e-5 || t.ln_eps != 1e-5) return "a LayerNorm eps other than 1e-5";
  return "";
}

// fp32 -> fp16 (round to nearest even) -> fp32 with F16C (in x86-64-v3, the build's floor):
// clang 14 has no _Float16 on x86 without AVX512-FP16, and this is the IEEE conversion torch's
// .half() does, NaN, Inf and subnormals included.
float round_f16(float x) { return _cvtsh_ss(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT)); }

}  // namespace

const HostTensor& openai_need(const NamedTensors& sd, const std::string& key, const std::string& where) {
  for (const auto& [k, t] : sd)
    if (k == key) return t;
  OC_USER_ERROR("{}: no '{}' (not an OpenAI CLIP checkpoint: build_model_from_openai_state_dict reads it)", where, key);
}

int openai_count_blocks(const NamedTensors& sd, const std::string& prefix) {
  std::set<std::string> ids;
  for (const auto& [k, t] : sd) {
    if (k.rfind(prefix, 0) != 0) continue;
    const size_t a = k.find('.'), b = a == std::string::npos ? a : k.find('.', a + 1);
    if (b == std::string::npos) continue;
    const size_t c = k.find('.', b + 1);
    ids.insert(k.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1));
  }
  return int(ids.size());
}

int64_t openai_dim(const HostTensor& t, int i, const std::string& key, const std::string& where) {
  const int n = int(t.shape.size());
  if (n == 0 || i >= n || i < -n) OC_USER_ERROR("{}: '{}' has shape {}", where, key, shape_str(t.shape));
  return t.shape[size_t(i < 0 ? n + i : i)];
}

void check_openai_config(const ModelCfg& cfg, const NamedTensors& sd, const std::string& where) {
  for (const OpenaiField& f : inferred_fields(cfg, sd, where))
    if (f.want != f.have)
      OC_USER_ERROR(
          "{}: this OpenAI checkpoint describes a model with {} = {} (from {}), but model {} has {}; pick "
          "the config of these weights (OpenCLIP's load_openai_model builds the model from the weights)",
          where, f.name, f.want, f.how, cfg.name, f.have);
  if (std::string o = foreign_option(cfg); !o.empty())
    OC_USER_ERROR("{}: model {} has {}, which OpenAI's CLIP (build_model_from_openai_state_dict) does not", where,
                  cfg.name, o);
}

void load_openai_state_dict(Clip& model, NamedTensors sd, const std::string& where) {
  check_openai_config(model.cfg(), sd, where);
  // build_model_from_openai_state_dict loads into a model whose convert_weights_to_fp16 set
  // is fp16 (OpenAI's files hold those tensors in fp16 already), then load_openai_model calls
  // model.float(): a tensor of that set saved in fp32 keeps its fp16 rounding.
  for (auto& [k, t] : sd) {
    if (t.dtype == DType::F16 || !is_lp_param(k)) continue;
    std::vector<float> v = t.to_f32();
    HostTensor r(DType::F32, t.shape);
    for (size_t i = 0; i < v.size(); ++i) r.f32()[i] = round_f16(v[i]);
    t = std::move(r);
  }
  load_state_dict(model, sd, where);
}

void apply_openai_archive(ModelSource& s) {
  if (!s.weights.empty() && io::is_torchscript_archive(s.weights)) s.cfg.quick_gelu = true;
}

}  // namespace oc
