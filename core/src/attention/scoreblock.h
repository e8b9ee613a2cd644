// SPDX-License-Identifier: GPL-3.0-or-later
// scoreBlock: one block of a head's scaled scores, (scale q_i) · k_j for rows [r0, r0 + rn) of q and
// keys [c0, c0 + cn) of k, each a head's d_head columns. The softmax forward (forward.cpp) and
// AttentionTiles (attentiontiles.h) both form their scores here, so that a weight recomputed from q, k
// and the log-sum-exp starts from the very score the forward exponentiated: every score is summed
// over d_head in the same order (d = 0, 1, ...), whatever the block's size, place or alignment (a
// matrix product's order depends on its shape: the forward and a tile would differ by rounding).
#pragma once

#include "attnviz/types.h"

namespace attnviz {

// out (rn x cn, resized) = (scale q[r0.., qc .. qc + dh)) (k[c0.., kc .. kc + dh))^T.
template <typename T>
void scoreBlock(T scale, const Mat<T> &q, Eigen::Index r0, Eigen::Index rn, Eigen::Index qc, const Mat<T> &k,
                Eigen::Index c0, Eigen::Index cn, Eigen::Index kc, int dh, Mat<T> &out);

extern template void scoreBlock<float>(float, const Mat<float> &, Eigen::Index, Eigen::Index, Eigen::Index,
                                       const Mat<float> &, Eigen::Index, Eigen::Index, Eigen::Index, int, Mat<float> &);
extern template void scoreBlock<double>(double, const Mat<double> &, Eigen::Index, Eigen::Index, Eigen::Index,
                                        const Mat<double> &, Eigen::Index, Eigen::Index, Eigen::Index, int, Mat<double> &);

} // namespace attnviz
