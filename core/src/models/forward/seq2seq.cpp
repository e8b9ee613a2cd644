// SPDX-License-Identifier: GPL-3.0-or-later
// The encoder-decoder forward (seq2seq.h), as Hugging Face's modeling_t5.py, modeling_bart.py,
// modeling_mbart.py and modeling_marian.py compute it: each stack reads its token vectors (times
// Architecture::embeddingScale) plus its positions (a learned row i + positionOffset, or the
// sinusoid of i), then the stack's input norm where there is one; per block, pre-norm x + Attn(N(x))
// or post-norm N(x + Attn(x)), and the same for the MLP (decoder blocks: self-attention,
// cross-attention over the encoder's output, MLP); scores q·kᵀ times Architecture::scale() (T5: 1)
// + the relative position bias of block 0 (T5: shared by every layer of its stack; none in
// cross-attention), a softmax; a final norm per stack where there is one; logits from the decoder's
// final states times Architecture::outputScale, plus the logits bias where there is one.
#include "seq2seq.h"
#include "../families/family.h"
#include "attnviz/parallel.h"
#include "../../attention/attentionkernels.h"
#include "seedednormal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

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
    Status vector(const std::string &name, int64_t n, Vec<T> &v)
    {
        Mat<T> m;
        if (Status st = matrix(name, n, 0, m); !st)
            return st;
        v = Eigen::Map<const Vec<T>>(m.data(), Eigen::Index(n));
        return {};
    }
    Status linear(const std::string &module, int out, int in, bool bias, Linear<T> &l)
    {
        l.b.resize(0);
        if (Status st = matrix(module + ".weight", out, in, l.W); !st)
            return st;
        return bias ? vector(module + ".bias", out, l.b) : Status();
    }
    // A norm's weight, and its bias for a LayerNorm (RMSNorms have none).
    Status norm(const std::string &module, int d, const Architecture &a, LayerNorm<T> &ln)
    {
        ln.beta.resize(0);
        ln.eps = a.normEps;
        if (Status st = vector(module + ".weight", d, ln.gamma); !st)
            return st;
        return a.norm == NormKind::LayerNorm ? vector(module + ".bias", d, ln.beta) : Status();
    }
    bool has(const std::string &name) const { return m_a.find(name) != nullptr; }
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
    if (!(st = r.linear(at + q, inner, a.dModel, a.qkvBias, p->q)) ||
        !(st = r.linear(at + k, inner, a.dModel, a.qkvBias, p->k)) ||
        !(st = r.linear(at + v, inner, a.dModel, a.qkvBias, p->v)) ||
        !(st = r.linear(at + o, a.dModel, inner, a.outBias, p->o)))
        return st;
    out = std::move(p);
    return {};
}

template <typename T>
Status loadMlp(Tensors<T> &r, const std::string &at, const std::string &gate, const std::string &up, const std::string &down,
               const Architecture &a, Seq2SeqBlock<T> &b)
{
    Status st;
    if (a.gatedMlp && !(st = r.linear(at + gate, a.dFeedForward, a.dModel, a.mlpBias, b.gate)))
        return st;
    if (!(st = r.linear(at + up, a.dFeedForward, a.dModel, a.mlpBias, b.up)) ||
        !(st = r.linear(at + down, a.dModel, a.dFeedForward, a.mlpBias, b.down)))
        return st;
    return {};
}

} // namespace seq2seqimpl

