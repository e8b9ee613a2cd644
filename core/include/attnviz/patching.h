// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps, as TransformerLens' patching.py defines them: the corrupted prompt run
// again and again, each time with one activation replaced by the clean prompt's (an Intervention of
// kind Value, interventions.h), scored by the normalised logit difference of two answer tokens at the
// last position: (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted), LD = logit(answer) -
// logit(wrong); 0 is the corrupted run, 1 the clean run.
//   ResidPre            get_act_patch_resid_pre: layers x positions, resid_pre[l] at position p
//   HeadsAllPositions   get_act_patch_attn_head_out_all_pos: layers x heads, head h's z (attn.hook_z)
//                       at every position
// Causal language models (the metric reads next-token logits); every family the one forward runs.
#pragma once

#include "attnviz/model.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace attnviz {

enum class PatchSweep { ResidPre, HeadsAllPositions };

struct PatchRequest {
    PatchSweep sweep = PatchSweep::HeadsAllPositions;
    std::string clean, corrupted; // the two prompts (the same number of tokens)
    std::vector<int> cleanIds, corruptedIds; // non-empty: these vocabulary ids instead of the texts
    int answer = -1, wrong = -1;  // vocabulary ids (reads.h vocabularyId)
    const std::atomic<bool> *cancel = nullptr; // set to stop (Status Cancelled, the cells done kept)
    std::function<void(int done, int total)> progress; // after each cell, on the calling thread
};

struct PatchResult {
    PatchSweep sweep = PatchSweep::HeadsAllPositions;
    int rows = 0, cols = 0;      // layers x positions, or layers x heads
    std::vector<double> metric;  // row-major; NaN where not computed (a cancelled sweep)
    double cleanDiff = 0, corruptedDiff = 0; // the logit differences of the two unpatched runs
    std::vector<TraceToken> cleanTokens, corruptedTokens;
    int done = 0;                // cells computed
    double at(int r, int c) const { return metric[size_t(r) * size_t(cols) + size_t(c)]; }
};

// "resid_pre" / "heads"
const char *patchSweepName(PatchSweep s);

// logit(answer) - logit(wrong) after the last position of `trace` (the model's final soft-capping
// applied), from the model's readout.
template <typename T>
Status logitDifference(const Model &model, const Trace<T> &trace, int answer, int wrong, double &out);

// The edit that one cell of a sweep applies to the corrupted run: the clean trace's activation at
// `row` (layer) and `col` (position, or head).
template <typename T>
Status patchFor(PatchSweep sweep, const Trace<T> &clean, int row, int col, Intervention &out);

// Runs the sweep: the clean and corrupted traces, then one corrupted forward per cell. Prompts of
// different token counts: InvalidInput naming the first token that differs.
template <typename T>
Status patchSweep(Model &model, const PatchRequest &request, PatchResult &out);

} // namespace attnviz
