// SPDX-License-Identifier: GPL-3.0-or-later
// Register-blocked float kernels for attention's two per-head products (attentionkernels.h).
// Why our own rather than Eigen's GEMM: Eigen's product zeroes its destination before it accumulates
// (a whole extra pass over the kept weights: 805 MB at 4096 tokens x 12 heads) and packs both
// operands on every call (K and V again for every block of query rows). Here the scores are written
// once, straight into the weights they become; K is packed once per head; P and V are read in place.
// Written with Eigen's packet primitives, so one source serves every ISA level the core is built for
// (16 floats a packet with AVX-512, 8 with AVX2, 4 with SSE).
//   scores:  panel of PW keys (d_h x PW floats, in L1) x tiles of MR query rows, accumulators MR x NP packets
//   context: panels of PW output columns x chunks of KC keys (V's chunk in L1) x tiles of MR rows
#include "attentionkernels.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

namespace attnviz::kernels {

namespace {

using Eigen::internal::pload;
using Eigen::internal::ploadu;
using Eigen::internal::pmadd;
using Eigen::internal::pset1;
using Eigen::internal::pstore;
using Eigen::internal::pstoreu;
using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int W = Eigen::internal::packet_traits<float>::size;
// MR rows x NP packets of accumulators, NP packet loads and one broadcast: 24 + 4 + 1 of AVX-512's
// 32 registers, 12 + 2 + 1 of AVX2's 16.
constexpr int NP = W >= 16 ? 4 : 2;
constexpr int MR = 6;
constexpr int PW = NP * W;
// Keys per chunk of the context product: a chunk of V (KC x PW floats) is 32 KB, in L1.
constexpr int KC = std::max(64, 8192 / PW);

// S (R x cols) = A (R rows of `depth`, row stride lda) times one packed panel (depth x PW), plus a
// bias (PW floats) when given: the accumulators start from it.
template <int R>
void panelTile(const float *a, std::ptrdiff_t lda, int depth, const float *panel, const float *bias, float *s,
               std::ptrdiff_t lds, int cols)
{
    Packet acc[R][NP];
    for (int k = 0; k < NP; ++k) {
        const Packet init = bias ? ploadu<Packet>(bias + k * W) : pset1<Packet>(0.0f);
        for (int r = 0; r < R; ++r)
            acc[r][k] = init;
    }
    for (int c = 0; c < depth; ++c) {
        Packet b[NP];
        for (int k = 0; k < NP; ++k)
            b[k] = pload<Packet>(panel + std::ptrdiff_t(c) * PW + k * W);
        for (int r = 0; r < R; ++r) {
            const Packet x = pset1<Packet>(a[std::ptrdiff_t(r) * lda + c]);
            for (int k = 0; k < NP; ++k)
                acc[r][k] = pmadd(x, b[k], acc[r][k]);
        }
    }
    if (cols == PW) {
        for (int r = 0; r < R; ++r)
            for (int k = 0; k < NP; ++k)
                pstoreu(s + r * lds + k * W, acc[r][k]);
        return;
    }
    // The last panel: past its columns the packed rows are zeros, computed and not stored.
    alignas(64) float tmp[PW];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < NP; ++k)
            pstore(tmp + k * W, acc[r][k]);
        std::memcpy(s + r * lds, tmp, sizeof(float) * size_t(cols));
    }
}

