// SPDX-License-Identifier: GPL-3.0-or-later
// Reference attention on the CPU. Shapes (one sequence of the batch):
//   query X_q (t_q, d_model), key X_k (t_k, kdim), value X_v (t_k, vdim)
//   q = X_q W_q^T + b_q (t_q, H*dh)   k = X_k W_k^T + b_k (t_k, H*dh)   v = X_v W_v^T + b_v (t_k, H*dh)
//   scores_h (t_q, t_k)   weights_h (t_q, t_k)   context (t_q, H*dh)   output (t_q, d_out)
// Passes: 1 projections, 2 mask, 3 per block of query rows and per head: scores -> normalize ->
// dropout -> context, adding the block's weights into the head mean while they are in cache, 4 W_o.
// Parallel tasks (parallel.h, a blocking pool): projections by tiles (linear.h); pass 3 by blocks of
// query rows, small enough that every thread gets several, so one head of a long text also spreads
// over the cores. Heads are read in place from q, k, v (column blocks), never copied.
#include "attnviz/attention.h"
#include "attentionkernels.h"
#include "attnviz/linear.h"
#include "attnviz/parallel.h"
#include "attnviz/torchrng.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

namespace attnviz {

const char *toString(StatusCode code)
{
    switch (code) {
    case StatusCode::Ok: return "ok";
    case StatusCode::InvalidInput: return "invalid input";
    case StatusCode::NonFinite: return "non-finite value";
    case StatusCode::ParseError: return "parse error";
    case StatusCode::IoError: return "i/o error";
    case StatusCode::Cancelled: return "cancelled";
    case StatusCode::Unavailable: return "unavailable";
    case StatusCode::BackendFailed: return "backend failed";
    }
    return "?";
}

namespace {

std::string shapeStr(Eigen::Index r, Eigen::Index c)
{
    std::ostringstream s;
    s << "(" << r << ", " << c << ")";
    return s.str();
}

// NaN or Inf anywhere makes x * 0 NaN, and so the sum. Eigen's allFinite() branches per entry and
// took 35 ms on a 4096 x 768 input, paid three times on every compute; this sum is vectorized.
template <typename Derived>
bool finite(const Eigen::DenseBase<Derived> &m)
{
    using T = typename Derived::Scalar;
    return (m.derived().array() * T(0)).sum() == T(0);
}

// Which inputs and weights of a call hold only finite values, found as one parallel loop over
// chunks of all of them (each distinct matrix once: self-attention's key and value are its query).
// Why: the weights alone are 2.4 M floats a layer at d 768, read from memory on every call, and the
// pool's other threads waited on that serial pass (~3 % of a 12-layer stack at 128 tokens).
template <typename T>
class FiniteFlags {
public:
    // Returns the index of m's flag (the same for the same storage).
    template <typename M>
    size_t add(const M &m)
    {
        for (size_t i = 0; i < m_spans.size(); ++i)
            if (m_spans[i].first == m.data() && m_spans[i].second == m.size())
                return i;
        m_spans.emplace_back(m.data(), m.size());
        return m_spans.size() - 1;
    }

    void run()
    {
        using Span = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
        m_ok.assign(m_spans.size(), 1);
        Eigen::Index total = 0;
        for (const auto &sp : m_spans)
            total += sp.second;
        if (total < (Eigen::Index(1) << 17)) { // a short text: one thread, no chunk lists
            for (size_t i = 0; i < m_spans.size(); ++i)
                m_ok[i] = finite(Span(m_spans[i].first, m_spans[i].second)) ? 1 : 0;
            return;
        }
        constexpr Eigen::Index kChunk = 1 << 15;
        struct Chunk {
            size_t span;
            Eigen::Index begin, n;
        };
        std::vector<Chunk> chunks;
        double floats = 0;
        for (size_t i = 0; i < m_spans.size(); ++i) {
            for (Eigen::Index b = 0; b < m_spans[i].second; b += kChunk)
                chunks.push_back({i, b, std::min(kChunk, m_spans[i].second - b)});
            floats += double(m_spans[i].second);
        }
        std::vector<uint8_t> chunkOk(chunks.size(), 1);
        // ~8 "flops" a float: a multiply, an add and a load from memory
        parallelFor(int(chunks.size()), 8.0 * floats, [&](int c) {
            const Chunk &k = chunks[size_t(c)];
            chunkOk[size_t(c)] = finite(Span(m_spans[k.span].first + k.begin, k.n)) ? 1 : 0;
        });
        for (size_t c = 0; c < chunks.size(); ++c)
            m_ok[chunks[c].span] &= chunkOk[c];
    }

