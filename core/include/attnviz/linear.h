// SPDX-License-Identifier: GPL-3.0-or-later
// Dense layers on the core's thread pool: y = x W^T + b (nn.Linear convention) for the attention
// projections, the feed-forward blocks and any model forward.
#pragma once

#include "attnviz/types.h"

#include <initializer_list>

namespace attnviz {

// out = x W^T + b, or out = x (+ b) for an identity layer. `out` keeps its storage when its size is
// unchanged. The product is split into blocks of rows and, when the text is short, of output
// columns, spread over the pool (parallel.h): Eigen's own threading is off in the core.
// Must not alias: &out != &x.
template <typename T> void applyLinear(const Mat<T> &x, const Linear<T> &l, Mat<T> &out);

// One layer of applyLinears: *out = *x W^T + b.
template <typename T> struct LinearApply {
    const Mat<T> *x;
    const Linear<T> *l;
    Mat<T> *out;
};

// Several independent layers (attention's q, k and v) as the tiles of one parallel loop: one wake-up
// of the pool for all of them. Each out must differ from every x.
template <typename T> void applyLinears(std::initializer_list<LinearApply<T>> layers);

} // namespace attnviz