template <int R, int N>
void contextTile(const float *p, std::ptrdiff_t ldp, const float *v, std::ptrdiff_t ldv, int kc, float *c,
                 std::ptrdiff_t ldc, bool first)
{
    Packet acc[R][N];
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < N; ++k)
            acc[r][k] = first ? pset1<Packet>(0.0f) : ploadu<Packet>(c + r * ldc + k * W);
    for (int j = 0; j < kc; ++j) {
        Packet b[N];
        for (int k = 0; k < N; ++k)
            b[k] = ploadu<Packet>(v + j * ldv + k * W);
        for (int r = 0; r < R; ++r) {
            const Packet a = pset1<Packet>(p[r * ldp + j]);
            for (int k = 0; k < N; ++k)
                acc[r][k] = pmadd(a, b[k], acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < N; ++k)
            pstoreu(c + r * ldc + k * W, acc[r][k]);
}

using PanelFn = void (*)(const float *, std::ptrdiff_t, int, const float *, const float *, float *, std::ptrdiff_t,
                         int);
using ContextFn = void (*)(const float *, std::ptrdiff_t, const float *, std::ptrdiff_t, int, float *, std::ptrdiff_t,
                           bool);

template <std::size_t... R> constexpr std::array<PanelFn, MR> panelTiles(std::index_sequence<R...>)
{
    return {&panelTile<int(R) + 1>...};
}

template <int N, std::size_t... R> constexpr std::array<ContextFn, MR> contextRows(std::index_sequence<R...>)
{
    return {&contextTile<int(R) + 1, N>...};
}

template <std::size_t... N> constexpr std::array<std::array<ContextFn, MR>, NP> contextTiles(std::index_sequence<N...>)
{
    return {contextRows<int(N) + 1>(std::make_index_sequence<MR>{})...};
}

// [rows - 1] and [rows - 1][packets - 1]: the tile for a remainder of rows or columns.
constexpr auto kPanel = panelTiles(std::make_index_sequence<MR>{});
constexpr auto kContext = contextTiles(std::make_index_sequence<NP>{});

// Packs rows [0, rows) (rows <= PW) of M (row stride ldm, `depth` columns) into one panel: column c
// of M becomes the panel's row c (PW floats, zero past `rows`). Whole blocks of W x W go through
// Eigen's in-register transpose (depth is a multiple of W wherever the kernels run), the rest by
// element: a panel of a 768-wide layer is packed on every call, so this runs as often as the product.
void packPanel(const float *m, std::ptrdiff_t ldm, int rows, int depth, float *panel)
{
    const int whole = rows / W * W, wholeDepth = depth / W * W;
    for (int j0 = 0; j0 < whole; j0 += W) {
        for (int c0 = 0; c0 < wholeDepth; c0 += W) {
            Eigen::internal::PacketBlock<Packet, W> block;
            for (int i = 0; i < W; ++i)
                block.packet[i] = ploadu<Packet>(m + (j0 + i) * ldm + c0);
            Eigen::internal::ptranspose(block);
            for (int i = 0; i < W; ++i)
                pstore(panel + std::ptrdiff_t(c0 + i) * PW + j0, block.packet[i]);
        }
        for (int j = j0; j < j0 + W; ++j)
            for (int c = wholeDepth; c < depth; ++c)
                panel[std::ptrdiff_t(c) * PW + j] = m[j * ldm + c];
    }
    for (int j = whole; j < rows; ++j)
        for (int c = 0; c < depth; ++c)
            panel[std::ptrdiff_t(c) * PW + j] = m[j * ldm + c];
    for (int c = 0; c < depth && rows < PW; ++c)
        std::fill(panel + std::ptrdiff_t(c) * PW + rows, panel + std::ptrdiff_t(c + 1) * PW, 0.0f);
}

} // namespace

bool supportsHeadWidth(int dHead)
{
    return dHead > 0 && dHead % W == 0;
}

std::size_t packedKeysSize(int tk, int dh)
{
    return std::size_t((tk + PW - 1) / PW) * std::size_t(dh) * PW;
}

void packKeys(const float *k, std::ptrdiff_t ldk, int tk, int dh, float *dst)
{
    for (int j0 = 0; j0 < tk; j0 += PW)
        packPanel(k + j0 * ldk, ldk, std::min(PW, tk - j0), dh, dst + std::ptrdiff_t(j0 / PW) * dh * PW);
}

void scores(const float *q, int n, int dh, const float *packedK, int tk, float *s, std::ptrdiff_t lds)
{
    const int panels = (tk + PW - 1) / PW;
    for (int p = 0; p < panels; ++p) {
        const float *panel = packedK + std::ptrdiff_t(p) * dh * PW;
        const int cols = std::min(PW, tk - p * PW);
        for (int i = 0; i < n; i += MR) {
            const int rows = std::min(MR, n - i);
            kPanel[size_t(rows - 1)](q + std::ptrdiff_t(i) * dh, dh, dh, panel, nullptr, s + i * lds + p * PW, lds,
                                     cols);
        }
    }
}

void linear(const float *x, std::ptrdiff_t ldx, int n, int k, const float *w, std::ptrdiff_t ldw, int m, const float *b,
            float *y, std::ptrdiff_t ldy)
{
    // One panel of W at a time (k x PW floats: 192 KB at k = 768, in L2) against every row of X.
    thread_local std::vector<float, Eigen::aligned_allocator<float>> panel;
    panel.resize(std::size_t(k) * PW);
    alignas(64) float bias[PW];
    for (int c0 = 0; c0 < m; c0 += PW) {
        const int cols = std::min(PW, m - c0);
        packPanel(w + c0 * ldw, ldw, cols, k, panel.data());
        if (b) {
            std::fill(bias, bias + PW, 0.0f);
            std::copy(b + c0, b + c0 + cols, bias);
        }
        for (int i = 0; i < n; i += MR) {
            const int rows = std::min(MR, n - i);
            kPanel[size_t(rows - 1)](x + i * ldx, ldx, k, panel.data(), b ? bias : nullptr, y + i * ldy + c0, ldy,
                                     cols);
        }
    }
}