    bool ok(size_t i) const { return m_ok[i] != 0; }

private:
    std::vector<std::pair<const T *, Eigen::Index>> m_spans;
    std::vector<uint8_t> m_ok;
};

template <typename T>
Status checkLinear(const Linear<T> &l, const char *wName, const char *bName, int out, int in, bool allowIdentity,
                   bool finiteValues)
{
    if (l.isIdentity()) {
        if (!allowIdentity || out != in)
            return Status::error(StatusCode::InvalidInput,
                                 std::string("inputs.") + wName + ": identity projection needs equal widths, got in " +
                                     std::to_string(in) + " and out " + std::to_string(out));
    } else if (l.W.rows() != out || l.W.cols() != in) {
        return Status::error(StatusCode::InvalidInput, std::string("inputs.") + wName + ": shape " +
                                                           shapeStr(l.W.rows(), l.W.cols()) + ", expected " +
                                                           shapeStr(out, in));
    }
    if (l.hasBias() && l.b.size() != out)
        return Status::error(StatusCode::InvalidInput, std::string("inputs.") + bName + ": length " +
                                                           std::to_string(l.b.size()) + ", expected " +
                                                           std::to_string(out));
    if (!finiteValues)
        return Status::error(StatusCode::NonFinite, std::string("inputs.") + wName + ": contains NaN or Inf");
    return {};
}

// Most rows of the query blocks pass 3 works on: 128 rows of 4096 keys (2 MB) stay in L2/L3
// between the scores product, the softmax, the context product and the head mean.
constexpr int kRowBlock = 128;

// Softmax over the unmasked entries of one row, in place; masked entries become exactly 0.
// Returns false when every entry is masked (row left untouched for the policy to fill).
// row = exp(row - mx), returning the sum (float: the kernels' one-pass exp; double: Eigen's).
template <typename T, typename Row>
T expShifted(Row &row, T mx)
{
    if constexpr (std::is_same_v<T, float>) {
        return kernels::expShiftSum(row.data(), int(row.size()), mx);
    } else {
        row = (row.array() - mx).exp();
        return row.sum();
    }
}

template <typename T, typename Row>
bool softmaxRow(Row row, const uint8_t *mask)
{
    const Eigen::Index n = row.size();
    if (!mask) {
        const T mx = row.maxCoeff();
        row /= expShifted<T>(row, mx);
        return true;
    }
    T mx = -std::numeric_limits<T>::infinity();
    for (Eigen::Index j = 0; j < n; ++j)
        if (!mask[j] && row[j] > mx)
            mx = row[j];
    if (mx == -std::numeric_limits<T>::infinity()) {
        bool any = false;
        for (Eigen::Index j = 0; j < n; ++j)
            any |= !mask[j];
        if (!any)
            return false;
    }
    expShifted<T>(row, mx);
    T sum = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
        if (mask[j])
            row[j] = 0;
        else
            sum += row[j];
    }
    row /= sum;
    return true;
}

template <typename T, typename Row>
void applyPolicy(FullyMaskedPolicy policy, Row row)
{
    switch (policy) {
    case FullyMaskedPolicy::NaN: row.setConstant(std::numeric_limits<T>::quiet_NaN()); break;
    case FullyMaskedPolicy::Zero: row.setZero(); break;
    case FullyMaskedPolicy::Uniform: row.setConstant(T(1) / T(row.size())); break;
    }
}

bool rowFullyMasked(const uint8_t *mask, int n)
{
    if (!mask)
        return false;
    for (int j = 0; j < n; ++j)
        if (!mask[j])
            return false;
    return true;
}

// Normalizes query rows [r0, r1), held by `w` (its row 0 is query r0; the scaled scores), according
// to the config. Cosine weights reuse the dot products: cos = w / (scale |q_i| |k_j|). Flags Sum rows
// with a zero sum.
template <typename T, typename QH, typename KH, typename WB>
void normalizeRows(const AttentionConfig &cfg, const BoolMat &mask, T scale, const Vec<T> &qn, const Vec<T> &kn,
                   const QH &qh, const KH &kh, WB w, int r0, int r1, std::vector<uint8_t> &degenerate)
{
    const int tk = int(w.cols());
    const bool hasMask = mask.size() != 0;
    for (int i = r0; i < r1; ++i) {
        const uint8_t *m = hasMask ? mask.data() + Eigen::Index(i) * tk : nullptr;
        auto row = w.row(i - r0);
        if (rowFullyMasked(m, tk)) {
            applyPolicy<T>(cfg.fullyMasked, row);
            continue;
        }
        if (cfg.normalization == Normalization::Cosine) {
            for (int j = 0; j < tk; ++j) {
                const T den = qn[i] * kn[j];
                if ((m && m[j]) || den == T(0))
                    row[j] = T(0);
                else
                    row[j] = scale != T(0) ? row[j] / (scale * den) : qh.row(i).dot(kh.row(j)) / den;
            }
        } else if (cfg.normalization == Normalization::Sum) {
            T sum = 0;
            for (int j = 0; j < tk; ++j) {
                if (m && m[j])
                    row[j] = 0;
                else
                    sum += row[j];
            }
            if (sum == T(0))
                degenerate[size_t(i)] = 1;
            row /= sum;
        } else if (cfg.maskMethod == MaskMethod::MultiplyRenormalize && m) {
            // softmax over every key, zero the masked, divide by what is left (seed 001's second way).
            // If every unmasked probability underflowed, the exact-arithmetic result is the stable
            // masked softmax: recompute the row that way instead of dividing 0 by 0.
            const Vec<T> scores = row.transpose();
            softmaxRow<T>(row, nullptr);
            T sum = 0;
            for (int j = 0; j < tk; ++j) {
                if (m[j])
                    row[j] = 0;
                else
                    sum += row[j];
            }
            if (sum > std::numeric_limits<T>::min()) {
                row /= sum;
            } else {
                row = scores.transpose();
                softmaxRow<T>(row, m);
            }
        } else {
            softmaxRow<T>(row, m);
        }
    }
}

// Per-thread scratch reused across calls: one call per keystroke allocates nothing once sizes settle.
template <typename T>
struct Workspace {
    std::vector<Vec<T>> qn, kn;
    std::vector<std::vector<uint8_t>> degenerate;
    std::vector<uint8_t> keep;
    Vec<float> packedKeys; // every head's keys for kernels::scores (float only)
};

// The float kernels' share of pass 3 (attentionkernels.h); double, and heads of a width the kernels
// do not take, use Eigen's products (float64 results unchanged bit for bit).
template <typename T>
bool useKernels(int dHead)
{
    return std::is_same_v<T, float> && kernels::supportsHeadWidth(dHead);
}

// Rows of the query block of pass 3. One head's scores for the block (n x t_k) stay in L2 (1 MB
// per core here) from the scores product to the context product: the t^2 weights are written once
// and never read back from memory. As many rows as fit, since each block streams every head's K
// and V through the cache once (48 rows at 4096 keys: 2 GB less from L3 a call than 24 rows). At
// least 16 rows, at most 128.
int rowBlockFor(int tq, int tk, int threads)
{
    const int wantBlocks = 4 * threads; // four blocks per thread at least (handed out as threads come free)
    const int byCache = std::max(16, (192 * 1024 / std::max(1, tk)) / 6 * 6); // 768 KB of floats
    return std::max(1, std::min({kRowBlock, byCache, std::max(16, (tq + wantBlocks - 1) / wantBlocks)}));
}

template <typename T>
Workspace<T> &workspace()
{
    thread_local Workspace<T> ws;
    return ws;
}

} // namespace

