// timm's AttentionPoolLatent, the MAP head of the timm ViT tower (timm_vit_tower.h).
#pragma once
#include <cstdint>
#include <string>

#include "ops/activation.h"
#include "ops/backend.h"
#include "ops/gemm.h"

namespace oc {

// timm's AttentionPoolLatent parameters (visual.trunk.attn_pool.*), width W, mlp width F.
struct MapHeadParams {
  float* latent = nullptr;  // [1,1,W]  the learned query
  float* q_w = nullptr;     // [W,W]    q (nn.Linear)
  float* q_b = nullptr;     // [W]
  float* kv_w = nullptr;    // [2W,W]   kv (rows k|v)
  float* kv_b = nullptr;    // [2W]
  float* proj_w = nullptr;  // [W,W]
  float* proj_b = nullptr;  // [W]
  float* ln_w = nullptr;    // [W]      norm
  float* ln_b = nullptr;    // [W]
  float* fc1_w = nullptr;   // [F,W]    mlp.fc1
  float* fc1_b = nullptr;   // [F]
  float* fc2_w = nullptr;   // [W,F]    mlp.fc2
  float* fc2_b = nullptr;   // [W]
};

// timm's AttentionPoolLatent with one latent (latent_len 1, pool_type 'token'), on tokens
// x[B,T,W] with H heads and MLP width F:
//   q = latent Wq^T + bq;  k|v = x Wkv^T + bkv;  a = attention(q, k, v) (cross attention,
//   no mask);  y = a Wp^T + bp;  out = y + fc2(act(fc1(norm(y))))   [B, W]  (act: GELU erf or tanh)
// Owns its activations (planned once for a maximum batch).
class MapHead {
 public:
  void plan(ops::Backend& be, const std::string& label, int64_t B_max, int64_t T, int64_t W, int64_t H, int64_t F,
            double eps, ops::Act act, bool training);
  // x [B,T,W] (backend memory, kept by the caller until backward) -> out [B,W] (assigned).
  void forward(const MapHeadParams& p, const float* x, float* out, int64_t B, ops::Prec prec);
  // d_out [B,W] -> dx [B,T,W] (assigned); parameter gradients accumulate in g.
  void backward(const MapHeadParams& p, const MapHeadParams& g, const float* d_out, float* dx, int64_t B,
                ops::Prec prec);
  double mib() const { return buf_.mib(); }

 private:
  void mlp_backward(const MapHeadParams& p, const MapHeadParams& g, const float* d_out, int64_t B, ops::Prec prec);
  void attention_backward(const MapHeadParams& p, const MapHeadParams& g, float* dx, int64_t B, ops::Prec prec);

  ops::FloatArena buf_;
  ops::Backend* be_ = &ops::default_backend();
  int64_t B_max_ = 0, T_ = 0, W_ = 0, H_ = 0, F_ = 0;
  double eps_ = 1e-6;
  ops::Act act_ = ops::Act::Gelu;  // the tower's act_layer (timm passes it to AttentionPoolLatent's Mlp)
  const float* x_ = nullptr;  // the last forward's input
  // Forward: the latent per sample [B,W], q [B,W], kv [B,T,2W], att [B,H,1,T], a [B,W],
  // y [B,W], norm(y) [B,W] and its statistics [B], fc1 output h [B,F] and gelu(h) [B,F].
  float *lat_ = nullptr, *q_ = nullptr, *kv_ = nullptr, *att_ = nullptr, *ao_ = nullptr, *y_ = nullptr, *n_ = nullptr,
        *mean_ = nullptr, *rstd_ = nullptr, *h_ = nullptr, *g_ = nullptr;
  // Backward (training only).
  float *d_lat_ = nullptr, *dq_ = nullptr, *dkv_ = nullptr, *scratch_ = nullptr, *dao_ = nullptr, *dy_ = nullptr,
        *dn_ = nullptr, *dh_ = nullptr;
};

}  // namespace oc