template <typename T>
Status loadSeq2SeqWeights(const TensorArchive &archive, const Architecture &a, const families::TensorNames &n,
                          Seq2SeqWeights<T> &out, bool withDecoder)
{
    seq2seqimpl::Tensors<T> r(archive);
    Seq2SeqWeights<T> w;
    // the prefix: the first under which the token embeddings sit ("model." or none for BART)
    std::string pre = n.prefixes.empty() ? std::string() : n.prefixes.front();
    for (const std::string &p : n.prefixes)
        if (r.has(p + n.tokens) || (!n.tokensAlt.empty() && r.has(p + n.tokensAlt))) {
            pre = p;
            break;
        }
    const std::string tokens =
        !r.has(pre + n.tokens) && !n.tokensAlt.empty() && r.has(pre + n.tokensAlt) ? n.tokensAlt : n.tokens;
    Status st;
    if (!(st = r.matrix(pre + tokens, a.vocabulary, a.dModel, w.tokens)))
        return st;
    if (withDecoder && !a.tiedEmbeddings && !(st = r.matrix(n.lmHead, a.vocabulary, a.dModel, w.lmHead)))
        return st;
    // positions: a learned table of maxPositions + offset rows per stack, or the sinusoids (which a
    // file may also hold: then they must be that table)
    const int rows = a.maxPositions + a.seq2seq.positionOffset;
    if (a.positions == PositionKind::Learned) {
        if (!(st = r.matrix(pre + n.encoderPositions, rows, a.dModel, w.encoderPositions)) ||
            !(st = r.matrix(pre + n.positions, rows, a.dModel, w.decoderPositions)))
            return st;
    } else if (a.positions == PositionKind::Sinusoidal) {
        const std::vector<float> table = marianPositions(rows, a.dModel);
        w.encoderPositions = Eigen::Map<const Mat<float>>(table.data(), rows, a.dModel).template cast<T>();
        for (const std::string &name : {n.encoderPositions, n.positions}) {
            if (name.empty() || !r.has(pre + name))
                continue;
            Mat<T> stored;
            if (!(st = r.matrix(pre + name, rows, a.dModel, stored)))
                return st;
            const double off = double((stored - w.encoderPositions).cwiseAbs().maxCoeff());
            if (off > 1e-6)
                return Status::error(StatusCode::InvalidInput, archive.fileOf(std::string()) + ": " + pre + name +
                                                                   ": differs from the sinusoidal table by " +
                                                                   std::to_string(off) +
                                                                   " (the model computes its positions)");
        }
        w.decoderPositions = w.encoderPositions;
    }
    if (a.embeddingNorm && (!(st = r.norm(pre + n.encoderEmbeddingNorm, a.dModel, a, w.encoderEmbeddingNorm)) ||
                            !(st = r.norm(pre + n.embeddingNorm, a.dModel, a, w.decoderEmbeddingNorm))))
        return st;
    w.encoder.resize(size_t(a.seq2seq.encoderLayers));
    for (int l = 0; l < a.seq2seq.encoderLayers; ++l) {
        const std::string at = pre + seq2seqimpl::withLayer(n.encoderLayer, l);
        Seq2SeqBlock<T> &b = w.encoder[size_t(l)];
        if (!(st = r.norm(at + n.attnNorm, a.dModel, a, b.selfNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.q, n.k, n.v, n.o, a, b.self)) ||
            !(st = r.norm(at + n.encoderFfnNorm, a.dModel, a, b.ffnNorm)) ||
            !(st = seq2seqimpl::loadMlp(r, at, n.encoderGate, n.encoderUp, n.encoderDown, a, b)))
            return st;
    }
    const int decoderLayers = withDecoder ? a.layers : 0;
    w.decoder.resize(size_t(decoderLayers));
    for (int l = 0; l < decoderLayers; ++l) {
        const std::string at = pre + seq2seqimpl::withLayer(n.layer, l);
        Seq2SeqBlock<T> &b = w.decoder[size_t(l)];
        if (!(st = r.norm(at + n.attnNorm, a.dModel, a, b.selfNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.q, n.k, n.v, n.o, a, b.self)) ||
            !(st = r.norm(at + n.crossNorm, a.dModel, a, b.crossNorm)) ||
            !(st = seq2seqimpl::loadAttention(r, at, n.crossQ, n.crossK, n.crossV, n.crossO, a, b.cross)) ||
            !(st = r.norm(at + n.ffnNorm, a.dModel, a, b.ffnNorm)) ||
            !(st = seq2seqimpl::loadMlp(r, at, n.gate, n.up, n.down, a, b)))
            return st;
    }
    if (a.positions == PositionKind::RelativeBuckets &&
        (!(st = r.matrix(pre + seq2seqimpl::withLayer(n.encoderLayer, 0) + n.relativeBias, a.relative.buckets, a.heads,
                         w.encoderBias)) ||
         (withDecoder && !(st = r.matrix(pre + seq2seqimpl::withLayer(n.layer, 0) + n.relativeBias, a.relative.buckets,
                                         a.heads, w.decoderBias)))))
        return st;
    if (a.finalNorm && (!(st = r.norm(pre + n.encoderFinalNorm, a.dModel, a, w.encoderFinal)) ||
                        (withDecoder && !(st = r.norm(pre + n.finalNorm, a.dModel, a, w.decoderFinal)))))
        return st;
    // final_logits_bias: a (1, V) buffer, zeros where the file has none (a BartModel checkpoint)
    if (a.seq2seq.logitsBias && r.has(n.logitsBias)) {
        Mat<T> bias;
        if (!(st = r.matrix(n.logitsBias, 1, a.vocabulary, bias)))
            return st;
        w.logitsBias = Eigen::Map<const Vec<T>>(bias.data(), a.vocabulary);
    }
    w.parameters = r.parameters;
    out = std::move(w);
    return {};
}