double scaleFor(const AttentionConfig &config, int dModel, int dHead)
{
    switch (config.scaleRule) {
    case ScaleRule::InvSqrtDHead: return 1.0 / std::sqrt(double(dHead));
    case ScaleRule::InvSqrtDModel: return 1.0 / std::sqrt(double(dModel));
    case ScaleRule::None: return 1.0;
    case ScaleRule::Temperature: return 1.0 / (config.temperature * std::sqrt(double(dHead)));
    case ScaleRule::Explicit: return config.explicitScale;
    }
    return 1.0;
}

BoolMat causalMask(int tq, int tk)
{
    BoolMat m(tq, tk);
    for (int i = 0; i < tq; ++i)
        for (int j = 0; j < tk; ++j)
            m(i, j) = j > i ? 1 : 0;
    return m;
}

BoolMat effectiveMask(const BoolMat &attnMask, bool causal, const std::vector<uint8_t> &keyPadding, int tq, int tk)
{
    bool anyPad = std::any_of(keyPadding.begin(), keyPadding.end(), [](uint8_t v) { return v != 0; });
    if (attnMask.size() == 0 && !causal && !anyPad)
        return {};
    BoolMat m = attnMask.size() ? attnMask : BoolMat::Zero(tq, tk);
    for (int i = 0; i < tq; ++i)
        for (int j = 0; j < tk; ++j) {
            uint8_t v = m(i, j) ? 1 : 0;
            if (causal && j > i)
                v = 1;
            if (anyPad && keyPadding[size_t(j)])
                v = 1;
            m(i, j) = v;
        }
    return m;
}

