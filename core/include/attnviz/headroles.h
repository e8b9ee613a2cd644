// SPDX-License-Identifier: GPL-3.0-or-later
// What a head does, measured on its attention weights (one score per layer and head, in [0, 1]),
// and attention rollout across layers:
//   previous-token  mean over queries i >= 1 of A[i][i-1]
//   first-token     mean over queries i >= 1 of A[i][0] (the "attention sink")
//   same-token      mean, over queries i with an earlier position j < i holding the same token id,
//                   of the total weight on those positions (NaN when no token repeats)
//   induction       on r_0..r_{L-1} r_0..r_{L-1} (random tokens said twice, after an optional
//                   prefix): mean over the second copy's positions of the weight on the token that
//                   followed the same token in the first copy (Olsson et al. 2022)
//   rollout         Abnar & Zuidema 2020: per layer Â = 0.5·mean_h A_h + 0.5·I, rows renormalised
//                   (mean_h A_h's rows are made shares first, so that a norm-weighted trace, whose
//                   rows sum to norms, mixes half and half with the identity too),
//                   R_0 = Â_0, R_l = Â_l R_{l-1}: how much each token's final state draws on each
//                   input token, with the residual stream counted
#pragma once

#include "attnviz/model.h"

#include <cstdint>
#include <vector>

namespace attnviz {

struct HeadRoleScores {
    Mat<double> previousToken, firstToken, sameToken, induction; // (layers, heads); empty if not measured
};

template <typename T>
Mat<double> previousTokenScores(const Trace<T> &trace);
template <typename T>
Mat<double> firstTokenScores(const Trace<T> &trace);
template <typename T>
Mat<double> sameTokenScores(const Trace<T> &trace);
// `offset`: position of r_0 in the trace; `length`: L.
template <typename T>
Mat<double> inductionScores(const Trace<T> &trace, int offset, int length);

// The induction probe: `length` random ids from [low, high) said twice (seeded, reproducible),
// after the model's own start (the BOS its tokenizer puts before every text, as Llama's does;
// <|endoftext|> for GPT-2; [CLS] for BERT, which also gets [SEP]).
struct InductionProbe {
    std::vector<int> ids;
    int offset = 0, length = 0;
};
InductionProbe inductionProbe(const ModelInfo &info, const Model &model, int length = 50, uint64_t seed = 1);

// Every score: the first three on `trace` (the user's text), induction by running `model` on the probe.
Status headRoles(Model &model, const Trace<float> &trace, HeadRoleScores &out);

// Each row of `m` divided by its sum where that is positive: rows as shares (a norm-weighted
// matrix's rows of ||a v W_O||; softmax rows stay as they are, up to rounding). Others unchanged.
template <typename T>
void makeRowShares(Mat<T> &m);

// Rollout up to each layer: result[l] is R_l (t, t). Rows of fully masked queries stay as Â gives them.
template <typename T>
std::vector<Mat<double>> attentionRollout(const Trace<T> &trace);

} // namespace attnviz