void seedSeq2SeqWeights(const Architecture &a, uint64_t seed, Seq2SeqWeights<float> &out)
{
    std::mt19937_64 g(seed);
    SeededNormal<float> normal(0.0f, 0.02f);
    Seq2SeqWeights<float> w;
    int64_t params = 0;
    auto fill = [&](Mat<float> &m, int rows, int cols) {
        m.resize(rows, cols);
        for (Eigen::Index i = 0; i < m.size(); ++i)
            m.data()[i] = normal(g);
        params += int64_t(rows) * cols;
    };
    auto lin = [&](Linear<float> &l, int outDim, int in, bool bias) {
        fill(l.W, outDim, in);
        l.b = bias ? Vec<float>::Zero(outDim) : Vec<float>();
    };
    auto norm = [&]() {
        LayerNorm<float> ln;
        ln.gamma = Vec<float>::Ones(a.dModel);
        if (a.norm == NormKind::LayerNorm)
            ln.beta = Vec<float>::Zero(a.dModel);
        ln.eps = a.normEps;
        return ln;
    };
    auto attention = [&]() {
        auto p = std::make_shared<Projections<float>>();
        const int inner = a.heads * a.dHead;
        lin(p->q, inner, a.dModel, a.qkvBias);
        lin(p->k, inner, a.dModel, a.qkvBias);
        lin(p->v, inner, a.dModel, a.qkvBias);
        lin(p->o, a.dModel, inner, a.outBias);
        return std::shared_ptr<const Projections<float>>(std::move(p));
    };
    auto block = [&](bool decoder) {
        Seq2SeqBlock<float> b;
        b.selfNorm = norm();
        b.self = attention();
        if (decoder) {
            b.crossNorm = norm();
            b.cross = attention();
        }
        b.ffnNorm = norm();
        if (a.gatedMlp)
            lin(b.gate, a.dFeedForward, a.dModel, a.mlpBias);
        lin(b.up, a.dFeedForward, a.dModel, a.mlpBias);
        lin(b.down, a.dModel, a.dFeedForward, a.mlpBias);
        return b;
    };
    fill(w.tokens, a.vocabulary, a.dModel);
    if (!a.tiedEmbeddings)
        fill(w.lmHead, a.vocabulary, a.dModel);
    const int rows = a.maxPositions + a.seq2seq.positionOffset;
    if (a.positions == PositionKind::Learned) {
        fill(w.encoderPositions, rows, a.dModel);
        fill(w.decoderPositions, rows, a.dModel);
    } else if (a.positions == PositionKind::Sinusoidal) {
        const std::vector<float> table = marianPositions(rows, a.dModel);
        w.encoderPositions = Eigen::Map<const Mat<float>>(table.data(), rows, a.dModel);
        w.decoderPositions = w.encoderPositions;
    } else if (a.positions == PositionKind::RelativeBuckets) {
        fill(w.encoderBias, a.relative.buckets, a.heads);
        fill(w.decoderBias, a.relative.buckets, a.heads);
    }
    if (a.embeddingNorm) {
        w.encoderEmbeddingNorm = norm();
        w.decoderEmbeddingNorm = norm();
    }
    for (int l = 0; l < a.seq2seq.encoderLayers; ++l)
        w.encoder.push_back(block(false));
    for (int l = 0; l < a.layers; ++l)
        w.decoder.push_back(block(true));
    if (a.finalNorm) {
        w.encoderFinal = norm();
        w.decoderFinal = norm();
    }
    if (a.seq2seq.logitsBias)
        w.logitsBias = Vec<float>::Zero(a.vocabulary);
    w.parameters = params;
    out = std::move(w);
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
    out->encoderPositions = w.encoderPositions.template cast<To>();
    out->decoderPositions = w.decoderPositions.template cast<To>();
    out->encoderEmbeddingNorm = norm(w.encoderEmbeddingNorm);
    out->decoderEmbeddingNorm = norm(w.decoderEmbeddingNorm);
    out->encoderFinal = norm(w.encoderFinal);
    out->decoderFinal = norm(w.decoderFinal);
    out->logitsBias = w.logitsBias.template cast<To>();
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

// nn.LayerNorm: (x - mean) / sqrt(var + eps) * w + b, the variance biased (divided by d).
template <typename T> Mat<T> layerNorm(const Mat<T> &x, const LayerNorm<T> &ln)
{
    Mat<T> y(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const auto c = (x.row(i).array() - x.row(i).mean()).eval();
        const T inv = T(1) / std::sqrt(c.square().sum() / T(x.cols()) + T(ln.eps));
        y.row(i) = (c * inv * ln.gamma.transpose().array()).matrix();
        if (ln.beta.size())
            y.row(i) += ln.beta.transpose();
    }
    return y;
}

// The architecture's norm; an empty norm (no gamma) leaves x as it is.
template <typename T> Mat<T> normed(const Architecture &a, const Mat<T> &x, const LayerNorm<T> &ln)
{
    if (!ln.gamma.size())
        return x;
    return a.norm == NormKind::LayerNorm ? layerNorm(x, ln) : rmsNorm(x, ln);
}

// x Wᵀ + b, split by blocks of output columns over the core's threads (so that one decoder step's
// single row still reads W on every core). Float rows of a width the core's kernels take go through
// kernels::linear (attentionkernels.h); others: many rows are multiplied into a column-major tile: Eigen
// then packs W as its right-hand side, contiguous rows, instead of transposing it into left-hand
// panels (forward.cpp's productTransposed does the same).
template <typename T>
Mat<T> linear(const Mat<T> &x, const Mat<T> &W, const Vec<T> &b)
{
    const int n = int(x.rows()), out = int(W.rows());
    Mat<T> y(n, out);
    if constexpr (std::is_same_v<T, float>) {
        if (n > 6 && kernels::supportsHeadWidth(int(W.cols()))) {
            // the core's register-blocked kernel: W packed one panel at a time against every row
            const int threads = std::max(1, coreThreads());
            const int step = std::max(64, ((out + 2 * threads - 1) / (2 * threads) + 63) / 64 * 64);
            parallelFor((out + step - 1) / step, 2.0 * n * double(out) * double(W.cols()), [&](int i) {
                const int c0 = i * step, cw = std::min(step, out - c0);
                kernels::linear(x.data(), x.cols(), n, int(x.cols()), W.data() + Eigen::Index(c0) * W.cols(), W.cols(), cw,
                                b.size() ? b.data() + c0 : nullptr, y.data() + c0, y.cols());
            });
            return y;
        }
    }
    const int threads = std::max(1, coreThreads());
    const int chunk = std::max(64, ((out + 2 * threads - 1) / (2 * threads) + 15) / 16 * 16);
    const int tasks = (out + chunk - 1) / chunk;
    parallelFor(tasks, 2.0 * n * double(out) * double(W.cols()), [&](int i) {
        const int c0 = i * chunk, cw = std::min(chunk, out - c0);
        auto dst = y.middleCols(c0, cw);
        if (n > 6) {
            thread_local Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor> tile;
            tile.noalias() = x * W.middleRows(c0, cw).transpose();
            dst = tile;
        } else {
            dst.noalias() = x * W.middleRows(c0, cw).transpose();
        }
        if (b.size())
            dst.rowwise() += b.segment(c0, cw).transpose();
    });
    return y;
}

template <typename T>
Mat<T> linear(const Mat<T> &x, const Linear<T> &l)
{
    return linear(x, l.W, l.b);
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

// One attention: queries from xq, keys and values from xkv; scores q_h k_hᵀ times the architecture's
// scale (T5: 1; BART, Marian: head_dim^-0.5) (+ the relative bias where `bias` is given), keys after the query masked
// when `causal`, a softmax per row.
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
    R.scale = a.scale();
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
    // the bias depends on j - i alone: one bucket per distance, -(tq - 1) .. tk - 1 at [0, tq + tk - 1)
    std::vector<int> buckets;
    if (bias && bias->size() == 0)
        bias = nullptr;
    if (bias) {
        buckets.resize(size_t(tq + tk - 1));
        for (int r = 0; r < tq + tk - 1; ++r)
            buckets[size_t(r)] = a.relative.bucket(r - (tq - 1), bidirectional);
    }
    const T ninf = -std::numeric_limits<T>::infinity();
    if (keepScores)
        s.scores.assign(size_t(H), Mat<T>());
    // the heads in parallel (each writes its own columns, weights and scores); their mean after
    std::vector<Mat<T>> weights(static_cast<size_t>(H));
    parallelFor(H, 4.0 * tq * double(tk) * dh, [&](int h) {
        Mat<T> sc = s.q.middleCols(h * dh, dh) * s.k.middleCols(h * dh, dh).transpose();
        if (R.scale != 1.0)
            sc *= T(R.scale);
        if (bias) {
            // this head's bias per distance; row i reads the tk of them from distance -i on
            Eigen::Matrix<T, 1, Eigen::Dynamic> byDistance(tq + tk - 1);
            for (int r = 0; r < tq + tk - 1; ++r)
                byDistance[r] = (*bias)(buckets[size_t(r)], h);
            for (int i = 0; i < tq; ++i)
                sc.row(i) += byDistance.segment(tq - 1 - i, tk);
        }
        if (keepScores)
            s.scores[size_t(h)] = sc;
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
        weights[size_t(h)] = std::move(sc);
    });
    for (int h = 0; h < H; ++h) {
        avg += weights[size_t(h)];
        s.weights[size_t(h)] = weights[size_t(h)];
    }
    s.weightsAvg = Mat<T>(avg / T(H));
    s.output = linear(s.context, P.o);
    if (causal) { // the views hatch the causal cells (as the decoder-only forward's trace says them)
        s.mask = BoolMat::Zero(tq, tk);
        for (int i = 0; i < tq; ++i)
            for (int j = i + 1; j < tk; ++j)
                s.mask(i, j) = 1;
    }
}

// A stack's block over x (the residual stream): self-attention, cross-attention (decoder blocks,
// over `memory`), MLP, each pre-norm (x + f(N(x)): attentionIn is the norm of the stream) or post-norm
// (N(x + f(x)): attentionIn is the stream itself, afterAttention and output the norms after the adds);
// the stages into `self` (and `cross`).
template <typename T>
void block(const Architecture &a, const Seq2SeqBlock<T> &b, const Mat<T> &bias, bool decoder, const Mat<T> *memory,
           bool keepScores, Mat<T> &x, LayerTrace<T> &self, LayerTrace<T> *cross)
{
    const bool pre = a.placement != NormPlacement::Post;
    self.residualIn = x;
    self.attentionIn = pre ? normed(a, x, b.selfNorm) : x;
    attend(*b.self, a, self.attentionIn, self.attentionIn, &bias, !decoder, decoder, keepScores, self.attention);
    self.projections = ProjectionsRef<T>(b.self);
    x += self.attention.batch[0].output;
    if (!pre)
        x = normed(a, x, b.selfNorm);
    self.afterAttention = x;
    if (cross) {
        cross->residualIn = x;
        cross->attentionIn = pre ? normed(a, x, b.crossNorm) : x;
        cross->keyIn = *memory;
        attend(*b.cross, a, cross->attentionIn, *memory, static_cast<const Mat<T> *>(nullptr), false, false, keepScores,
               cross->attention);
        cross->projections = ProjectionsRef<T>(b.cross);
        x += cross->attention.batch[0].output;
        if (!pre)
            x = normed(a, x, b.crossNorm);
        cross->afterAttention = x;
        cross->output = x;
    }
    if (pre) {
        x += mlp(b, a.activation, normed(a, x, b.ffnNorm));
    } else {
        x += mlp(b, a.activation, x);
        x = normed(a, x, b.ffnNorm);
    }
    self.output = x;
}

// A stack's input: token vectors times the embedding scale, plus position i's row (i + offset of a
// learned table), then the stack's input norm where it has one. `scaled` gets the token vectors.
template <typename T>
Mat<T> embed(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &ids, const Mat<T> &positions,
             const LayerNorm<T> &norm, Mat<T> &scaled)
{
    scaled.resize(Eigen::Index(ids.size()), a.dModel);
    for (size_t i = 0; i < ids.size(); ++i)
        scaled.row(Eigen::Index(i)) = w.tokens.row(ids[i]);
    if (a.embeddingScale != 1.0)
        scaled *= T(a.embeddingScale);
    Mat<T> x = scaled;
    if (positions.size())
        x += positions.middleRows(a.seq2seq.positionOffset, Eigen::Index(ids.size()));
    return normed(a, x, norm);
}

template <typename T>
Status checkIds(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &source,
                const std::vector<int> &decoder)
{
    if (source.empty() || decoder.empty())
        return Status::error(StatusCode::InvalidInput, "encoder-decoder trace: the source and the decoder's tokens must not be empty");
    for (const std::vector<int> *ids : {&source, &decoder})
        for (int id : *ids)
            if (id < 0 || id >= a.vocabulary)
                return Status::error(StatusCode::InvalidInput, "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                                                   std::to_string(a.vocabulary) + ")");
    if (w.encoderPositions.size())
        for (auto [what, n] : {std::pair{"the source", source.size()}, {"the decoder's tokens", decoder.size()}})
            if (n > size_t(a.maxPositions))
                return Status::error(StatusCode::InvalidInput,
                                     std::string(what) + ": " + std::to_string(n) + " tokens, more than the " +
                                         std::to_string(a.maxPositions) +
                                         " positions the model has (max_position_embeddings)");
    return {};
}

// The encoder stack over `source` into sq (its embeddings, blocks and final states).
template <typename T>
Status encoderStack(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &source, bool keepScores,
                    const std::atomic<bool> *cancel, EncoderDecoderTrace<T> &sq)
{
    Mat<T> scaledSource;
    sq.sourceEmbeddings = embed(a, w, source, w.encoderPositions, w.encoderEmbeddingNorm, scaledSource);
    Mat<T> x = sq.sourceEmbeddings;
    sq.encoder.assign(w.encoder.size(), LayerTrace<T>());
    for (size_t l = 0; l < w.encoder.size(); ++l) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        block(a, w.encoder[l], w.encoderBias, false, static_cast<const Mat<T> *>(nullptr), keepScores, x, sq.encoder[l],
              static_cast<LayerTrace<T> *>(nullptr));
    }
    sq.encoderFinal = normed(a, x, w.encoderFinal);
    return {};
}

