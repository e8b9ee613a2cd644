// SPDX-License-Identifier: GPL-3.0-or-later
// Value types of the attnviz core: configuration in, every stage out.
// Plain C++17 + Eigen, no Qt. All matrices are row-major (a row is a token).
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <optional>
#include <string>
#include <vector>

namespace attnviz {

template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
using BoolMat = Eigen::Matrix<uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Memory handed out without being written first (std::vector<T, ...> of floats that are computed
// into right after resize: no pass of zeros over half a gigabyte of weights).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <typename U>
    UninitializedAllocator(const UninitializedAllocator<U> &) noexcept
    {
    }
    template <typename U>
    void construct(U *p) noexcept(std::is_nothrow_default_constructible_v<U>)
    {
        ::new (static_cast<void *>(p)) U;
    }
    template <typename U, typename... A>
    void construct(U *p, A &&...a)
    {
        ::new (static_cast<void *>(p)) U(std::forward<A>(a)...);
    }
};

// One head's attention weights (t_q, t_k), or their mean over heads. A causal trace stores only what
// each query can see: row i holds keys 0 .. i, row after row (the lower triangle, packed): half of a
// t x t matrix, and a trace one token longer appends a row without moving the others ("lower"; square
// only). Everything else is stored whole, row-major. Reading sees a whole matrix: a cell that is not
// stored is 0, the weight of a masked key. Where a whole Eigen matrix is needed, toDense() (or the
// conversion to Mat<T>) makes one: a copy, t x t.
template <typename T>
class WeightMatrix {
public:
    using Index = Eigen::Index;
    using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;

    WeightMatrix() = default;
    WeightMatrix(const Mat<T> &m) { *this = m; } // a whole matrix (implicit: every Mat is one)
    WeightMatrix &operator=(const Mat<T> &m)
    {
        resize(m.rows(), m.cols());
        std::copy(m.data(), m.data() + m.size(), m_data.begin());
        return *this;
    }

    Index rows() const { return m_rows; }
    Index cols() const { return m_cols; }
    Index size() const { return m_rows * m_cols; } // of the whole matrix it stands for
    bool lower() const { return m_lower; }
    // Keys stored for query i, from key 0; the rest of the row is 0.
    Index stored(Index i) const { return m_lower ? i + 1 : m_cols; }
    const T *rowData(Index i) const { return m_data.data() + offset(i); }
    T *rowData(Index i) { return m_data.data() + offset(i); }
    Eigen::Map<const Row> storedRow(Index i) const { return {rowData(i), stored(i)}; }
    Eigen::Map<Row> storedRow(Index i) { return {rowData(i), stored(i)}; }
    T operator()(Index i, Index j) const { return j < stored(i) ? m_data[size_t(offset(i) + j)] : T(0); }
    Row row(Index i) const
    {
        Row r = Row::Zero(m_cols);
        r.head(stored(i)) = storedRow(i);
        return r;
    }
    Mat<T> toDense() const
    {
        if (!m_lower)
            return dense();
        Mat<T> m = Mat<T>::Zero(m_rows, m_cols);
        for (Index i = 0; i < m_rows; ++i)
            m.row(i).head(i + 1) = storedRow(i);
        return m;
    }
    operator Mat<T>() const { return toDense(); }
    template <typename U>
    Mat<U> cast() const
    {
        return toDense().template cast<U>();
    }
    // A whole (not lower) matrix as an Eigen matrix, to compute into or read in place.
    Eigen::Map<Mat<T>> dense()
    {
        assert(!m_lower);
        return {m_data.data(), m_rows, m_cols};
    }
    Eigen::Map<const Mat<T>> dense() const
    {
        assert(!m_lower);
        return {m_data.data(), m_rows, m_cols};
    }
    // The stored values, row after row (storedSize() of them).
    T *data() { return m_data.data(); }
    const T *data() const { return m_data.data(); }
    Index storedSize() const { return Index(m_data.size()); }

