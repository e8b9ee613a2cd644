// SPDX-License-Identifier: GPL-3.0-or-later
// The canonical weights (weights.h) read from a model folder under any family's tensor names
// (families::TensorNames, data): the body's prefix found by the token embeddings, GPT-2's Conv1D
// tensors transposed, fused q|k|v and gate|up tensors split, norms with or without a bias (and
// BERT's older gamma/beta spelling), an LM head tied when absent or equal to the embeddings.
// Also seeded weights of any architecture and the float -> double copy.
#include "weights.h"
#include "../families/family.h"

#include <random>
#include <tuple>

namespace attnviz {

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

// Rows [r0, r0 + n) of a fused linear layer.
template <typename T>
Linear<T> rowsOf(const Linear<T> &l, int r0, int n)
{
    Linear<T> r;
    r.W = l.W.middleRows(r0, n);
    if (l.hasBias())
        r.b = l.b.segment(r0, n);
    return r;
}

template <typename T>
void fillNormal(std::mt19937_64 &g, Mat<T> &m, int rows, int cols, double sd)
{
    std::normal_distribution<double> n(0.0, sd);
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
    if (Status st = r.matrix(n.tokens, a.vocabulary, d, w.tokens); !st)
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
        auto proj = std::make_shared<Projections<T>>();
        if (!n.qkv.empty()) { // fused q|k|v rows (GPT-2's Conv1D stores them as columns)
            Linear<T> qkv;
            if (Status st = r.linear(h + n.qkv, qw + 2 * kw, d, a.qkvBias, qkv, n.conv1d); !st)
                return st;
            proj->q = rowsOf(qkv, 0, qw);
            proj->k = rowsOf(qkv, qw, kw);
            proj->v = rowsOf(qkv, qw + kw, kw);
        } else {
            for (auto [name, lin, rows] : {std::tuple<const std::string *, Linear<T> *, int>{&n.q, &proj->q, qw},
                                           {&n.k, &proj->k, kw}, {&n.v, &proj->v, kw}})
                if (Status st = r.linear(h + *name, rows, d, a.qkvBias, *lin); !st)
                    return st;
        }
        if (Status st = r.linear(h + n.o, d, qw, a.outBias, proj->o, n.conv1d); !st)
            return st;
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
            Linear<T> gu;
            if (Status st = r.linear(h + n.gateUp, 2 * f, d, a.mlpBias, gu); !st)
                return st;
            b.gate = rowsOf(gu, 0, f);
            b.up = rowsOf(gu, f, f);
        } else {
            if (a.gatedMlp)
                if (Status st = r.linear(h + n.gate, f, d, a.mlpBias, b.gate); !st)
                    return st;
            if (Status st = r.linear(h + n.up, f, d, a.mlpBias, b.up, n.conv1d); !st)
                return st;
        }
        if (Status st = r.linear(h + n.down, d, f, a.mlpBias, b.down, n.conv1d); !st)
            return st;
        b.attn = std::move(proj);
        w.layers.push_back(std::move(b));
    }
    if (a.finalNorm)
        if (Status st = r.norm(n.finalNorm, d, eps, layerNorm, w.finalNorm); !st)
            return st;
    int64_t params = 0;
    // The LM head: required when untied; when tied, a copy in the file is read and counted once.
    if (!n.lmHead.empty() && (!a.tiedEmbeddings || r.has(n.lmHead))) {
        Mat<T> head;
        if (Status st = r.matrix(n.lmHead, a.vocabulary, d, head); !st)
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
            Mat<T> dec;
            if (Status st = r.matrix(n.mlmDecoder, a.vocabulary, d, dec); !st)
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
void seedWeights(const Architecture &a, uint64_t seed, ModelWeights<T> &w)
{
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
    auto linear = [&](Linear<T> &l, int out, int in, bool bias) {
        seededLinear(g, l, out, in);
        if (!bias)
            l.b.resize(0);
    };
    fillNormal(g, w.tokens, a.vocabulary, d, 0.02);
    if (a.positions == PositionKind::Learned)
        fillNormal(g, w.positions, a.maxPositions, d, 0.02);
    if (a.typeVocabulary > 0)
        fillNormal(g, w.tokenTypes, a.typeVocabulary, d, 0.02);
    if (a.embeddingNorm)
        w.embeddingNorm = norm(d);
    w.layers.clear();
    int64_t params = int64_t(w.tokens.size() + w.positions.size() + w.tokenTypes.size());
    for (int l = 0; l < a.layers; ++l) {
        LayerWeights<T> b;
        auto proj = std::make_shared<Projections<T>>();
        linear(proj->q, qw, d, a.qkvBias);
        linear(proj->k, kw, d, a.qkvBias);
        linear(proj->v, kw, d, a.qkvBias);
        linear(proj->o, d, qw, a.outBias);
        if (a.gatedMlp)
            linear(b.gate, f, d, a.mlpBias);
        linear(b.up, f, d, a.mlpBias);
        linear(b.down, d, f, a.mlpBias);
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
        for (const Linear<T> *lin : {&proj->q, &proj->k, &proj->v, &proj->o, &b.gate, &b.up, &b.down})
            params += int64_t(lin->W.size() + lin->b.size());
        b.attn = std::move(proj);
        w.layers.push_back(std::move(b));
    }
    if (a.finalNorm)
        w.finalNorm = norm(d);
    if (!a.tiedEmbeddings && a.head == LmHead::CausalLm) {
        fillNormal(g, w.lmHead, a.vocabulary, d, 0.02);
        params += int64_t(w.lmHead.size());
    }
    w.hasMlmHead = a.head == LmHead::MaskedLm;
    if (w.hasMlmHead) {
        seededLinear(g, w.mlmTransform, d, d);
        w.mlmNorm = norm(d);
        w.outputBias = Vec<T>::Zero(a.vocabulary);
    }
    w.parameters = params;
}

template <typename To, typename From>
std::shared_ptr<const ModelWeights<To>> castWeights(const ModelWeights<From> &w)
{
    auto r = std::make_shared<ModelWeights<To>>();
    r->tokens = w.tokens.template cast<To>();
    r->positions = w.positions.template cast<To>();
    r->tokenTypes = w.tokenTypes.template cast<To>();
    r->embeddingNorm = castNorm<To>(w.embeddingNorm);
    for (const auto &b : w.layers) {
        LayerWeights<To> nb;
        auto proj = std::make_shared<Projections<To>>();
        proj->q = castLinear<To>(b.attn->q);
        proj->k = castLinear<To>(b.attn->k);
        proj->v = castLinear<To>(b.attn->v);
        proj->o = castLinear<To>(b.attn->o);
        nb.attn = std::move(proj);
        nb.attnNorm = castNorm<To>(b.attnNorm);
        nb.ffnNorm = castNorm<To>(b.ffnNorm);
        nb.postAttnNorm = castNorm<To>(b.postAttnNorm);
        nb.postFfnNorm = castNorm<To>(b.postFfnNorm);
        nb.qNorm = castNorm<To>(b.qNorm);
        nb.kNorm = castNorm<To>(b.kNorm);
        nb.gate = castLinear<To>(b.gate);
        nb.up = castLinear<To>(b.up);
        nb.down = castLinear<To>(b.down);
        r->layers.push_back(std::move(nb));
    }
    r->finalNorm = castNorm<To>(w.finalNorm);
    r->lmHead = w.lmHead.template cast<To>();
    r->hasMlmHead = w.hasMlmHead;
    r->mlmTransform = castLinear<To>(w.mlmTransform);
    r->mlmNorm = castNorm<To>(w.mlmNorm);
    r->outputBias = w.outputBias.template cast<To>();
    r->parameters = w.parameters;
    return r;
}

template Status loadWeights<float>(const TensorArchive &, const Architecture &, const families::TensorNames &, ModelWeights<float> &);
template Status loadWeights<double>(const TensorArchive &, const Architecture &, const families::TensorNames &, ModelWeights<double> &);
template void seedWeights<float>(const Architecture &, uint64_t, ModelWeights<float> &);
template std::shared_ptr<const ModelWeights<double>> castWeights<double, float>(const ModelWeights<float> &);

} // namespace attnviz
