// SPDX-License-Identifier: GPL-3.0-or-later
// The norm-weighted switch of the attention views (Kobayashi et al. 2020, attnviz/reads.h): a
// snapshot whose attention weights are ||a_ij v_j W_O^h|| instead of a_ij, which every attention
// view (weights, all heads, lines, layers, a model's layers × heads, rollout, export) draws as it
// draws the weights. A long text's is its trace read through weighted tiles. Only the attention's weights are kept in it (with the mask, and the values,
// for the value norms on hover): what the other views read (q, k, the residual stream) stays in
// the original snapshot.
// valueNormText says the value norms on hover.
#pragma once

#include "live/livetypes.h"

#include <QString>

namespace attnviz::ui {

// The one sentence the switch shows (its tooltip and status tip).
QString normWeightingExplanation();
// The line under the heatmap's heading: what a norm-weighted cell is, short enough for one line of
// a 1400 px window's map.
QString normWeightingCaption();

// What a norm-weighted snapshot adds to its model label (so every title built from the label says
// what the colours are), and whether `s` is such a snapshot.
QString normWeightedLabel();
bool isNormWeighted(const ComputeSnapshot &s);

// Whether layer `layer` of `trace` keeps the values the weighting needs (per query head or per
// key/value head, in float or 16 bits).
bool keepsValues(const Trace<float> &trace, int layer);

// `s` with every layer's and head's weights norm-weighted; null with `why` set where the snapshot
// has none (no result, a layer without values or output projection). A long text's keeps its trace
// and reads it through tiles that multiply each weight by its key's value norm (LongTextTiles), so
// every view that reads a long text's weights (maps, rows, the rollout's row) reads these.
SnapshotPtr normWeightedSnapshot(const SnapshotPtr &s, QString *why = nullptr);

// "‖v W_O‖ of “cat”: 1.23 (head 2)" for hover texts; "" where not available.
QString valueNormText(const ComputeSnapshot &s, int layer, int head, int key);

} // namespace attnviz::ui