// The decoder stack over `decoder` with cross-attention to `memory` (the encoder's final states):
// its input, token vectors, blocks, cross-attentions and final states.
template <typename T>
Status decoderStack(const Architecture &a, const Seq2SeqWeights<T> &w, const Mat<T> &memory, const std::vector<int> &decoder,
                    bool keepScores, const std::atomic<bool> *cancel, Mat<T> &input, Mat<T> &embeddings,
                    std::vector<LayerTrace<T>> &layers, std::vector<LayerTrace<T>> &cross, Mat<T> &final)
{
    input = embed(a, w, decoder, w.decoderPositions, w.decoderEmbeddingNorm, embeddings);
    Mat<T> x = input;
    layers.assign(w.decoder.size(), LayerTrace<T>());
    cross.assign(w.decoder.size(), LayerTrace<T>());
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status::error(StatusCode::Cancelled, "trace cancelled");
        block(a, w.decoder[l], w.decoderBias, true, &memory, keepScores, x, layers[l], &cross[l]);
    }
    final = normed(a, x, w.decoderFinal);
    return {};
}

// Rows [r0, r0 + n)'s logits: (final * outputScale) Eᵀ (+ the logits bias), one product.
template <typename T>
Mat<T> logitsOf(const Architecture &a, const Seq2SeqWeights<T> &w, const Mat<T> &final, int r0, int n)
{
    Mat<T> rows = final.middleRows(r0, n);
    if (a.outputScale != 1.0)
        rows *= T(a.outputScale);
    return linear(rows, w.output(), w.logitsBias);
}

