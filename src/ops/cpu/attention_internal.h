// The AVX-512 amp_bf16 attention kernels (attention_bf16_avx512.cpp), one (batch, head) per
// call, for attention.cpp's run-time dispatch. Call them only where
// attention_avx512_supported() is true.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/gemm_int8.h"

namespace oc::ops::cpu {

bool attention_avx512_supported();
// q8: the output as int8 rows (AttentionInt8Args) instead of bf16 into out (then null).
void attention_head_forward_avx512(bf16* out, float* att, const bf16* qkv, int64_t b, int64_t h, int64_t T, int64_t C,
                                   int64_t H, bool causal, const Int8Out* q8 = nullptr);
// The same on AMX tiles (attention_amx_supported()), between amx_tiles_configure() and
// amx_tiles_release() on the calling thread (AmxTiles).
void attention_head_forward_amx(bf16* out, float* att, const bf16* qkv, int64_t b, int64_t h, int64_t T, int64_t C,
                                int64_t H, bool causal, const Int8Out* q8 = nullptr);
bool attention_amx_supported();
void amx_tiles_configure();
void amx_tiles_release();
struct AmxTiles {
  AmxTiles() { amx_tiles_configure(); }
  ~AmxTiles() { amx_tiles_release(); }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;
};
void attention_head_backward_avx512(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t b,
                                    int64_t h, int64_t T, int64_t C, int64_t H);

}  // namespace oc::ops::cpu
