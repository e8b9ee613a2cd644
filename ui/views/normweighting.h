// SPDX-License-Identifier: GPL-3.0-or-later
// The norm-weighted switch of the attention views (Kobayashi et al. 2020, attnviz/reads.h): a
// snapshot whose attention weights are ||a_ij v_j W_O^h|| instead of a_ij, which every attention
// view (weights, all heads, lines, layers, rollout, export) draws as it draws the weights. Only the
// attention's weights are kept in it (with the mask): what the other views read (q, k, v, the
// residual stream) stays in the original snapshot. valueNormText says the value norms on hover.
#pragma once

#include "live/livetypes.h"

#include <QString>

namespace attnviz::ui {

// The one sentence the switch shows.
QString normWeightingExplanation();

// `s` with every layer's and head's weights norm-weighted; null with `why` set where the snapshot
// has none (no result, a layer without values or output projection).
SnapshotPtr normWeightedSnapshot(const SnapshotPtr &s, QString *why = nullptr);

// "‖v W_O‖ of “cat”: 1.23 (head 2)" for hover texts; "" where not available.
QString valueNormText(const ComputeSnapshot &s, int layer, int head, int key);

} // namespace attnviz::ui
