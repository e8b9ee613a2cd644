// SPDX-License-Identifier: GPL-3.0-or-later
// The one forward pass (weights.h) of every model family, read from an Architecture: the block as
// a short list of named passes over rows [p, t) only — a causal model handed back its earlier
// trace keeps positions [0, p) (their keys, values and every stage) and computes the rest; p = 0
// is the full pass. One text of t tokens, width d, H query heads and KV key/value heads of d_head:
//   x0 = wte[id] * embedding scale (+ wpe[i]) (+ token type 0) (BERT: LayerNorm)        (t, d)
//   per block, with N one of LayerNorm / RMSNorm / RMSNorm (1 + w):
//     pre-norm:  a = N1(x);  x' = x + Attn(a);             y = x' + MLP(N2(x'))        (GPT-2, Llama)
//     post-norm: a = x;      x' = N1(x + Attn(x));         y = N2(x' + MLP(x'))        (BERT)
//     sandwich:  a = N1(x);  x' = x + N1'(Attn(a));        y = x' + N2'(MLP(N2(x')))   (Gemma)
//   Attn: q = a Wq^T + bq (t, H d_head), k, v (t, KV d_head); q/k norm per head; rotary on the
//     first `dims` of each head (rotate_half layout); k and v of each KV head shared by its group
//     of H / KV query heads (stored per query head, so every view reads head h's columns);
//     scores = scale q_h k_h^T, soft-capped, causal and sliding-window masks (key j seen by query
//     i when i - w < j <= i), softmax, context, W_o
//   MLP: down(act(gate x) * up x) (gated) or down(act(up x))
//   final = N_f(y_L); logits = final E^T (+ b), soft-capped; BERT: LN(act(T final)) E^T + b at [MASK]
// The (t, d) stages of a trace handed back grow in place where glibc allows (growStage: copying the
// growing matrices took more of a keystroke than its arithmetic). Its own attention rather than
// computeAttention: only rows [p, t) of each stage are computed, and causal rows only read keys
// 0..i. Matrix products are split over the cores by output columns, so a single new token (one row)
// still uses every core. Large matrices of a fresh trace get huge-page advice (see adviseHugePages;
// the model also keeps freed trace memory: keepTraceMemory). Interventions (interventions.h) are
// applied where their hooks are computed: resid_pre as a layer reads the stream, attn.hook_z between
// the context and W_O, hook_attn_out and mlp_out before the residual adds them, resid_mid and
// resid_post as they are stored; a forward with edits computes every row (reuse 0).
#include "weights.h"
#include "halfrows.h"
#include "stackedcells.h"
#include "../../attention/scoreblock.h"
#include "attnviz/attention.h"
#include "attnviz/parallel.h"

#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace attnviz {