    // Sizes it (lower: rows == cols). The stored values before the new end are kept where the layout
    // does not change (a lower matrix that grows keeps its rows); new ones are not initialized. A
    // fresh matrix takes exactly its size. A lower one that grows past its block moves to one with
    // room for kRoomRows more rows: typing moves it once in that many tokens, to a block only a little
    // larger than the one it leaves, so that the next matrix to grow reuses the blocks freed before
    // it. (Doubling, as std::vector grows, leaves freed blocks too small for the next matrix, and the
    // process keeps them: a 1,024-token trace that grows by a token would hold 1.3 times its memory.)
    void resize(Index rows, Index cols, bool lower = false)
    {
        assert(!lower || rows == cols);
        if (lower != m_lower || (!lower && cols != m_cols))
            m_data.clear();
        m_rows = rows;
        m_cols = cols;
        m_lower = lower;
        const size_t n = size_t(lower ? rows * (rows + 1) / 2 : rows * cols);
        if (lower && !m_data.empty() && n > m_data.capacity())
            m_data.reserve(size_t((rows + kRoomRows) * (rows + kRoomRows + 1) / 2));
        m_data.resize(n);
    }
    static constexpr Index kRoomRows = 32;
    void setZero() { std::fill(m_data.begin(), m_data.end(), T(0)); }
    void clear() { resize(0, 0); }
    void swap(WeightMatrix &o) noexcept
    {
        std::swap(m_rows, o.m_rows);
        std::swap(m_cols, o.m_cols);
        std::swap(m_lower, o.m_lower);
        m_data.swap(o.m_data);
    }
    // The same values (whatever the layout).
    bool operator==(const WeightMatrix &o) const
    {
        if (m_rows != o.m_rows || m_cols != o.m_cols)
            return false;
        if (m_lower == o.m_lower)
            return m_data == o.m_data;
        for (Index i = 0; i < m_rows; ++i)
            for (Index j = 0; j < m_cols; ++j)
                if ((*this)(i, j) != o(i, j))
                    return false;
        return true;
    }
    bool operator!=(const WeightMatrix &o) const { return !(*this == o); }

private:
    Index offset(Index i) const { return m_lower ? i * (i + 1) / 2 : i * m_cols; }

