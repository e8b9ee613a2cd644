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
// The first four are read through AttentionTiles (attentiontiles.h), cell by cell: on a trace that
// keeps its weights the very numbers of those matrices, on one that keeps q, k and each row's
// log-sum-exp (a long text) the same weights recomputed. What each reads, t the text's length:
// previous and self the diagonal (t x 64 cells at most), first-token the first column (t cells),
// same-token the earlier positions of each repeated id (see sameTokenScores).
//
// Long-context readings, on any trace, through the same cell reads:
//   sink mass       mean over queries i >= k of the weight on keys 0 .. k-1; k = 4 as StreamingLLM's
//                   initial tokens (Xiao et al. 2023, "Efficient Streaming Language Models with
//                   Attention Sinks"). Reads t x k cells.
//   recent mass     mean over queries i >= w of the weight on the w keys ending at the query itself,
//                   i - w + 1 .. i; w = 64 by default. Reads t x (w + 64) cells at most.
//   entropy         mean over query rows i >= 1 of the row's entropy -sum_j A_ij ln A_ij in nats (0 ln 0
//                   = 0; Clark et al. 2019, "What Does BERT Look At?"): over every such row where there
//                   are at most `rows` (256 by default), otherwise over `rows` evenly spaced ones,
//                   i = 1 + floor(n (t - 1) / rows), n = 0 .. rows - 1. Reads (rows read) x t cells.
//   span mass       for a span of keys [b, e) the user marks, the mean over the queries after it
//                   (i >= e) of their weight on the span: what the rest of the text read of that
//                   part. Reads (t - e) x (e - b) cells.
// A score is NaN where no query qualifies (a text too short for the window, a span at the end).
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
// Reads, for each query whose id occurred before, the weights on those earlier positions: the exact
// score while those pairs number at most 16 t; past that (a long text where common tokens repeat
// thousands of times) over every s-th such query, s = ceil(pairs / 16 t), about 16 t pairs read
// (`queriesRead`, if given: the queries it averaged over).
template <typename T>
Mat<double> sameTokenScores(const Trace<T> &trace, int *queriesRead = nullptr);
template <typename T>
Mat<double> selfScores(const Trace<T> &trace);
template <typename T>
Mat<double> sinkMassScores(const Trace<T> &trace, int sinkTokens = 4);
template <typename T>
Mat<double> recentMassScores(const Trace<T> &trace, int window = 64);
// `rowsRead` (if given): the query rows each score averaged over.
template <typename T>
Mat<double> entropyScores(const Trace<T> &trace, int rows = 256, int *rowsRead = nullptr);
template <typename T>
Mat<double> spanMassScores(const Trace<T> &trace, int spanBegin, int spanEnd);
// The query rows entropyScores reads on a text of t tokens: every row from 1, or `rows` evenly spaced.
std::vector<int> entropyRows(int t, int rows);

// A reading of the Layers x heads grid, with its parameters.
enum class HeadReading { PreviousToken, FirstToken, SameToken, Self, SinkMass, RecentMass, Entropy, SpanMass };
struct ReadingOptions {
    int sinkTokens = 4;
    int window = 64;
    int entropyRows = 256;
    int spanBegin = -1, spanEnd = -1; // [begin, end); none: span mass is NaN
    // The reading of the norm-weighted attention ||a_ij v_j W_O^h|| (reads.h valueNorms) with each
    // row as shares of its sum (makeRowShares): what the grid reads under the norm-weighted switch.
    // Read through AttentionTiles' key weights and row shares, so the same on a trace that keeps its
    // weights and on a long text's; summing the rows reads every cell of every head (t x t a head).
    // NaN for a layer that kept no values.
    bool normWeighted = false;
    // Set (by another thread), the readings stop before the next layer, leaving the rest NaN: a
    // caller that no longer wants them (a newer request) does not wait for every layer's rows.
    // Norm-weighted, a layer's row sums stop too, part way (that layer NaN as well).
    const std::atomic<bool> *stop = nullptr;
    // Called on the computing thread after each layer: (layers read, all layers). Norm-weighted on a
    // long text a layer sums t x t cells a head, so a caller can say how far it is.
    std::function<void(int done, int layers)> progress;
};
// `rowsRead` (if given): the queries a same-token score or the rows an entropy averaged over (0 for
// the other readings).
template <typename T>
Mat<double> headReading(const Trace<T> &trace, HeadReading reading, const ReadingOptions &options = {},
                        int *rowsRead = nullptr);
// Several readings in one pass over the layers (each layer's tiles, and with normWeighted its row
// sums, made once): result[k] is headReading(trace, readings[k], options); `rowsRead` that of the
// last reading listed.
template <typename T>
std::vector<Mat<double>> headReadings(const Trace<T> &trace, const std::vector<HeadReading> &readings,
                                      const ReadingOptions &options = {}, int *rowsRead = nullptr);

// `offset`: position of r_0 in the trace; `length`: L. NaN for a head that no query of the second
// copy sees its target from (a sliding window of L keys or fewer: Mistral's, Gemma 2's local layers).
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

// A corpus file's prompts: one a line (a trailing "\r" dropped; empty lines kept empty, so that
// messages count lines as an editor does, and skipped by corpusHeadScores). Refused in one line,
// naming `path`: not a regular file, larger than kCorpusFileCap, a NUL byte (not a text file), no
// line with a prompt.
constexpr uint64_t kCorpusFileCap = uint64_t(64) << 20; // hundreds of thousands of prompts
Status readCorpusFile(const std::string &path, std::vector<std::string> &prompts);

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

// One row of the mixed attention Â_l that rollout multiplies, in place: `row` (a query's row of the
// layer's head mean, one entry per key; `self` the query's own key) as shares of its sum where that
// is positive, halved, half the identity added at `self`, renormalised to sum 1. What
// attentionRollout does to every row and rolloutRow (rolloutrow.h) to each row it reaches.
void rolloutMixRow(Eigen::Ref<Eigen::Matrix<double, 1, Eigen::Dynamic>> row, Eigen::Index self);

// Rollout up to each layer: result[l] is R_l (t, t). Rows of fully masked queries stay as Â gives them.
template <typename T>
std::vector<Mat<double>> attentionRollout(const Trace<T> &trace);

} // namespace attnviz