// log-softmax of one row of logits, in float64.
template <typename T, typename Row>
void logSoftmax(const Row &logits, std::vector<double> &logProbs)
{
    const T mx = logits.maxCoeff();
    const T lse = mx + std::log((logits.array() - mx).exp().sum());
    logProbs.resize(size_t(logits.size()));
    for (Eigen::Index j = 0; j < logits.size(); ++j)
        logProbs[size_t(j)] = double(logits[j] - lse);
}

// Softmax of one row in place (the max subtracted), as attend does it.
template <typename T, typename Row>
void softmaxRow(Row row)
{
    const T mx = row.maxCoeff();
    row = (row.array() - mx).exp().matrix();
    row /= row.sum();
}

// One query row's attention over the first `tk` rows of K and V (every head): context (1, H dh)
// and, where `weights` is given, row h of it per head. `bias`: T5's relative bias (query at tk - 1).
template <typename T>
void attendRow(const Architecture &a, const Mat<T> &q, const Mat<T> &K, const Mat<T> &V, int tk, const Mat<T> *bias,
               Mat<T> &context, Mat<double> *weights, Eigen::Index weightsRow)
{
    const int H = a.heads, dh = a.dHead;
    const double scale = a.scale();
    context.resize(1, H * dh);
    if (bias && bias->size() == 0)
        bias = nullptr;
    Eigen::Matrix<T, 1, Eigen::Dynamic> sc(tk);
    std::vector<int> buckets;
    if (bias) {
        buckets.resize(size_t(tk));
        for (int j = 0; j < tk; ++j)
            buckets[size_t(j)] = a.relative.bucket(j - (tk - 1), false);
    }
    for (int h = 0; h < H; ++h) {
        sc.noalias() = q.middleCols(h * dh, dh) * K.topRows(tk).middleCols(h * dh, dh).transpose();
        if (scale != 1.0)
            sc *= T(scale);
        if (bias)
            for (int j = 0; j < tk; ++j)
                sc[j] += (*bias)(buckets[size_t(j)], h);
        softmaxRow<T>(sc.row(0));
        context.middleCols(h * dh, dh).noalias() = sc * V.topRows(tk).middleCols(h * dh, dh);
        if (weights)
            weights->row(weightsRow + h) = sc.template cast<double>();
    }
}

