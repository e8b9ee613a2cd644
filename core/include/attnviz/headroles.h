// SPDX-License-Identifier: GPL-3.0-or-later
// What a head does, measured on its attention weights (one score per layer and head, in [0, 1]),
// and attention rollout across layers:
//   previous-token  mean over queries i >= 1 of A[i][i-1]
//   first-token     mean over queries i >= 1 of A[i][0] (the "attention sink")
//   same-token      mean, over queries i with an earlier position j < i holding the same token id,
//                   of the total weight on those positions (NaN when no token repeats)
//   self            mean over queries i >= 1 of A[i][i] (the diagonal; query 0 left out as above:
//                   under a causal mask it can only attend to itself); non-finite cells skipped
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

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
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
template <typename T>
Mat<double> selfScores(const Trace<T> &trace);
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

// A score over a corpus, per (layer, head): each prompt's score counts once (a long prompt weighs no
// more than a short one); `mean` and `spread` (the sample standard deviation over prompts, n - 1;
// NaN below two prompts) over the prompts where the score is defined (`count`: same-token is NaN on a
// prompt where no token repeats, and every score on a prompt of one token).
struct CorpusScore {
    Mat<double> mean, spread;
    Eigen::MatrixXi count;
};

// The text scores (previous, first, same, self) of every prompt of a corpus, each prompt traced on its
// own; induction (which reads the model's own random probe, not the text) once, as headRoles does.
struct CorpusHeadScores {
    CorpusScore previousToken, firstToken, sameToken, self;
    Mat<double> induction; // empty when not asked for
    int prompts = 0;       // prompts traced
    long long tokens = 0;  // their tokens, added up (as read: a cut prompt counts what was read)
    int cut = 0;           // prompts longer than the model reads, each scored on its first tokens
    std::string cutReason; // the first cut's reason (Trace::cutReason)
};

struct CorpusRequest {
    std::vector<std::string> prompts;          // one text each (empty ones are skipped)
    bool induction = true;
    const std::atomic<bool> *cancel = nullptr; // set to stop: Status Cancelled, nothing written to out
    std::function<void(int done, int total)> progress; // after each prompt, on the calling thread
};

// Traces each prompt (float32, weights kept, nothing else) and accumulates its scores; the first
// prompt that cannot be traced stops the run with its status, naming the prompt's number (from 1).
Status corpusHeadScores(Model &model, const CorpusRequest &request, CorpusHeadScores &out);

// Each row of `m` divided by its sum where that is positive: rows as shares (a norm-weighted
// matrix's rows of ||a v W_O||; softmax rows stay as they are, up to rounding). Others unchanged.
template <typename T>
void makeRowShares(Mat<T> &m);

// Rollout up to each layer: result[l] is R_l (t, t). Rows of fully masked queries stay as Â gives them.
template <typename T>
std::vector<Mat<double>> attentionRollout(const Trace<T> &trace);

} // namespace attnviz
