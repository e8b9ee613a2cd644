// SPDX-License-Identifier: GPL-3.0-or-later
// The encoder-decoder forward (seq2seq.h), as Hugging Face's modeling_t5.py computes it: per stack,
// x + Attn(N(x)) then x + MLP(N(x)) (decoder blocks: self-attention, cross-attention over the
// encoder's output, MLP), scores q·kᵀ + the relative position bias of block 0 (shared by every
// layer of its stack; none in cross-attention), a softmax, no scaling by 1/sqrt(d); a final RMSNorm
// per stack; logits from the decoder's final states times Architecture::outputScale.
#include "seq2seq.h"
#include "../families/family.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz {

namespace seq2seqimpl {

std::string shapeText(const std::vector<int64_t> &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

std::string withLayer(std::string pattern, int layer)
{
    const size_t at = pattern.find("{L}");
    if (at != std::string::npos)
        pattern.replace(at, 3, std::to_string(layer));
    return pattern;
}

template <typename T>
class Tensors {
public:
    explicit Tensors(const TensorArchive &a) : m_a(a) {}

    Status matrix(const std::string &name, int64_t rows, int64_t cols, Mat<T> &m)
    {
        const TensorEntry *e = m_a.find(name);
        if (!e)
            return Status::error(StatusCode::InvalidInput, m_a.fileOf(std::string()) + ": " + name + ": missing");
        const std::vector<int64_t> want = cols > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
        if (e->shape != want)
            return Status::error(StatusCode::InvalidInput, m_a.fileOf(*e) + ": " + name + ": shape " + shapeText(e->shape) +
                                                               ", expected " + shapeText(want));
        m.resize(rows, std::max<int64_t>(cols, 1));
        if (Status st = m_a.read(*e, m.data()); !st)
            return st;
        parameters += int64_t(e->count);
        return {};
    }
    Status linear(const std::string &module, int out, int in, Linear<T> &l)
    {
        l.b.resize(0);
        return matrix(module + ".weight", out, in, l.W);
    }
    Status norm(const std::string &module, int d, double eps, LayerNorm<T> &ln)
    {
        Mat<T> w;
        if (Status st = matrix(module + ".weight", d, 0, w); !st)
            return st;
        ln.gamma = Eigen::Map<const Vec<T>>(w.data(), d);
        ln.beta.resize(0);
        ln.eps = eps;
        return {};
    }
    int64_t parameters = 0;

private:
    const TensorArchive &m_a;
};

template <typename T>
Status loadAttention(Tensors<T> &r, const std::string &at, const std::string &q, const std::string &k, const std::string &v,
                     const std::string &o, const Architecture &a, std::shared_ptr<const Projections<T>> &out)
{
    auto p = std::make_shared<Projections<T>>();
    const int inner = a.heads * a.dHead;
    Status st;
    if (!(st = r.linear(at + q, inner, a.dModel, p->q)) || !(st = r.linear(at + k, inner, a.dModel, p->k)) ||
        !(st = r.linear(at + v, inner, a.dModel, p->v)) || !(st = r.linear(at + o, a.dModel, inner, p->o)))
        return st;
    out = std::move(p);
    return {};
}

template <typename T>
Status loadMlp(Tensors<T> &r, const std::string &at, const std::string &gate, const std::string &up, const std::string &down,
               const Architecture &a, Seq2SeqBlock<T> &b)
{
    Status st;
    if (a.gatedMlp && !(st = r.linear(at + gate, a.dFeedForward, a.dModel, b.gate)))
        return st;
    if (!(st = r.linear(at + up, a.dFeedForward, a.dModel, b.up)) || !(st = r.linear(at + down, a.dModel, a.dFeedForward, b.down)))
        return st;
    return {};
}

} // namespace seq2seqimpl

template <typename T>
Status loadSeq2SeqWeights(const TensorArchive &archive, const Architecture &a, const families::TensorNames &n,
                          Seq2SeqWeights<T> &out)
{
    seq2seqimpl::Tensors<T> r(archive);
    Seq2SeqWeights<T> w;
    const std::string tokens = !archive.find(n.tokens) && !n.tokensAlt.empty() && archive.find(n.tokensAlt) ? n.tokensAlt : n.tokens;
    Status st;
    if (!(st = r.matrix(tokens, a.vocabulary, a.dModel, w.tokens)))
        return st;
    if (!a.tiedEmbeddings && !(st = r.matrix(n.lmHead, a.vocabulary, a.dModel, w.lmHead)))
        return st;
    w.encoder.resize(size_t(a.seq2seq.encoderLayers));
    for (int l = 0; l < a.seq2seq.encoderLayers; ++l) {
        const std::string at = seq2seqimpl::withLayer(n.encoderLayer, l);
        Seq2SeqBlock<T> &b = w.encoder[size_t(l)];
        if (!(st = r.norm(at + n.attnNorm, a.dModel, a.normEps, b.selfNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.q, n.k, n.v, n.o, a, b.self)) ||
            !(st = r.norm(at + n.encoderFfnNorm, a.dModel, a.normEps, b.ffnNorm)) ||
            !(st = seq2seqimpl::loadMlp(r, at, n.encoderGate, n.encoderUp, n.encoderDown, a, b)))
            return st;
    }
    w.decoder.resize(size_t(a.layers));
    for (int l = 0; l < a.layers; ++l) {
        const std::string at = seq2seqimpl::withLayer(n.layer, l);
        Seq2SeqBlock<T> &b = w.decoder[size_t(l)];
        if (!(st = r.norm(at + n.attnNorm, a.dModel, a.normEps, b.selfNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.q, n.k, n.v, n.o, a, b.self)) ||
            !(st = r.norm(at + n.crossNorm, a.dModel, a.normEps, b.crossNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.crossQ, n.crossK, n.crossV, n.crossO, a, b.cross)) ||
            !(st = r.norm(at + n.ffnNorm, a.dModel, a.normEps, b.ffnNorm)) || !(st = seq2seqimpl::loadMlp(r, at, n.gate, n.up, n.down, a, b)))
            return st;
    }
    if (!(st = r.matrix(seq2seqimpl::withLayer(n.encoderLayer, 0) + n.relativeBias, a.relative.buckets, a.heads, w.encoderBias)) ||
        !(st = r.matrix(seq2seqimpl::withLayer(n.layer, 0) + n.relativeBias, a.relative.buckets, a.heads, w.decoderBias)) ||
        !(st = r.norm(n.encoderFinalNorm, a.dModel, a.normEps, w.encoderFinal)) ||
        !(st = r.norm(n.finalNorm, a.dModel, a.normEps, w.decoderFinal)))
        return st;
    w.parameters = r.parameters;
    out = std::move(w);
    return {};
}

template <typename To, typename From>
std::shared_ptr<const Seq2SeqWeights<To>> castSeq2SeqWeights(const Seq2SeqWeights<From> &w)
{
    auto lin = [](const Linear<From> &l) { return Linear<To>{l.W.template cast<To>(), l.b.template cast<To>()}; };
    auto norm = [](const LayerNorm<From> &n) { return LayerNorm<To>{n.gamma.template cast<To>(), n.beta.template cast<To>(), n.eps}; };
    auto proj = [&](const std::shared_ptr<const Projections<From>> &p) -> std::shared_ptr<const Projections<To>> {
        if (!p)
            return nullptr;
        return std::make_shared<Projections<To>>(Projections<To>{lin(p->q), lin(p->k), lin(p->v), lin(p->o)});
    };
    auto stack = [&](const std::vector<Seq2SeqBlock<From>> &s) {
        std::vector<Seq2SeqBlock<To>> o;
        for (const Seq2SeqBlock<From> &b : s)
            o.push_back({proj(b.self), proj(b.cross), norm(b.selfNorm), norm(b.crossNorm), norm(b.ffnNorm), lin(b.gate), lin(b.up),
                         lin(b.down)});
        return o;
    };
    auto out = std::make_shared<Seq2SeqWeights<To>>();
    out->tokens = w.tokens.template cast<To>();
    out->lmHead = w.lmHead.template cast<To>();
    out->encoder = stack(w.encoder);
    out->decoder = stack(w.decoder);
    out->encoderBias = w.encoderBias.template cast<To>();
    out->decoderBias = w.decoderBias.template cast<To>();
    out->encoderFinal = norm(w.encoderFinal);
    out->decoderFinal = norm(w.decoderFinal);
    out->parameters = w.parameters;
    return out;
}

namespace seq2seqimpl {

// T5LayerNorm: x / sqrt(mean(x^2) + eps) * w, no mean subtracted, no bias.
template <typename T>
Mat<T> rmsNorm(const Mat<T> &x, const LayerNorm<T> &ln)
{
    Mat<T> y(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const T inv = T(1) / std::sqrt(x.row(i).squaredNorm() / T(x.cols()) + T(ln.eps));
        y.row(i) = (x.row(i).array() * inv * ln.gamma.transpose().array()).matrix();
    }
    return y;
}

template <typename T>
Mat<T> linear(const Mat<T> &x, const Linear<T> &l)
{
    Mat<T> y = x * l.W.transpose();
    if (l.b.size())
        y.rowwise() += l.b.transpose();
    return y;
}

template <typename T>
void activate(Mat<T> &m, Activation act)
{
    const T c = T(std::sqrt(2.0 / M_PI));
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        T &x = m.data()[i];
        switch (act) {
        case Activation::Relu: x = std::max(x, T(0)); break;
        case Activation::GeluTanh: x = T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x))); break;
        case Activation::GeluErf: x = T(0.5) * x * (T(1) + std::erf(x / T(std::sqrt(2.0)))); break;
        case Activation::Silu: x = x / (T(1) + std::exp(-x)); break;
        }
    }
}