// Rows [0, n) of m kept, room for at least `rows`.
template <typename T>
void reserveRows(Mat<T> &m, int n, int rows, int cols)
{
    if (m.rows() >= rows && m.cols() == cols)
        return;
    Mat<T> grown(std::max(rows, std::max(16, int(m.rows()) * 2)), cols);
    if (n > 0)
        grown.topRows(n) = m.topRows(n);
    m.swap(grown);
}

} // namespace seq2seqimpl

template <typename T>
Status runSeq2SeqEncoder(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &source, bool keepScores,
                         const std::atomic<bool> *cancel, EncoderDecoderTrace<T> &out)
{
    if (Status st = seq2seqimpl::checkIds(a, w, source, std::vector<int>{0}); !st)
        return st;
    out = EncoderDecoderTrace<T>();
    return seq2seqimpl::encoderStack(a, w, source, keepScores, cancel, out);
}

template <typename T>
Status encodeSeq2Seq(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &source, Mat<T> &memory)
{
    if (Status st = seq2seqimpl::checkIds(a, w, source, std::vector<int>{a.seq2seq.decoderStartId}); !st)
        return st;
    EncoderDecoderTrace<T> sq;
    if (Status st = seq2seqimpl::encoderStack(a, w, source, false, nullptr, sq); !st)
        return st;
    memory = std::move(sq.encoderFinal);
    return {};
}

template <typename T>
Status nextLogProbs(const Architecture &a, const Seq2SeqWeights<T> &w, const Mat<T> &memory, const std::vector<int> &decoder,
                    std::vector<double> &logProbs, Mat<double> &cross)
{
    if (Status st = seq2seqimpl::checkIds(a, w, std::vector<int>{0}, decoder); !st)
        return st;
    Mat<T> input, embeddings, final;
    std::vector<LayerTrace<T>> layers, crossLayers;
    if (Status st = seq2seqimpl::decoderStack(a, w, memory, decoder, false, nullptr, input, embeddings, layers, crossLayers, final);
        !st)
        return st;
    const int last = int(decoder.size()) - 1;
    const Mat<T> logits = seq2seqimpl::logitsOf(a, w, final, last, 1);
    seq2seqimpl::logSoftmax<T>(logits.row(0), logProbs);
    const int H = a.heads, s = int(memory.rows());
    cross.resize(Eigen::Index(crossLayers.size()) * H, s);
    for (size_t l = 0; l < crossLayers.size(); ++l)
        for (int h = 0; h < H; ++h)
            cross.row(Eigen::Index(l) * H + h) = crossLayers[l].attention.batch[0].weights[size_t(h)].row(last).template cast<double>();
    return {};
}

template <typename T>
Status startSeq2SeqSteps(const Architecture &a, const Seq2SeqWeights<T> &w, const std::vector<int> &source, Seq2SeqSteps<T> &out)
{
    auto c = std::make_shared<Seq2SeqCross<T>>();
    if (Status st = encodeSeq2Seq(a, w, source, c->memory); !st)
        return st;
    c->keys.resize(w.decoder.size());
    c->values.resize(w.decoder.size());
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        c->keys[l] = seq2seqimpl::linear(c->memory, w.decoder[l].cross->k);
        c->values[l] = seq2seqimpl::linear(c->memory, w.decoder[l].cross->v);
    }
    out = Seq2SeqSteps<T>();
    out.cross = std::move(c);
    out.selfK.resize(w.decoder.size());
    out.selfV.resize(w.decoder.size());
    return {};
}

