// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's tensor encodings widened to float (private to the core): F32, F16, BF16 and the block
// quantizations Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and IQ4_NL, each computed exactly as
// ggml's scalar reference (ggml-quants.c, dequantize_row_*) computes it: the same float operations
// in the same order, products and sums rounded separately (this file is compiled without
// floating-point contraction, so no fused multiply-add changes a last bit).
#pragma once

#include <cstdint>

namespace attnviz::detail {

// Widens `n` values of ggml type `type` at `src` into `dst`; `n` is a multiple of the type's block
// (ggmlTypeInfo). False for a type this file does not decode (nothing written).
bool ggmlDequantize(uint32_t type, const unsigned char *src, int64_t n, float *dst);

// Encodes `n` floats (a multiple of the block) as Q8_0 (ggml's quantize_row_q8_0_ref) or Q4_K (its
// block layout and 6-bit scale packing, each sub-block's scale and min from its range: seeded
// benchmark weights, not a converter's search); false for another type.
bool ggmlQuantize(uint32_t type, const float *x, int64_t n, uint8_t *dst);

// Whether ggmlDequantize decodes `type`.
bool ggmlDequantizes(uint32_t type);

} // namespace attnviz::detail
