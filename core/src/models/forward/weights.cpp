// SPDX-License-Identifier: GPL-3.0-or-later
// The canonical weights (weights.h) read from a model folder under any family's tensor names
// (families::TensorNames, data): the body's prefix found by the token embeddings, GPT-2's Conv1D
// tensors transposed, fused q|k|v and gate|up tensors split, norms with or without a bias (and
// BERT's older gamma/beta spelling), an LM head tied when absent or equal to the embeddings.
// Also seeded weights of any architecture, the float -> double copy, and the 16-bit weights.
#include "weights.h"
#include "../families/family.h"
#include "../../formats/ggufquants.h"
#include "seedednormal.h"
#include "attnviz/gguf.h"

#include <Eigen/Core>

#include <cstring>
#include <random>
#include <tuple>
#include <type_traits>

namespace attnviz {

template <typename T>
void HalfMatrix::widen(Eigen::Index r0, Eigen::Index n, T *dst) const
{
    const uint16_t *src = bits.data() + r0 * cols;
    const Eigen::Index count = n * cols;
    if (kind == Kind::BF16) {
        // BF16 is float32's top half: a shift, which the compiler vectorizes.
        for (Eigen::Index i = 0; i < count; ++i) {
            const uint32_t u = uint32_t(src[i]) << 16;
            float f;
            std::memcpy(&f, &u, 4);
            dst[i] = T(f);
        }
        return;
    }
    for (Eigen::Index i = 0; i < count; ++i)
        dst[i] = T(float(Eigen::numext::bit_cast<Eigen::half>(src[i])));
}

uint16_t HalfMatrix::round(Kind kind, float v)
{
    if (kind == Kind::F16)
        return Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
    return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(v)); // to nearest even, as torch
}

template void HalfMatrix::widen<float>(Eigen::Index, Eigen::Index, float *) const;
template void HalfMatrix::widen<double>(Eigen::Index, Eigen::Index, double *) const;

template <typename T>
void QuantMatrix::widen(Eigen::Index r0, Eigen::Index n, T *dst) const
{
    if constexpr (std::is_same_v<T, float>) {
        detail::ggmlDequantize(type, bytes.data() + size_t(r0) * rowBytes, n * cols, dst);
    } else {
        std::vector<float> row(static_cast<size_t>(cols));
        for (Eigen::Index r = 0; r < n; ++r) {
            detail::ggmlDequantize(type, bytes.data() + size_t(r0 + r) * rowBytes, cols, row.data());
            for (Eigen::Index c = 0; c < cols; ++c)
                dst[r * cols + c] = T(row[size_t(c)]);
        }
    }
}

template void QuantMatrix::widen<float>(Eigen::Index, Eigen::Index, float *) const;
template void QuantMatrix::widen<double>(Eigen::Index, Eigen::Index, double *) const;

template <typename T>
Vec<T> Weight<T>::row(Eigen::Index r) const
{
    if (!packed())
        return dense.row(r).transpose();
    Vec<T> v(cols());
    widen(r, 1, v.data());
    return v;
}

template <typename T>
Weight<T> Weight<T>::middleRows(Eigen::Index r0, Eigen::Index n) const
{
    if (!packed())
        return Weight<T>(Mat<T>(dense.middleRows(r0, n)));
    if (!quant.empty()) {
        Weight<T> w;
        w.quant.type = quant.type;
        w.quant.rows = n;
        w.quant.cols = quant.cols;
        w.quant.rowBytes = quant.rowBytes;
        w.quant.bytes.assign(quant.bytes.begin() + ptrdiff_t(size_t(r0) * quant.rowBytes),
                             quant.bytes.begin() + ptrdiff_t(size_t(r0 + n) * quant.rowBytes));
        return w;
    }
    Weight<T> w;
    w.half.kind = half.kind;
    w.half.rows = n;
    w.half.cols = half.cols;
    w.half.bits.assign(half.bits.begin() + r0 * half.cols, half.bits.begin() + (r0 + n) * half.cols);
    return w;
}

template <typename T>
Mat<T> Weight<T>::toDense() const
{
    if (!packed())
        return dense;
    Mat<T> m(rows(), cols());
    widen(0, rows(), m.data());
    return m;
}

