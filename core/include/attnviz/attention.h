// SPDX-License-Identifier: GPL-3.0-or-later
// The reference attention computation (CPU, Eigen).
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

namespace attnviz {

// Checks sizes and options and resolves the shape (d_head, d_out, scale).
// Errors name the field: "num_heads: 3 does not divide d_model 10", "inputs.W_q: shape (4, 5), expected (6, 6)".
template <typename T>
Status resolveShape(const AttentionConfig &config, const AttentionInput<T> &input, ResolvedShape &shape);

// The numeric factor for a rule (ScaleRule::Explicit returns config.explicitScale).
double scaleFor(const AttentionConfig &config, int dModel, int dHead);

// Computes every stage of multi-head attention for each sequence of the batch.
//   query (t_q, d_model) --W_q--> q (t_q, H*d_head); key (t_k, kdim) --W_k--> k; value (t_k, vdim) --W_v--> v
//   per head h: scores_h = scale * q_h k_h^T            (t_q, t_k), before masking
//               weights_h = normalize(scores_h, mask)   (t_q, t_k), then dropout if p > 0
//               context[:, h] = weights_h v_h           (t_q, d_head)
//   output = context W_o^T + b_o (t_q, d_out); weightsAvg = mean_h weights_h
// `result` is reused: buffers keep their storage when the sizes do not change, so repeated
// calls (one per keystroke) allocate nothing. Inputs with NaN/Inf are refused (NonFinite).
template <typename T>
Status computeAttention(const AttentionConfig &config, const AttentionInput<T> &input, AttentionResult<T> &result);
// The same with the projections given apart (input.proj is ignored): a caller holding its weights
// elsewhere (a transformer block) lends them without copying.
template <typename T>
Status computeAttention(const AttentionConfig &config, const AttentionInput<T> &input, const Projections<T> &proj,
                        AttentionResult<T> &result);

// The stages a teaching view shows that are cheap to derive from a result, for one head:
// raw scores q·k (scores / scale), masked scores (masked -> -inf, or 0 under Sum/Cosine).
template <typename T>
Mat<T> rawScores(const AttentionResult<T> &result, int batch, int head);
template <typename T>
Mat<T> maskedScores(const AttentionConfig &config, const AttentionResult<T> &result, int batch, int head);

// Builds the effective (t_q, t_k) mask: attnMask OR causal (top-left) OR key padding. Empty if none.
BoolMat effectiveMask(const BoolMat &attnMask, bool causal, const std::vector<uint8_t> &keyPadding, int tq, int tk);

// Causal mask, top-left aligned: key j is masked for query i when j > i.
BoolMat causalMask(int tq, int tk);

} // namespace attnviz
