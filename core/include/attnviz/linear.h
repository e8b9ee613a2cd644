// SPDX-License-Identifier: GPL-3.0-or-later
// Dense layers on the core's thread pool: y = x W^T + b (nn.Linear convention) for the attention
// projections, the feed-forward blocks and any model forward.
#pragma once

#include "attnviz/types.h"

namespace attnviz {

// out = x W^T + b, or out = x (+ b) for an identity layer. `out` keeps its storage when its size is
// unchanged. The product is split into blocks of rows and, when the text is short, of output
// columns, spread over the pool (parallel.h): Eigen's own threading is off in the core.
// Must not alias: &out != &x.
template <typename T>
void applyLinear(const Mat<T> &x, const Linear<T> &l, Mat<T> &out);

} // namespace attnviz
