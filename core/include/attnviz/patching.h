// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps, as TransformerLens' patching.py defines them: the corrupted prompt run
// again and again, each time with one activation replaced by the clean prompt's (an Intervention of
// kind Value, interventions.h), scored by a metric of the next-token distribution after the last
// position (PatchMetric).
//   ResidPre            get_act_patch_resid_pre: layers x positions, resid_pre[l] at position p
//   HeadsAllPositions   get_act_patch_attn_head_out_all_pos: layers x heads, head h's z (attn.hook_z)
//                       at every position
//   HeadsByPosition     get_act_patch_attn_head_out_by_pos: layers x (positions x heads), head h's z at
//                       position p alone (column p * heads + h)
//   MlpOut              get_act_patch_mlp_out: layers x positions, mlp_out[l] at position p
// A causal model runs each cell over the corrupted run (TraceRequest::unedited): the layers before the
// patched one and the positions before the patched one are the corrupted run's, copied; the rest is
// computed, with the numbers of the whole patched forward, bit for bit. A cell whose patch copies the
// corrupted run's own values (a position before the prompts differ) is the corrupted run itself.
// Causal language models (the metrics read next-token logits); every family the one forward runs.
#pragma once

#include "attnviz/model.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace attnviz {

enum class PatchSweep { ResidPre, HeadsAllPositions, HeadsByPosition, MlpOut };

// What a cell scores, from the logits z after the last position (the model's final soft-capping
// applied), p = softmax(z):
//   LogitDiff  (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted), LD = z[answer] - z[wrong]:
//              0 is the corrupted run, 1 the clean run
//   Prob       p_patched[answer]
//   Kl         KL(p_clean || p_patched) = sum_v p_clean[v] (log p_clean[v] - log p_patched[v]) in nats:
//              0 is the clean run
enum class PatchMetric { LogitDiff, Prob, Kl };

struct PatchRequest {
    PatchSweep sweep = PatchSweep::HeadsAllPositions;
    std::string clean, corrupted; // the two prompts (the same number of tokens)
    std::vector<int> cleanIds, corruptedIds; // non-empty: these vocabulary ids instead of the texts
    PatchMetric metric = PatchMetric::LogitDiff;
    int answer = -1, wrong = -1;  // vocabulary ids (reads.h vocabularyId): LogitDiff both, Prob the answer
    const std::atomic<bool> *cancel = nullptr; // set to stop (Status Cancelled, the cells done kept)
    std::function<void(int done, int total)> progress; // after each cell, on the calling thread
};

struct PatchResult {
    PatchSweep sweep = PatchSweep::HeadsAllPositions;
    PatchMetric metricKind = PatchMetric::LogitDiff;
    int rows = 0, cols = 0;      // layers x positions, layers x heads, or layers x (positions x heads)
    int heads = 0;               // HeadsByPosition: heads per position (column p * heads + h)
    std::vector<double> metric;  // row-major; NaN where not computed (a cancelled sweep)
    double cleanDiff = 0, corruptedDiff = 0; // LogitDiff: the logit differences of the two unpatched runs
    double cleanValue = 0, corruptedValue = 0; // the metric of the two unpatched runs
    std::vector<TraceToken> cleanTokens, corruptedTokens;
    int done = 0;                // cells computed
    double at(int r, int c) const { return metric[size_t(r) * size_t(cols) + size_t(c)]; }
};

// "resid_pre" / "heads" / "heads_by_pos" / "mlp_out"
const char *patchSweepName(PatchSweep s);
// "logit_diff" / "prob" / "kl"
const char *patchMetricName(PatchMetric m);

// logit(answer) - logit(wrong) after the last position of `trace` (the model's final soft-capping
// applied), from the model's readout.
template <typename T>
Status logitDifference(const Model &model, const Trace<T> &trace, int answer, int wrong, double &out);

// log softmax of the logits after the last position of `trace` (soft-capped as the model does).
template <typename T>
Status nextLogProbs(const Model &model, const Trace<T> &trace, std::vector<double> &out);

// The edit that one cell of a sweep applies to the corrupted run: the clean trace's activation at
// `row` (layer) and `col` (position, head, or position * heads + head). A row or column out of the
// sweep's range: InvalidInput naming it and the range. MlpOut needs a clean trace that kept its hook
// outputs (TraceRequest::keepHookOutputs).
template <typename T>
Status patchFor(PatchSweep sweep, const Trace<T> &clean, int row, int col, Intervention &out);

// Runs the sweep: the clean and corrupted traces, then one corrupted forward per cell. Prompts of
// different token counts: InvalidInput naming the first token that differs; LogitDiff with two runs
// of the same logit difference: InvalidInput (nothing to normalise by).
template <typename T>
Status patchSweep(Model &model, const PatchRequest &request, PatchResult &out);

} // namespace attnviz