namespace {

template <typename T>
Status resolveShapeWith(const AttentionConfig &config, const AttentionInput<T> &input, const Projections<T> &proj,
                        ResolvedShape &s)
{
    if (input.batch.empty())
        return Status::error(StatusCode::InvalidInput, "inputs.query: empty batch (no sequence)");
    if (config.numHeads <= 0)
        return Status::error(StatusCode::InvalidInput,
                             "num_heads: must be positive, got " + std::to_string(config.numHeads));
    if (config.dHead < 0)
        return Status::error(StatusCode::InvalidInput, "d_head: must not be negative");
    // Every finiteness check of the call at once (the errors below still come in their order).
    FiniteFlags<T> finiteFlags;
    std::vector<std::array<size_t, 3>> seqFlags;
    for (const auto &seq : input.batch) {
        const Mat<T> &kk = seq.key.size() ? seq.key : seq.query;
        const Mat<T> &vv = seq.value.size() ? seq.value : kk;
        seqFlags.push_back({finiteFlags.add(seq.query), finiteFlags.add(kk), finiteFlags.add(vv)});
    }
    const Linear<T> *linears[4] = {&proj.q, &proj.k, &proj.v, &proj.o};
    size_t projFlags[4][2];
    for (int i = 0; i < 4; ++i) {
        projFlags[i][0] = finiteFlags.add(linears[i]->W);
        projFlags[i][1] = finiteFlags.add(linears[i]->b);
    }
    finiteFlags.run();
    auto linearFinite = [&](int i) { return finiteFlags.ok(projFlags[i][0]) && finiteFlags.ok(projFlags[i][1]); };
    const auto &first = input.batch.front();
    s.batch = int(input.batch.size());
    s.tq = int(first.query.rows());
    s.dModel = int(first.query.cols());
    const Mat<T> &k0 = first.key.size() ? first.key : first.query;
    const Mat<T> &v0 = first.value.size() ? first.value : k0;
    s.tk = int(k0.rows());
    s.kdim = int(k0.cols());
    s.vdim = int(v0.cols());
    if (s.tq <= 0 || s.dModel <= 0)
        return Status::error(StatusCode::InvalidInput, "inputs.query: no tokens (shape " + shapeStr(s.tq, s.dModel) + ")");
    if (s.tk <= 0)
        return Status::error(StatusCode::InvalidInput, "inputs.key: no tokens");
    if (v0.rows() != s.tk)
        return Status::error(StatusCode::InvalidInput, "inputs.value: " + std::to_string(v0.rows()) +
                                                           " rows, key has " + std::to_string(s.tk));
    s.numHeads = config.numHeads;
    if (config.dHead > 0) {
        s.dHead = config.dHead;
    } else {
        const int inner = proj.q.isIdentity() ? s.dModel : int(proj.q.W.rows());
        if (inner % config.numHeads != 0)
            return Status::error(StatusCode::InvalidInput, "num_heads: " + std::to_string(config.numHeads) +
                                                               " does not divide d_model " + std::to_string(inner) +
                                                               " (choose a divisor, or set d_head)");
        s.dHead = inner / config.numHeads;
    }
    s.dInner = s.numHeads * s.dHead;
    s.dOut = proj.o.isIdentity() ? s.dInner : int(proj.o.W.rows());
    for (size_t b = 0; b < input.batch.size(); ++b) {
        const auto &seq = input.batch[b];
        const Mat<T> &kk = seq.key.size() ? seq.key : seq.query;
        const Mat<T> &vv = seq.value.size() ? seq.value : kk;
        const std::string at = input.batch.size() > 1 ? " (batch item " + std::to_string(b) + ")" : "";
        if (seq.query.rows() != s.tq || seq.query.cols() != s.dModel)
            return Status::error(StatusCode::InvalidInput, "inputs.query: shape " + shapeStr(seq.query.rows(), seq.query.cols()) +
                                                               ", expected " + shapeStr(s.tq, s.dModel) + at);
        if (kk.rows() != s.tk || kk.cols() != s.kdim)
            return Status::error(StatusCode::InvalidInput, "inputs.key: shape " + shapeStr(kk.rows(), kk.cols()) +
                                                               ", expected " + shapeStr(s.tk, s.kdim) + at);
        if (vv.rows() != s.tk || vv.cols() != s.vdim)
            return Status::error(StatusCode::InvalidInput, "inputs.value: shape " + shapeStr(vv.rows(), vv.cols()) +
                                                               ", expected " + shapeStr(s.tk, s.vdim) + at);
        if (!seq.keyPadding.empty() && int(seq.keyPadding.size()) != s.tk)
            return Status::error(StatusCode::InvalidInput, "inputs.key_padding_mask: length " +
                                                               std::to_string(seq.keyPadding.size()) + ", expected t_k " +
                                                               std::to_string(s.tk) + at);
        if (!finiteFlags.ok(seqFlags[b][0]))
            return Status::error(StatusCode::NonFinite, "inputs.query: contains NaN or Inf" + at);
        if (!finiteFlags.ok(seqFlags[b][1]))
            return Status::error(StatusCode::NonFinite, "inputs.key: contains NaN or Inf" + at);
        if (!finiteFlags.ok(seqFlags[b][2]))
            return Status::error(StatusCode::NonFinite, "inputs.value: contains NaN or Inf" + at);
    }
    if (input.attnMask.size() && (input.attnMask.rows() != s.tq || input.attnMask.cols() != s.tk))
        return Status::error(StatusCode::InvalidInput, "inputs.attn_mask: shape " +
                                                           shapeStr(input.attnMask.rows(), input.attnMask.cols()) +
                                                           ", expected " + shapeStr(s.tq, s.tk));
    if (Status st = checkLinear(proj.q, "W_q", "b_q", s.dInner, s.dModel, true, linearFinite(0)); !st)
        return st;
    if (Status st = checkLinear(proj.k, "W_k", "b_k", s.dInner, s.kdim, true, linearFinite(1)); !st)
        return st;
    if (Status st = checkLinear(proj.v, "W_v", "b_v", s.dInner, s.vdim, true, linearFinite(2)); !st)
        return st;
    if (Status st = checkLinear(proj.o, "W_o", "b_o", s.dOut, s.dInner, true, linearFinite(3)); !st)
        return st;
    if (!(config.dropout >= 0.0 && config.dropout < 1.0))
        return Status::error(StatusCode::InvalidInput, "dropout: rate must be in [0, 1), got " + std::to_string(config.dropout));
    if (config.scaleRule == ScaleRule::Temperature && !(config.temperature > 0.0 && std::isfinite(config.temperature)))
        return Status::error(StatusCode::InvalidInput, "temperature: must be a positive number");
    s.scale = scaleFor(config, s.dModel, s.dHead);
    if (!std::isfinite(s.scale))
        return Status::error(StatusCode::NonFinite, "scale: not a finite number");
    return {};
}

} // namespace

