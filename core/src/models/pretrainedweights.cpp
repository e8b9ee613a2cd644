// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor names of each family mapped onto PretrainedWeights (pretrainedweights.h):
//   gpt2        [transformer.]wte, wpe, h.N.{ln_1, attn.c_attn (d, 3d: q|k|v), attn.c_proj, ln_2,
//               mlp.c_fc, mlp.c_proj}, ln_f; Conv1D (in, out) transposed; lm_head tied to wte;
//               h.N.attn.bias / masked_bias (causal buffers) ignored
//   bert        [bert.]embeddings.{word,position,token_type}_embeddings, embeddings.LayerNorm,
//               encoder.layer.N.{attention.self.{query,key,value}, attention.output.{dense,
//               LayerNorm}, intermediate.dense, output.{dense, LayerNorm}}; cls.predictions.
//               {transform.dense, transform.LayerNorm, bias, decoder.weight (tied when absent)}
//   distilbert  [distilbert.]embeddings.{word,position}_embeddings, embeddings.LayerNorm,
//               transformer.layer.N.{attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1, ffn.lin2,
//               output_layer_norm}; vocab_transform, vocab_layer_norm, vocab_projector
// LayerNorm tensors are spelled weight/bias or gamma/beta (older checkpoints).
#include "pretrainedweights.h"