template <typename T>
Status stepSeq2Seq(const Architecture &a, const Seq2SeqWeights<T> &w, Seq2SeqSteps<T> &steps, int token,
                   std::vector<double> &logProbs, Mat<double> *cross)
{
    using namespace seq2seqimpl;
    if (!steps.cross)
        return Status::error(StatusCode::InvalidInput, "encoder-decoder step: no source encoded");
    if (token < 0 || token >= a.vocabulary)
        return Status::error(StatusCode::InvalidInput, "token id " + std::to_string(token) + " is outside the vocabulary (" +
                                                           std::to_string(a.vocabulary) + ")");
    const int i = steps.length, t = i + 1, inner = a.heads * a.dHead;
    if (w.decoderPositions.size() && t > a.maxPositions)
        return Status::error(StatusCode::InvalidInput, "the decoder's tokens: " + std::to_string(t) + " tokens, more than the " +
                                                           std::to_string(a.maxPositions) +
                                                           " positions the model has (max_position_embeddings)");
    const Seq2SeqCross<T> &c = *steps.cross;
    const bool pre = a.placement != NormPlacement::Post;
    // the input row as embed() makes it
    Mat<T> x = w.tokens.row(token);
    if (a.embeddingScale != 1.0)
        x *= T(a.embeddingScale);
    if (w.decoderPositions.size())
        x += w.decoderPositions.row(a.seq2seq.positionOffset + i);
    x = normed(a, x, w.decoderEmbeddingNorm);
    const int s = int(c.memory.rows());
    if (cross)
        cross->resize(Eigen::Index(w.decoder.size()) * a.heads, s);
    Mat<T> ctx;
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        const Seq2SeqBlock<T> &b = w.decoder[l];
        // self-attention over the keys and values so far and this row's
        const Mat<T> in = pre ? normed(a, x, b.selfNorm) : x;
        const Mat<T> q = linear(in, b.self->q);
        reserveRows(steps.selfK[l], i, t, inner);
        reserveRows(steps.selfV[l], i, t, inner);
        steps.selfK[l].row(i) = linear(in, b.self->k);
        steps.selfV[l].row(i) = linear(in, b.self->v);
        attendRow(a, q, steps.selfK[l], steps.selfV[l], t, &w.decoderBias, ctx, static_cast<Mat<double> *>(nullptr), 0);
        x += linear(ctx, b.self->o);
        if (!pre)
            x = normed(a, x, b.selfNorm);
        // cross-attention over the source's keys and values
        const Mat<T> cin = pre ? normed(a, x, b.crossNorm) : x;
        const Mat<T> cq = linear(cin, b.cross->q);
        attendRow(a, cq, c.keys[l], c.values[l], s, static_cast<const Mat<T> *>(nullptr), ctx, cross,
                  Eigen::Index(l) * a.heads);
        x += linear(ctx, b.cross->o);
        if (!pre)
            x = normed(a, x, b.crossNorm);
        if (pre) {
            x += mlp(b, a.activation, normed(a, x, b.ffnNorm));
        } else {
            x += mlp(b, a.activation, x);
            x = normed(a, x, b.ffnNorm);
        }
    }
    steps.length = t;
    const Mat<T> final = normed(a, x, w.decoderFinal);
    const Mat<T> logits = logitsOf(a, w, final, 0, 1);
    logSoftmax<T>(logits.row(0), logProbs);
    return {};
}

template <typename T>
Status runSeq2Seq(const Architecture &a, const Seq2SeqWeights<T> &w, const Seq2SeqInput &in, Trace<T> &out)
{
    if (Status st = seq2seqimpl::checkIds(a, w, in.source, in.decoder); !st)
        return st;
    EncoderDecoderTrace<T> &sq = out.seq2seq;
    if (Status st = seq2seqimpl::encoderStack(a, w, in.source, in.keepScores, in.cancel, sq); !st)
        return st;
    if (Status st = seq2seqimpl::decoderStack(a, w, sq.encoderFinal, in.decoder, in.keepScores, in.cancel, out.input,
                                              out.embeddings, out.layers, sq.cross, out.final);
        !st)
        return st;
    // next tokens: logits (final * outputScale) Eᵀ (+ the logits bias), the top k, the softmax's log normalizer
    const int t = int(in.decoder.size()), V = a.vocabulary, k = std::clamp(in.topK, 1, V);
    Predictions &pr = out.predictions;
    pr = Predictions();
    pr.topK = k;
    pr.next.assign(size_t(t), {});
    pr.actualNext.assign(size_t(t), std::numeric_limits<double>::quiet_NaN());
    pr.logNormalizer.assign(size_t(t), std::numeric_limits<double>::quiet_NaN());
    const int first = in.allPredictions ? 0 : t - 1, n = t - first;
    Mat<T> rows = out.final.middleRows(first, n);
    if (a.outputScale != 1.0)
        rows *= T(a.outputScale);
    const Mat<T> &E = w.output();
    // The logits are never stored whole (t x vocabulary floats): the vocabulary is cut into ranges,
    // one task each, and each range into slices of kSlice tokens whose (n, kSlice) logits stay in
    // cache while every row's running max, sum of exponentials (rescaled when the max grows), top k
    // and the actual next token's logit are taken from them; the ranges are merged after.
    constexpr int kSlice = 256;
    struct Cand {
        T logit;
        int id;
    };
    const auto better = [](const Cand &p, const Cand &q) { return p.logit > q.logit || (p.logit == q.logit && p.id < q.id); };
    struct RowState {
        T max = -std::numeric_limits<T>::infinity(), sum = 0;
        std::vector<Cand> top; // a heap whose front is the worst kept
    };
    const int threads = std::max(1, coreThreads());
    const int ranges = std::max(1, std::min((V + kSlice - 1) / kSlice, 4 * threads));
    const int span = ((V + ranges - 1) / ranges + kSlice - 1) / kSlice * kSlice;
    const int tasks = (V + span - 1) / span;
    std::vector<std::vector<RowState>> state(size_t(tasks), std::vector<RowState>(static_cast<size_t>(n)));
    std::vector<T> actual(size_t(n), std::numeric_limits<T>::quiet_NaN());
    const bool kernel = std::is_same_v<T, float> && n > 6 && kernels::supportsHeadWidth(int(E.cols()));
    parallelFor(tasks, 2.0 * n * double(V) * double(E.cols()), [&](int task) {
        std::vector<RowState> &st = state[size_t(task)];
        thread_local Mat<T> tile;
        tile.resize(n, kSlice);
        for (int c0 = task * span; c0 < std::min(V, (task + 1) * span); c0 += kSlice) {
            const int cw = std::min(kSlice, V - c0);
            const T *bias = w.logitsBias.size() ? w.logitsBias.data() + c0 : nullptr;
            if constexpr (std::is_same_v<T, float>) {
                if (kernel)
                    kernels::linear(rows.data(), rows.cols(), n, int(rows.cols()), E.data() + Eigen::Index(c0) * E.cols(),
                                                 E.cols(), cw, bias, tile.data(), tile.cols());
            }
            if (!kernel) {
                tile.leftCols(cw).noalias() = rows * E.middleRows(c0, cw).transpose();
                if (bias)
                    tile.leftCols(cw).rowwise() += w.logitsBias.segment(c0, cw).transpose();
            }
            for (int r = 0; r < n; ++r) {
                const auto logits = tile.row(r).head(cw);
                RowState &rs = st[size_t(r)];
                const T mx = logits.maxCoeff();
                if (mx > rs.max) {
                    rs.sum *= std::exp(rs.max - mx);
                    rs.max = mx;
                }
                rs.sum += (logits.array() - rs.max).exp().sum();
                for (int j = 0; j < cw; ++j) {
                    const Cand c{logits[j], c0 + j};
                    if (int(rs.top.size()) < k) {
                        rs.top.push_back(c);
                        std::push_heap(rs.top.begin(), rs.top.end(), better);
                    } else if (better(c, rs.top.front())) {
                        std::pop_heap(rs.top.begin(), rs.top.end(), better);
                        rs.top.back() = c;
                        std::push_heap(rs.top.begin(), rs.top.end(), better);
                    }
                }
                const int i = first + r;
                if (i + 1 < t && in.decoder[size_t(i + 1)] >= c0 && in.decoder[size_t(i + 1)] < c0 + cw)
                    actual[size_t(r)] = logits[in.decoder[size_t(i + 1)] - c0];
            }
        }
    });
    // each position's top k and normalizer: the ranges merged
    for (int r = 0; r < n; ++r) {
        const int i = first + r;
        T mx = -std::numeric_limits<T>::infinity();
        for (const std::vector<RowState> &st : state)
            mx = std::max(mx, st[size_t(r)].max);
        T sum = 0;
        std::vector<Cand> all;
        for (const std::vector<RowState> &st : state) {
            sum += st[size_t(r)].sum * std::exp(st[size_t(r)].max - mx);
            all.insert(all.end(), st[size_t(r)].top.begin(), st[size_t(r)].top.end());
        }
        const T lse = mx + std::log(sum);
        std::partial_sort(all.begin(), all.begin() + k, all.end(), better);
        for (int j = 0; j < k; ++j) {
            TokenProb tp;
            tp.id = all[size_t(j)].id;
            tp.p = double(std::exp(all[size_t(j)].logit - lse));
            pr.next[size_t(i)].push_back(tp);
        }
        pr.logNormalizer[size_t(i)] = double(lse);
        if (i + 1 < t)
            pr.actualNext[size_t(i)] = double(std::exp(actual[size_t(r)] - lse));
    }
    out.observed = Observe();
    return {};
}

