// SPDX-License-Identifier: GPL-3.0-or-later
// A window of positions of a long text's trace (one that keeps no stages: Observe::weights false) with
// every layer's stages, recomputed by the model's own forward for those rows only: each layer attends
// over the trace's kept keys and values of every earlier position, as appending a token does. What the
// logit lens, attribution and the residual view read, without the (t, d) streams of every layer of the
// whole text (gigabytes at 32k tokens).
#pragma once

#include "attnviz/model.h"
#include "attnviz/status.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace attnviz {

// Positions [first, first + trace.tokens.size()) of a text of `total` tokens, as a text of their own:
// `trace` holds their tokens, embeddings, every layer's streams (resid_pre, what attention reads,
// resid_mid, resid_post) and attention stages (q, k and v per query head, context, output, each row's
// log-sum-exp) for those rows, the final stream and each row's next tokens; no attention weights (a
// row's keys reach before the window), and q and k after any q/k norm and rotation only. Its producer
// is the long trace's, so that the reads (lens, attribution) accept it.
struct PositionWindow {
    int first = 0;
    int total = 0;
    Trace<float> trace;
    int size() const { return int(trace.tokens.size()); }
};

// The rows [p0, p1) of `longTrace`, made by `model` (a real checkpoint's causal forward on the CPU
// that kept no weights), into `out`: the numbers of the full forward with every stage, for those rows.
// Holds one layer's keys and values in float beside the trace while it runs. `cancel` set stops it.
Status positionWindow(const Model &model, const Trace<float> &longTrace, int p0, int p1, PositionWindow &out,
                      const std::atomic<bool> *cancel = nullptr);

// The window of `size` positions ending at `position` (inclusive), within [0, total): [p0, p1).
inline std::pair<int, int> windowEndingAt(int position, int size, int total)
{
    const int p1 = std::max(1, std::min(total, position + 1));
    return {std::max(0, p1 - std::max(1, size)), p1};
}

} // namespace attnviz