void context(const float *p, std::ptrdiff_t ldp, int n, int tk, const float *v, std::ptrdiff_t ldv, int dh, float *c,
             std::ptrdiff_t ldc)
{
    for (int c0 = 0; c0 < dh; c0 += PW) {
        const int packets = std::min(NP, (dh - c0) / W);
        for (int j0 = 0; j0 < tk; j0 += KC) {
            const int kc = std::min(KC, tk - j0);
            for (int i = 0; i < n; i += MR) {
                const int rows = std::min(MR, n - i);
                kContext[size_t(packets - 1)][size_t(rows - 1)](p + i * ldp + j0, ldp, v + j0 * ldv + c0, ldv, kc,
                                                                c + i * ldc + c0, ldc, j0 == 0);
            }
        }
    }
}

// Why our own exp: Eigen 3.4's float exp for AVX2 builds 2^n through its generic ldexp and runs at
// 1.8 G exp/s a core here, against 6 G with AVX-512 (scalef): the softmax was 10 % of an AVX2 call.
// Same method and polynomial as Eigen's (Cephes): n = round(x log2 e), r = x - n ln 2 in two parts,
// exp(r) by a degree-7 polynomial, times 2^n written straight into the exponent bits. x is clamped
// to [-87.3, 88] so that n stays in the normal range. Eigen's packet primitives again: one source
// for AVX2 and AVX-512 (2.7 and 5 G exp/s a core, with the sum).
#if defined(EIGEN_VECTORIZE_AVX2) || defined(EIGEN_VECTORIZE_AVX512)
namespace {
using Eigen::internal::padd;
using Eigen::internal::pmul;
#if defined(EIGEN_VECTORIZE_AVX512)
using PacketI = Eigen::internal::Packet16i; // the integer packet of Packet's width
#else
using PacketI = Eigen::internal::Packet8i;
#endif

inline Packet pexpClamped(Packet x)
{
    using namespace Eigen::internal;
    x = pmin(pmax(x, pset1<Packet>(-87.3f)), pset1<Packet>(88.0f));
    const Packet n = print(pmul(x, pset1<Packet>(1.44269504088896341f))); // to nearest (the current mode)
    Packet r = pmadd(n, pset1<Packet>(-0.693359375f), x);
    r = pmadd(n, pset1<Packet>(2.12194440e-4f), r);
    Packet y = pset1<Packet>(1.9875691500E-4f);
    y = pmadd(y, r, pset1<Packet>(1.3981999507E-3f));
    y = pmadd(y, r, pset1<Packet>(8.3334519073E-3f));
    y = pmadd(y, r, pset1<Packet>(4.1665795894E-2f));
    y = pmadd(y, r, pset1<Packet>(1.6666665459E-1f));
    y = pmadd(y, r, pset1<Packet>(5.0000001201E-1f));
    y = pmadd(y, pmul(r, r), padd(r, pset1<Packet>(1.0f)));
    const PacketI e = plogical_shift_left<23>(padd(pcast<Packet, PacketI>(n), pset1<PacketI>(127)));
    return pmul(y, preinterpret<Packet>(e));
}
} // namespace
#endif

float expShiftSum(float *x, int n, float shift)
{
#if defined(EIGEN_VECTORIZE_AVX2) || defined(EIGEN_VECTORIZE_AVX512)
    using Eigen::internal::predux;
    const Packet s = pset1<Packet>(shift);
    Packet acc0 = pset1<Packet>(0.0f), acc1 = acc0;
    int j = 0;
    for (; j + 2 * W <= n; j += 2 * W) {
        const Packet e0 = pexpClamped(Eigen::internal::psub(ploadu<Packet>(x + j), s));
        const Packet e1 = pexpClamped(Eigen::internal::psub(ploadu<Packet>(x + j + W), s));
        pstoreu(x + j, e0);
        pstoreu(x + j + W, e1);
        acc0 = padd(acc0, e0);
        acc1 = padd(acc1, e1);
    }
    if (j + W <= n) {
        const Packet e = pexpClamped(Eigen::internal::psub(ploadu<Packet>(x + j), s));
        pstoreu(x + j, e);
        acc0 = padd(acc0, e);
        j += W;
    }
    float sum = predux(padd(acc0, acc1));
    if (j < n) {
        // The last (up to W - 1) entries through a padded copy; exp(-1000) clamps to ~1e-38, not stored.
        alignas(64) float tail[W];
        const int left = n - j;
        for (int i = 0; i < W; ++i)
            tail[i] = i < left ? x[j + i] : shift - 1000.0f;
        pstore(tail, pexpClamped(Eigen::internal::psub(pload<Packet>(tail), s)));
        for (int i = 0; i < left; ++i) {
            x[j + i] = tail[i];
            sum += tail[i];
        }
    }
    return sum;
#else
    Eigen::Map<Eigen::ArrayXf> a(x, n);
    a = (a - shift).exp();
    return a.sum();
#endif
}

} // namespace attnviz::kernels