template <typename T>
Status resolveShape(const AttentionConfig &config, const AttentionInput<T> &input, ResolvedShape &s)
{
    return resolveShapeWith(config, input, input.proj, s);
}

template <typename T>
Status computeAttention(const AttentionConfig &cfg, const AttentionInput<T> &input, AttentionResult<T> &result)
{
    return computeAttention(cfg, input, input.proj, result);
}

template <typename T>
Status computeAttention(const AttentionConfig &cfg, const AttentionInput<T> &input, const Projections<T> &proj,
                        AttentionResult<T> &result)
{
    ResolvedShape s;
    if (Status st = resolveShapeWith(cfg, input, proj, s); !st)
        return st;
    const int H = s.numHeads, dh = s.dHead, tq = s.tq, tk = s.tk;
    const T scale = T(s.scale);
    result.numHeads = H;
    result.dHead = dh;
    result.dModel = s.dModel;
    result.dOut = s.dOut;
    result.scale = s.scale;
    result.batch.resize(size_t(s.batch));

    // Dropout draws one Bernoulli per weight in (B, H, t_q, t_k) order, as torch does on the whole tensor.
    const bool dropout = cfg.dropout > 0.0;
    Workspace<T> &ws = workspace<T>();
    std::vector<uint8_t> &keep = ws.keep;
    if (dropout) {
        TorchGenerator gen(cfg.dropoutSeed);
        keep.resize(size_t(s.batch) * H * tq * tk);
        if (cfg.dropoutStream == DropoutStream::TorchMkl) {
            Mcg31Bernoulli bern(gen.random());
            for (auto &k : keep)
                k = bern.next(1.0 - cfg.dropout) ? 1 : 0;
        } else {
            for (auto &k : keep)
                k = gen.uniformDouble() < 1.0 - cfg.dropout ? 1 : 0;
        }
    }
    const double work = double(tq) * tk * dh * H; // multiply-adds of q k^T over all heads

    for (int b = 0; b < s.batch; ++b) {
        const auto &seq = input.batch[size_t(b)];
        auto &r = result.batch[size_t(b)];
        const Mat<T> &xk = seq.key.size() ? seq.key : seq.query;
        const Mat<T> &xv = seq.value.size() ? seq.value : xk;

        // 1. projections
        applyLinears<T>({{&seq.query, &proj.q, &r.q}, {&xk, &proj.k, &r.k}, {&xv, &proj.v, &r.v}});

        // 2. mask
        r.mask = effectiveMask(input.attnMask, cfg.causal, seq.keyPadding, tq, tk);
        r.fullyMaskedRows.clear();
        r.degenerateRows.clear();
        if (r.mask.size())
            for (int i = 0; i < tq; ++i)
                if (rowFullyMasked(r.mask.data() + Eigen::Index(i) * tk, tk))
                    r.fullyMaskedRows.push_back(i);

        // 3. per block of query rows, per head (the head mean is pass 5 of the module's docs, done here)
        r.weights.resize(size_t(H));
        if (cfg.keepScores)
            r.scores.resize(size_t(H));
        else
            r.scores.clear();
        if (dropout)
            r.weightsPreDropout.resize(size_t(H));
        else
            r.weightsPreDropout.clear();
        r.context.resize(tq, s.dInner);
        r.weightsAvg.resize(tq, tk);
        auto qh = [&](int h) { return r.q.middleCols(h * dh, dh); };
        auto kh = [&](int h) { return r.k.middleCols(h * dh, dh); };
        auto vh = [&](int h) { return r.v.middleCols(h * dh, dh); };
        auto &qn = ws.qn, &kn = ws.kn;
        qn.resize(size_t(H));
        kn.resize(size_t(H));
        for (int h = 0; h < H; ++h) {
            if (cfg.normalization == Normalization::Cosine) {
                qn[size_t(h)] = qh(h).rowwise().norm();
                kn[size_t(h)] = kh(h).rowwise().norm();
            }
            r.weights[size_t(h)].resize(tq, tk);
            if (cfg.keepScores)
                r.scores[size_t(h)].resize(tq, tk);
            if (dropout)
                r.weightsPreDropout[size_t(h)].resize(tq, tk);
        }
        auto &degenerate = ws.degenerate;
        degenerate.resize(size_t(H));
        for (auto &d : degenerate)
            d.assign(size_t(tq), 0);
        const bool fast = useKernels<T>(dh);
        const size_t packedSize = fast ? kernels::packedKeysSize(tk, dh) : 0;
        if constexpr (std::is_same_v<T, float>) {
            if (fast) {
                ws.packedKeys.resize(Eigen::Index(packedSize * size_t(H)));
                parallelFor(H, 2.0 * tk * dh * H, [&](int h) {
                    kernels::packKeys(r.k.data() + h * dh, r.k.cols(), tk, dh, ws.packedKeys.data() + packedSize * size_t(h));
                });
            }
        }
        const int rb = rowBlockFor(tq, tk, coreThreads());
        const int rowBlocks = (tq + rb - 1) / rb;
        parallelFor(rowBlocks, 4.0 * work, [&](int blk) {
            const int r0 = blk * rb, n = std::min(rb, tq - r0);
            auto avg = r.weightsAvg.dense().middleRows(r0, n);
            // One head's rows of the block, from scores to weights, stay in this L2-sized scratch; the
            // kept weights are stored once, never read back from memory. (Non-temporal stores were
            // no faster on the AMD EPYC VM the README's table comes from: 16 against 25 GB/s.)
            thread_local Mat<T> block;
            thread_local Vec<float> qs; // the block's rows of one head's q, times the scale
            block.resize(rb, tk);
            auto rows = block.topRows(n);
            for (int h = 0; h < H; ++h) {
                if constexpr (std::is_same_v<T, float>) {
                    if (fast) {
                        qs.resize(Eigen::Index(n) * dh);
                        Eigen::Map<Mat<float>>(qs.data(), n, dh) = scale * qh(h).middleRows(r0, n);
                        kernels::scores(qs.data(), n, dh, ws.packedKeys.data() + packedSize * size_t(h), tk,
                                        rows.data(), tk);
                    }
                }
                if (!fast)
                    rows.noalias() = (scale * qh(h).middleRows(r0, n)) * kh(h).transpose();
                // By groups of rows that fit L1 (one row of a long text, the whole block of a short
                // one): normalize, dropout, store the kept weights, add into the head mean (divided by H
                // with the last head's rows, as (sum) / H).
                const T inv = dropout ? T(1) / T(1.0 - cfg.dropout) : T(1);
                const int group = std::max(1, 4096 / tk);
                for (int g0 = 0; g0 < n; g0 += group) {
                    const int gn = std::min(group, n - g0);
                    auto part = rows.middleRows(g0, gn);
                    if (cfg.keepScores)
                        r.scores[size_t(h)].middleRows(r0 + g0, gn) = part;
                    normalizeRows(cfg, r.mask, scale, qn[size_t(h)], kn[size_t(h)], qh(h), kh(h), part, r0 + g0,
                                  r0 + g0 + gn, degenerate[size_t(h)]);
                    if (dropout) {
                        r.weightsPreDropout[size_t(h)].middleRows(r0 + g0, gn) = part;
                        const uint8_t *kp =
                            keep.data() + ((size_t(b) * H + size_t(h)) * size_t(tq) + size_t(r0 + g0)) * size_t(tk);
                        T *wp = part.data();
                        for (Eigen::Index i = 0; i < Eigen::Index(gn) * tk; ++i)
                            wp[i] = kp[i] ? wp[i] * inv : T(0);
                    }
                    r.weights[size_t(h)].dense().middleRows(r0 + g0, gn) = part;
                    auto mean = avg.middleRows(g0, gn);
                    if (H == 1)
                        mean = part / T(H);
                    else if (h == 0)
                        mean = part;
                    else if (h < H - 1)
                        mean += part;
                    else
                        mean = (mean + part) / T(H);
                }
                if constexpr (std::is_same_v<T, float>) {
                    if (fast)
                        kernels::context(rows.data(), tk, n, tk, r.v.data() + h * dh, r.v.cols(), dh,
                                         r.context.data() + Eigen::Index(r0) * s.dInner + h * dh, s.dInner);
                }
                if (!fast)
                    r.context.block(r0, h * dh, n, dh).noalias() = rows * vh(h);
            }
        });
        for (int i = 0; i < tq; ++i) {
            bool deg = false;
            for (int h = 0; h < H; ++h)
                deg |= degenerate[size_t(h)][size_t(i)] != 0;
            if (deg)
                r.degenerateRows.push_back(i);
        }

        // 4. output projection
        applyLinear(r.context, proj.o, r.output);
    }
    return {};
}

