// SPDX-License-Identifier: GPL-3.0-or-later
// Several edited forwards of one text in one pass (forward.cpp): the cells of a heads sweep
// (patching.h) that edit the same layer's attention context (attn.hook_z at every position) share
// everything before that layer; from it on their rows are stacked in one matrix, so that each
// product packs its weight panels once for all of them, while attention runs per cell.
#pragma once

#include "weights.h"

#include <atomic>
#include <vector>

namespace attnviz {

// Whether stackedCells computes this model's forward over a text of t tokens exactly as runForward
// does: causal, softmax attention without rotary or relative positions, q/k norms, grouped key/value
// heads, soft-capping or sliding windows; every weight dense (products of packed weights widen them in
// blocks of their own); t a multiple of 8. Eigen's GEMM takes a product's rows 4 or 8 at a time as the
// columns of its micro-panels and the last few by other kernels: the tail rows of a text of another
// length would meet other kernels in a stacked matrix (measured: other last bits at 9 tokens).
template <typename T>
bool stackedCellsCover(const Architecture &arch, const ModelWeights<T> &w, int t);

// `base` is a trace this model made of the text with every stage kept and no mask of the user's;
// contexts[c] is layer `layer`'s attention context (t, H d_head) as cell c's edit leaves it. Out:
// lastRows (cells, d), row c the final hidden state (after the final norm) of the last position of
// the forward with that context, bit for bit what runForward gives with the edit (each cell's rows
// start at a multiple of 8 of the stacked matrix: the products treat every row alike).
template <typename T>
Status stackedCells(const Architecture &arch, const ModelWeights<T> &w, const Trace<T> &base, int layer,
                    const std::vector<Mat<T>> &contexts, Mat<T> &lastRows, const std::atomic<bool> *cancel);

} // namespace attnviz
