// SPDX-License-Identifier: GPL-3.0-or-later
// A few rows of x times 16-bit (BF16 / F16) weight rows, widened in registers (private to the
// forward): the product a typed token makes with every weight matrix. Widening a block of W into a
// float scratch first and multiplying it after writes and reads every weight twice more; here each
// weight is loaded once as 16 bits, widened (BF16: a shift; F16: F16C's conversion) and multiplied
// into every row's accumulator at once. Without AVX2, FMA and F16C it says so (false) and the caller
// widens into its scratch instead.
#pragma once

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ATTNVIZ_HALF_ROWS 1
#endif

namespace attnviz::detail {

#ifdef ATTNVIZ_HALF_ROWS
// 8 weights widened to float32.
template <bool Bf16>
inline __m256 widen8(const uint16_t *w)
{
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w));
    if constexpr (Bf16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    else
        return _mm256_cvtph_ps(h);
}

inline float widen1(uint16_t w, bool bf16)
{
    if (bf16) {
        const uint32_t u = uint32_t(w) << 16;
        float f;
        __builtin_memcpy(&f, &u, 4);
        return f;
    }
    return _cvtsh_ss(w);
}

inline float sum8(__m256 v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// How far ahead of its reads halfRows asks for W's lines (a prefetch past W's end is harmless).
constexpr int kPrefetch = 4096;

// out[r * stride + c] = x[r] · W row c for r < N, c < rows; W rows `in` long (row-major bits). Two
// W rows at a time, and for one x row two accumulators a W row, so that the FMAs' latency overlaps.
template <int N, bool Bf16>
void halfRows(const float *const *x, const uint16_t *W, int in, int rows, float *out, long stride)
{
    constexpr int K = N == 1 ? 2 : 1; // accumulators per (x row, W row)
    const int body = in / (8 * K) * (8 * K);
    int c = 0;
    for (; c + 2 <= rows; c += 2) {
        const uint16_t *w0 = W + long(c) * in, *w1 = w0 + in;
        __m256 acc[2][N][K];
        for (auto &a : acc)
            for (auto &b : a)
                for (__m256 &v : b)
                    v = _mm256_setzero_ps();
        for (int k = 0; k < body; k += 8 * K) {
            // W's rows lie one after another: a stream read once. The hardware's prefetchers stop at
            // each 4 KiB page; asked for the lines kPrefetch bytes ahead, the memory keeps streaming.
            _mm_prefetch(reinterpret_cast<const char *>(w0 + k) + kPrefetch, _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char *>(w1 + k) + kPrefetch, _MM_HINT_T0);
            for (int u = 0; u < K; ++u) {
                const __m256 a0 = widen8<Bf16>(w0 + k + 8 * u), a1 = widen8<Bf16>(w1 + k + 8 * u);
                for (int r = 0; r < N; ++r) {
                    const __m256 xv = _mm256_loadu_ps(x[r] + k + 8 * u);
                    acc[0][r][u] = _mm256_fmadd_ps(a0, xv, acc[0][r][u]);
                    acc[1][r][u] = _mm256_fmadd_ps(a1, xv, acc[1][r][u]);
                }
            }
        }
        for (int r = 0; r < N; ++r) {
            __m256 s0 = acc[0][r][0], s1 = acc[1][r][0];
            for (int u = 1; u < K; ++u) {
                s0 = _mm256_add_ps(s0, acc[0][r][u]);
                s1 = _mm256_add_ps(s1, acc[1][r][u]);
            }
            float t0 = sum8(s0), t1 = sum8(s1);
            for (int k = body; k < in; ++k) {
                t0 += widen1(w0[k], Bf16) * x[r][k];
                t1 += widen1(w1[k], Bf16) * x[r][k];
            }
            out[r * stride + c] = t0;
            out[r * stride + c + 1] = t1;
        }
    }
    for (; c < rows; ++c) { // an odd last row
        const uint16_t *w0 = W + long(c) * in;
        for (int r = 0; r < N; ++r) {
            __m256 s = _mm256_setzero_ps();
            int k = 0;
            for (; k + 8 <= in; k += 8)
                s = _mm256_fmadd_ps(widen8<Bf16>(w0 + k), _mm256_loadu_ps(x[r] + k), s);
            float t = sum8(s);
            for (; k < in; ++k)
                t += widen1(w0[k], Bf16) * x[r][k];
            out[r * stride + c] = t;
        }
    }
}

template <int N>
void halfRowsOf(bool bf16, const float *const *x, const uint16_t *W, int in, int rows, float *out, long stride)
{
    if (bf16)
        halfRows<N, true>(x, W, in, rows, out, stride);
    else
        halfRows<N, false>(x, W, in, rows, out, stride);
}
#endif

// out (n x rows, row stride `stride`) = the n rows x[0 .. n) times W's `rows` rows transposed, for
// 1 <= n <= 6; false where this build has no such kernel.
inline bool halfRowsProduct(int n, bool bf16, const float *const *x, const uint16_t *W, int in, int rows, float *out,
                            long stride)
{
#ifdef ATTNVIZ_HALF_ROWS
    switch (n) {
    case 1: halfRowsOf<1>(bf16, x, W, in, rows, out, stride); return true;
    case 2: halfRowsOf<2>(bf16, x, W, in, rows, out, stride); return true;
    case 3: halfRowsOf<3>(bf16, x, W, in, rows, out, stride); return true;
    case 4: halfRowsOf<4>(bf16, x, W, in, rows, out, stride); return true;
    case 5: halfRowsOf<5>(bf16, x, W, in, rows, out, stride); return true;
    case 6: halfRowsOf<6>(bf16, x, W, in, rows, out, stride); return true;
    default: return false;
    }
#else
    (void)n, (void)bf16, (void)x, (void)W, (void)in, (void)rows, (void)out, (void)stride;
    return false;
#endif
}

} // namespace attnviz::detail