    Index m_rows = 0, m_cols = 0;
    bool m_lower = false;
    std::vector<T, UninitializedAllocator<T>> m_data;
};

// How the factor multiplied onto q·k is chosen.
enum class ScaleRule {
    InvSqrtDHead,  // 1/sqrt(d_head)           (torch, Vaswani et al.)
    InvSqrtDModel, // 1/sqrt(d_model)          (seed 000's notebook)
    None,          // 1                        (seed 001's first example)
    Temperature,   // 1/(T * sqrt(d_head))
    Explicit,      // the number in AttentionConfig::explicitScale (case files)
};

// How a row of scores becomes a row of weights.
enum class Normalization {
    Softmax, // exp / sum exp, numerically stable (max subtracted)
    Sum,     // s / sum s over the unmasked keys (seed 001), no exponentials
    Cosine,  // weights are cos(q_i, k_j) themselves (seed 003), not normalized
};

// How masked keys are removed under softmax (seed 001 shows both).
enum class MaskMethod {
    NegInf,              // masked scores set to -inf before softmax
    MultiplyRenormalize, // softmax over all keys, zero the masked, divide by row sum
};

// What a query row gets when every one of its keys is masked.
enum class FullyMaskedPolicy {
    NaN,     // as torch 1.13 nn.MultiheadAttention: the weight row and its output row are NaN
    Zero,    // weights 0: context row 0, output row = b_o
    Uniform, // ignore the mask for that row: uniform weights over all keys
};

enum class MaskKind { None, Causal, KeyPadding, Custom, CausalKeyPadding };

// Which of torch's Bernoulli streams dropout reproduces after torch.manual_seed(dropoutSeed).
enum class DropoutStream {
    TorchMkl, // released PyTorch builds (MKL): the numbers the seed notebooks print
    TorchCpu, // builds without MKL (Debian's python3-torch): Mersenne Twister doubles
};

// A dense layer in the torch.nn.Linear convention: y = x W^T + b, W is (out, in).
// An empty W means identity (then `in` must equal `out`); an empty b means no bias.
template <typename T>
struct Linear {
    Mat<T> W;
    Vec<T> b;
    bool isIdentity() const { return W.size() == 0; }
    bool hasBias() const { return b.size() != 0; }
};

template <typename T>
struct Projections {
    Linear<T> q, k, v, o;
};

struct AttentionConfig {
    int numHeads = 1;
    int dHead = 0; // 0: d_model / numHeads (must divide). Free width otherwise.
    ScaleRule scaleRule = ScaleRule::InvSqrtDHead;
    double temperature = 1.0;   // ScaleRule::Temperature
    double explicitScale = 1.0; // ScaleRule::Explicit
    Normalization normalization = Normalization::Softmax;
    MaskMethod maskMethod = MaskMethod::NegInf;
    bool causal = false; // adds a top-left aligned causal mask (key j > query i masked)
    FullyMaskedPolicy fullyMasked = FullyMaskedPolicy::NaN;
    double dropout = 0.0;         // on the weights, inverted scaling 1/(1-p); 0 = off
    uint64_t dropoutSeed = 0;     // torch.manual_seed-compatible (see torchrng.h)
    DropoutStream dropoutStream = DropoutStream::TorchMkl;
    bool keepScores = true;       // keep the (B,H,t_q,t_k) scores; off saves t^2*h memory
    // GPU backends: the heads whose scores/weights are read back (e.g. the displayed ones when t is
    // large), -1 for weightsAvg; empty = everything. What is not listed is left empty (0 x 0).
    // The CPU core ignores it.
    std::vector<int> readbackHeads;
};

// One sequence of the batch. For self-attention key/value may be left empty
// (then they are the query). Rows are tokens.
template <typename T>
struct SequenceInput {
    Mat<T> query;
    Mat<T> key;   // empty: = query
    Mat<T> value; // empty: = key
    std::vector<uint8_t> keyPadding; // size t_k or empty; 1 = padded (masked out)
};

template <typename T>
struct AttentionInput {
    std::vector<SequenceInput<T>> batch;
    BoolMat attnMask; // (t_q, t_k) shared by batch and heads, 1 = masked; empty = none
    Projections<T> proj;
};

// A (rows, cols) row-major matrix kept in 16 bits, the model's own BF16 or F16: a long text's q, k or v
// (SequenceResult::q16). Each value is exactly the float the forward computed with (it rounded them
// before using them), so widening gives that float back.
struct HalfRows {
    enum class Kind : uint8_t { BF16, F16 };
    Kind kind = Kind::BF16;
    Eigen::Index rows = 0, cols = 0;
    std::vector<uint16_t> bits;
    bool empty() const { return rows == 0; }
    size_t bytes() const { return bits.size() * sizeof(uint16_t); }
    void clear()
    {
        rows = cols = 0;
        std::vector<uint16_t>().swap(bits);
    }
    static float widen(Kind kind, uint16_t b)
    {
        if (kind == Kind::F16)
            return float(Eigen::numext::bit_cast<Eigen::half>(b));
        return float(Eigen::numext::bit_cast<Eigen::bfloat16>(b));
    }
    static uint16_t narrow(Kind kind, float v) // to nearest even
    {
        if (kind == Kind::F16)
            return Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
        return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(v));
    }
    // v rounded to this precision, as a float
    static float rounded(Kind kind, float v) { return widen(kind, narrow(kind, v)); }
    // Rows [r0, r0 + n) x columns [c0, c0 + cn) widened into `out` (resized n x cn).
    template <typename T>
    void widen(Eigen::Index r0, Eigen::Index n, Eigen::Index c0, Eigen::Index cn, Mat<T> &out) const
    {
        out.resize(n, cn);
        for (Eigen::Index r = 0; r < n; ++r) {
            const uint16_t *src = bits.data() + size_t(r0 + r) * size_t(cols) + size_t(c0);
            T *dst = out.data() + r * cn;
            for (Eigen::Index c = 0; c < cn; ++c)
                dst[c] = T(widen(kind, src[c]));
        }
    }
    // The whole matrix widened.
    template <typename T>
    Mat<T> widened() const
    {
        Mat<T> out;
        widen(0, rows, 0, cols, out);
        return out;
    }
    // `m` narrowed into this (its values already rounded to `k`: exact).
    template <typename T>
    void assign(Kind k, const Mat<T> &m)
    {
        kind = k;
        rows = m.rows();
        cols = m.cols();
        bits.resize(size_t(m.size()));
        for (Eigen::Index i = 0; i < m.size(); ++i)
            bits[size_t(i)] = narrow(k, float(m.data()[i]));
    }
};

