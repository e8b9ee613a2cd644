// SPDX-License-Identifier: GPL-3.0-or-later
// One query's row of attention rollout (attentionRollout, headroles.h) for a text whose t x t weights
// are never kept: row i of R_L is e_i^T Â_L ... Â_0, so a row vector is carried from layer L down to
// layer 0 and multiplied by each layer's Â_l (the head mean, its rows as shares, mixed half-and-half
// with the identity, renormalised), whose rows are recomputed block by block through AttentionTiles
// from q, k and each row's log-sum-exp: only the rows the vector reaches (a causal query's own and
// those before it), each block dropped once added in. O(t) memory beside one block of rows per
// thread; the work is every layer's head-mean rows up to the query, about (i + 1)^2 / 2 x d_head x H
// multiply-adds a layer.
#pragma once

#include "attnviz/attentiontiles.h"
#include "attnviz/status.h"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace attnviz {

template <typename T>
struct RolloutRowRequest {
    // Layer l's tiles (their head mean is read); null where the layer cannot be read so.
    std::function<std::shared_ptr<const AttentionTiles<T>>(int layer)> layer;
    int upTo = 0;  // the rollout up to this layer: R_upTo
    int query = 0; // its row
    const std::atomic<bool> *cancel = nullptr;         // set to stop: Status Cancelled, out unchanged
    std::function<void(int done, int total)> progress; // after each layer, on the calling thread
};

// Row `query` of R_upTo into `out` (one entry per key): attentionRollout(trace)[upTo].row(query) of the
// same text traced with its weights kept, up to rounding. Refused in one line where a layer cannot be
// recomputed, is not self-attention, or the query is not in the text.
template <typename T>
Status rolloutRow(const RolloutRowRequest<T> &request, std::vector<double> &out);

extern template Status rolloutRow<float>(const RolloutRowRequest<float> &, std::vector<double> &);
extern template Status rolloutRow<double>(const RolloutRowRequest<double> &, std::vector<double> &);

} // namespace attnviz