template <typename T>
bool Weight<T>::operator==(const Weight<T> &o) const
{
    if (!quant.empty() && !o.quant.empty())
        return quant.type == o.quant.type && quant.rows == o.quant.rows && quant.bytes == o.quant.bytes;
    if (half.empty() != o.half.empty() || !quant.empty() || !o.quant.empty())
        return toDense() == o.toDense();
    if (half.empty())
        return dense == o.dense;
    return half.kind == o.half.kind && half.rows == o.half.rows && half.bits == o.half.bits;
}

template struct Weight<float>;
template struct Weight<double>;

template <typename T>
std::shared_ptr<const Projections<T>> PackedProjections<T>::projections() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (std::shared_ptr<const Projections<T>> held = m_widened.lock())
        return held;
    auto widened = std::make_shared<Projections<T>>();
    for (auto [from, to] : {std::pair<const WeightLinear<T> *, Linear<T> *>{&q, &widened->q}, {&k, &widened->k},
                            {&v, &widened->v}, {&o, &widened->o}}) {
        to->W = from->W.toDense();
        to->b = from->b;
    }
    m_widened = widened;
    return widened;
}

template class PackedProjections<float>;
template class PackedProjections<double>;

namespace {
std::string shapeText(const std::vector<int64_t> &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

template <typename T>
class Reader {
public:
    Reader(const TensorArchive &a, std::string prefix) : m_a(a), m_prefix(std::move(prefix)) {}

    bool has(const std::string &n) const { return m_a.find(m_prefix + n) || m_a.find(n); }

    // A tensor of exactly `shape`; transposed: stored (cols, rows) as Conv1D, returned (rows, cols).
    Status matrix(const std::string &n, int rows, int cols, Mat<T> &m, bool transposed = false)
    {
        const TensorEntry *e = nullptr;
        std::string full;
        if (Status st = entry(n, e, full); !st)
            return st;
        const std::vector<int64_t> want = transposed ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
        if (e->shape != want)
            return wrongShape(full, *e, want);
        Mat<T> raw(want[0], want[1]);
        if (Status st = m_a.read(*e, raw.data()); !st)
            return st;
        if (transposed)
            m = raw.transpose();
        else
            m = std::move(raw);
        m_parameters += int64_t(e->count);
        return {};
    }

    // A matrix that may stay in 16 bits: float weights of a BF16 / F16 tensor keep its bits.
    Status weight(const std::string &n, int rows, int cols, Weight<T> &w)
    {
        const TensorEntry *e = nullptr;
        std::string full;
        if (Status st = entry(n, e, full); !st)
            return st;
        const bool quantized = e->ggml >= 0 && e->dtype != "BF16" && e->dtype != "F16" && e->dtype != "F32";
        if (std::is_same_v<T, float> && quantized) { // GGUF blocks kept as stored
            if (e->shape != std::vector<int64_t>{rows, cols})
                return wrongShape(full, *e, {rows, cols});
            w.dense.resize(0, 0);
            w.half = HalfMatrix();
            w.quant.type = uint32_t(e->ggml);
            w.quant.rows = rows;
            w.quant.cols = cols;
            w.quant.rowBytes = size_t(e->bytes / uint64_t(rows));
            if (Status st = m_a.readEncoded(*e, w.quant.bytes); !st)
                return st;
            m_parameters += int64_t(e->count);
            return {};
        }
        if (!std::is_same_v<T, float> || (e->dtype != "BF16" && e->dtype != "F16")) {
            w.half = HalfMatrix();
            return matrix(n, rows, cols, w.dense);
        }
        if (e->shape != std::vector<int64_t>{rows, cols})
            return wrongShape(full, *e, {rows, cols});
        w.dense.resize(0, 0);
        w.half.kind = e->dtype == "BF16" ? HalfMatrix::Kind::BF16 : HalfMatrix::Kind::F16;
        w.half.rows = rows;
        w.half.cols = cols;
        w.half.bits.resize(size_t(rows) * size_t(cols));
        if (Status st = m_a.readBits16(*e, w.half.bits.data()); !st)
            return st;
        m_parameters += int64_t(e->count);
        return {};
    }

    Status weightLinear(const std::string &n, int out, int in, bool bias, WeightLinear<T> &l, bool transposed = false)
    {
        if (transposed) { // Conv1D: stored (in, out), widened and transposed
            Linear<T> dense;
            if (Status st = linear(n, out, in, bias, dense, true); !st)
                return st;
            l = dense;
            return {};
        }
        if (Status st = weight(n + ".weight", out, in, l.W); !st)
            return st;
        l.b.resize(0);
        return bias ? vector(n + ".bias", out, l.b) : Status();
    }

    Status vector(const std::string &n, int len, Vec<T> &v)
    {
        const TensorEntry *e = nullptr;
        std::string full;
        if (Status st = entry(n, e, full); !st)
            return st;
        if (e->shape != std::vector<int64_t>{len})
            return wrongShape(full, *e, {len});
        v.resize(len);
        if (Status st = m_a.read(*e, v.data()); !st)
            return st;
        m_parameters += int64_t(e->count);
        return {};
    }

    // n.weight (out, in) and, with `bias`, n.bias; Conv1D (transposed) stores (in, out).
    Status linear(const std::string &n, int out, int in, bool bias, Linear<T> &l, bool transposed = false)
    {
        if (Status st = matrix(n + ".weight", out, in, l.W, transposed); !st)
            return st;
        l.b.resize(0);
        return bias ? vector(n + ".bias", out, l.b) : Status();
    }

    // A norm as n.weight[/n.bias] or n.gamma[/n.beta]; RMSNorms have no bias.
    Status norm(const std::string &n, int d, double eps, bool withBias, LayerNorm<T> &ln)
    {
        ln.eps = eps;
        const bool legacy = !has(n + ".weight") && has(n + ".gamma");
        if (Status st = vector(n + (legacy ? ".gamma" : ".weight"), d, ln.gamma); !st)
            return st;
        if (!withBias) {
            ln.beta.resize(0);
            return {};
        }
        return vector(n + (legacy ? ".beta" : ".bias"), d, ln.beta);
    }

    int64_t parameters() const { return m_parameters; }
    const std::string &prefix() const { return m_prefix; }

private:
    Status entry(const std::string &n, const TensorEntry *&e, std::string &full)
    {
        full = m_prefix + n;
        e = m_a.find(full);
        if (!e && !m_prefix.empty()) { // heads (cls., lm_head) sit outside the prefix
            e = m_a.find(n);
            if (e)
                full = n;
        }
        if (!e)
            return Status::error(StatusCode::InvalidInput, m_a.fileOf(std::string()) + ": " + full + ": missing");
        return {};
    }
    Status wrongShape(const std::string &full, const TensorEntry &e, const std::vector<int64_t> &want) const
    {
        return Status::error(StatusCode::InvalidInput, m_a.fileOf(e) + ": " + full + ": shape " + shapeText(e.shape) +
                                                           ", expected " + shapeText(want));
    }

    const TensorArchive &m_a;
    std::string m_prefix;
    int64_t m_parameters = 0;
};

std::string withLayer(std::string pattern, int layer)
{
    const size_t at = pattern.find("{L}");
    if (at != std::string::npos)
        pattern.replace(at, 3, std::to_string(layer));
    return pattern;
}

// Rows [r0, r0 + n) of a fused linear layer (Linear or WeightLinear).
template <typename L>
L rowsOf(const L &l, int r0, int n)
{
    L r;
    r.W = l.W.middleRows(r0, n);
    if (l.hasBias())
        r.b = l.b.segment(r0, n);
    return r;
}

template <typename T>
void fillNormal(std::mt19937_64 &g, Mat<T> &m, int rows, int cols, double sd)
{
    SeededNormal<double> n(0.0, sd);
    m.resize(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = T(n(g));
}

template <typename T>
void seededLinear(std::mt19937_64 &g, Linear<T> &l, int out, int in)
{
    fillNormal(g, l.W, out, in, 0.02);
    l.b = Vec<T>::Zero(out);
}

// The same numbers as fillNormal; with bf16, rounded to BF16 and kept in 16 bits.
template <typename T>
void fillWeight(std::mt19937_64 &g, Weight<T> &w, int rows, int cols, double sd, bool bf16, int quant = -1)
{
    if (quant >= 0 && std::is_same_v<T, float>) { // row by row, never the whole matrix in float
        const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(quant));
        SeededNormal<double> n(0.0, sd);
        w.dense.resize(0, 0);
        w.half = HalfMatrix();
        w.quant.type = uint32_t(quant);
        w.quant.rows = rows;
        w.quant.cols = cols;
        w.quant.rowBytes = size_t(cols / info->blockElements) * size_t(info->blockBytes);
        w.quant.bytes.resize(w.quant.rowBytes * size_t(rows));
        std::vector<float> row(static_cast<size_t>(cols));
        for (int r = 0; r < rows; ++r) {
            for (float &v : row)
                v = float(n(g));
            detail::ggmlQuantize(uint32_t(quant), row.data(), cols, w.quant.bytes.data() + size_t(r) * w.quant.rowBytes);
        }
        return;
    }
    if (!bf16) {
        w.half = HalfMatrix();
        fillNormal(g, w.dense, rows, cols, sd);
        return;
    }
    SeededNormal<double> n(0.0, sd);
    w.dense.resize(0, 0);
    w.half.kind = HalfMatrix::Kind::BF16;
    w.half.rows = rows;
    w.half.cols = cols;
    w.half.bits.resize(size_t(rows) * size_t(cols));
    for (uint16_t &b : w.half.bits)
        b = HalfMatrix::round(HalfMatrix::Kind::BF16, float(n(g)));
}

template <typename To, typename From>
Weight<To> castWeight(const Weight<From> &w)
{
    if (!w.packed())
        return Weight<To>(Mat<To>(w.dense.template cast<To>()));
    if constexpr (std::is_same_v<To, From>)
        return w;
    Mat<To> m(w.rows(), w.cols());
    if (!w.quant.empty())
        w.quant.widen(0, w.rows(), m.data());
    else
        w.half.widen(0, w.rows(), m.data());
    return Weight<To>(std::move(m));
}

template <typename To, typename From>
WeightLinear<To> castWeightLinear(const WeightLinear<From> &l)
{
    WeightLinear<To> r;
    r.W = castWeight<To>(l.W);
    r.b = l.b.template cast<To>();
    return r;
}

template <typename To, typename From>
Linear<To> castLinear(const Linear<From> &l)
{
    return {l.W.template cast<To>(), l.b.template cast<To>()};
}

template <typename To, typename From>
LayerNorm<To> castNorm(const LayerNorm<From> &n)
{
    LayerNorm<To> r;
    r.gamma = n.gamma.template cast<To>();
    r.beta = n.beta.template cast<To>();
    r.eps = n.eps;
    return r;
}

// A layer's projections as read or seeded: kept packed when all four are (16 bits or ggml blocks),
// else held in T (a mixed layer widened whole, so that the forward has one kind per layer).
template <typename T>
void keepProjections(std::shared_ptr<PackedProjections<T>> p, LayerWeights<T> &b)
{
    if (p->q.W.packed() && p->k.W.packed() && p->v.W.packed() && p->o.W.packed()) {
        b.packed = std::move(p);
        b.attn.reset();
        return;
    }
    auto dense = std::make_shared<Projections<T>>();
    for (auto [from, to] : {std::pair<WeightLinear<T> *, Linear<T> *>{&p->q, &dense->q}, {&p->k, &dense->k},
                            {&p->v, &dense->v}, {&p->o, &dense->o}}) {
        to->W = from->W.packed() ? from->W.toDense() : std::move(from->W.dense);
        to->b = std::move(from->b);
    }
    b.attn = std::move(dense);
    b.packed.reset();
}

// Elements held densely (at sizeof(T)) and in 16 bits; bytes of quantized weights.
template <typename T>
void countElements(const ModelWeights<T> &w, int64_t &n, int64_t &halves, int64_t *quantBytes = nullptr)
{
    n = halves = 0;
    int64_t qb = 0;
    auto weight = [&](const Weight<T> &m) {
        n += int64_t(m.dense.size());
        halves += int64_t(m.half.bits.size());
        qb += int64_t(m.quant.bytes.size());
    };
    auto norm = [&](const LayerNorm<T> &l) { n += int64_t(l.gamma.size() + l.beta.size()); };
    auto linear = [&](const Linear<T> &l) { n += int64_t(l.W.size() + l.b.size()); };
    weight(w.tokens);
    weight(w.lmHead);
    n += int64_t(w.positions.size() + w.tokenTypes.size() + w.outputBias.size());
    norm(w.embeddingNorm);
    norm(w.finalNorm);
    norm(w.mlmNorm);
    linear(w.mlmTransform);
    for (const LayerWeights<T> &b : w.layers) {
        if (b.packed) {
            for (const WeightLinear<T> *l : {&b.packed->q, &b.packed->k, &b.packed->v, &b.packed->o}) {
                weight(l->W);
                n += int64_t(l->b.size());
            }
        } else {
            for (const Linear<T> *l : {&b.attn->q, &b.attn->k, &b.attn->v, &b.attn->o})
                linear(*l);
        }
        for (const LayerNorm<T> *l : {&b.attnNorm, &b.ffnNorm, &b.postAttnNorm, &b.postFfnNorm, &b.qNorm, &b.kNorm})
            norm(*l);
        for (const WeightLinear<T> *l : {&b.gate, &b.up, &b.down}) {
            weight(l->W);
            n += int64_t(l->b.size());
        }
    }
    if (quantBytes)
        *quantBytes = qb;
}
} // namespace

template <typename T>
Status loadWeights(const TensorArchive &archive, const Architecture &a, const families::TensorNames &n, ModelWeights<T> &out)
{
    std::string prefix;
    for (const std::string &p : n.prefixes)
        if (archive.find(p + n.tokens)) {
            prefix = p;
            break;
        }
    Reader<T> r(archive, prefix);
    ModelWeights<T> w;
    const int d = a.dModel, f = a.dFeedForward, qw = a.heads * a.dHead, kw = a.kvHeads * a.dHead;
    const bool layerNorm = a.norm == NormKind::LayerNorm;
    const double eps = a.normEps;
    if (Status st = r.weight(n.tokens, a.vocabulary, d, w.tokens); !st)
        return st;
    if (a.positions == PositionKind::Learned)
        if (Status st = r.matrix(n.positions, a.maxPositions, d, w.positions); !st)
            return st;
    if (!n.tokenTypes.empty() && a.typeVocabulary > 0)
        if (Status st = r.matrix(n.tokenTypes, a.typeVocabulary, d, w.tokenTypes); !st)
            return st;
    if (a.embeddingNorm)
        if (Status st = r.norm(n.embeddingNorm, d, eps, layerNorm, w.embeddingNorm); !st)
            return st;
    for (int l = 0; l < a.layers; ++l) {
        const std::string h = withLayer(n.layer, l);
        LayerWeights<T> b;
        auto proj = std::make_shared<PackedProjections<T>>();
        if (!n.qkv.empty()) { // fused q|k|v rows (GPT-2's Conv1D stores them as columns)
            WeightLinear<T> qkv;
            if (Status st = r.weightLinear(h + n.qkv, qw + 2 * kw, d, a.qkvBias, qkv, n.conv1d); !st)
                return st;
            proj->q = rowsOf(qkv, 0, qw);
            proj->k = rowsOf(qkv, qw, kw);
            proj->v = rowsOf(qkv, qw + kw, kw);
        } else {
            for (auto [name, lin, rows] : {std::tuple<const std::string *, WeightLinear<T> *, int>{&n.q, &proj->q, qw},
                                           {&n.k, &proj->k, kw}, {&n.v, &proj->v, kw}})
                if (Status st = r.weightLinear(h + *name, rows, d, a.qkvBias, *lin); !st)
                    return st;
        }
        if (Status st = r.weightLinear(h + n.o, d, qw, a.outBias, proj->o, n.conv1d); !st)
            return st;
        keepProjections(std::move(proj), b);
        if (a.qkNorm) {
            if (Status st = r.norm(h + n.qNorm, a.dHead, eps, layerNorm, b.qNorm); !st)
                return st;
            if (Status st = r.norm(h + n.kNorm, a.dHead, eps, layerNorm, b.kNorm); !st)
                return st;
        }
        for (auto [name, norm] : {std::pair<const std::string *, LayerNorm<T> *>{&n.attnNorm, &b.attnNorm},
                                  {&n.ffnNorm, &b.ffnNorm}, {&n.postAttnNorm, &b.postAttnNorm},
                                  {&n.postFfnNorm, &b.postFfnNorm}})
            if (!name->empty())
                if (Status st = r.norm(h + *name, d, eps, layerNorm, *norm); !st)
                    return st;
        if (a.placement == NormPlacement::Sandwich && (n.postAttnNorm.empty() || n.postFfnNorm.empty()))
            return Status::error(StatusCode::InvalidInput, a.family + ": sandwich norms without their tensor names");
        if (!n.gateUp.empty()) {
            WeightLinear<T> gu;
            if (Status st = r.weightLinear(h + n.gateUp, 2 * f, d, a.mlpBias, gu); !st)
                return st;
            b.gate = rowsOf(gu, 0, f);
            b.up = rowsOf(gu, f, f);
        } else {
            if (a.gatedMlp)
                if (Status st = r.weightLinear(h + n.gate, f, d, a.mlpBias, b.gate); !st)
                    return st;
            if (Status st = r.weightLinear(h + n.up, f, d, a.mlpBias, b.up, n.conv1d); !st)
                return st;
        }
        if (Status st = r.weightLinear(h + n.down, d, f, a.mlpBias, b.down, n.conv1d); !st)
            return st;
        w.layers.push_back(std::move(b));
    }
    if (a.finalNorm)
        if (Status st = r.norm(n.finalNorm, d, eps, layerNorm, w.finalNorm); !st)
            return st;
    int64_t params = 0;
    // The LM head: required when untied; when tied, a copy in the file is read and counted once.
    if (!n.lmHead.empty() && (!a.tiedEmbeddings || r.has(n.lmHead))) {
        Weight<T> head;
        if (Status st = r.weight(n.lmHead, a.vocabulary, d, head); !st)
            return st;
        if (head != w.tokens)
            w.lmHead = std::move(head);
        else
            params -= int64_t(head.size());
    }
    // Masked-LM head (absent in a bare encoder: then no [MASK] fills).
    if (!n.mlmTransform.empty() && r.has(n.mlmTransform + ".weight")) {
        w.hasMlmHead = true;
        if (Status st = r.linear(n.mlmTransform, d, d, true, w.mlmTransform); !st)
            return st;
        if (Status st = r.norm(n.mlmNorm, d, eps, true, w.mlmNorm); !st)
            return st;
        if (r.has(n.mlmDecoder)) {
            Weight<T> dec;
            if (Status st = r.weight(n.mlmDecoder, a.vocabulary, d, dec); !st)
                return st;
            if (dec != w.tokens)
                w.lmHead = std::move(dec);
            else
                params -= int64_t(dec.size());
        }
        const std::string bias = n.mlmBiasAlt.empty() || r.has(n.mlmBias) ? n.mlmBias : n.mlmBiasAlt;
        if (Status st = r.vector(bias, a.vocabulary, w.outputBias); !st)
            return st;
    }
    w.parameters = params + r.parameters();
    out = std::move(w);
    return {};
}

template <typename T>
void seedWeights(const Architecture &a, uint64_t seed, ModelWeights<T> &w, bool bf16, int quant)
{
    bf16 = bf16 && std::is_same_v<T, float>;
    std::mt19937_64 g(seed);
    const int d = a.dModel, f = a.dFeedForward, qw = a.heads * a.dHead, kw = a.kvHeads * a.dHead;
    const bool layerNorm = a.norm == NormKind::LayerNorm;
    auto norm = [&](int n) {
        LayerNorm<T> ln;
        // the identity: (1 + w) norms store 0
        ln.gamma = a.norm == NormKind::RmsNormPlusOne ? Vec<T>::Zero(n) : Vec<T>::Ones(n);
        if (layerNorm)
            ln.beta = Vec<T>::Zero(n);
        ln.eps = a.normEps;
        return ln;
    };
    auto weightLinear = [&](WeightLinear<T> &l, int out, int in, bool bias) {
        fillWeight(g, l.W, out, in, 0.02, bf16, quant);
        l.b = bias ? Vec<T>::Zero(out) : Vec<T>();
    };
    fillWeight(g, w.tokens, a.vocabulary, d, 0.02, bf16, quant);
    if (a.positions == PositionKind::Learned)
        fillNormal(g, w.positions, a.maxPositions, d, 0.02);
    if (a.typeVocabulary > 0)
        fillNormal(g, w.tokenTypes, a.typeVocabulary, d, 0.02);
    if (a.embeddingNorm)
        w.embeddingNorm = norm(d);
    w.layers.clear();
    for (int l = 0; l < a.layers; ++l) {
        LayerWeights<T> b;
        auto proj = std::make_shared<PackedProjections<T>>();
        weightLinear(proj->q, qw, d, a.qkvBias);
        weightLinear(proj->k, kw, d, a.qkvBias);
        weightLinear(proj->v, kw, d, a.qkvBias);
        weightLinear(proj->o, d, qw, a.outBias);
        keepProjections(std::move(proj), b);
        if (a.gatedMlp)
            weightLinear(b.gate, f, d, a.mlpBias);
        weightLinear(b.up, f, d, a.mlpBias);
        weightLinear(b.down, d, f, a.mlpBias);
        b.attnNorm = norm(d);
        b.ffnNorm = norm(d);
        if (a.placement == NormPlacement::Sandwich) {
            b.postAttnNorm = norm(d);
            b.postFfnNorm = norm(d);
        }
        if (a.qkNorm) {
            b.qNorm = norm(a.dHead);
            b.kNorm = norm(a.dHead);
        }
        w.layers.push_back(std::move(b));
    }
    if (a.finalNorm)
        w.finalNorm = norm(d);
    if (!a.tiedEmbeddings && a.head == LmHead::CausalLm) {
        fillWeight(g, w.lmHead, a.vocabulary, d, 0.02, bf16, quant);
    }
    w.hasMlmHead = a.head == LmHead::MaskedLm;
    if (w.hasMlmHead) {
        seededLinear(g, w.mlmTransform, d, d);
        w.mlmNorm = norm(d);
        w.outputBias = Vec<T>::Zero(a.vocabulary);
    }
    int64_t dense = 0, halves = 0, quantBytes = 0;
    countElements(w, dense, halves, &quantBytes); // every tensor made, norms included, as a file's count
    w.parameters = dense + halves;
    auto quantized = [&](const Weight<T> &m) { w.parameters += int64_t(m.quant.rows) * int64_t(m.quant.cols); };
    quantized(w.tokens);
    quantized(w.lmHead);
    for (const LayerWeights<T> &b : w.layers) {
        for (const WeightLinear<T> *l : {&b.gate, &b.up, &b.down})
            quantized(l->W);
        if (b.packed)
            for (const WeightLinear<T> *l : {&b.packed->q, &b.packed->k, &b.packed->v, &b.packed->o})
                quantized(l->W);
    }
}

template <typename To, typename From>
std::shared_ptr<const ModelWeights<To>> castWeights(const ModelWeights<From> &w)
{
    auto r = std::make_shared<ModelWeights<To>>();
    r->tokens = castWeight<To>(w.tokens);
    r->positions = w.positions.template cast<To>();
    r->tokenTypes = w.tokenTypes.template cast<To>();
    r->embeddingNorm = castNorm<To>(w.embeddingNorm);
    for (const auto &b : w.layers) {
        LayerWeights<To> nb;
        const std::shared_ptr<const Projections<From>> P = b.projections().get(); // 16-bit ones widened
        auto proj = std::make_shared<Projections<To>>();
        proj->q = castLinear<To>(P->q);
        proj->k = castLinear<To>(P->k);
        proj->v = castLinear<To>(P->v);
        proj->o = castLinear<To>(P->o);
        nb.attn = std::move(proj);
        nb.attnNorm = castNorm<To>(b.attnNorm);
        nb.ffnNorm = castNorm<To>(b.ffnNorm);
        nb.postAttnNorm = castNorm<To>(b.postAttnNorm);
        nb.postFfnNorm = castNorm<To>(b.postFfnNorm);
        nb.qNorm = castNorm<To>(b.qNorm);
        nb.kNorm = castNorm<To>(b.kNorm);
        nb.gate = castWeightLinear<To>(b.gate);
        nb.up = castWeightLinear<To>(b.up);
        nb.down = castWeightLinear<To>(b.down);
        r->layers.push_back(std::move(nb));
    }
    r->finalNorm = castNorm<To>(w.finalNorm);
    r->lmHead = castWeight<To>(w.lmHead);
    r->hasMlmHead = w.hasMlmHead;
    r->mlmTransform = castLinear<To>(w.mlmTransform);
    r->mlmNorm = castNorm<To>(w.mlmNorm);
    r->outputBias = w.outputBias.template cast<To>();
    r->parameters = w.parameters;
    return r;
}


template <typename T>
int64_t weightBytes(const ModelWeights<T> &w)
{
    int64_t n = 0, halves = 0, quantBytes = 0;
    countElements(w, n, halves, &quantBytes);
    return n * int64_t(sizeof(T)) + 2 * halves + quantBytes;
}

template int64_t weightBytes<float>(const ModelWeights<float> &);
template Status loadWeights<float>(const TensorArchive &, const Architecture &, const families::TensorNames &, ModelWeights<float> &);
template Status loadWeights<double>(const TensorArchive &, const Architecture &, const families::TensorNames &, ModelWeights<double> &);
template void seedWeights<float>(const Architecture &, uint64_t, ModelWeights<float> &, bool, int);
template std::shared_ptr<const ModelWeights<double>> castWeights<double, float>(const ModelWeights<float> &);

} // namespace attnviz