// T5DenseActDense / T5DenseGatedActDense: wo(act(wi x)) or wo(act(wi_0 x) * wi_1 x).
template <typename T>
Mat<T> mlp(const Seq2SeqBlock<T> &b, Activation act, const Mat<T> &x)
{
    Mat<T> h;
    if (b.gate.W.size()) {
        h = linear(x, b.gate);
        activate(h, act);
        h.array() *= linear(x, b.up).array();
    } else {
        h = linear(x, b.up);
        activate(h, act);
    }
    return linear(h, b.down);
}

// One attention: queries from xq, keys and values from xkv; scores q_h k_hᵀ (+ the relative bias
// where `bias` is given), keys after the query masked when `causal`, a softmax per row.
template <typename T>
void attend(const Projections<T> &P, const Architecture &a, const Mat<T> &xq, const Mat<T> &xkv, const Mat<T> *bias,
            bool bidirectional, bool causal, bool keepScores, AttentionResult<T> &R)
{
    const int tq = int(xq.rows()), tk = int(xkv.rows()), H = a.heads, dh = a.dHead;
    R.numHeads = H;
    R.kvHeads = H;
    R.dHead = dh;
    R.dModel = int(xq.cols());
    R.dOut = int(P.o.W.rows());
    R.scale = 1.0;
    R.softcap = 0;
    R.causal = causal;
    R.window = 0;
    R.batch.assign(1, SequenceResult<T>());
    SequenceResult<T> &s = R.batch[0];
    s.q = linear(xq, P.q);
    s.k = linear(xkv, P.k);
    s.v = linear(xkv, P.v);
    s.context.resize(tq, H * dh);
    s.weights.resize(size_t(H));
    Mat<T> avg = Mat<T>::Zero(tq, tk);
    std::vector<int> buckets;
    if (bias) {
        buckets.resize(size_t(tq) * size_t(tk));
        for (int i = 0; i < tq; ++i)
            for (int j = 0; j < tk; ++j)
                buckets[size_t(i) * size_t(tk) + size_t(j)] = a.relative.bucket(j - i, bidirectional);
    }
    const T ninf = -std::numeric_limits<T>::infinity();
    for (int h = 0; h < H; ++h) {
        Mat<T> sc = s.q.middleCols(h * dh, dh) * s.k.middleCols(h * dh, dh).transpose();
        if (bias)
            for (int i = 0; i < tq; ++i)
                for (int j = 0; j < tk; ++j)
                    sc(i, j) += (*bias)(buckets[size_t(i) * size_t(tk) + size_t(j)], h);
        if (keepScores)
            s.scores.push_back(sc);
        for (int i = 0; i < tq; ++i) {
            auto row = sc.row(i);
            if (causal)
                for (int j = i + 1; j < tk; ++j)
                    row[j] = ninf;
            const T mx = row.maxCoeff();
            row = (row.array() - mx).exp().matrix();
            row /= row.sum();
        }
        s.context.middleCols(h * dh, dh) = sc * s.v.middleCols(h * dh, dh);
        avg += sc;
        s.weights[size_t(h)] = sc;
    }
    s.weightsAvg = Mat<T>(avg / T(H));
    s.output = linear(s.context, P.o);
}

