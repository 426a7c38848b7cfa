// The OpenCLIP 2.24.0 text tower options beyond plain CLIP (text_cfg keys), as
// TextTransformer computes them (transformer.py): pool_type argmax|first|last,
// no_causal_mask (full context), proj_bias (nn.Linear). LayerScale lives in the blocks.
#include <algorithm>

#include "core/check.h"
#include "model/text_transformer.h"
#include "ops/linear.h"
#include "text/text_tokenizer.h"

namespace oc {

// Validates the ids and sets each row's pooled position: argmax of the ids (the first
// maximum, as torch.argmax: the end-of-text token), the first or the last position. Returns
// how many positions to compute: with a causal mask nothing after the pooled position reaches
// the output; without one every position does.
int64_t TransformerTextTower::pool_positions(const int32_t* tokens, int64_t B) {
  const auto& t = cfg_.text;
  const int64_t ctx = t.context_length, V = t.vocab_size;
  int64_t T = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = tokens + b * ctx;
    int64_t best = 0;
    for (int64_t i = 0; i < ctx; ++i) {
      if ((row[i] < 0 || row[i] >= V) && !t.hf_tokenizer_name.empty())
        OC_USER_ERROR(
            "token id {} at row {}, position {} is outside the vocabulary [0, {}): this model tokenizes "
            "with {} ({}), and the ids were made by another tokenizer. The data loader and "
            "evaluation still tokenize with CLIP's BPE: tokenize with `openclip tokenize --model {}` "
            "for this model",
            row[i], b, i, V, t.hf_tokenizer_name,
            is_sentencepiece_tokenizer_name(t.hf_tokenizer_name) ? "SentencePiece" : "WordPiece", cfg_.name);
      if (row[i] < 0 || row[i] >= V)
        OC_USER_ERROR("token id {} at row {}, position {} is outside the vocabulary [0, {})", row[i], b, i, V);
      if (row[i] > row[best]) best = i;
    }
    const int64_t pos = t.pool == TextCfg::Pool::Argmax ? best : t.pool == TextCfg::Pool::First ? 0 : ctx - 1;
    eot_[size_t(b)] = int32_t(pos);
    T = std::max(T, pos + 1);
  }
  return t.no_causal_mask ? ctx : T;
}

// text_projection: x @ P ([W,E] parameter), or with proj_bias nn.Linear: x @ weight^T + bias.
void TransformerTextTower::project_forward(const ClipParams& p, int64_t B, ops::Prec prec) {
  const int64_t W = cfg_.text.width, E = cfg_.embed_dim;
  if (cfg_.text.proj_bias)
    be_->run(ops::LinearForwardArgs{.out = feat_raw_, .inp = pooled_, .weight = p.t_proj, .bias = p.t_proj_b, .M = B,
                                    .K = W, .N = E, .prec = prec});
  else
    be_->run(
        ops::ProjForwardArgs{.out = feat_raw_, .inp = pooled_, .w = p.t_proj, .M = B, .K = W, .N = E, .prec = prec});
}

void TransformerTextTower::project_backward(const ClipParams& p, const ClipParams& g, int64_t B, ops::Prec prec) {
  const int64_t W = cfg_.text.width, E = cfg_.embed_dim;
  if (cfg_.text.proj_bias)
    be_->run(ops::LinearBackwardArgs{.dinp = d_pooled_, .dweight = g.t_proj, .dbias = g.t_proj_b, .dout = d_feat_raw_,
                                     .inp = pooled_, .weight = p.t_proj, .M = B, .K = W, .N = E, .prec = prec});
  else
    be_->run(ops::ProjBackwardArgs{.dinp = d_pooled_, .dw = g.t_proj, .dout = d_feat_raw_, .inp = pooled_,
                                   .w = p.t_proj, .M = B, .K = W, .N = E, .prec = prec});
}

}  // namespace oc
