// SPDX-License-Identifier: GPL-3.0-or-later
// Head counts that do not divide d_model: every count gives a view. The rule:
// d_head = ⌈d_model / heads⌉. Identity projections give head h an unequal slice of the embedding
// (widths differ by at most one, in order), each padded with zero columns to d_head, and W_o = the
// same selection transposed puts the slices back in place, so the output is d_model wide; random
// projections simply use that d_head (an explicit d_head still wins).
#pragma once

#include "attnviz/types.h"

#include <vector>

namespace attnviz {

// d_model / heads when it divides, else rounded up; 0 when either is not positive.
int autoHeadWidth(int dModel, int heads);
// The embedding columns each identity head takes: d_model split as evenly as possible, in order.
std::vector<int> identitySliceWidths(int dModel, int heads);
// W_q = W_k = W_v = the (heads·d_head × d_model) selection of those slices, W_o its transpose.
Projections<float> identitySliceProjections(int dModel, int heads);

} // namespace attnviz