// A stack's block over x (the residual stream): self-attention, cross-attention (decoder blocks,
// over `memory`), MLP; the stages into `self` (and `cross`).
template <typename T>
void block(const Architecture &a, const Seq2SeqBlock<T> &b, const Mat<T> &bias, bool decoder, const Mat<T> *memory,
           bool keepScores, Mat<T> &x, LayerTrace<T> &self, LayerTrace<T> *cross)
{
    self.residualIn = x;
    self.attentionIn = rmsNorm(x, b.selfNorm);
    attend(*b.self, a, self.attentionIn, self.attentionIn, &bias, !decoder, decoder, keepScores, self.attention);
    self.projections = ProjectionsRef<T>(b.self);
    x += self.attention.batch[0].output;
    self.afterAttention = x;
    if (cross) {
        cross->residualIn = x;
        cross->attentionIn = rmsNorm(x, b.crossNorm);
        cross->keyIn = *memory;
        attend(*b.cross, a, cross->attentionIn, *memory, static_cast<const Mat<T> *>(nullptr), false, false, keepScores,
               cross->attention);
        cross->projections = ProjectionsRef<T>(b.cross);
        x += cross->attention.batch[0].output;
        cross->afterAttention = x;
        cross->output = x;
    }
    x += mlp(b, a.activation, rmsNorm(x, b.ffnNorm));
    self.output = x;
}

} // namespace seq2seqimpl