// `m`, or where it is empty and `half` holds it in 16 bits, `half` widened into `scratch`: a reader of
// a long text's whole q, k or v (one layer's, for the time it reads).
template <typename T>
const Mat<T> &widenedOr(const Mat<T> &m, const HalfRows &half, Mat<T> &scratch)
{
    if (m.size() || half.empty())
        return m;
    scratch = half.template widened<T>();
    return scratch;
}

// Every stage of one sequence. Per-head matrices are stored head after head.
template <typename T>
struct SequenceResult {
    Mat<T> q, k, v;               // projected, (t_q, H*d_head), (t_k, H*d_head), (t_k, H*d_head): what the
                                  // scores and the context are computed from. Grouped-query attention:
                                  // k and v of a key/value head repeated for each query head it serves;
                                  // where a model's trace leaves a layer's stages out (Observe), only
                                  // the key/value heads' own, (t_k, KV*d_head), which the next token reads
    // A long text's q, k and v in 16 bits, q, k and v then empty: a trace that keeps neither the weights
    // nor the layer's stages of a model whose weights are 16-bit (BF16, F16) rounds them to that type
    // right after projection and rotation, computes its attention from them, and keeps them so
    // (compact k and v). Readers go through widenedOr or widen the rows they need. Empty otherwise.
    HalfRows q16, k16, v16;
    Mat<T> qPre, kPre;            // q and k as projected, before q/k norm and rotary positions
                                  // (TransformerLens' hook_q / hook_k beside hook_rot_q / hook_rot_k);
                                  // empty where q and k are used as projected
    std::vector<Mat<T>> scores;   // per head (t_q, t_k): scale * q_h k_h^T, BEFORE masking
    std::vector<WeightMatrix<T>> weights; // per head (t_q, t_k): normalized (after dropout if any); a
                                          // causal trace of a model stores them lower
    std::vector<Mat<T>> weightsPreDropout; // only when dropout > 0
    WeightMatrix<T> weightsAvg;   // (t_q, t_k): mean over heads
    // (t_q, H): per query row and head, the log of the softmax's sum over the keys it sees, of the
    // scores as they enter the softmax (scaled, soft-capped, masked): weight (i, j) of head h is
    // exp(s_ij - lse(i, h)), so any weight is exact from q, k and this alone (AttentionTiles).
    // -inf where every key of the row is masked. Kept by the real checkpoints' softmax forward;
    // empty where weights come from another rule (Sum, Cosine, dropout, computeAttention).
    Mat<T> lse;
    Mat<T> context;               // (t_q, H*d_head): heads concatenated
    Mat<T> output;                // (t_q, d_out): context W_o^T + b_o
    BoolMat mask;                 // (t_q, t_k) effective mask (attn OR causal OR padding); empty = none
    std::vector<int> fullyMaskedRows; // query rows whose every key is masked
    std::vector<int> degenerateRows;  // Sum normalization: row sum was 0 (weights NaN/Inf)
};

template <typename T>
struct AttentionResult {
    std::vector<SequenceResult<T>> batch;
    int numHeads = 0;
    int dHead = 0;
    int dModel = 0; // query input width
    int dOut = 0;
    double scale = 1.0; // the factor that was multiplied onto q·k
    int kvHeads = 0;    // key/value heads (grouped-query attention); 0: one per query head
    double softcap = 0; // scores soft-capped as tanh(s / c) * c before the mask (Gemma 2); 0: none
    bool causal = false; // key j > query i masked (real checkpoints' forward; the mask says it too)
    int window = 0;      // sliding window: key j seen by query i only when i - window < j; 0: none
    int kvHeadOf(int head) const { return kvHeads > 0 && kvHeads < numHeads ? head / (numHeads / kvHeads) : head; }
};

// Shapes and options that were resolved from a config and an input.
struct ResolvedShape {
    int batch = 0, tq = 0, tk = 0;
    int dModel = 0, kdim = 0, vdim = 0;
    int numHeads = 0, dHead = 0, dInner = 0, dOut = 0;
    double scale = 1.0;
};

// Problems found before computing anything.
struct ValidationError {
    std::string field;   // e.g. "num_heads", "inputs.W_q"
    std::string message; // one line, names the field
};

} // namespace attnviz