template Status loadSeq2SeqWeights<float>(const TensorArchive &, const Architecture &, const families::TensorNames &,
                                          Seq2SeqWeights<float> &, bool);
template Status runSeq2SeqEncoder<float>(const Architecture &, const Seq2SeqWeights<float> &, const std::vector<int> &, bool,
                                         const std::atomic<bool> *, EncoderDecoderTrace<float> &);
template Status runSeq2SeqEncoder<double>(const Architecture &, const Seq2SeqWeights<double> &, const std::vector<int> &, bool,
                                          const std::atomic<bool> *, EncoderDecoderTrace<double> &);
template std::shared_ptr<const Seq2SeqWeights<double>> castSeq2SeqWeights<double, float>(const Seq2SeqWeights<float> &);
template Status runSeq2Seq<float>(const Architecture &, const Seq2SeqWeights<float> &, const Seq2SeqInput &, Trace<float> &);
template Status runSeq2Seq<double>(const Architecture &, const Seq2SeqWeights<double> &, const Seq2SeqInput &, Trace<double> &);
template Status encodeSeq2Seq<float>(const Architecture &, const Seq2SeqWeights<float> &, const std::vector<int> &, Mat<float> &);
template Status encodeSeq2Seq<double>(const Architecture &, const Seq2SeqWeights<double> &, const std::vector<int> &, Mat<double> &);
template Status nextLogProbs<float>(const Architecture &, const Seq2SeqWeights<float> &, const Mat<float> &,
                                    const std::vector<int> &, std::vector<double> &, Mat<double> &);
template Status nextLogProbs<double>(const Architecture &, const Seq2SeqWeights<double> &, const Mat<double> &,
                                     const std::vector<int> &, std::vector<double> &, Mat<double> &);
template Status startSeq2SeqSteps<float>(const Architecture &, const Seq2SeqWeights<float> &, const std::vector<int> &,
                                         Seq2SeqSteps<float> &);
template Status startSeq2SeqSteps<double>(const Architecture &, const Seq2SeqWeights<double> &, const std::vector<int> &,
                                          Seq2SeqSteps<double> &);
template Status stepSeq2Seq<float>(const Architecture &, const Seq2SeqWeights<float> &, Seq2SeqSteps<float> &, int,
                                   std::vector<double> &, Mat<double> *);
template Status stepSeq2Seq<double>(const Architecture &, const Seq2SeqWeights<double> &, Seq2SeqSteps<double> &, int,
                                    std::vector<double> &, Mat<double> *);

} // namespace attnviz
