// SPDX-License-Identifier: GPL-3.0-or-later
// Reference attention on the CPU. Shapes (one sequence of the batch):
//   query X_q (t_q, d_model), key X_k (t_k, kdim), value X_v (t_k, vdim)
//   q = X_q W_q^T + b_q (t_q, H*dh)   k = X_k W_k^T + b_k (t_k, H*dh)   v = X_v W_v^T + b_v (t_k, H*dh)
//   scores_h (t_q, t_k)   weights_h (t_q, t_k)   context (t_q, H*dh)   output (t_q, d_out)
// Passes: 1 projections, 2 mask, 3 per head: scores -> normalize -> dropout -> context, 4 W_o, 5 head mean.
// Heads run in parallel (OpenMP) when the work is large; Eigen's GEMM threads the projections.
#include "attnviz/attention.h"
#include "attnviz/torchrng.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

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

template <typename T>
Status checkLinear(const Linear<T> &l, const char *wName, const char *bName, int out, int in, bool allowIdentity)
{
    if (l.isIdentity()) {
        if (!allowIdentity || out != in)
            return Status::error(StatusCode::InvalidInput,
                                 std::string("inputs.") + wName + ": identity projection needs equal widths, got in " +
                                     std::to_string(in) + " and out " + std::to_string(out));
        if (l.hasBias() && l.b.size() != out)
            return Status::error(StatusCode::InvalidInput, std::string("inputs.") + bName + ": length " +
                                                               std::to_string(l.b.size()) + ", expected " +
                                                               std::to_string(out));
        return {};
    }
    if (l.W.rows() != out || l.W.cols() != in)
        return Status::error(StatusCode::InvalidInput, std::string("inputs.") + wName + ": shape " +
                                                           shapeStr(l.W.rows(), l.W.cols()) + ", expected " +
                                                           shapeStr(out, in));
    if (l.hasBias() && l.b.size() != out)
        return Status::error(StatusCode::InvalidInput, std::string("inputs.") + bName + ": length " +
                                                           std::to_string(l.b.size()) + ", expected " +
                                                           std::to_string(out));
    if (!finite(l.W) || (l.hasBias() && !finite(l.b)))
        return Status::error(StatusCode::NonFinite, std::string("inputs.") + wName + ": contains NaN or Inf");
    return {};
}

template <typename T>
void project(const Mat<T> &x, const Linear<T> &l, Mat<T> &out)
{
    if (l.isIdentity())
        out = x;
    else
        out.noalias() = x * l.W.transpose();
    if (l.hasBias())
        out.rowwise() += l.b.transpose();
}