namespace {

// A trace's large matrices (every head's t x t weights: 604 MB at 1,024 tokens in GPT-2 small) are
// fresh memory that each trace touches once. In 4 KiB pages the faults cost as much as the
// arithmetic at 1,024 tokens (measured under a VM: half the time in the page-fault path); asking for
// transparent huge pages on the 2 MiB-aligned part of the block (before its first touch; the kernel's
// default THP mode is "madvise") cuts them up to 512-fold. Advice only: any error is harmless.
void adviseHugePages(void *data, size_t bytes)
{
#ifdef __linux__
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    if (bytes < kHuge)
        return;
    const uintptr_t b = reinterpret_cast<uintptr_t>(data), e = b + bytes;
    const uintptr_t a0 = (b + kHuge - 1) & ~(kHuge - 1), a1 = e & ~(kHuge - 1);
    if (a1 > a0)
        madvise(reinterpret_cast<void *>(a0), a1 - a0, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

// Resizes keeping the first `keep` rows (and, for square matrices, the top-left keep x keep).
template <typename M>
void resizeKeep(M &m, Eigen::Index rows, Eigen::Index cols, int keep)
{
    if (keep > 0 && m.rows() >= keep && m.cols() > 0) {
        m.conservativeResize(rows, cols);
    } else if (m.rows() != rows || m.cols() != cols) {
        m.resize(rows, cols);
        adviseHugePages(m.data(), size_t(m.size()) * sizeof(typename M::Scalar));
    }
}

// Room for a (rows, d) stage matrix that grows: rows rounded up past `rows` to steps of a quarter of
// its power of two (at least 32), never past `limit` (the model's positions). 128 -> 160, 160 -> 192,
// 600 -> 640, 1,000 -> 1,024 (GPT-2's context: no room at 1,024).
Eigen::Index roomRows(Eigen::Index rows, Eigen::Index limit)
{
    Eigen::Index step = 32;
    while (step * 8 <= rows)
        step *= 2;
    return std::min(limit, std::max(rows, (rows / step + 1) * step));
}

// Growing in place. A trace's (t, d) stage matrices (111 in GPT-2 small, 44 MB at 128 tokens) grow by
// a row or two at each keystroke (the window hands back the trace of two keystrokes ago). Eigen grows
// a row-major matrix of the same columns with realloc, and glibc moves the block (malloc, copy, free)
// unless the memory right after it is free, which it never is for matrices allocated one after
// another: 111 moves, 4-16 ms of a 13-27 ms keystroke on the 2-core VM, more than the arithmetic of
// the new row. An Eigen matrix cannot keep spare rows (views need rows() == t), so the spare room is
// held beside it: a matrix that must grow past its room (roomRows) is sized to the room and shrunk
// back to its rows (glibc shrinks in place and frees the tail as a chunk of its own), and the tail is
// allocated at once as a placeholder block that the trace holds (GrowthRoom), so that nothing else
// takes it. Before the next growth the placeholder is freed and realloc takes it back in place. It is
// an arrangement with glibc's allocator, checked, never assumed: a placeholder that does not land
// right after the matrix is given back at once, and a matrix without one just moves as before. The
// values are the same either way. Other allocators: no placeholders (same values, the copies stay).
// A sanitizer's malloc (ASan, TSan, MSan) lays blocks out its own way: no placeholders there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ATTNVIZ_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ATTNVIZ_SANITIZER_MALLOC 1
#endif
#endif
#if defined(__GLIBC__) && !defined(ATTNVIZ_SANITIZER_MALLOC) && EIGEN_VERSION_AT_LEAST(3, 4, 0) && \
    !EIGEN_VERSION_AT_LEAST(3, 4, 90)
constexpr bool kHoldsRoom = true;

// The malloc block an Eigen 3.4 matrix's data lives in: the data itself, or, where malloc's own
// alignment is less than Eigen's (64 bytes for AVX-512), the block that handmade_aligned_malloc
// stored just before the aligned data (it asks for EIGEN_DEFAULT_ALIGN_BYTES more).
void *blockOf(void *data)
{
#if EIGEN_MALLOC_ALREADY_ALIGNED
    return data;
#else
    return reinterpret_cast<void **>(data)[-1];
#endif
}
constexpr size_t kAlignExtra = EIGEN_MALLOC_ALREADY_ALIGNED ? 0 : EIGEN_DEFAULT_ALIGN_BYTES;

// glibc's chunk for a request of n bytes (its request2size on 64-bit: 8 bytes of header, 16-byte
// steps, 32 at least).
size_t chunkFor(size_t n) { return std::max<size_t>(32, (n + sizeof(size_t) + 15) & ~size_t(15)); }

// After `m` was shrunk to its rows inside a block of `space` rows: allocate the freed tail as a
// placeholder the trace holds. A tail under 16 KiB is not worth it (and small ones go to glibc's
// per-thread caches, where realloc cannot take them back).
template <typename M>
void holdTail(M &m, Eigen::Index space, GrowthRoom &room)
{
    const size_t row = size_t(m.cols()) * sizeof(typename M::Scalar);
    if (space <= m.rows() || size_t(space - m.rows()) * row < (16u << 10))
        return;
    void *block = blockOf(m.data());
    // the next chunk's user pointer: this block's usable bytes and the next chunk's size field on
    const char *next = static_cast<char *>(block) + malloc_usable_size(block) + sizeof(size_t);
    const size_t tail = chunkFor(size_t(space) * row + kAlignExtra) - chunkFor(size_t(m.rows()) * row + kAlignExtra);
    // exactly the tail's size, so that glibc's exact-fit finds it; another free chunk of that size
    // may come first: up to four tries, the misses given back after
    void *missed[3];
    int misses = 0;
    for (;;) {
        void *p = std::malloc(tail - sizeof(size_t));
        if (p == next) {
            room.hold(m.data(), p);
            break;
        }
        if (!p)
            break;
        if (misses == 3) {
            std::free(p);
            break;
        }
        missed[misses++] = p;
    }
    for (int i = 0; i < misses; ++i)
        std::free(missed[i]);
}
#else
constexpr bool kHoldsRoom = false;

template <typename M>
void holdTail(M &, Eigen::Index, GrowthRoom &)
{
}
#endif

// Sizes a (t, d) stage matrix to (rows, cols) keeping its first `keep` rows, with room to grow in
// place (see above). A fresh matrix is exactly its rows (the command line and most traces never grow
// one). One that grows past its room, or has no placeholder (a copied trace; one that landed
// elsewhere; a tail that glibc merged with free memory after it, so that no placeholder could be
// taken), grows in place where the memory after it is free, else moves to a block of its room and is
// shrunk back. One within its room grows into its placeholder, freed just before (or shrinks: a token
// taken back).
template <typename M>
void growStage(M &m, Eigen::Index rows, Eigen::Index cols, int keep, Eigen::Index limit, GrowthRoom &room)
{
    void *placeholder = room.take(m.data());
    std::free(placeholder); // glibc merges it with the free memory after it, if any
    const Eigen::Index have = m.rows(), space = roomRows(rows, limit);
    if (have == 0 || m.cols() != cols) {
        resizeKeep(m, rows, cols, 0);
        return;
    }
    if (rows > have && (!placeholder || space != roomRows(have, limit))) {
        if (keep > 0 && have >= keep) {
            // in place first: where the memory right after it is free (the rows it gave back when it
            // last shrank, the top of the heap) glibc's realloc extends the block and copies nothing;
            // a matrix that moved takes its room (most often in place: the block it just got)
            const void *was = m.data();
            m.conservativeResize(rows, cols);
            if (m.data() != was)
                m.conservativeResize(space, cols);
        } else { // nothing kept: no copy
            m.resize(space, cols);
            adviseHugePages(m.data(), size_t(m.size()) * sizeof(typename M::Scalar));
        }
    }
    if (m.rows() != rows)
        m.conservativeResize(rows, cols); // in place: a shrink, or a growth into the freed placeholder
    holdTail(m, space, room);
}

// Rows [keep, p) of `from` into `m` (sized already): the part of a newer trace's prefix that `m` lacks.
template <typename M>
void copyRows(M &m, const M &from, int keep, int p)
{
    if (p > keep)
        m.middleRows(keep, p - keep) = from.middleRows(keep, p - keep);
}

// The same for a (t, t) matrix: rows [keep, p) up to column p, and columns [keep, p) of rows [0, keep).
template <typename M>
void copySquare(M &m, const M &from, int keep, int p)
{
    if (p <= keep)
        return;
    m.block(keep, 0, p - keep, p) = from.block(keep, 0, p - keep, p);
    if (keep > 0)
        m.block(0, keep, keep, p - keep) = from.block(0, keep, keep, p - keep);
}

// A stage matrix sized (t, cols) for rows [p, t). Kept in the trace, it grows in place keeping its
// first `keep` rows and takes rows [keep, p) from `from` (a newer trace's; null: none); a spare
// layer's buffer (`kept` false) only needs the size: its rows before p are never read.
template <typename M>
void sizeStage(M &m, const M *from, Eigen::Index t, Eigen::Index cols, int keep, int p, Eigen::Index limit,
               GrowthRoom &room, bool kept = true)
{
    if (!kept) {
        resizeKeep(m, t, cols, 0);
        return;
    }
    growStage(m, t, cols, keep, limit, room);
    if (from)
        copyRows(m, *from, keep, p);
}

// k or v rows laid out with `cols` columns: a copy per query head (H d_head) from the key/value
// heads' own (KV d_head, `group` query heads each), or the reverse.
template <typename M>
Mat<typename M::Scalar> relaid(const M &m, Eigen::Index cols, int group, int dh)
{
    Mat<typename M::Scalar> out(m.rows(), cols);
    const bool widen = cols > m.cols();
    const int heads = int((widen ? cols : m.cols()) / dh);
    for (int h = 0; h < heads; ++h) {
        const int g = h / group;
        if (widen)
            out.middleCols(h * dh, dh) = m.middleCols(g * dh, dh);
        else if (h % group == 0)
            out.middleCols(g * dh, dh) = m.middleCols(h * dh, dh);
    }
    return out;
}

// A layer's k or v (t, cols) for rows [p, t), kept in the trace (the next token's keys): as
// sizeStage, and rows kept or copied from a trace that laid them out the other way (one that kept
// every stage, continued by one that keeps fewer, or the reverse) are converted, not lost.
template <typename T>
void sizeKeys(Mat<T> &m, const Mat<T> *from, Eigen::Index t, Eigen::Index cols, int keep, int p, Eigen::Index limit,
              GrowthRoom &room, int group, int dh)
{
    if (keep > 0 && m.cols() != cols && m.cols() > 0 && m.rows() >= keep) {
        const Mat<T> kept = relaid(m.topRows(keep), cols, group, dh);
        growStage(m, t, cols, 0, limit, room);
        m.topRows(keep) = kept;
    } else {
        growStage(m, t, cols, keep, limit, room);
    }
    if (!from || p <= keep)
        return;
    if (from->cols() == cols)
        copyRows(m, *from, keep, p);
    else
        m.middleRows(keep, p - keep) = relaid(from->middleRows(keep, p - keep), cols, group, dh);
}

// Rows [r0, r1) of `from` into `w` (sized already), whatever the two layouts.
template <typename T>
void copyWeightRows(WeightMatrix<T> &w, const WeightMatrix<T> &from, int r0, int r1)
{
    if (r1 <= r0)
        return;
    if (from.lower() && w.lower()) { // the same rows, at the same place
        std::copy(from.rowData(r0), from.rowData(r1 - 1) + from.stored(r1 - 1), w.rowData(r0));
        return;
    }
    for (int i = r0; i < r1; ++i)
        for (Eigen::Index j = 0; j < w.stored(i); ++j)
            w.rowData(i)[j] = from(i, j);
}

// One head's (t, t) weights (or their mean) for rows [p, t): stored lower where the attention is
// causal (a row appended to the rows before, nothing moved), whole otherwise. Rows [0, keep) are kept
// (laid out anew where they were stored another way: the rule-based path stores whole matrices) and
// rows [keep, p) come from `from` (a newer trace's; null: none).
template <typename T>
void sizeWeights(WeightMatrix<T> &w, const WeightMatrix<T> *from, int t, bool causal, int keep, int p)
{
    const bool fresh = w.storedSize() == 0 || keep == 0;
    if (keep > 0 && w.lower() != causal && w.rows() >= keep) {
        WeightMatrix<T> laid;
        laid.resize(t, t, causal);
        copyWeightRows(laid, w, 0, keep);
        w.swap(laid);
    } else {
        w.resize(t, t, causal);
    }
    if (fresh)
        adviseHugePages(w.data(), size_t(w.storedSize()) * sizeof(T));
    if (from)
        copyWeightRows(w, *from, keep, p);
}

// dst (n x cw) = x rows [p, p + n) times rows [c0, c0 + cw) of W, transposed. Eigen's GEMM first
// packs W into panels: for the few rows typing recomputes (one token appended; a word that BPE splits
// anew changes two or three, and the double-buffered trace is two keystrokes old) that packing costs
// more than the product, which is bound by reading W from memory once. One small matrix-vector
// product per W row instead (x's rows stay in L1) streams W once: measured on GPT-2 small's shapes
// (AVX-512, one thread) 1.3x faster than Eigen's own matrix-vector path at 1 row, 2-2.5x faster than
// its GEMM at 2-4 rows, still ahead at 6; GEMM wins from about 8.
constexpr int kFewRows = 6;

template <typename T, typename Dst>
void productTransposed(const Mat<T> &x, int p, int n, const Mat<T> &W, int c0, int cw, Dst dst)
{
    if (n > kFewRows) {
        dst.noalias() = x.middleRows(p, n) * W.middleRows(c0, cw).transpose();
        return;
    }
    const auto rows = x.middleRows(p, n);
    for (int c = 0; c < cw; ++c)
        dst.col(c).noalias() = rows * W.row(c0 + c).transpose();
}

// The same with W kept in 16 bits or quantized (packed): a block of W's rows at a time widened into a scratch matrix
// (per thread, reused) and multiplied as above. Each block is one GEMM, which packs x's rows again:
// blocks of 4 MB (at least 128 rows) keep that repacking under ~10 % of the product (1 MB blocks,
// 32 rows of an 8,192-wide layer, made Llama-3.2-1B's full trace a third slower than float32; 8 MB
// blocks were no faster); for a few rows by 16-bit weights halfrows.h widens in registers instead
// (else blocks of 16 rows: one row's product per widened row, W streamed once). Many rows are
// multiplied into a column-major tile: Eigen then packs the widened block as its right-hand side,
// four contiguous rows at a time, instead of transposing it into its left-hand panels
// (Llama-3.2-1B's full trace 7 % faster).
template <typename T, typename Dst>
void productTransposed(const Mat<T> &x, int p, int n, const Weight<T> &W, int c0, int cw, Dst dst)
{
    if (!W.packed()) {
        productTransposed<T>(x, p, n, W.dense, c0, cw, dst);
        return;
    }
    if constexpr (std::is_same_v<T, float> && std::decay_t<Dst>::IsRowMajor) {
        if (n <= kFewRows && !W.half.empty()) { // widened in registers (halfrows.h)
            const float *rows[kFewRows];
            for (int r = 0; r < n; ++r)
                rows[r] = x.row(p + r).data();
            const int in = int(W.cols());
            if (detail::halfRowsProduct(n, W.half.kind == HalfMatrix::Kind::BF16, rows,
                                        W.half.bits.data() + size_t(c0) * size_t(in), in, cw, dst.data(), long(dst.outerStride())))
                return;
        }
    }
    thread_local Mat<T> scratch;
    const int in = int(W.cols());
    const int block = n > kFewRows ? std::max(128, int((4 << 20) / (sizeof(T) * size_t(in))) / 16 * 16) : 16;
    for (int c = 0; c < cw; c += block) {
        const int b = std::min(block, cw - c);
        if (scratch.rows() != b || scratch.cols() != in)
            scratch.resize(b, in);
        W.widen(c0 + c, b, scratch.data());
        if (n > kFewRows) {
            thread_local Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor> tile;
            tile.noalias() = x.middleRows(p, n) * scratch.transpose();
            dst.middleCols(c, b) = tile;
        } else {
            productTransposed<T>(x, p, n, scratch, 0, b, dst.middleCols(c, b));
        }
    }
}

// One dense layer of a linearRows call: y rows [p, t) = act(x rows [p, t) W^T + b).
template <typename T>
struct LinearJob {
    LinearJob(const Linear<T> *l, Mat<T> *y, const Activation *act = nullptr) : dense(&l->W), b(&l->b), y(y), act(act) {}
    LinearJob(const WeightLinear<T> *l, Mat<T> *y, const Activation *act = nullptr)
        : weight(&l->W), b(&l->b), y(y), act(act)
    {
    }
    Eigen::Index rows() const { return weight ? weight->rows() : dense->rows(); }
    const Mat<T> *dense = nullptr;     // one of these two
    const Weight<T> *weight = nullptr;
    const Vec<T> *b;
    Mat<T> *y;
    const Activation *act;
};

template <typename T, typename Block>
void activate(Block block, Activation act)
{
    auto a = block.array();
    switch (act) {
    case Activation::GeluTanh: {
        const T c = T(std::sqrt(2.0 / M_PI));
        block = (T(0.5) * a * (T(1) + (c * (a + T(0.044715) * a.cube())).tanh())).matrix();
        break;
    }
    case Activation::GeluErf: block = (T(0.5) * a * (T(1) + (a * T(M_SQRT1_2)).erf())).matrix(); break;
    case Activation::Relu: block = block.cwiseMax(T(0)); break;
    case Activation::Silu: block = (a / (T(1) + (-a).exp())).matrix(); break;
    }
}

// Every job's rows [p, t), split by blocks of output columns (so a single new token still uses every
// core), all jobs' blocks as the tasks of one parallelFor: q, k and v share one wake-up of the pool.
// Each task is one product of the rows by a slice of W (read in place, never copied: productTransposed)
// with the bias and activation applied while the tile is in cache.
template <typename T>
void linearRows(const Mat<T> &x, int p, std::initializer_list<LinearJob<T>> jobs)
{
    const int n = int(x.rows()) - p, in = int(x.cols());
    if (n <= 0)
        return;
    const int threads = std::max(1, coreThreads());
    struct Task {
        const LinearJob<T> *job;
        int c0, cw;
    };
    std::vector<Task> tasks;
    double work = 0;
    for (const LinearJob<T> &j : jobs) {
        const int out = int(j.rows());
        const int chunk = std::max(64, ((out + 2 * threads - 1) / (2 * threads) + 15) / 16 * 16);
        for (int c0 = 0; c0 < out; c0 += chunk)
            tasks.push_back({&j, c0, std::min(chunk, out - c0)});
        // a few rows' product is bound by reading W from memory, not by its 2 n flops a weight: a
        // weight read costs about as much as 8 flops, so that a typed token's W_o and W_down (which
        // counted by their flops stayed on one core) stream W on every core
        work += std::max(2.0 * n, 8.0) * out * in;
    }
    parallelFor(int(tasks.size()), work, [&](int i) {
        const Task &k = tasks[size_t(i)];
        const LinearJob<T> &j = *k.job;
        auto block = j.y->block(p, k.c0, n, k.cw);
        if (j.weight)
            productTransposed<T>(x, p, n, *j.weight, k.c0, k.cw, block);
        else
            productTransposed<T>(x, p, n, *j.dense, k.c0, k.cw, block);
        if (j.b->size())
            block.rowwise() += j.b->segment(k.c0, k.cw).transpose();
        if (k.job->act)
            activate<T>(block, *k.job->act);
    });
}

// One row normalized into y: LayerNorm (biased variance, as torch), RMSNorm (x / rms * w, as
// Hugging Face's LlamaRMSNorm) or Gemma's RMSNorm (x / rms * (1 + w)).
template <typename T, typename In, typename Out>
void normRow(NormKind kind, const In &x, const LayerNorm<T> &ln, Out y)
{
    const T d = T(x.size());
    if (kind == NormKind::LayerNorm) {
        const T mean = x.sum() / d;
        const T var = (x.array() - mean).square().sum() / d;
        const T inv = T(1) / std::sqrt(var + T(ln.eps));
        if (ln.beta.size())
            y = ((x.array() - mean) * inv * ln.gamma.transpose().array() + ln.beta.transpose().array()).matrix();
        else
            y = ((x.array() - mean) * inv * ln.gamma.transpose().array()).matrix();
        return;
    }
    const T inv = T(1) / std::sqrt(x.squaredNorm() / d + T(ln.eps));
    if (kind == NormKind::RmsNorm)
        y = ((x.array() * inv) * ln.gamma.transpose().array()).matrix();
    else
        y = ((x.array() * inv) * (T(1) + ln.gamma.transpose().array())).matrix();
}

// y rows [p, t) = N(x rows [p, t)); x may be y. With `to` >= 0, into y rows [to, to + t - p) instead.
template <typename T>
void normRows(NormKind kind, const Mat<T> &x, int p, const LayerNorm<T> &ln, Mat<T> &y, int to = -1)
{
    const Eigen::Index shift = to < 0 ? 0 : p - to;
    for (Eigen::Index i = p; i < x.rows(); ++i) {
        if (&x == &y) {
            const Eigen::Matrix<T, 1, Eigen::Dynamic> row = x.row(i);
            normRow(kind, row, ln, y.row(i - shift));
        } else {
            normRow(kind, x.row(i), ln, y.row(i - shift));
        }
    }
}

// Softmax of a row over keys [0, limit) not masked; keys [limit, row end) set to 0. Returns the
// row's log-sum-exp (max + log of the sum of exp(s - max)): weight j = exp(s_j - it); -inf (the row
// all 0) if every key is masked.
template <typename Row>
typename Row::Scalar maskedSoftmax(Row row, int limit, const uint8_t *mask)
{
    using T = typename Row::Scalar;
    auto head = row.head(limit);
    T mx, sum;
    if (!mask) { // the common case, vectorised
        mx = head.maxCoeff();
        head = (head.array() - mx).exp();
        sum = head.sum();
        head /= sum;
    } else {
        mx = -std::numeric_limits<T>::infinity();
        for (int j = 0; j < limit; ++j)
            if (!mask[j] && row[j] > mx)
                mx = row[j];
        if (mx == -std::numeric_limits<T>::infinity()) {
            row.setZero();
            return mx;
        }
        sum = 0;
        for (int j = 0; j < limit; ++j) {
            row[j] = mask[j] ? T(0) : std::exp(row[j] - mx);
            sum += row[j];
        }
        head /= sum;
    }
    row.tail(row.size() - limit).setZero();
    return mx + std::log(sum);
}

// What one layer's attention is, beyond its projections (from the Architecture).
template <typename T>
struct AttentionSpec {
    int heads = 1, kvHeads = 1, dHead = 1;
    T scale = 1, softcap = 0; // softcap 0: none
    bool causal = true;
    int window = 0; // sliding window (in the mask already; recorded for AttentionTiles); 0: none
    NormKind norm = NormKind::RmsNorm;
    const LayerNorm<T> *qNorm = nullptr, *kNorm = nullptr; // per head, before rotation; null: none
    const std::vector<T> *cos = nullptr, *sin = nullptr;   // rotary: rows [p, t) x dims / 2; null: none
    int ropeDims = 0;
};

// Scratch of the projections for rows [p, t) before they are normalized, rotated and shared out.
template <typename T>
struct ProjectionScratch {
    Mat<T> q, k, v;
};

// One head's vector (d_head) of row i: normalized over d_head (q/k norm) and rotated by position i
// (the first `dims` entries, Hugging Face's rotate_half layout: pairs (k, k + dims / 2)).
template <typename T, typename Row>
void shapeHead(const AttentionSpec<T> &A, const LayerNorm<T> *norm, int rowInTable, Row x)
{
    if (norm) {
        const Eigen::Matrix<T, 1, Eigen::Dynamic> in = x;
        normRow(A.norm, in, *norm, x);
    }
    if (A.cos) {
        const int half = A.ropeDims / 2;
        const T *c = A.cos->data() + size_t(rowInTable) * size_t(half), *s = A.sin->data() + size_t(rowInTable) * size_t(half);
        for (int k = 0; k < half; ++k) {
            const T x1 = x[k], x2 = x[k + half];
            x[k] = x1 * c[k] - x2 * s[k];
            x[k + half] = x2 * c[k] + x1 * s[k];
        }
    }
}

// The rows of a block of attend's softmax pass for `rows` rows computed: up to 32, at least ~4 blocks
// per thread so that the triangle of a causal text balances.
int attentionRows(int rows)
{
    const int threads = std::max(1, coreThreads());
    return std::clamp((rows + 4 * threads - 1) / (4 * threads), 1, 32);
}

// Edits over an unedited trace of t tokens whose first `r` rows no edit reaches: the rows copied,
// r aligned down so that every computed row meets the products as in the whole forward: a multiple
// of the attention block (attend's `aligned`) and of 8 (Eigen's GEMM takes a row-major product's rows
// as the columns of its micro-panels, 4 or 8 at a time, each entry summed over k in the same order),
// leaving more than kFewRows (a product of that many rows takes the matrix-vector path, summed in
// another order); short texts (products by rows) and long ones (the feed-forward's row blocks start
// at the first computed row) are computed whole.
int uneditedRows(int r, int t)
{
    if (t <= kFewRows || t > 256)
        return 0;
    const int per = attentionRows(t);
    const int a = std::lcm(per, 8);
    int p = r / a * a;
    if (t - p <= kFewRows)
        p -= a;
    return std::max(0, p);
}

// Which of a layer's attention projections a product multiplies: the file's 16-bit (or quantized)
// ones where the layer keeps them so, else the ones in T.
enum class Proj { Q, K, V, O };
template <typename T>
LinearJob<T> projection(const LayerWeights<T> &b, Proj which, Mat<T> *y)
{
    auto pick = [&](const auto &P) -> LinearJob<T> {
        return {which == Proj::Q ? &P.q : which == Proj::K ? &P.k : which == Proj::V ? &P.v : &P.o, y};
    };
    return b.packed ? pick(*b.packed) : pick(*b.attn);
}

// One layer's attention on rows [p, t) of `a`; rows [0, keep) of `R` are kept and [keep, p) copied
// from `from` (a newer trace's layer; null when keep == p). A task is a block of query rows through
// every head: a head's weights of the block are computed in a scratch block (a causal row's scores only
// for the keys it can see), stored once (a causal trace's lower, sizeWeights) and summed into the head
// mean while they are in cache. `mask` (t, t) holds the user's cells and sliding windows; empty: none
// beyond causality. `stages` false: the context and the output are a spare layer's buffers, only rows
// [p, t) are meaningful and nothing is copied into them; q too unless `keepQ`; qPre and kPre are not kept;
// `weights` false: no weights nor their mean are stored. k, v and each row's log-sum-exp are kept: k and
// v a copy per query head with the stages, the key/value heads' own without (grouped-query attention).
// `spent` (a spare layer's: `a` itself, read by nothing after the projections): its storage holds the
// context once q, k and v are projected, and is given back holding it, so that a layer computed in the
// spare buffers needs no (t, H d_head) of its own for the context. With `half` and without the stages,
// q, k and v are narrowed as soon as the softmax pass has read them and W_O's output is written into
// q's float rows: a long text's layer holds at most its input, q, k and v, or the context and the
// output, never all at once.
template <typename T>
void attend(const LayerWeights<T> &lw, const AttentionSpec<T> &A, const Mat<T> &a, int keep, int p,
            const AttentionResult<T> *from, const BoolMat &mask, bool keepScores, bool stages, bool keepQ,
            bool weights, Eigen::Index limit, GrowthRoom &room, ProjectionScratch<T> &scratch, AttentionResult<T> &R,
            const std::function<void(Mat<T> &)> *editZ = nullptr, bool aligned = false,
            std::optional<HalfRows::Kind> half = std::nullopt, Mat<T> *spent = nullptr)
{
    const int t = int(a.rows()), heads = A.heads, dh = A.dHead, width = heads * dh, n = t - p;
    const bool causal = A.causal;
    const int group = heads / A.kvHeads;
    const bool plain = group == 1 && !A.qNorm && !A.cos; // q, k, v are the projections themselves
    const T scale = A.scale;
    R.numHeads = heads;
    R.kvHeads = A.kvHeads;
    R.dHead = dh;
    R.dModel = int(a.cols());
    R.dOut = int(projection<T>(lw, Proj::O, nullptr).rows());
    R.scale = double(A.scale);
    R.softcap = double(A.softcap);
    R.causal = causal;
    R.window = A.window;
    R.batch.resize(1);
    SequenceResult<T> &s = R.batch[0];
    const SequenceResult<T> *f = from && p > keep ? &from->batch.front() : nullptr;
    // q, k and v kept in 16 bits (a long text of a 16-bit model): this layer's own and the newer
    // trace's widened back for the rows this call keeps or copies (exactly: they were rounded before
    // use), narrowed again at the end; a trace kept so in float, or the reverse, converts here
    SequenceResult<T> fromWide;
    if (f && (!f->q16.empty() || !f->k16.empty() || !f->v16.empty())) {
        fromWide = *f; // no weights: a trace kept so stores none
        for (auto [m, m16] : {std::pair{&fromWide.q, &fromWide.q16}, std::pair{&fromWide.k, &fromWide.k16},
                              std::pair{&fromWide.v, &fromWide.v16}}) {
            if (!m16->empty())
                *m = m16->template widened<T>();
            m16->clear();
        }
        f = &fromWide;
    }
    for (auto [m, m16] : {std::pair{&s.q, &s.q16}, std::pair{&s.k, &s.k16}, std::pair{&s.v, &s.v16}}) {
        if (m16->empty())
            continue;
        if (keep > 0 && m->size() == 0)
            *m = m16->template widened<T>();
        m16->clear();
    }
    // Every row's log-sum-exp per head: (t, H), kept in every layer (the weights from q and k alone).
    // With 16-bit rows what the layer keeps (the log-sum-exp; the 16-bit rows' room, taken, not touched)
    // is allocated before the float rows: those are given back at the end, on top of the heap, for the
    // next layer's, instead of leaving holes between the kept rows (a 32,768-token text's float k and v
    // are 24 MB each, below glibc's mmap threshold).
    auto sizeLse = [&] { sizeStage(s.lse, f ? &f->lse : nullptr, t, heads, keep, p, limit, room); };
    if (half) {
        sizeLse();
        const size_t kvNumbers = size_t(t) * size_t(!stages && group > 1 ? A.kvHeads * dh : width);
        s.q16.bits.reserve(size_t(t) * size_t(width));
        s.k16.bits.reserve(kvNumbers);
        s.v16.bits.reserve(kvNumbers);
    }
    // k and v continue the trace (the next token's keys); the rest is kept where `stages` asks
    auto stage = [&](Mat<T> &m, const Mat<T> *fm, Eigen::Index cols, bool kept) {
        sizeStage(m, fm, t, cols, keep, p, limit, room, kept);
    };
    stage(s.q, f ? &f->q : nullptr, width, keepQ);
    if (!spent)
        stage(s.context, f ? &f->context : nullptr, width, stages);
    // k and v: a copy per query head where the stages are kept (the views read them head by head);
    // otherwise the key/value heads' own, (t, KV d_head), all the next token reads
    const int kw = A.kvHeads * dh;
    const bool compact = !stages && group > 1;
    auto kvCol = [&](int h) { return compact ? (h / group) * dh : h * dh; }; // query head h's k, v columns
    for (Mat<T> SequenceResult<T>::*m : {&SequenceResult<T>::k, &SequenceResult<T>::v})
        sizeKeys(s.*m, f ? &(f->*m) : nullptr, t, compact ? kw : width, keep, p, limit, room, group, dh);
    // W_O's output in q's float rows once q is narrowed (see above), else its own
    const bool outputInQ = half && !stages && keepQ;
    if (!outputInQ)
        stage(s.output, f ? &f->output : nullptr, R.dOut, stages);
    if (!half) // after the other rows, in the order a typed trace's rows grow in place (growStage)
        sizeLse();
    const bool shaped = A.qNorm || A.cos;
    const bool split = shaped && stages; // q and k as projected kept apart (qPre, kPre): with the stages
    if (split) {
        for (Mat<T> SequenceResult<T>::*m : {&SequenceResult<T>::qPre, &SequenceResult<T>::kPre})
            stage(s.*m, f ? &(f->*m) : nullptr, width, stages);
    } else {
        s.qPre.resize(0, 0);
        s.kPre.resize(0, 0);
    }
    if (plain) {
        linearRows<T>(a, p, {projection(lw, Proj::Q, &s.q), projection(lw, Proj::K, &s.k), projection(lw, Proj::V, &s.v)});
    } else {
        // compact k and v are laid out as projected (each key/value head's own columns): shaped in place
        Mat<T> &kp = compact ? s.k : scratch.k, &vp = compact ? s.v : scratch.v;
        if (!compact) {
            resizeKeep(scratch.k, t, kw, 0);
            resizeKeep(scratch.v, t, kw, 0);
        }
        Mat<T> &q = split ? s.qPre : s.q; // else shaped in place
        linearRows<T>(a, p, {projection(lw, Proj::Q, &q), projection(lw, Proj::K, &kp), projection(lw, Proj::V, &vp)});
        parallelFor(n, double(n) * (width + kw) * 8, [&](int r) {
            const int i = p + r;
            if (shaped) {
                if (split)
                    s.q.row(i) = s.qPre.row(i);
                for (int h = 0; h < heads; ++h)
                    shapeHead(A, A.qNorm, r, s.q.row(i).segment(h * dh, dh));
            }
            for (int g = 0; g < A.kvHeads; ++g) {
                auto kRaw = kp.row(i).segment(g * dh, dh);
                Eigen::Matrix<T, 1, Eigen::Dynamic> k = kRaw;
                if (shaped)
                    shapeHead(A, A.kNorm, r, k.row(0));
                for (int h = g * group; h < (g + 1) * group; ++h) {
                    if (!compact || h == g * group) {
                        s.k.row(i).segment(kvCol(h), dh) = k;
                        if (!compact)
                            s.v.row(i).segment(kvCol(h), dh) = vp.row(i).segment(g * dh, dh);
                    }
                    if (split)
                        s.kPre.row(i).segment(h * dh, dh) = kRaw;
                }
            }
        });
    }
    if constexpr (std::is_same_v<T, float>) {
        if (half) // the attention below computed from q, k and v as the model's 16-bit runtime holds them
            for (Mat<T> *m : {&s.q, &s.k, &s.v})
                parallelFor(n, double(n) * double(m->cols()), [&](int r) {
                    for (T &x : m->row(p + r))
                        x = HalfRows::rounded(*half, x);
                });
    }
    if (spent) { // the input is read: its storage takes the context
        s.context.swap(*spent);
        stage(s.context, nullptr, width, false);
    }
    if (keepScores)
        s.scores.resize(size_t(heads));
    else
        s.scores.clear();
    s.weightsPreDropout.clear();
    const SequenceResult<T> *fw = weights ? f : nullptr;
    if (weights) {
        s.weights.resize(size_t(heads));
        for (int h = 0; h < heads; ++h)
            sizeWeights(s.weights[size_t(h)], fw ? &fw->weights[size_t(h)] : nullptr, t, causal, keep, p);
        sizeWeights(s.weightsAvg, fw ? &fw->weightsAvg : nullptr, t, causal, keep, p);
    } else {
        s.weights.clear();
        s.weightsAvg.clear();
    }
    for (int h = 0; h < heads && keepScores; ++h) {
        resizeKeep(s.scores[size_t(h)], t, t, keep);
        if (f)
            copySquare(s.scores[size_t(h)], f->scores[size_t(h)], keep, p);
    }
    std::vector<uint8_t> full(size_t(t), 0); // rows whose every key is masked (the same in every head)
    if (mask.size())
        for (int i = p; i < t; ++i)
            full[size_t(i)] = (mask.row(i).head(causal ? i + 1 : t).array() != 0).all() ? 1 : 0;
    const T cap = A.softcap;
    auto capped = [cap](auto &&block) { // a matrix or a block of one, capped in place
        if (cap > 0)
            block = ((block.array() / cap).tanh() * cap).matrix();
    };
    // the rows of a block, stored from a scratch block: a lower matrix keeps keys up to the query
    auto store = [](WeightMatrix<T> &w, const Mat<T> &rows, int r0) {
        for (int i = 0; i < int(rows.rows()); ++i)
            w.storedRow(r0 + i) = rows.row(i).head(w.stored(r0 + i));
    };
    // blocks of up to 32 rows, at least ~4 per thread so that the triangle of a causal text balances;
    // `aligned`: the blocks of a whole forward (from row 0) that rows [p, t) fall in, so that each row
    // is computed in the same block as there (p a multiple of the block: uneditedRows)
    const int per = attentionRows(aligned ? t : n);
    const int b0 = aligned ? p / per : 0, r00 = aligned ? b0 * per : p;
    const int blocks = n > 0 ? (t - r00 + per - 1) / per : 0;
    parallelFor(blocks, (causal ? 2.0 : 4.0) * double(n) * t * width, [&](int b) {
        const int r0 = std::max(p, r00 + b * per), rn = std::min(r00 + (b + 1) * per, t) - r0;
        const int keys = causal ? r0 + rn : t; // columns any row of the block can see
        // one head's weights of the block's rows and their sum over heads, every key a row can see:
        // computed here (in cache) and stored once
        thread_local Mat<T> seen, avg;
        seen.resize(rn, keys);
        if (weights)
            avg.resize(rn, keys);
        for (int h = 0; h < heads; ++h) {
            if (keepScores) { // the scaled (and capped) scores of every key, masked or not, for the record
                thread_local Mat<T> all;
                scoreBlock(scale, s.q, r0, rn, Eigen::Index(h) * dh, s.k, 0, t, kvCol(h), dh, all);
                capped(all);
                s.scores[size_t(h)].middleRows(r0, rn) = all;
                seen = all.leftCols(keys);
            } else {
                scoreBlock(scale, s.q, r0, rn, Eigen::Index(h) * dh, s.k, 0, keys, kvCol(h), dh, seen);
                capped(seen);
            }
            for (int i = r0; i < r0 + rn; ++i) {
                const uint8_t *m = mask.size() ? mask.data() + Eigen::Index(i) * t : nullptr;
                // every key masked: weights 0, context 0, lse -inf
                s.lse(i, h) = maskedSoftmax(seen.row(i - r0), causal ? i + 1 : t, m);
            }
            s.context.block(r0, h * dh, rn, dh).noalias() = seen * s.v.block(0, kvCol(h), keys, dh);
            if (!weights)
                continue;
            store(s.weights[size_t(h)], seen, r0);
            if (h == 0)
                avg = seen;
            else
                avg += seen;
        }
        if (weights) {
            avg /= T(heads);
            store(s.weightsAvg, avg, r0);
        }
    });
    if (p > 0 && keepScores) { // the kept rows' scores against the new keys, for the record
        for (int h = 0; h < heads; ++h) {
            Mat<T> sc;
            scoreBlock(scale, s.q, 0, p, Eigen::Index(h) * dh, s.k, p, n, kvCol(h), dh, sc);
            capped(sc);
            s.scores[size_t(h)].block(0, p, p, n) = sc;
        }
    }
    s.mask = mask;
    s.fullyMaskedRows.erase(
        std::remove_if(s.fullyMaskedRows.begin(), s.fullyMaskedRows.end(), [&](int i) { return i >= keep; }),
        s.fullyMaskedRows.end());
    if (keep == 0)
        s.fullyMaskedRows.clear();
    if (f)
        for (int i : f->fullyMaskedRows)
            if (i >= keep && i < p)
                s.fullyMaskedRows.push_back(i);
    for (int i = p; i < t; ++i)
        if (full[size_t(i)])
            s.fullyMaskedRows.push_back(i);
    s.degenerateRows.clear();
    // kept in 16 bits, the float copies (and any room held after them) given back: before W_O where its
    // output takes q's rows, else after
    auto narrow = [&] {
        for (auto [m, m16] : {std::pair{&s.k, &s.k16}, std::pair{&s.v, &s.v16}, std::pair{&s.q, &s.q16}}) {
            m16->assign(*half, *m);
            std::free(room.take(m->data()));
            if (m != &s.q || !outputInQ)
                m->resize(0, 0);
        }
    };
    if (outputInQ) {
        narrow();
        s.output.resize(0, 0);
        s.output.swap(s.q);
        stage(s.output, nullptr, R.dOut, false);
    }
    if (editZ) // attn.hook_z edits, between the context and W_O
        (*editZ)(s.context);
    linearRows<T>(s.context, p, {projection(lw, Proj::O, &s.output)});
    if (spent) // given back, holding the context (read by nothing after this layer)
        spent->swap(s.context);
    if (half && !outputInQ)
        narrow();
}

// Top-k tokens and the softmax normalizer of each row of h E^T + b, the vocabulary in chunks
// (never the whole t x V logits at once).
template <typename T>
struct VocabScan {
    std::vector<std::vector<std::pair<T, int>>> top; // per row, best first
    std::vector<double> maxLogit, sumExp;            // softmax(x)_j = exp(x_j - max) / sumExp
};

template <typename T>
void scanVocabulary(const Mat<T> &h, const Weight<T> &E, const Vec<T> &bias, T softcap, int k, VocabScan<T> &out)
{
    const int n = int(h.rows()), V = int(E.rows());
    constexpr int chunk = 2048;
    const int chunks = (V + chunk - 1) / chunk;
    struct Part {
        std::vector<std::vector<std::pair<T, int>>> top;
        std::vector<double> mx, sum;
    };
    std::vector<Part> parts(static_cast<size_t>(chunks));
    parallelFor(chunks, 2.0 * n * double(V) * h.cols(), [&](int c) {
        const int v0 = c * chunk, vw = std::min(chunk, V - v0);
        Mat<T> L(n, vw);
        productTransposed<T>(h, 0, n, E, v0, vw, L.leftCols(vw));
        if (bias.size())
            L.rowwise() += bias.segment(v0, vw).transpose();
        if (softcap > 0)
            L = ((L.array() / softcap).tanh() * softcap).matrix();
        Part &part = parts[size_t(c)];
        part.top.resize(size_t(n));
        part.mx.resize(size_t(n));
        part.sum.resize(size_t(n));
        for (int i = 0; i < n; ++i) {
            const T mx = L.row(i).maxCoeff();
            part.mx[size_t(i)] = double(mx);
            part.sum[size_t(i)] = double((L.row(i).array() - mx).exp().sum());
            auto &top = part.top[size_t(i)];
            for (int j = 0; j < vw; ++j) {
                const T v = L(i, j);
                if (int(top.size()) == k && !(v > top.back().first))
                    continue;
                auto at = std::upper_bound(top.begin(), top.end(), v,
                                           [](T a, const std::pair<T, int> &b) { return a > b.first; });
                top.insert(at, {v, v0 + j});
                if (int(top.size()) > k)
                    top.pop_back();
            }
        }
    });
    out.top.assign(size_t(n), {});
    out.maxLogit.assign(size_t(n), -std::numeric_limits<double>::infinity());
    out.sumExp.assign(size_t(n), 0.0);
    for (int i = 0; i < n; ++i) {
        for (const Part &part : parts)
            out.maxLogit[size_t(i)] = std::max(out.maxLogit[size_t(i)], part.mx[size_t(i)]);
        auto &top = out.top[size_t(i)];
        for (const Part &part : parts) {
            out.sumExp[size_t(i)] += part.sum[size_t(i)] * std::exp(part.mx[size_t(i)] - out.maxLogit[size_t(i)]);
            top.insert(top.end(), part.top[size_t(i)].begin(), part.top[size_t(i)].end());
        }
        std::stable_sort(top.begin(), top.end(), [](const auto &a, const auto &b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        if (int(top.size()) > k)
            top.resize(size_t(k));
    }
}

template <typename T>
double probability(const VocabScan<T> &scan, int row, T logit)
{
    return std::exp(double(logit) - scan.maxLogit[size_t(row)]) / scan.sumExp[size_t(row)];
}

template <typename T>
std::vector<TokenProb> topProbs(const VocabScan<T> &scan, int row)
{
    std::vector<TokenProb> r;
    for (const auto &e : scan.top[size_t(row)])
        r.push_back({e.second, std::string(), probability(scan, row, e.first), std::string()});
    return r;
}

bool cancelled(const std::atomic<bool> *c) { return c && c->load(std::memory_order_relaxed); }

// Whether some query row of `mask` hides every key it could see (causal: keys 0..i).
bool anyRowFullyMasked(const BoolMat &mask, bool causal)
{
    for (Eigen::Index i = 0; i < mask.rows(); ++i)
        if ((mask.row(i).head(causal ? i + 1 : mask.cols()).array() != 0).all())
            return true;
    return false;
}

// One layer's attention, every row, under the architecture's weight rule (Sum or Cosine weights,
// multiply-renormalize masking, dropout, what a fully masked row gets): computeAttention implements
// those rules for the one-layer view, and the teaching stack that chooses them is small.
template <typename T>
Status attendByRule(const Architecture &arch, const Projections<T> &P, const Mat<T> &a, const BoolMat &mask,
                    bool keepScores, AttentionResult<T> &R)
{
    AttentionConfig c;
    c.numHeads = arch.heads;
    c.dHead = arch.dHead;
    c.scaleRule = ScaleRule::Explicit;
    c.explicitScale = arch.scale();
    c.normalization = arch.weightRule.normalization;
    c.maskMethod = arch.weightRule.maskMethod;
    c.fullyMasked = arch.weightRule.fullyMasked;
    c.dropout = arch.weightRule.dropout;
    c.dropoutSeed = arch.weightRule.dropoutSeed;
    c.dropoutStream = arch.weightRule.dropoutStream;
    c.causal = arch.causal;
    c.keepScores = keepScores;
    AttentionInput<T> in;
    in.batch.resize(1);
    in.batch[0].query = a;
    in.attnMask = mask;
    if (Status st = computeAttention(c, in, P, R); !st)
        return st;
    R.kvHeads = arch.kvHeads;
    R.softcap = 0;
    R.batch[0].qPre.resize(0, 0);
    R.batch[0].kPre.resize(0, 0);
    R.batch[0].lse.resize(0, 0); // weights by a rule: no log-sum-exp stands for them
    return {};
}

// The edits of `in` at `hook` of `layer` applied in order to `m`, the hook's activation of positions
// [row0, row0 + m.rows()) (every row from row0 on, as the forward computes them; edits over an
// unedited trace start row0 before any edited position). Returns whether any applied.
template <typename T>
bool applyEdits(const ForwardInput &in, HookPoint hook, int layer, int dHead, Mat<T> &m, int row0 = 0)
{
    if (!in.edits)
        return false;
    bool any = false;
    for (const Intervention &e : *in.edits) {
        if (e.hook != hook || e.layer != layer)
            continue;
        any = true;
        const Eigen::Index c0 = e.head >= 0 ? Eigen::Index(e.head) * dHead : 0;
        const Eigen::Index cw = e.head >= 0 ? dHead : m.cols();
        std::vector<int> rows = e.positions;
        if (rows.empty()) {
            rows.resize(size_t(m.rows()));
            for (size_t i = 0; i < rows.size(); ++i)
                rows[i] = row0 + int(i);
        }
        switch (e.kind) {
        case EditKind::Zero:
            for (int i : rows)
                m.row(i - row0).segment(c0, cw).setZero();
            break;
        case EditKind::MeanOverText: { // row0 is 0: the mean reads every position
            const Eigen::Matrix<T, 1, Eigen::Dynamic> mean = m.middleCols(c0, cw).colwise().sum() / T(m.rows());
            for (int i : rows)
                m.row(i - row0).segment(c0, cw) = mean;
            break;
        }
        case EditKind::Value:
            for (int i : rows)
                m.row(i - row0).segment(c0, cw) = e.value.row(i).segment(c0, cw).template cast<T>();
            break;
        }
    }
    return any;
}

// Whether a layer's attention holds every stage of every row as a whole trace keeps it (float q, k and
// v, the context, W_O's output, each row's log-sum-exp, every head's weights; no scores), so that a
// copy of it stands for computing it again.
template <typename T>
bool wholeAttention(const AttentionResult<T> &a, int t, int heads)
{
    if (a.batch.size() != 1)
        return false;
    const SequenceResult<T> &s = a.batch[0];
    for (const Mat<T> *m : {&s.q, &s.k, &s.v, &s.context, &s.output, &s.lse})
        if (m->rows() != t)
            return false;
    return s.q16.empty() && s.k16.empty() && s.v16.empty() && s.scores.empty() && int(s.weights.size()) == heads &&
           s.weightsPreDropout.empty();
}

bool hasEdits(const ForwardInput &in, HookPoint hook, int layer)
{
    if (in.edits)
        for (const Intervention &e : *in.edits)
            if (e.hook == hook && e.layer == layer)
                return true;
    return false;
}

} // namespace

bool GrowthRoom::heldInThisBuild() { return kHoldsRoom; }

// The LM head's logit of token `id` after position i.
template <typename T>
T nextLogit(const Architecture &arch, const ModelWeights<T> &w, const Mat<T> &final, int i, int id)
{
    T logit = final.row(i).dot(w.outputEmbedding().row(id).transpose());
    if (w.outputBias.size())
        logit += w.outputBias[id];
    if (arch.finalSoftcap > 0)
        logit = std::tanh(logit / T(arch.finalSoftcap)) * T(arch.finalSoftcap);
    return logit;
}

template <typename T>
void predictNext(const Architecture &arch, const ModelWeights<T> &w, const Mat<T> &final, const std::vector<int> &ids,
                 const std::vector<int> &positions, int topK, std::vector<NextTokens> &out)
{
    out.assign(positions.size(), NextTokens());
    if (positions.empty())
        return;
    const int t = int(final.rows());
    Mat<T> rows(Eigen::Index(positions.size()), final.cols());
    for (size_t k = 0; k < positions.size(); ++k)
        rows.row(Eigen::Index(k)) = final.row(positions[k]);
    VocabScan<T> scan;
    scanVocabulary(rows, w.outputEmbedding(), w.outputBias, T(arch.finalSoftcap), topK, scan);
    for (size_t k = 0; k < positions.size(); ++k) {
        const int i = positions[k];
        out[k].top = topProbs(scan, int(k));
        out[k].logNormalizer = scan.maxLogit[k] + std::log(scan.sumExp[k]);
        if (i + 1 < t)
            out[k].actualNext = probability(scan, int(k), nextLogit(arch, w, final, i, ids[size_t(i + 1)]));
    }
}

void nextFromLogits(const Architecture &arch, const float *logits, int V, const std::vector<int> &ids, int i, int topK,
                    NextTokens &out)
{
    const float cap = float(arch.finalSoftcap);
    auto logit = [&](int j) { return cap > 0 ? std::tanh(logits[j] / cap) * cap : logits[j]; };
    float mx = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < V; ++j)
        mx = std::max(mx, logit(j));
    double sum = 0;
    std::vector<std::pair<float, int>> top;
    const int k = std::min(topK, V);
    for (int j = 0; j < V; ++j) {
        const float v = logit(j);
        sum += double(std::exp(v - mx));
        if (int(top.size()) == k && !(v > top.back().first))
            continue;
        auto at = std::upper_bound(top.begin(), top.end(), v, [](float a, const std::pair<float, int> &b) { return a > b.first; });
        top.insert(at, {v, j});
        if (int(top.size()) > k)
            top.pop_back();
    }
    auto probability = [&](float v) { return std::exp(double(v) - double(mx)) / sum; };
    out = NextTokens();
    for (const auto &e : top)
        out.top.push_back({e.second, std::string(), probability(e.first), std::string()});
    out.logNormalizer = double(mx) + std::log(sum);
    if (size_t(i + 1) < ids.size())
        out.actualNext = probability(logit(ids[size_t(i + 1)]));
}

template <typename T>
void maskedPredictions(const Architecture &arch, const ModelWeights<T> &w, const ForwardInput &in, const Mat<T> &final,
                       Predictions &pr)
{
    const int t = int(final.rows()), d = int(final.cols());
    const Activation act = arch.activation;
    std::vector<int> at;
    for (int i = 0; i < t; ++i)
        if (in.maskId >= 0 && in.ids[size_t(i)] == in.maskId)
            at.push_back(i);
    if (!w.hasMlmHead || at.empty())
        return;
    Mat<T> hm(int(at.size()), d), tr(int(at.size()), d);
    for (size_t i = 0; i < at.size(); ++i)
        hm.row(Eigen::Index(i)) = final.row(at[i]);
    linearRows<T>(hm, 0, {{&w.mlmTransform, &tr, &act}});
    normRows(NormKind::LayerNorm, tr, 0, w.mlmNorm, tr);
    VocabScan<T> scan;
    scanVocabulary(tr, w.outputEmbedding(), w.outputBias, T(0), in.topK, scan);
    for (size_t i = 0; i < at.size(); ++i)
        pr.masked.push_back({at[i], topProbs(scan, int(i))});
}

BoolMat textMask(const ForwardInput &in, bool causal, int t, bool &userMask)
{
    BoolMat custom;
    for (const auto &cell : in.maskedCells) {
        if (cell.first < 0 || cell.first >= t || cell.second < 0 || cell.second >= t)
            continue;
        if (!custom.size())
            custom = BoolMat::Zero(t, t);
        custom(cell.first, cell.second) = 1;
    }
    std::vector<uint8_t> padding;
    for (int j : in.paddedKeys)
        if (j >= 0 && j < t) {
            padding.resize(size_t(t), 0);
            padding[size_t(j)] = 1;
        }
    userMask = custom.size() || !padding.empty();
    return effectiveMask(custom, causal, padding, t, t);
}

BoolMat layerMask(const Architecture &arch, const BoolMat &mask, bool userMask, int layer, int t)
{
    const int window = arch.windowOf(layer);
    BoolMat m = userMask || !arch.causal ? mask : BoolMat();
    if (window > 0 && window < t) {
        if (!m.size()) // the text's own, or its causal mask where none was built (a trace without weights)
            m = mask.size() ? mask : effectiveMask(BoolMat(), arch.causal, {}, t, t);
        for (int i = window; i < t; ++i)
            m.row(i).head(i - window + 1).setOnes();
    }
    return m;
}

// cos and sin of rows [p, t) for one rotary parameter set (row-major, dims / 2 a row), times
// Hugging Face's attention scaling as its rotary embedding multiplies them.
template <typename T>
void rotaryRows(const Rope &rope, int p, int t, std::vector<T> &cos, std::vector<T> &sin)
{
    const RopeTable table = ropeTable(rope, t);
    const int half = rope.dims / 2;
    cos.resize(size_t(t - p) * size_t(half));
    sin.resize(cos.size());
    for (int i = p; i < t; ++i)
        for (int k = 0; k < half; ++k) {
            const double angle = double(i) * table.invFreq[size_t(k)];
            cos[size_t(i - p) * size_t(half) + size_t(k)] = T(std::cos(angle) * table.attentionScaling);
            sin[size_t(i - p) * size_t(half) + size_t(k)] = T(std::sin(angle) * table.attentionScaling);
        }
}

// The (t, d)-like stages of a layer that Observe::stages covers (k, v, the log-sum-exp, the weights,
// their mean and the mask are not among them; a gated MLP's products are kept only with them), each
// passed to `f` as the pair of a's and b's; q among them unless `withoutQ` (a trace that keeps no
// weights keeps every layer's q).
template <typename T, typename F>
void forStages(LayerTrace<T> &a, LayerTrace<T> &b, F f, bool withoutQ = false)
{
    a.attention.batch.resize(1);
    b.attention.batch.resize(1);
    for (Mat<T> LayerTrace<T>::*m : {&LayerTrace<T>::residualIn, &LayerTrace<T>::attentionIn,
                                     &LayerTrace<T>::afterAttention, &LayerTrace<T>::output})
        f(a.*m, b.*m);
    SequenceResult<T> &sa = a.attention.batch[0], &sb = b.attention.batch[0];
    if (!withoutQ)
        f(sa.q, sb.q);
    for (Mat<T> SequenceResult<T>::*m : {&SequenceResult<T>::qPre, &SequenceResult<T>::kPre,
                                         &SequenceResult<T>::context, &SequenceResult<T>::output})
        f(sa.*m, sb.*m);
}

// The 16-bit type a layer's q, k and v are kept in: its projections' own (BF16, F16) where `longText`
// (a trace keeping neither the weights nor the layer's stages) in the float32 forward; else none.
template <typename T>
std::optional<HalfRows::Kind> halfKept(const LayerWeights<T> &b, bool longText)
{
    if (!std::is_same_v<T, float> || !longText || !b.packed || b.packed->q.W.half.empty() || b.packed->k.W.half.empty() ||
        b.packed->v.W.half.empty())
        return std::nullopt;
    return b.packed->q.W.half.kind == HalfMatrix::Kind::F16 ? HalfRows::Kind::F16 : HalfRows::Kind::BF16;
}

// a's stages exchanged with the spare layers' (no copy): resid_post, which the next layer reads, with
// `stream`'s, every other with `shared`'s (read by no other layer: one set serves them all). Its own
// inverse.
template <typename T>
void swapStages(LayerTrace<T> &a, LayerTrace<T> &shared, LayerTrace<T> &stream, bool withoutQ)
{
    forStages(a, shared, [](Mat<T> &x, Mat<T> &y) { x.swap(y); }, withoutQ);
    a.output.swap(shared.output); // back, then with the stream's
    a.output.swap(stream.output);
}

template <typename T>
Status runForward(const Architecture &arch, const std::shared_ptr<const ModelWeights<T>> &weights,
                  const ForwardInput &in, int reuse, Trace<T> &out, const Trace<T> *source, int sourceReuse)
{
    const ModelWeights<T> &w = *weights;
    const int t = int(in.ids.size()), d = arch.dModel;
    const bool causal = arch.causal;
    if (t == 0)
        return Status::error(StatusCode::InvalidInput, "text: no tokens");
    if (t > arch.maxPositions)
        return Status::error(StatusCode::InvalidInput, "text: " + std::to_string(t) + " tokens, the model reads at most " +
                                                           std::to_string(arch.maxPositions));
    for (int id : in.ids)
        if (id < 0 || id >= w.tokens.rows())
            return Status::error(StatusCode::InvalidInput, "ids: " + std::to_string(id) + " is not in the vocabulary (0.." +
                                                               std::to_string(w.tokens.rows() - 1) + ")");
    // A weight rule other than the softmax is computed by computeAttention, whole (attendByRule).
    const bool general = !arch.weightRule.softmax();
    // The text's mask, t x t bytes (1 GB at 32,768 tokens): a trace that keeps no weights stores none
    // and its softmax forward applies causality itself, so it is built only for the user's masks.
    const bool maskless = !in.observe.weights && !in.keepScores && !general && causal && in.maskedCells.empty() &&
                          in.paddedKeys.empty();
    bool userMask = false;
    const BoolMat mask = maskless ? BoolMat() : textMask(in, causal, int(t), userMask);
    if (general && (arch.kvHeads != arch.heads || arch.qkNorm || arch.positions == PositionKind::Rotary ||
                    arch.attentionSoftcap > 0 || arch.slides()))
        return Status::error(StatusCode::InvalidInput, "attention: weights other than the softmax need plain multi-head "
                                                       "attention (no grouped-query heads, rotary positions, q/k norms, "
                                                       "soft-capping or sliding windows)");
    // rows [0, keep) kept from `out`, [keep, p) copied from `source`, [p, t) computed
    const bool editing = in.edits && !in.edits->empty();
    if (editing)
        if (Status st = checkEdits(*in.edits, arch.layers, arch.heads, d, arch.dHead, t); !st)
            return st;
    const int keep = causal && !general && !editing ? std::clamp(reuse, 0, t) : 0;
    // Edits over the unedited trace (TraceRequest::unedited): the layers before the first edited one are
    // its own, copied whole; in the others rows [0, p) are copied, p aligned down so that the computed
    // rows meet the products in the row blocks a whole forward gives them (uneditedRows)
    const bool over = editing && in.overUnedited && source && causal && !general;
    int firstLayer = 0;
    if (over) {
        firstLayer = arch.layers;
        for (const Intervention &e : *in.edits)
            firstLayer = std::min(firstLayer, e.layer);
    }
    const int p = over ? uneditedRows(std::clamp(sourceReuse, 0, t), t)
                       : causal && source && !editing ? std::clamp(sourceReuse, keep, t) : keep;
    const Trace<T> *from = p > keep || over ? source : nullptr;
    const int n = t - p;
    const Eigen::Index limit = std::min(arch.maxPositions, 1 << 20);
    auto sized = [&](Mat<T> &m, const Mat<T> *f, bool kept = true) { // (t, d), rows [0, p) in place
        sizeStage(m, f, t, d, keep, p, limit, out.room, kept);
    };

    // embeddings
    sized(out.embeddings, from ? &from->embeddings : nullptr);
    sized(out.input, from ? &from->input : nullptr);
    const T embeddingScale = T(arch.embeddingScale);
    for (int i = p; i < t; ++i) {
        out.embeddings.row(i) = w.tokens.row(in.ids[size_t(i)]).transpose();
        if (arch.embeddingScale != 1.0)
            out.input.row(i) = out.embeddings.row(i) * embeddingScale;
        else
            out.input.row(i) = out.embeddings.row(i);
        if (w.positions.rows())
            out.input.row(i) += w.positions.row(i);
        if (w.tokenTypes.rows())
            out.input.row(i) += w.tokenTypes.row(0);
    }
    if (arch.embeddingNorm)
        normRows(arch.norm, out.input, p, w.embeddingNorm, out.input);

    // rotary tables of rows [p, t): the global one, and the sliding layers' own where they have one
    std::vector<T> cosG, sinG, cosL, sinL;
    if (arch.positions == PositionKind::Rotary) {
        rotaryRows(arch.rope, p, t, cosG, sinG);
        if (arch.localRope)
            rotaryRows(arch.ropeLocal, p, t, cosL, sinL);
    }
    const NormPlacement placement = arch.placement;
    const bool pre = placement != NormPlacement::Post;
    const Activation act = arch.activation;
    out.layers.resize(w.layers.size());
    // The feed-forward's input and hidden layer for the computed rows only, (n, d) and (n, f): no
    // later stage reads them, so a keystroke's single row needs 15 KB here, not a fresh 1.9 MB (at
    // 128 tokens of GPT-2 small).
    Mat<T> hidden, gated, ffIn;
    ProjectionScratch<T> scratch;
    // What in.observe leaves out of a layer is left empty in the trace, as a device leaves it: the
    // stages of a layer not observed with its stages (computed in a spare layer: its output in one of
    // two, alternating, as a layer reads the output of the one before; the rest in one set), the
    // weights and their mean of a layer not observed at all (never stored; at 1,024 tokens of
    // SmolLM2, 13 MB and 26 MB a layer). k and v (the next token's keys) and the mask are kept in
    // every layer. With scores kept everything is (the kept rows' scores against new keys read q).
    // Observe::weights false: no layer's weights, their mean or mask are stored; every layer keeps q,
    // k, v and each row's log-sum-exp instead (AttentionTiles computes any weight from them), except a
    // layer whose weights come by a rule (no log-sum-exp).
    const bool pruning = !in.observe.everything() && !in.keepScores;
    out.observed = pruning ? in.observe : Observe();
    LayerTrace<T> spare[2];
    const Mat<T> *x = &out.input; // what the layer reads: the output of the one before
    // a window of rows (ForwardInput::rowsByLayer): resid_pre and resid_mid computed apart for the caller
    const std::function<void(int, bool, LayerTrace<float> &)> *byLayer = nullptr;
    if constexpr (std::is_same_v<T, float>)
        byLayer = in.rowsByLayer;
    const bool windowed = byLayer != nullptr;
    for (size_t l = 0; l < w.layers.size(); ++l) {
        if (cancelled(in.cancel))
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        if (in.progress)
            (*in.progress)(int(l), int(w.layers.size()));
        const LayerWeights<T> &b = w.layers[l];
        LayerTrace<T> &lt = out.layers[l];
        const bool kept = !pruning || (in.observe.stages && in.observe.layer(int(l)));
        const bool weightsKept = !pruning || (in.observe.weights && in.observe.layer(int(l)));
        const bool qKept = kept || (pruning && !in.observe.weights);
        if constexpr (std::is_same_v<T, float>)
            if (byLayer)
                (*byLayer)(int(l), false, lt);
        // A spare layer after a spare layer writes its output over the stream it reads (each row is read
        // before it is written: the residual adds in place), so that one stream serves every layer.
        const bool spareIn = !kept && !windowed && x == &spare[(l + 1) % 2].output;
        if (spareIn)
            spare[l % 2].output.swap(spare[(l + 1) % 2].output);
        if (!kept)
            swapStages(lt, spare[0], spare[l % 2], qKept);
        if (spareIn)
            x = &lt.output;
        const LayerTrace<T> *fl = from ? &from->layers[l] : nullptr;
        const int pl = int(l) < firstLayer ? t : p, nl = t - pl; // this layer's first computed row
        auto sizedL = [&](Mat<T> &m, const Mat<T> *f, bool kept = true) {
            sizeStage(m, f, t, d, keep, pl, limit, out.room, kept);
        };
        // A spare layer reads the stream where it is (a copy, resid_pre, only where an edit changes
        // it) and adds attention's output into resid_post's buffer (resid_mid there, in place).
        const bool preEdited = hasEdits(in, HookPoint::ResidPre, int(l));
        for (Mat<T> LayerTrace<T>::*m : {&LayerTrace<T>::residualIn, &LayerTrace<T>::attentionIn,
                                         &LayerTrace<T>::afterAttention, &LayerTrace<T>::output}) {
            const bool used = kept || windowed ||
                              (m == &LayerTrace<T>::residualIn ? preEdited : m != &LayerTrace<T>::afterAttention);
            if (used)
                sizedL(lt.*m, fl ? &(fl->*m) : nullptr, kept);
            else
                (lt.*m).resize(0, 0);
        }
        Mat<T> &mid = kept || windowed ? lt.afterAttention : lt.output;
        if (kept || preEdited || windowed) {
            lt.residualIn.middleRows(pl, nl) = x->middleRows(pl, nl);
            if (applyEdits(in, HookPoint::ResidPre, int(l), arch.dHead, lt.residualIn))
                x = &lt.residualIn; // the layer reads the edited stream; the one before keeps its output
        }
        if (pre)
            normRows(arch.norm, *x, pl, b.attnNorm, lt.attentionIn);
        else
            lt.attentionIn.middleRows(pl, nl) = x->middleRows(pl, nl);
        // this layer's mask: the user's cells and a sliding window narrower than the text
        const int window = arch.windowOf(int(l));
        const BoolMat layerMask = attnviz::layerMask(arch, mask, userMask, int(l), t);
        AttentionSpec<T> A;
        A.heads = arch.heads;
        A.kvHeads = arch.kvHeads;
        A.dHead = arch.dHead;
        A.scale = T(arch.scale());
        A.softcap = T(arch.attentionSoftcap);
        A.causal = causal;
        A.window = std::max(0, window);
        A.norm = arch.norm;
        if (arch.qkNorm) {
            A.qNorm = &b.qNorm;
            A.kNorm = &b.kNorm;
        }
        if (arch.positions == PositionKind::Rotary) {
            const bool local = arch.localRope && window > 0;
            A.cos = local ? &cosL : &cosG;
            A.sin = local ? &sinL : &sinG;
            A.ropeDims = arch.ropeOf(int(l)).dims;
        }
        const std::function<void(Mat<T> &)> editZ = [&](Mat<T> &z) { applyEdits(in, HookPoint::AttnZ, int(l), arch.dHead, z); };
        const bool zEdited = hasEdits(in, HookPoint::AttnZ, int(l));
        const std::optional<HalfRows::Kind> half = halfKept(b, pruning && !in.observe.weights && in.observe.sixteenBit && !kept);
        const bool byRule =
            general || (arch.weightRule.fullyMasked != FullyMaskedPolicy::Zero && anyRowFullyMasked(layerMask, causal));
        // The first edited layer over the unedited trace, its stream in unedited (no resid_pre edit): q,
        // k, v, the weights and the context are the ones that trace computed from the same rows in the
        // same blocks (the layers before are its own), copied whole instead of computed again; then
        // attend's last step, the same calls: the attn.hook_z edits and W_O's product of rows [pl, t).
        const bool attentionCopied = over && int(l) == firstLayer && fl && !preEdited && !byRule && kept && weightsKept &&
                                     !windowed && !in.keepScores && wholeAttention(fl->attention, t, arch.heads);
        if (attentionCopied) {
            lt.attention = fl->attention;
            if (zEdited) {
                SequenceResult<T> &sr = lt.attention.batch[0];
                editZ(sr.context);
                linearRows<T>(sr.context, pl, {projection(b, Proj::O, &sr.output)});
            }
        } else if (byRule) {
            const std::shared_ptr<const Projections<T>> P = b.projections().get(); // 16-bit ones widened
            if (Status st = attendByRule(arch, *P, lt.attentionIn, layerMask, in.keepScores, lt.attention); !st)
                return Status::error(st.code, "layer " + std::to_string(l) + ": " + st.message);
            if (zEdited) { // the output anew from the edited context
                SequenceResult<T> &sr = lt.attention.batch[0];
                editZ(sr.context);
                linearRows<T>(sr.context, 0, {{&P->o, &sr.output}});
            }
        } else {
            // a spare layer's input gives its storage to the context (read by no view)
            attend(b, A, lt.attentionIn, keep, pl, fl ? &fl->attention : nullptr, layerMask, in.keepScores, kept, qKept,
                   weightsKept, limit, out.room, scratch, lt.attention, zEdited ? &editZ : nullptr, over, half,
                   !kept && !windowed ? &lt.attentionIn : nullptr);
        }
        // weights by a rule have no log-sum-exp: only the stored ones (and their mask) say them
        const bool ruled = lt.attention.batch[0].lse.size() == 0;
        if (!layerMask.size() && causal)
            lt.attention.batch[0].mask = mask; // the views hatch the causal cells
        if (pruning && !in.observe.weights && !ruled) // a t x t mask a layer: AttentionTiles applies the spec
            lt.attention.batch[0].mask.resize(0, 0);
        lt.attention.causal = causal;
        lt.attention.window = A.window;
        const bool keepOutputs = in.keepHookOutputs && kept;
        if (keepOutputs) {
            sizedL(lt.attnOut, fl ? &fl->attnOut : nullptr);
            sizedL(lt.mlpOut, fl ? &fl->mlpOut : nullptr);
        } else {
            lt.attnOut.resize(0, 0);
            lt.mlpOut.resize(0, 0);
        }
        if (placement == NormPlacement::Sandwich) { // the residual adds attention's output normalized
            resizeKeep(ffIn, nl, d, 0);
            normRows(arch.norm, lt.attention.batch[0].output, pl, b.postAttnNorm, ffIn, 0);
            applyEdits(in, HookPoint::AttnOut, int(l), arch.dHead, ffIn, pl);
            if (keepOutputs)
                lt.attnOut.middleRows(pl, nl) = ffIn;
            mid.middleRows(pl, nl) = x->middleRows(pl, nl) + ffIn;
        } else {
            applyEdits(in, HookPoint::AttnOut, int(l), arch.dHead, lt.attention.batch[0].output);
            if (keepOutputs)
                lt.attnOut.middleRows(pl, nl) = lt.attention.batch[0].output.middleRows(pl, nl);
            mid.middleRows(pl, nl) = x->middleRows(pl, nl) + lt.attention.batch[0].output.middleRows(pl, nl);
        }
        if (half && !windowed) // W_O's output, in q's float rows (attend), is in the stream now
            lt.attention.batch[0].output.resize(0, 0);
        if (!pre)
            normRows(arch.norm, mid, pl, b.attnNorm, mid);
        applyEdits(in, HookPoint::ResidMid, int(l), arch.dHead, mid);
        if (cancelled(in.cancel)) // a layer's feed-forward is two thirds of its work: not begun once stopped
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        const bool keepMlp = in.keepMlp && b.gate.W.size() && kept;
        if (keepMlp) { // the products kept before the activation
            for (Mat<T> LayerTrace<T>::*m : {&LayerTrace<T>::mlpPre, &LayerTrace<T>::mlpPreLinear}) {
                growStage(lt.*m, t, b.up.W.rows(), keep, limit, out.room);
                if (fl)
                    copyRows(lt.*m, fl->*m, keep, pl);
            }
        }
        // The feed-forward in blocks of rows (each row its own: the same numbers), so that its hidden
        // rows take 16 MB at most, not (t, d_ff) twice (512 MB at 8,192 tokens of Llama-3.2-1B); in
        // one block where an edit of mlp_out may read every row.
        const int ffRows = hasEdits(in, HookPoint::MlpOut, int(l))
                               ? nl
                               : std::max(256, int((size_t(16) << 20) / (sizeof(T) * size_t(b.up.W.rows()))) / 64 * 64);
        for (int c0 = pl; c0 < t; c0 += ffRows) {
            const int cn = std::min(ffRows, t - c0);
            resizeKeep(ffIn, cn, d, 0);
            if (pre) {
                for (int i = 0; i < cn; ++i)
                    normRow(arch.norm, mid.row(c0 + i), b.ffnNorm, ffIn.row(i));
            } else {
                ffIn = mid.middleRows(c0, cn);
            }
            resizeKeep(hidden, cn, b.up.W.rows(), 0);
            if (keepMlp) { // activated here, after they are kept
                resizeKeep(gated, cn, b.gate.W.rows(), 0);
                linearRows<T>(ffIn, 0, {{&b.gate, &gated}, {&b.up, &hidden}});
                lt.mlpPre.middleRows(c0, cn) = gated;
                lt.mlpPreLinear.middleRows(c0, cn) = hidden;
                activate<T>(gated.block(0, 0, cn, gated.cols()), act);
                hidden.array() *= gated.array();
            } else if (b.gate.W.size()) {
                resizeKeep(gated, cn, b.gate.W.rows(), 0);
                linearRows<T>(ffIn, 0, {{&b.gate, &gated, &act}, {&b.up, &hidden}});
                hidden.array() *= gated.array();
            } else {
                linearRows<T>(ffIn, 0, {{&b.up, &hidden, &act}});
            }
            linearRows<T>(hidden, 0, {{&b.down, &ffIn}}); // ffIn is free again: the second layer's rows
            if (placement == NormPlacement::Sandwich)
                normRows(arch.norm, ffIn, 0, b.postFfnNorm, ffIn);
            applyEdits(in, HookPoint::MlpOut, int(l), arch.dHead, ffIn, c0);
            if (keepOutputs)
                lt.mlpOut.middleRows(c0, cn) = ffIn;
            lt.output.middleRows(c0, cn) = ffIn + mid.middleRows(c0, cn);
        }
        if (!pre)
            normRows(arch.norm, lt.output, pl, b.ffnNorm, lt.output);
        applyEdits(in, HookPoint::ResidPost, int(l), arch.dHead, lt.output);
        if (!keepMlp) {
            lt.mlpPre.resize(0, 0);
            lt.mlpPreLinear.resize(0, 0);
        }
        lt.keyIn.resize(0, 0);
        lt.projections = b.projections();
        x = &lt.output;
        if constexpr (std::is_same_v<T, float>)
            if (byLayer)
                (*byLayer)(int(l), true, lt);
        if (!kept) { // the spare takes its buffers back; the trace keeps none of this layer's stages
            swapStages(lt, spare[0], spare[l % 2], qKept);
            x = &spare[l % 2].output;
            forStages(lt, lt, [](Mat<T> &m, Mat<T> &) { m.resize(0, 0); }, qKept);
        }
        if (!weightsKept && !(ruled && in.observe.layer(int(l)))) { // nor the weights the rule-based path stored
            lt.attention.batch[0].weights.clear();
            lt.attention.batch[0].weightsAvg.clear();
        }
    }
    // the spare layers' buffers given back before the final rows are sized, but the stream they read
    Mat<T> spareOut;
    for (LayerTrace<T> &sp : spare)
        if (x == &sp.output) {
            spareOut.swap(sp.output);
            x = &spareOut;
        }
    spare[0] = LayerTrace<T>();
    spare[1] = LayerTrace<T>();
    const Mat<T> &last = *x;
    sized(out.final, from ? &from->final : nullptr);
    if (arch.finalNorm)
        normRows(arch.norm, last, p, w.finalNorm, out.final);
    else
        out.final.middleRows(p, n) = last.middleRows(p, n);
    if (cancelled(in.cancel))
        return Status::error(StatusCode::Cancelled, "trace cancelled");
    if (in.progress)
        (*in.progress)(int(w.layers.size()), int(w.layers.size()));

    // predictions
    Predictions &pr = out.predictions;
    pr.masked.clear();
    pr.topK = std::min(in.topK, int(w.outputEmbedding().rows()));
    if (arch.head == LmHead::CausalLm) {
        // The last position always; every one only when asked (Predictions::next). A position before
        // p keeps what it had (or what `source` had), except that the one before the first new token
        // has another token after it: its probability comes anew from its normalizer.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        pr.next.resize(size_t(t));
        pr.actualNext.resize(size_t(t), nan);
        pr.logNormalizer.resize(size_t(t), nan);
        if (from)
            for (int i = std::max(0, keep - 1); i < p; ++i)
                pr.set(size_t(i), from->predictions.at(size_t(i)));
        for (int i = p; i < t; ++i) {
            pr.next[size_t(i)].clear();
            pr.actualNext[size_t(i)] = nan;
            pr.logNormalizer[size_t(i)] = nan;
        }
        if (p > 0) {
            const size_t i = size_t(p - 1);
            if (pr.next[i].empty() || std::isnan(pr.logNormalizer[i])) {
                pr.next[i].clear();
                pr.actualNext[i] = nan;
            } else {
                pr.actualNext[i] = p < t ? std::exp(double(nextLogit(arch, w, out.final, p - 1, in.ids[i + 1])) -
                                                    pr.logNormalizer[i])
                                         : nan;
            }
        }
        std::vector<int> at;
        for (int i = 0; i < t && in.lmHead; ++i)
            if ((i == t - 1 || in.allPredictions) && pr.next[size_t(i)].empty())
                at.push_back(i);
        std::vector<NextTokens> next;
        predictNext(arch, w, out.final, in.ids, at, in.topK, next);
        for (size_t k = 0; k < at.size(); ++k)
            pr.set(size_t(at[k]), std::move(next[k]));
    } else {
        pr.next.clear();
        pr.actualNext.clear();
        pr.logNormalizer.clear();
        maskedPredictions(arch, w, in, out.final, pr);
    }
    return {};
}

template <typename T>
bool stackedCellsCover(const Architecture &arch, const ModelWeights<T> &w, int t)
{
    if (!arch.causal || arch.encoderDecoder || !arch.weightRule.softmax() || arch.kvGroup() != 1 || arch.qkNorm ||
        arch.positions == PositionKind::Rotary || arch.positions == PositionKind::RelativeBuckets ||
        arch.attentionSoftcap > 0 || arch.slides() || t <= kFewRows || t % 8 != 0 || t > arch.maxPositions)
        return false;
    for (const LayerWeights<T> &b : w.layers)
        if (b.packed || !b.attn || b.up.W.packed() || b.down.W.packed() || (b.gate.W.size() && b.gate.W.packed()))
            return false;
    return true;
}

// The passes of runForward from `layer` on, for every cell at once: rows [c s, c s + t) of each stacked
// matrix are cell c's (s = t rounded up to 16, so that each row lies at the same alignment as row i of
// a trace's own matrix: the vectorised sums of a norm start alike; the padding rows are computed and
// never read). Layer `layer` starts from the given contexts (its attention before W_O is the base's,
// and the edit replaces it there); the later layers attend per cell, in runForward's row blocks.
template <typename T>
Status stackedCells(const Architecture &arch, const ModelWeights<T> &w, const Trace<T> &base, int layer,
                    const std::vector<Mat<T>> &contexts, Mat<T> &lastRows, const std::atomic<bool> *cancel)
{
    const int t = int(base.tokens.size()), d = arch.dModel, cells = int(contexts.size());
    const int layers = int(w.layers.size()), heads = arch.heads, dh = arch.dHead, width = heads * dh;
    if (!stackedCellsCover(arch, w, t) || layer < 0 || layer >= layers || base.numLayers() != layers)
        return Status::error(StatusCode::InvalidInput, "stacked cells: not a forward they cover");
    const Mat<T> &x0 = layer == 0 ? base.input : base.layers[size_t(layer - 1)].output;
    if (x0.rows() != t || x0.cols() != d)
        return Status::error(StatusCode::InvalidInput, "stacked cells: the base trace keeps no stream before layer " +
                                                           std::to_string(layer));
    for (const Mat<T> &c : contexts)
        if (c.rows() != t || c.cols() != width)
            return Status::error(StatusCode::InvalidInput, "stacked cells: a context is not (tokens, heads x d_head)");
    const int stride = (t + 15) / 16 * 16, rows = cells * stride;
    const bool pre = arch.placement != NormPlacement::Post, sandwich = arch.placement == NormPlacement::Sandwich;
    const Activation act = arch.activation;
    const T scale = T(arch.scale());
    Mat<T> x = Mat<T>::Zero(rows, d), ctx = Mat<T>::Zero(rows, width), a, q, k, v, out, mid, ffIn, hidden, gated;
    for (int c = 0; c < cells; ++c) {
        x.middleRows(Eigen::Index(c) * stride, t) = x0;
        ctx.middleRows(Eigen::Index(c) * stride, t) = contexts[size_t(c)];
    }
    const int per = attentionRows(t), blocks = (t + per - 1) / per;
    for (int l = layer; l < layers; ++l) {
        if (cancelled(cancel))
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        const LayerWeights<T> &b = w.layers[size_t(l)];
        if (l > layer) { // attend's plain path: q, k, v stacked, the softmax per cell and block of rows
            if (pre) {
                a.resize(rows, d);
                normRows(arch.norm, x, 0, b.attnNorm, a);
            }
            const Mat<T> &in = pre ? a : x;
            for (Mat<T> *m : {&q, &k, &v})
                m->resize(rows, width);
            linearRows<T>(in, 0, {projection(b, Proj::Q, &q), projection(b, Proj::K, &k), projection(b, Proj::V, &v)});
            parallelFor(cells * blocks, 2.0 * cells * double(t) * t * width, [&](int task) {
                const int c = task / blocks, r0 = (task % blocks) * per, rn = std::min(r0 + per, t) - r0, keys = r0 + rn;
                const Eigen::Index o = Eigen::Index(c) * stride;
                thread_local Mat<T> seen;
                seen.resize(rn, keys);
                for (int h = 0; h < heads; ++h) {
                    scoreBlock(scale, q, o + r0, rn, Eigen::Index(h) * dh, k, o, keys, Eigen::Index(h) * dh, dh, seen);
                    for (int i = r0; i < r0 + rn; ++i)
                        maskedSoftmax(seen.row(i - r0), i + 1, nullptr);
                    ctx.block(o + r0, h * dh, rn, dh).noalias() = seen * v.block(o, h * dh, keys, dh);
                }
            });
        }
        out.resize(rows, projection<T>(b, Proj::O, nullptr).rows());
        linearRows<T>(ctx, 0, {projection(b, Proj::O, &out)});
        if (sandwich) {
            ffIn.resize(rows, d);
            normRows(arch.norm, out, 0, b.postAttnNorm, ffIn);
            mid = x + ffIn;
        } else {
            mid = x + out;
        }
        if (!pre)
            normRows(arch.norm, mid, 0, b.attnNorm, mid);
        if (pre) {
            ffIn.resize(rows, d);
            normRows(arch.norm, mid, 0, b.ffnNorm, ffIn);
        } else {
            ffIn = mid;
        }
        hidden.resize(rows, b.up.W.rows());
        if (b.gate.W.size()) {
            gated.resize(rows, b.gate.W.rows());
            linearRows<T>(ffIn, 0, {{&b.gate, &gated, &act}, {&b.up, &hidden}});
            hidden.array() *= gated.array();
        } else {
            linearRows<T>(ffIn, 0, {{&b.up, &hidden, &act}});
        }
        linearRows<T>(hidden, 0, {{&b.down, &ffIn}});
        if (sandwich)
            normRows(arch.norm, ffIn, 0, b.postFfnNorm, ffIn);
        x = ffIn + mid;
        if (!pre)
            normRows(arch.norm, x, 0, b.ffnNorm, x);
    }
    if (cancelled(cancel))
        return Status::error(StatusCode::Cancelled, "trace cancelled");
    lastRows.resize(cells, d);
    for (int c = 0; c < cells; ++c) {
        const Eigen::Index i = Eigen::Index(c) * stride + t - 1;
        if (arch.finalNorm)
            normRow(arch.norm, x.row(i), w.finalNorm, lastRows.row(c));
        else
            lastRows.row(c) = x.row(i);
    }
    return {};
}

template void predictNext<float>(const Architecture &, const ModelWeights<float> &, const Mat<float> &,
                                  const std::vector<int> &, const std::vector<int> &, int, std::vector<NextTokens> &);
template void predictNext<double>(const Architecture &, const ModelWeights<double> &, const Mat<double> &,
                                   const std::vector<int> &, const std::vector<int> &, int, std::vector<NextTokens> &);
template void rotaryRows<float>(const Rope &, int, int, std::vector<float> &, std::vector<float> &);
template void rotaryRows<double>(const Rope &, int, int, std::vector<double> &, std::vector<double> &);
template void maskedPredictions<float>(const Architecture &, const ModelWeights<float> &, const ForwardInput &,
                                      const Mat<float> &, Predictions &);
template void maskedPredictions<double>(const Architecture &, const ModelWeights<double> &, const ForwardInput &,
                                       const Mat<double> &, Predictions &);
template Status runForward<float>(const Architecture &, const std::shared_ptr<const ModelWeights<float>> &,
                                  const ForwardInput &, int, Trace<float> &, const Trace<float> *, int);
template Status runForward<double>(const Architecture &, const std::shared_ptr<const ModelWeights<double>> &,
                                   const ForwardInput &, int, Trace<double> &, const Trace<double> *, int);

template bool stackedCellsCover<float>(const Architecture &, const ModelWeights<float> &, int);
template bool stackedCellsCover<double>(const Architecture &, const ModelWeights<double> &, int);
template Status stackedCells<float>(const Architecture &, const ModelWeights<float> &, const Trace<float> &, int,
                                    const std::vector<Mat<float>> &, Mat<float> &, const std::atomic<bool> *);
template Status stackedCells<double>(const Architecture &, const ModelWeights<double> &, const Trace<double> &, int,
                                     const std::vector<Mat<double>> &, Mat<double> &, const std::atomic<bool> *);

} // namespace attnviz
