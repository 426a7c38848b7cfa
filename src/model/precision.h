// --precision as OpenCLIP names it, mapped to what the CPU backend computes.
#pragma once
#include <string>
#include <string_view>
#include <utility>

#include "model/params.h"
#include "ops/backend.h"

namespace oc {

enum class Precision {
  Fp32,     // fp32 everywhere
  AmpBf16,  // fp32 master weights; matmul inputs rounded to bf16, fp32 accumulation;
            // LayerNorm, softmax, loss and the optimizer in fp32 (autocast to bf16)
  Bf16,     // OpenCLIP's `bf16`: as AmpBf16, and the weights convert_weights_to_lp casts
            // (Linear/Conv weights and biases, attention in_proj weight/bias and out_proj,
            // visual.proj, text_projection) are kept at bf16 values; LayerNorms, embeddings
            // and logit_scale stay fp32
  PureBf16, // `pure_bf16`: every parameter kept at a bf16 value, as model.to(bfloat16)
  Int8,     // inference only (not OpenCLIP's): the transformer blocks' GEMM weights in int8 per
            // output channel, their inputs quantized per row (model/block_int8.h); the rest
            // as amp_bf16. ViT towers only; a CPU without VNNI falls back with a warning.
};

// The spellings --precision accepts (OpenCLIP's) and the mode each selects: the flag registry
// binds the flag through this table, so a command gets the enum from parsing. OpenCLIP's
// `amp` (fp16 autocast + GradScaler on CUDA) means bf16 autocast here.
inline constexpr std::pair<std::string_view, Precision> kPrecisionNames[] = {
    {"amp", Precision::AmpBf16}, {"amp_bf16", Precision::AmpBf16}, {"amp_bfloat16", Precision::AmpBf16},
    {"bf16", Precision::Bf16},   {"pure_bf16", Precision::PureBf16}, {"fp32", Precision::Fp32},
    {"int8", Precision::Int8},
};

// What OpenCLIP's `amp` means here, for the log of a run that asked for it.
inline constexpr const char* kAmpOnCpuNote =
    "precision 'amp' means fp16 autocast with a GradScaler on CUDA; on the CPU it runs as bf16 autocast (amp_bf16)";
// A spelling from kPrecisionNames, for the edges that take text (the demo recipe, the public
// API). fp16/pure_fp16 are rejected with a reason.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);
inline ops::Prec matmul_prec(Precision p) { return p == Precision::Fp32 ? ops::Prec::F32 : ops::Prec::BF16; }

// Whether `--precision bf16` keeps this parameter (OpenCLIP state_dict name) in bf16:
// OpenCLIP's convert_weights_to_lp.
bool is_lp_param(std::string_view name);
// The same for a model with a timm image tower: OpenCLIP's create_model casts it whole
// (model.to(bfloat16)) and then only its LayerNormFp32 modules (the text tower's ln_1, ln_2,
// ln_final) back to fp32, so everything else is bf16, logit_scale and the embeddings included.
bool is_lp_param_timm(std::string_view name);
// Rounds the parameters that `p` keeps in bf16 to bf16 values (none for fp32/amp_bf16).
// Called after loading weights and after every optimizer step; `params` is memory of `be`.
void round_lp_params(ops::Backend& be, const ParamTable& table, float* params, Precision p);

}  // namespace oc