// Softmax over the unmasked entries of one row, in place; masked entries become exactly 0.
// Returns false when every entry is masked (row left untouched for the policy to fill).
template <typename T, typename Row>
bool softmaxRow(Row row, const uint8_t *mask)
{
    const Eigen::Index n = row.size();
    if (!mask) {
        const T mx = row.maxCoeff();
        row = (row.array() - mx).exp();
        row /= row.sum();
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
    row = (row.array() - mx).exp();
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

// Normalizes `w` (holding scaled scores) row by row according to the config. `qh`, `kh` are needed
// for cosine weights only. Records degenerate rows (Sum normalization with a zero row sum).
template <typename T>
void normalizeHead(const AttentionConfig &cfg, const BoolMat &mask, const Mat<T> &qh, const Mat<T> &kh, Mat<T> &w,
                   std::vector<uint8_t> &degenerate)
{
    const int tq = int(w.rows()), tk = int(w.cols());
    const bool hasMask = mask.size() != 0;
    if (cfg.normalization == Normalization::Cosine) {
        Vec<T> qn = qh.rowwise().norm();
        Vec<T> kn = kh.rowwise().norm();
        Mat<T> dots;
        dots.noalias() = qh * kh.transpose();
        for (int i = 0; i < tq; ++i) {
            const uint8_t *m = hasMask ? mask.data() + Eigen::Index(i) * tk : nullptr;
            if (rowFullyMasked(m, tk)) {
                applyPolicy<T>(cfg.fullyMasked, w.row(i));
                continue;
            }
            for (int j = 0; j < tk; ++j) {
                const T den = qn[i] * kn[j];
                w(i, j) = (m && m[j]) || den == T(0) ? T(0) : dots(i, j) / den;
            }
        }
        return;
    }
    for (int i = 0; i < tq; ++i) {
        const uint8_t *m = hasMask ? mask.data() + Eigen::Index(i) * tk : nullptr;
        auto row = w.row(i);
        if (rowFullyMasked(m, tk)) {
            applyPolicy<T>(cfg.fullyMasked, row);
            continue;
        }
        if (cfg.normalization == Normalization::Sum) {
            T sum = 0;
            for (int j = 0; j < tk; ++j) {
                if (m && m[j])
                    row[j] = 0;
                else
                    sum += row[j];
            }
            if (sum == T(0))
                degenerate[i] = 1;
            row /= sum;
        } else if (cfg.maskMethod == MaskMethod::MultiplyRenormalize && m) {
            softmaxRow<T>(row, nullptr);
            T sum = 0;
            for (int j = 0; j < tk; ++j) {
                if (m[j])
                    row[j] = 0;
                else
                    sum += row[j];
            }
            if (sum == T(0))
                degenerate[i] = 1;
            row /= sum;
        } else {
            softmaxRow<T>(row, m);
        }
    }
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

template <typename T>
Status resolveShape(const AttentionConfig &config, const AttentionInput<T> &input, ResolvedShape &s)
{
    if (input.batch.empty())
        return Status::error(StatusCode::InvalidInput, "inputs.query: empty batch (no sequence)");
    if (config.numHeads <= 0)
        return Status::error(StatusCode::InvalidInput,
                             "num_heads: must be positive, got " + std::to_string(config.numHeads));
    if (config.dHead < 0)
        return Status::error(StatusCode::InvalidInput, "d_head: must not be negative");
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
        const int inner = input.proj.q.isIdentity() ? s.dModel : int(input.proj.q.W.rows());
        if (inner % config.numHeads != 0)
            return Status::error(StatusCode::InvalidInput, "num_heads: " + std::to_string(config.numHeads) +
                                                               " does not divide d_model " + std::to_string(inner) +
                                                               " (choose a divisor, or set d_head)");
        s.dHead = inner / config.numHeads;
    }
    s.dInner = s.numHeads * s.dHead;
    s.dOut = input.proj.o.isIdentity() ? s.dInner : int(input.proj.o.W.rows());
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
        if (!finite(seq.query))
            return Status::error(StatusCode::NonFinite, "inputs.query: contains NaN or Inf" + at);
        if (!finite(kk))
            return Status::error(StatusCode::NonFinite, "inputs.key: contains NaN or Inf" + at);
        if (!finite(vv))
            return Status::error(StatusCode::NonFinite, "inputs.value: contains NaN or Inf" + at);
    }
    if (input.attnMask.size() && (input.attnMask.rows() != s.tq || input.attnMask.cols() != s.tk))
        return Status::error(StatusCode::InvalidInput, "inputs.attn_mask: shape " +
                                                           shapeStr(input.attnMask.rows(), input.attnMask.cols()) +
                                                           ", expected " + shapeStr(s.tq, s.tk));
    if (Status st = checkLinear(input.proj.q, "W_q", "b_q", s.dInner, s.dModel, true); !st)
        return st;
    if (Status st = checkLinear(input.proj.k, "W_k", "b_k", s.dInner, s.kdim, true); !st)
        return st;
    if (Status st = checkLinear(input.proj.v, "W_v", "b_v", s.dInner, s.vdim, true); !st)
        return st;
    if (Status st = checkLinear(input.proj.o, "W_o", "b_o", s.dOut, s.dInner, true); !st)
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

template <typename T>
Status computeAttention(const AttentionConfig &cfg, const AttentionInput<T> &input, AttentionResult<T> &result)
{
    ResolvedShape s;
    if (Status st = resolveShape(cfg, input, s); !st)
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
    std::vector<uint8_t> keep;
    if (dropout) {
        TorchGenerator gen(cfg.dropoutSeed);
        Mcg31Bernoulli bern(gen.random());
        keep.resize(size_t(s.batch) * H * tq * tk);
        for (auto &k : keep)
            k = bern.next(1.0 - cfg.dropout) ? 1 : 0;
    }
    const double work = double(tq) * tk * dh * H;

    for (int b = 0; b < s.batch; ++b) {
        const auto &seq = input.batch[size_t(b)];
        auto &r = result.batch[size_t(b)];
        const Mat<T> &xk = seq.key.size() ? seq.key : seq.query;
        const Mat<T> &xv = seq.value.size() ? seq.value : xk;

        // 1. projections
        project(seq.query, input.proj.q, r.q);
        project(xk, input.proj.k, r.k);
        project(xv, input.proj.v, r.v);

        // 2. mask
        r.mask = effectiveMask(input.attnMask, cfg.causal, seq.keyPadding, tq, tk);
        r.fullyMaskedRows.clear();
        r.degenerateRows.clear();
        if (r.mask.size())
            for (int i = 0; i < tq; ++i)
                if (rowFullyMasked(r.mask.data() + Eigen::Index(i) * tk, tk))
                    r.fullyMaskedRows.push_back(i);

        // 3. per head
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
        std::vector<std::vector<uint8_t>> degenerate(size_t(H), std::vector<uint8_t>(size_t(tq), 0));

#pragma omp parallel for schedule(static) if (work > 2.0e6 && H > 1)
        for (int h = 0; h < H; ++h) {
            const Mat<T> qh = r.q.middleCols(h * dh, dh);
            const Mat<T> kh = r.k.middleCols(h * dh, dh);
            Mat<T> &w = r.weights[size_t(h)];
            w.resize(tq, tk);
            w.noalias() = qh * kh.transpose();
            w *= scale;
            if (cfg.keepScores)
                r.scores[size_t(h)] = w;
            normalizeHead(cfg, r.mask, qh, kh, w, degenerate[size_t(h)]);
            if (dropout) {
                r.weightsPreDropout[size_t(h)] = w;
                const T inv = T(1) / T(1.0 - cfg.dropout);
                const uint8_t *kp = keep.data() + (size_t(b) * H + size_t(h)) * size_t(tq) * size_t(tk);
                for (Eigen::Index i = 0; i < w.size(); ++i)
                    w.data()[i] = kp[i] ? w.data()[i] * inv : T(0);
            }
            r.context.middleCols(h * dh, dh).noalias() = w * r.v.middleCols(h * dh, dh);
        }
        for (int i = 0; i < tq; ++i) {
            bool deg = false;
            for (int h = 0; h < H; ++h)
                deg |= degenerate[size_t(h)][size_t(i)] != 0;
            if (deg)
                r.degenerateRows.push_back(i);
        }

        // 4. output projection
        project(r.context, input.proj.o, r.output);

        // 5. head average
        r.weightsAvg = r.weights[0];
        for (int h = 1; h < H; ++h)
            r.weightsAvg += r.weights[size_t(h)];
        r.weightsAvg /= T(H);
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
    template Mat<T> rawScores<T>(const AttentionResult<T> &, int, int);                                                \
    template Mat<T> maskedScores<T>(const AttentionConfig &, const AttentionResult<T> &, int, int);
ATTNVIZ_INSTANTIATE(float)
ATTNVIZ_INSTANTIATE(double)

} // namespace attnviz