template <typename T>
Status runSeq2Seq(const Architecture &a, const Seq2SeqWeights<T> &w, const Seq2SeqInput &in, Trace<T> &out)
{
    if (in.source.empty() || in.decoder.empty())
        return Status::error(StatusCode::InvalidInput, "encoder-decoder trace: the source and the decoder's tokens must not be empty");
    for (const std::vector<int> *ids : {&in.source, &in.decoder})
        for (int id : *ids)
            if (id < 0 || id >= a.vocabulary)
                return Status::error(StatusCode::InvalidInput, "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                                                   std::to_string(a.vocabulary) + ")");
    auto cancelled = [&] { return in.cancel && in.cancel->load(std::memory_order_relaxed); };
    auto lookup = [&](const std::vector<int> &ids) {
        Mat<T> e(Eigen::Index(ids.size()), a.dModel);
        for (size_t i = 0; i < ids.size(); ++i)
            e.row(Eigen::Index(i)) = w.tokens.row(ids[i]);
        return e;
    };
    EncoderDecoderTrace<T> &sq = out.seq2seq;
    sq.sourceEmbeddings = lookup(in.source);
    Mat<T> x = sq.sourceEmbeddings;
    sq.encoder.assign(w.encoder.size(), LayerTrace<T>());
    for (size_t l = 0; l < w.encoder.size(); ++l) {
        if (cancelled())
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        seq2seqimpl::block(a, w.encoder[l], w.encoderBias, false, static_cast<const Mat<T> *>(nullptr), in.keepScores, x, sq.encoder[l],
              static_cast<LayerTrace<T> *>(nullptr));
    }
    sq.encoderFinal = seq2seqimpl::rmsNorm(x, w.encoderFinal);
    out.embeddings = lookup(in.decoder);
    out.input = out.embeddings;
    x = out.input;
    out.layers.assign(w.decoder.size(), LayerTrace<T>());
    sq.cross.assign(w.decoder.size(), LayerTrace<T>());
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        if (cancelled())
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        seq2seqimpl::block(a, w.decoder[l], w.decoderBias, true, &sq.encoderFinal, in.keepScores, x, out.layers[l], &sq.cross[l]);
    }
    out.final = seq2seqimpl::rmsNorm(x, w.decoderFinal);
    // next tokens: logits (final * outputScale) Eᵀ, the top k, the softmax's log normalizer
    const int t = int(in.decoder.size()), V = a.vocabulary, k = std::clamp(in.topK, 1, V);
    Predictions &pr = out.predictions;
    pr = Predictions();
    pr.topK = k;
    pr.next.assign(size_t(t), {});
    pr.actualNext.assign(size_t(t), std::numeric_limits<double>::quiet_NaN());
    pr.logNormalizer.assign(size_t(t), std::numeric_limits<double>::quiet_NaN());
    const Mat<T> &E = w.output();
    for (int i = in.allPredictions ? 0 : t - 1; i < t; ++i) {
        const Eigen::Matrix<T, 1, Eigen::Dynamic> logits = (out.final.row(i) * T(a.outputScale)) * E.transpose();
        const T mx = logits.maxCoeff();
        const T lse = mx + std::log((logits.array() - mx).exp().sum());
        std::vector<int> order(static_cast<size_t>(V));
        for (int j = 0; j < V; ++j)
            order[size_t(j)] = j;
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int p, int q) {
            return logits[p] > logits[q] || (logits[p] == logits[q] && p < q);
        });
        for (int j = 0; j < k; ++j) {
            TokenProb tp;
            tp.id = order[size_t(j)];
            tp.p = double(std::exp(logits[tp.id] - lse));
            pr.next[size_t(i)].push_back(tp);
        }
        pr.logNormalizer[size_t(i)] = double(lse);
        if (i + 1 < t)
            pr.actualNext[size_t(i)] = double(std::exp(logits[in.decoder[size_t(i + 1)]] - lse));
    }
    out.observed = Observe();
    return {};
}

template Status loadSeq2SeqWeights<float>(const TensorArchive &, const Architecture &, const families::TensorNames &,
                                          Seq2SeqWeights<float> &);
template std::shared_ptr<const Seq2SeqWeights<double>> castSeq2SeqWeights<double, float>(const Seq2SeqWeights<float> &);
template Status runSeq2Seq<float>(const Architecture &, const Seq2SeqWeights<float> &, const Seq2SeqInput &, Trace<float> &);
template Status runSeq2Seq<double>(const Architecture &, const Seq2SeqWeights<double> &, const Seq2SeqInput &, Trace<double> &);

} // namespace attnviz
