// SPDX-License-Identifier: GPL-3.0-or-later
// The float products of attention's row-block pass (attention.cpp), and of its dense layers
// (linear.cpp), as register-blocked kernels:
//   scores  S (n, t_k) = Q (n, d_h) K^T      K packed once per head into panels of keys
//   context C (n, d_h) = P (n, t_k) V         P and V read in place
//   linear  Y (n, m) = X (n, k) W^T + b       W packed a panel of rows at a time, X read in place
// Private to the core (not in include/). All OVERWRITE their destination.
#pragma once

#include <cstddef>

namespace attnviz::kernels {

// Whether the kernels take a head of this width, or a dense layer of this input width (a multiple of
// the ISA's float packet); the caller uses Eigen's products otherwise.
bool supportsHeadWidth(int dHead);

// Floats packKeys writes for t_k keys of width d_h (a whole number of panels, zero-padded).
std::size_t packedKeysSize(int tk, int dh);

// Packs K (t_k, d_h) with row stride ldk into panels of keys: panel p holds, for each of the d_h
// columns, the next panel-width keys' values contiguously. `dst` is aligned to 64 bytes.
void packKeys(const float *k, std::ptrdiff_t ldk, int tk, int dh, float *dst);

// S (n, t_k), row stride lds = Q (n, d_h) contiguous (row stride d_h) times the packed K transposed.
void scores(const float *q, int n, int dh, const float *packedK, int tk, float *s, std::ptrdiff_t lds);

// Y (n, m), row stride ldy = X (n, k), row stride ldx, times W (m, k), row stride ldw, transposed,
// plus b (m) when b is not null. k must be a width supportsHeadWidth takes.
void linear(const float *x, std::ptrdiff_t ldx, int n, int k, const float *w, std::ptrdiff_t ldw, int m, const float *b,
            float *y, std::ptrdiff_t ldy);

// C (n, d_h), row stride ldc = P (n, t_k), row stride ldp, times V (t_k, d_h), row stride ldv.
void context(const float *p, std::ptrdiff_t ldp, int n, int tk, const float *v, std::ptrdiff_t ldv, int dh, float *c,
             std::ptrdiff_t ldc);

// x[j] = exp(x[j] - shift) for j in [0, n), returning their sum: the softmax's exponentials and
// denominator in one pass. Results below 2^-126 come out as about 1.2e-38 (as Eigen's exp), not 0.
float expShiftSum(float *x, int n, float shift);

} // namespace attnviz::kernels
