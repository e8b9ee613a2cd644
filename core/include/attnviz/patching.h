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
//   Path                path patching (Wang et al. 2022, "Interpretability in the Wild", section 3.1
//                       and appendix; ARENA's get_path_patch_head_to_heads): layers x heads of sender
//                       heads for one receiver head's q, k or v input (PathReceiver); cells of senders
//                       at or after the receiver's layer are NaN. See pathPatchFor for the definition.
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

enum class PatchSweep { ResidPre, HeadsAllPositions, HeadsByPosition, MlpOut, Path };

// Which input of a receiver head a path patch reaches: its queries, keys or values.
enum class HeadInput { Q, K, V };

// The receiver of a path patch: query head `head` of layer `layer` (from 0; layer 1 or later), read
// through `input`.
struct PathReceiver {
    int layer = -1, head = -1;
    HeadInput input = HeadInput::K;
    bool operator==(const PathReceiver &o) const { return layer == o.layer && head == o.head && input == o.input; }
    bool operator!=(const PathReceiver &o) const { return !(*this == o); }
};

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
    PathReceiver receiver;        // PatchSweep::Path: the receiver head and its input
    int answer = -1, wrong = -1;  // vocabulary ids (reads.h vocabularyId): LogitDiff both, Prob the answer
    const std::atomic<bool> *cancel = nullptr; // set to stop (Status Cancelled, the cells done kept)
    std::function<void(int done, int total)> progress; // after each cell, on the calling thread
};

struct PatchResult {
    PatchSweep sweep = PatchSweep::HeadsAllPositions;
    PatchMetric metricKind = PatchMetric::LogitDiff;
    int rows = 0, cols = 0;      // layers x positions, layers x heads, or layers x (positions x heads)
    int heads = 0;               // HeadsByPosition: heads per position (column p * heads + h)
    PathReceiver receiver;       // Path: the receiver (senders' rows from receiver.layer on are NaN)
    std::vector<double> metric;  // row-major; NaN where not computed (a cancelled sweep)
    double cleanDiff = 0, corruptedDiff = 0; // LogitDiff: the logit differences of the two unpatched runs
    double cleanValue = 0, corruptedValue = 0; // the metric of the two unpatched runs
    std::vector<TraceToken> cleanTokens, corruptedTokens;
    int done = 0;                // cells computed
    double at(int r, int c) const { return metric[size_t(r) * size_t(cols) + size_t(c)]; }
};

// "resid_pre" / "heads" / "heads_by_pos" / "mlp_out" / "path"
const char *patchSweepName(PatchSweep s);
// "q" / "k" / "v"
const char *headInputName(HeadInput i);
// "L.H:q", "L.H:k", "L.H:v" (layer and head from 0) read into `out`; false with `error` (one line)
// where the text is not of that form. Ranges are checked against a model by checkPathReceiver.
bool parsePathReceiver(const std::string &text, PathReceiver &out, std::string &error);
// "1.3:k"
std::string pathReceiverName(const PathReceiver &r);
// Whether `r` is a receiver of a model of `layers` layers and `heads` query heads: a layer 1..L-1 (a
// head of layer 0 has no sender before it), a head 0..H-1; one line naming the field otherwise.
Status checkPathReceiver(const PathReceiver &r, int layers, int heads);
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

// Path patching (Wang et al. 2022, "Interpretability in the Wild", appendix B; ARENA's
// get_path_patch_head_to_heads), patching clean into corrupted (the direction of the sweeps above: 0 is
// the corrupted run): the sender head's output changes from its corrupted value to its clean one, and
// only the receiver head's `input` sees the change, through the residual stream alone: the direct
// path. Every other path is frozen at the corrupted run: the other heads AND the MLPs from the sender's
// layer to the receiver's do not see the change, the receiver's other two inputs and the other heads of
// its layer (a grouped key/value head's other query heads among them) read the corrupted stream.
// This differs from appendix B's algorithm as ARENA implements it in one point: there only the heads'
// outputs (hook_z) are frozen and the MLPs recompute, so a sender's effect through the MLPs in between
// (the sender layer's own MLP included) counts as part of its path; here it does not. Precisely, with
// Ls, hs the sender and Lr, hr the receiver:
//   delta    = hook_attn_out[Ls] of the corrupted run with z[Ls, hs] set to the clean run's (at
//              `positions`; empty: every position)  -  hook_attn_out[Ls] of the corrupted run
//              (pre-norm models: (z_clean - z_corr)[hs] W_O[hs], the sender's direct contribution;
//              sandwich norms: the post-attention norm's output changes by it)
//   resid'   = resid_pre_corr[Lr] + delta
//   q', k', v' of head hr: the model's own norm, projections, q/k norms and rotary applied to resid'
//              (a forward of the corrupted run with resid_pre[Lr] set to resid')
//   z'[hr]   = the receiver's attention with its `input` taken from q', k' or v' and the other two the
//              corrupted run's (its scale, soft-capping, causal and window masks)
//   the patched run = the corrupted run with z[Lr, hr] set to z'[hr], everything after it recomputed.
// `out` is that last edit (one attn.hook_z Value edit of the receiver, at the rows whose z changes),
// or empty where nothing reaches the receiver (the sender's clean and corrupted outputs equal at
// `positions`): then the patched run is the corrupted run itself, bit for bit.
// `clean` and `corrupted` are traces `model` made (on the CPU) of two prompts of the same token count,
// with TraceRequest::keepHookOutputs and otherwise the default request (every stage, no masks).
// Causal softmax models only (the one forward's decoders); others: Unavailable, one line.
template <typename T>
Status pathPatchFor(Model &model, const Trace<T> &clean, const Trace<T> &corrupted, int senderLayer, int senderHead,
                    const PathReceiver &receiver, const std::vector<int> &positions, std::vector<Intervention> &out);

// Runs the sweep: the clean and corrupted traces, then one corrupted forward per cell. Prompts of
// different token counts: InvalidInput naming the first token that differs; LogitDiff with two runs
// of the same logit difference: InvalidInput (nothing to normalise by).
template <typename T>
Status patchSweep(Model &model, const PatchRequest &request, PatchResult &out);

} // namespace attnviz