template <typename T>
Mat<T> rawScores(const AttentionResult<T> &result, int batch, int head)
{
    const auto &r = result.batch.at(size_t(batch));
    if (r.scores.empty())
        return {};
    if (result.scale == 0.0)
        return r.q.middleCols(head * result.dHead, result.dHead) *
               r.k.middleCols(head * result.dHead, result.dHead).transpose();
    return r.scores.at(size_t(head)) / T(result.scale);
}

template <typename T>
Mat<T> maskedScores(const AttentionConfig &config, const AttentionResult<T> &result, int batch, int head)
{
    const auto &r = result.batch.at(size_t(batch));
    if (r.scores.empty())
        return {};
    Mat<T> m = r.scores.at(size_t(head));
    if (r.mask.size() == 0)
        return m;
    const T fill = config.normalization == Normalization::Softmax && config.maskMethod == MaskMethod::NegInf
                       ? -std::numeric_limits<T>::infinity()
                       : T(0);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        if (r.mask.data()[i])
            m.data()[i] = fill;
    return m;
}

#define ATTNVIZ_INSTANTIATE(T)                                                                                         \
    template Status resolveShape<T>(const AttentionConfig &, const AttentionInput<T> &, ResolvedShape &);              \
    template Status computeAttention<T>(const AttentionConfig &, const AttentionInput<T> &, AttentionResult<T> &);     \
    template Status computeAttention<T>(const AttentionConfig &, const AttentionInput<T> &, const Projections<T> &,    \
                                        AttentionResult<T> &);                                                         \
    template Mat<T> rawScores<T>(const AttentionResult<T> &, int, int);                                                \
    template Mat<T> maskedScores<T>(const AttentionConfig &, const AttentionResult<T> &, int, int);
ATTNVIZ_INSTANTIATE(float)
ATTNVIZ_INSTANTIATE(double)

} // namespace attnviz