#include <random>

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

    Status linear(const std::string &n, int out, int in, Linear<T> &l, bool biasOptional = false)
    {
        if (Status st = matrix(n + ".weight", out, in, l.W); !st)
            return st;
        if (biasOptional && !has(n + ".bias")) {
            l.b.resize(0);
            return {};
        }
        return vector(n + ".bias", out, l.b);
    }

    // LayerNorm as n.weight/n.bias or n.gamma/n.beta.
    Status norm(const std::string &n, int d, double eps, LayerNorm<T> &ln)
    {
        ln.eps = eps;
        const bool legacy = !has(n + ".weight") && has(n + ".gamma");
        if (Status st = vector(n + (legacy ? ".gamma" : ".weight"), d, ln.gamma); !st)
            return st;
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

std::string prefixFor(const TensorArchive &a, const std::string &prefix, const std::string &probe)
{
    return !a.find(probe) && a.find(prefix + probe) ? prefix : std::string();
}

template <typename T>
Status loadGpt2(const TensorArchive &a, const PretrainedConfig &c, PretrainedWeights<T> &w, int64_t &params)
{
    Reader<T> r(a, prefixFor(a, "transformer.", "wte.weight"));
    const int d = c.dModel, f = c.dFeedForward;
    if (Status st = r.matrix("wte.weight", c.vocabulary, d, w.tokens); !st)
        return st;
    if (Status st = r.matrix("wpe.weight", c.maxPositions, d, w.positions); !st)
        return st;
    for (int l = 0; l < c.layers; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        PretrainedBlock<T> b;
        auto proj = std::make_shared<Projections<T>>();
        Mat<T> qkv;
        Vec<T> qkvB;
        if (Status st = r.matrix(h + "attn.c_attn.weight", 3 * d, d, qkv, true); !st)
            return st;
        if (Status st = r.vector(h + "attn.c_attn.bias", 3 * d, qkvB); !st)
            return st;
        proj->q.W = qkv.topRows(d);
        proj->k.W = qkv.middleRows(d, d);
        proj->v.W = qkv.bottomRows(d);
        proj->q.b = qkvB.segment(0, d);
        proj->k.b = qkvB.segment(d, d);
        proj->v.b = qkvB.segment(2 * d, d);
        if (Status st = r.matrix(h + "attn.c_proj.weight", d, d, proj->o.W, true); !st)
            return st;
        if (Status st = r.vector(h + "attn.c_proj.bias", d, proj->o.b); !st)
            return st;
        if (Status st = r.matrix(h + "mlp.c_fc.weight", f, d, b.ff1.W, true); !st)
            return st;
        if (Status st = r.vector(h + "mlp.c_fc.bias", f, b.ff1.b); !st)
            return st;
        if (Status st = r.matrix(h + "mlp.c_proj.weight", d, f, b.ff2.W, true); !st)
            return st;
        if (Status st = r.vector(h + "mlp.c_proj.bias", d, b.ff2.b); !st)
            return st;
        if (Status st = r.norm(h + "ln_1", d, c.layerNormEps, b.ln1); !st)
            return st;
        if (Status st = r.norm(h + "ln_2", d, c.layerNormEps, b.ln2); !st)
            return st;
        b.attn = std::move(proj);
        w.blocks.push_back(std::move(b));
    }
    if (Status st = r.norm("ln_f", d, c.layerNormEps, w.finalNorm); !st)
        return st;
    w.hasFinalNorm = true;
    int64_t tied = 0;
    if (r.has("lm_head.weight")) { // untied (rare): used when it differs from wte
        Mat<T> head;
        if (Status st = r.matrix("lm_head.weight", c.vocabulary, d, head); !st)
            return st;
        if (head != w.tokens)
            w.decoder = std::move(head);
        else
            tied = int64_t(head.size()); // stored twice in the file, counted once
    }
    params = r.parameters() - tied;
    return {};
}

template <typename T>
Status loadBert(const TensorArchive &a, const PretrainedConfig &c, PretrainedWeights<T> &w, int64_t &params)
{
    const bool distil = c.family == ModelFamily::DistilBert;
    const std::string root = distil ? "distilbert." : "bert.";
    Reader<T> r(a, prefixFor(a, root, "embeddings.word_embeddings.weight"));
    const int d = c.dModel, f = c.dFeedForward;
    const double eps = c.layerNormEps;
    if (Status st = r.matrix("embeddings.word_embeddings.weight", c.vocabulary, d, w.tokens); !st)
        return st;
    if (Status st = r.matrix("embeddings.position_embeddings.weight", c.maxPositions, d, w.positions); !st)
        return st;
    if (!distil && c.typeVocabulary > 0)
        if (Status st = r.matrix("embeddings.token_type_embeddings.weight", c.typeVocabulary, d, w.tokenTypes); !st)
            return st;
    if (Status st = r.norm("embeddings.LayerNorm", d, eps, w.embeddingNorm); !st)
        return st;
    w.hasEmbeddingNorm = true;
    for (int l = 0; l < c.layers; ++l) {
        PretrainedBlock<T> b;
        auto proj = std::make_shared<Projections<T>>();
        if (distil) {
            const std::string h = "transformer.layer." + std::to_string(l) + ".";
            for (auto [name, lin] : {std::pair<const char *, Linear<T> *>{"q_lin", &proj->q}, {"k_lin", &proj->k},
                                     {"v_lin", &proj->v}, {"out_lin", &proj->o}})
                if (Status st = r.linear(h + "attention." + name, d, d, *lin); !st)
                    return st;
            if (Status st = r.norm(h + "sa_layer_norm", d, eps, b.ln1); !st)
                return st;
            if (Status st = r.linear(h + "ffn.lin1", f, d, b.ff1); !st)
                return st;
            if (Status st = r.linear(h + "ffn.lin2", d, f, b.ff2); !st)
                return st;
            if (Status st = r.norm(h + "output_layer_norm", d, eps, b.ln2); !st)
                return st;
        } else {
            const std::string h = "encoder.layer." + std::to_string(l) + ".";
            for (auto [name, lin] : {std::pair<const char *, Linear<T> *>{"attention.self.query", &proj->q},
                                     {"attention.self.key", &proj->k}, {"attention.self.value", &proj->v},
                                     {"attention.output.dense", &proj->o}})
                if (Status st = r.linear(h + name, d, d, *lin); !st)
                    return st;
            if (Status st = r.norm(h + "attention.output.LayerNorm", d, eps, b.ln1); !st)
                return st;
            if (Status st = r.linear(h + "intermediate.dense", f, d, b.ff1); !st)
                return st;
            if (Status st = r.linear(h + "output.dense", d, f, b.ff2); !st)
                return st;
            if (Status st = r.norm(h + "output.LayerNorm", d, eps, b.ln2); !st)
                return st;
        }
        b.attn = std::move(proj);
        w.blocks.push_back(std::move(b));
    }
    // Masked-LM head (absent in a bare encoder: then no [MASK] fills).
    const std::string transform = distil ? "vocab_transform" : "cls.predictions.transform.dense";
    if (r.has(transform + ".weight")) {
        w.hasMlmHead = true;
        if (Status st = r.linear(transform, d, d, w.mlmTransform); !st)
            return st;
        if (Status st = r.norm(distil ? "vocab_layer_norm" : "cls.predictions.transform.LayerNorm", d, eps, w.mlmNorm); !st)
            return st;
        const std::string decoder = distil ? "vocab_projector" : "cls.predictions.decoder";
        if (r.has(decoder + ".weight")) {
            Mat<T> dec;
            if (Status st = r.matrix(decoder + ".weight", c.vocabulary, d, dec); !st)
                return st;
            if (dec != w.tokens)
                w.decoder = std::move(dec);
            else
                params -= int64_t(dec.size()); // tied: stored twice in the file, counted once
        }
        const std::string bias = distil ? "vocab_projector.bias"
                                        : (r.has("cls.predictions.bias") ? "cls.predictions.bias" : "cls.predictions.decoder.bias");
        if (Status st = r.vector(bias, c.vocabulary, w.decoderBias); !st)
            return st;
    }
    params += r.parameters();
    return {};
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

template <typename T>
LayerNorm<T> unitNorm(int d, double eps)
{
    LayerNorm<T> ln;
    ln.gamma = Vec<T>::Ones(d);
    ln.beta = Vec<T>::Zero(d);
    ln.eps = eps;
    return ln;
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
Status loadPretrainedWeights(const TensorArchive &archive, const PretrainedConfig &config, PretrainedWeights<T> &out)
{
    PretrainedWeights<T> w;
    int64_t params = 0;
    Status st = config.family == ModelFamily::Gpt2 ? loadGpt2(archive, config, w, params) : loadBert(archive, config, w, params);
    if (!st)
        return st;
    w.parameters = params;
    out = std::move(w);
    return {};
}

template <typename T>
void seedPretrainedWeights(const PretrainedConfig &c, uint64_t seed, PretrainedWeights<T> &w)
{
    std::mt19937_64 g(seed);
    const int d = c.dModel, f = c.dFeedForward;
    const double eps = c.layerNormEps;
    fillNormal(g, w.tokens, c.vocabulary, d, 0.02);
    fillNormal(g, w.positions, c.maxPositions, d, 0.02);
    if (c.typeVocabulary > 0)
        fillNormal(g, w.tokenTypes, c.typeVocabulary, d, 0.02);
    w.hasEmbeddingNorm = c.family != ModelFamily::Gpt2;
    if (w.hasEmbeddingNorm)
        w.embeddingNorm = unitNorm<T>(d, eps);
    w.blocks.clear();
    for (int l = 0; l < c.layers; ++l) {
        PretrainedBlock<T> b;
        auto proj = std::make_shared<Projections<T>>();
        for (Linear<T> *lin : {&proj->q, &proj->k, &proj->v, &proj->o})
            seededLinear(g, *lin, d, d);
        seededLinear(g, b.ff1, f, d);
        seededLinear(g, b.ff2, d, f);
        b.ln1 = unitNorm<T>(d, eps);
        b.ln2 = unitNorm<T>(d, eps);
        b.attn = std::move(proj);
        w.blocks.push_back(std::move(b));
    }
    w.hasFinalNorm = c.family == ModelFamily::Gpt2;
    if (w.hasFinalNorm)
        w.finalNorm = unitNorm<T>(d, eps);
    w.hasMlmHead = c.family != ModelFamily::Gpt2;
    if (w.hasMlmHead) {
        seededLinear(g, w.mlmTransform, d, d);
        w.mlmNorm = unitNorm<T>(d, eps);
        w.decoderBias = Vec<T>::Zero(c.vocabulary);
    }
    w.parameters = int64_t(w.tokens.size() + w.positions.size() + w.tokenTypes.size()) +
                   int64_t(c.layers) * (4 * (int64_t(d) * d + d) + 2 * int64_t(d) * f + f + d + 4 * d);
}

template <typename To, typename From>
std::shared_ptr<const PretrainedWeights<To>> castWeights(const PretrainedWeights<From> &w)
{
    auto r = std::make_shared<PretrainedWeights<To>>();
    r->tokens = w.tokens.template cast<To>();
    r->positions = w.positions.template cast<To>();
    r->tokenTypes = w.tokenTypes.template cast<To>();
    r->embeddingNorm = castNorm<To>(w.embeddingNorm);
    r->hasEmbeddingNorm = w.hasEmbeddingNorm;
    for (const auto &b : w.blocks) {
        PretrainedBlock<To> nb;
        auto proj = std::make_shared<Projections<To>>();
        proj->q = castLinear<To>(b.attn->q);
        proj->k = castLinear<To>(b.attn->k);
        proj->v = castLinear<To>(b.attn->v);
        proj->o = castLinear<To>(b.attn->o);
        nb.attn = std::move(proj);
        nb.ln1 = castNorm<To>(b.ln1);
        nb.ln2 = castNorm<To>(b.ln2);
        nb.ff1 = castLinear<To>(b.ff1);
        nb.ff2 = castLinear<To>(b.ff2);
        r->blocks.push_back(std::move(nb));
    }
    r->finalNorm = castNorm<To>(w.finalNorm);
    r->hasFinalNorm = w.hasFinalNorm;
    r->hasMlmHead = w.hasMlmHead;
    r->mlmTransform = castLinear<To>(w.mlmTransform);
    r->mlmNorm = castNorm<To>(w.mlmNorm);
    r->decoder = w.decoder.template cast<To>();
    r->decoderBias = w.decoderBias.template cast<To>();
    r->parameters = w.parameters;
    return r;
}

template Status loadPretrainedWeights<float>(const TensorArchive &, const PretrainedConfig &, PretrainedWeights<float> &);
template Status loadPretrainedWeights<double>(const TensorArchive &, const PretrainedConfig &, PretrainedWeights<double> &);
template void seedPretrainedWeights<float>(const PretrainedConfig &, uint64_t, PretrainedWeights<float> &);
template std::shared_ptr<const PretrainedWeights<double>> castWeights<double, float>(const PretrainedWeights<float> &);

} // namespace attnviz
