// SPDX-License-Identifier: GPL-3.0-or-later
// A stack of transformer blocks on one sequence (seed 002), run by the one forward pass
// (forward/forward.cpp): the StackConfig becomes an Architecture (LayerNorm before or after each
// sub-block, learned or sinusoidal positions as a position table, the attention's weight rule), the
// StackWeights the forward's layout, and the token vectors a vocabulary of t rows read by ids 0..t-1.
// Shapes: tokens x (t, d); per block attention (t, d), feed-forward (t, f) -> (t, d).
#include "attnviz/transformer.h"
#include "attnviz/attention.h"
#include "attnviz/linear.h"
#include "attnviz/projections.h"
#include "attnviz/torchrng.h"
#include "forward/weights.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnviz {

Mat<double> sinusoidalPositions(int t, int d)
{
    Mat<double> p(t, d);
    for (int pos = 0; pos < t; ++pos)
        for (int i = 0; i < d; ++i) {
            const double freq = std::pow(10000.0, -double(2 * (i / 2)) / double(d));
            p(pos, i) = (i % 2 == 0) ? std::sin(pos * freq) : std::cos(pos * freq);
        }
    return p;
}

namespace {

// sinusoidalPositions(t, d) for this thread: a row depends only on its position and d, so the rows
// computed for the last d are kept (and the table doubled when a text outgrows it). A recompute of
// the stack then no longer pays t x d sines, cosines and powers on one thread while the pool waits
// (~1.5 ms of the 12-layer stack at 128 tokens, 1 % of its samples); the values are the same bits.
const Mat<double> &positionTable(int t, int d)
{
    thread_local Mat<double> table;
    if (table.cols() != d || table.rows() < t)
        table = sinusoidalPositions(table.cols() == d ? std::max<int>(t, int(2 * table.rows())) : t, d);
    return table;
}

std::string layerName(int l) { return "layer " + std::to_string(l) + ": "; }

std::string shape(Eigen::Index r, Eigen::Index c) { return "(" + std::to_string(r) + ", " + std::to_string(c) + ")"; }

// A dense layer of the stack checked against its shape (out, in); an identity is an empty W.
template <typename T>
Status checkDense(const Linear<T> &l, int out, int in, const std::string &what)
{
    if (l.isIdentity() && out != in)
        return Status::error(StatusCode::InvalidInput, what + ": identity projection needs equal widths, got in " +
                                                           std::to_string(in) + " and out " + std::to_string(out));
    if (!l.isIdentity() && (l.W.rows() != out || l.W.cols() != in))
        return Status::error(StatusCode::InvalidInput,
                             what + ": shape " + shape(l.W.rows(), l.W.cols()) + ", expected " + shape(out, in));
    if (l.hasBias() && l.b.size() != out)
        return Status::error(StatusCode::InvalidInput, what + ": bias length " + std::to_string(l.b.size()) +
                                                           ", expected " + std::to_string(out));
    if (!l.W.allFinite() || !l.b.allFinite())
        return Status::error(StatusCode::NonFinite, what + ": contains NaN or Inf");
    return {};
}

// The layer as the forward reads it: an identity made an explicit (in, in) matrix.
template <typename T>
Linear<T> explicitDense(const Linear<T> &l, int in)
{
    return l.isIdentity() ? Linear<T>{Mat<T>::Identity(in, in), l.b} : l;
}

// A LayerNorm of the stack as the forward reads it: empty gamma / beta made ones / zeros.
template <typename T>
Status norm(const LayerNorm<T> &ln, int d, const std::string &what, LayerNorm<T> &to)
{
    if ((ln.gamma.size() && ln.gamma.size() != d) || (ln.beta.size() && ln.beta.size() != d))
        return Status::error(StatusCode::InvalidInput, what + ": LayerNorm width differs from d_model " + std::to_string(d));
    to.gamma = ln.gamma.size() ? ln.gamma : Vec<T>(Vec<T>::Ones(d));
    to.beta = ln.beta;
    to.eps = ln.eps;
    return {};
}

// The width of the stack's heads: the config's d_head, or the query projection's width split evenly.
Status headWidth(const AttentionConfig &a, int inner, int &dh)
{
    if (a.numHeads < 1)
        return Status::error(StatusCode::InvalidInput, "num_heads: must be at least 1");
    if (a.dHead > 0) {
        dh = a.dHead;
        return {};
    }
    if (inner % a.numHeads != 0)
        return Status::error(StatusCode::InvalidInput, "num_heads: " + std::to_string(a.numHeads) +
                                                           " does not divide d_model " + std::to_string(inner) +
                                                           " (choose a divisor, or set d_head)");
    dh = inner / a.numHeads;
    return {};
}

} // namespace

// Lays the weights out for the forward: per block q, k, v, o lent (copied only where one is an
// identity), the LayerNorms, ff1 as `up` and ff2 as `down`; the final LayerNorm; the position table.
template <typename T>
Status StackForward<T>::layout(const StackConfig &cfg, int d)
{
    const StackWeights<T> &w = *m_source;
    auto out = std::make_shared<ModelWeights<T>>();
    out->layers.resize(size_t(cfg.depth));
    for (int l = 0; l < cfg.depth; ++l) {
        const BlockWeights<T> &b = w.blocks[size_t(l)];
        LayerWeights<T> &lw = out->layers[size_t(l)];
        const std::string at = layerName(l);
        const int inner = b.attn.q.isIdentity() ? d : int(b.attn.q.W.rows());
        int dh = 0;
        if (Status st = headWidth(cfg.attention, inner, dh); !st)
            return Status::error(st.code, at + st.message);
        const int hd = cfg.attention.numHeads * dh;
        if (Status st = checkDense(b.attn.q, hd, d, at + "inputs.W_q"); !st)
            return st;
        if (Status st = checkDense(b.attn.k, hd, d, at + "inputs.W_k"); !st)
            return st;
        if (Status st = checkDense(b.attn.v, hd, d, at + "inputs.W_v"); !st)
            return st;
        if (Status st = checkDense(b.attn.o, d, hd, at + "attention output (inputs.W_o)"); !st)
            return st;
        if (b.attn.q.isIdentity() || b.attn.k.isIdentity() || b.attn.v.isIdentity() || b.attn.o.isIdentity())
            lw.attn = std::make_shared<const Projections<T>>(Projections<T>{
                explicitDense(b.attn.q, d), explicitDense(b.attn.k, d), explicitDense(b.attn.v, d), explicitDense(b.attn.o, hd)});
        else // lent: the trace's projections point at the caller's weights, kept alive by them
            lw.attn = std::shared_ptr<const Projections<T>>(m_source, &b.attn);
        if (Status st = norm(b.ln1, d, at + "ln_1", lw.attnNorm); !st)
            return st;
        if (Status st = norm(b.ln2, d, at + "ln_2", lw.ffnNorm); !st)
            return st;
        const int ff = b.ff1.isIdentity() ? d : int(b.ff1.W.rows());
        if (Status st = checkDense(b.ff1, ff, d, at + "feed-forward input"); !st)
            return st;
        if (Status st = checkDense(b.ff2, d, ff, at + "feed-forward output"); !st)
            return st;
        lw.up = explicitDense(b.ff1, d);
        lw.down = explicitDense(b.ff2, ff);
    }
    if (Status st = norm(w.lnFinal, d, "ln_f", out->finalNorm); !st)
        return st;
    if (cfg.positions == PositionEncoding::Learned) {
        if (w.positions.cols() != d)
            return Status::error(StatusCode::InvalidInput, "positions: no learned table of width " + std::to_string(d));
        out->positions = w.positions;
    }
    m_weights = std::move(out);
    m_depth = cfg.depth;
    m_heads = cfg.attention.numHeads;
    m_dHead = cfg.attention.dHead;
    m_d = d;
    m_positions = cfg.positions;
    return {};
}

template <typename T>
Status StackForward<T>::run(const StackConfig &cfg, const std::shared_ptr<const StackWeights<T>> &weights,
                            const Mat<T> &tokens, Trace<T> &out)
{
    const int t = int(tokens.rows()), d = int(tokens.cols());
    if (t == 0 || d == 0)
        return Status::error(StatusCode::InvalidInput, "tokens: empty sequence");
    if (!tokens.allFinite())
        return Status::error(StatusCode::NonFinite, "tokens: contains NaN or Inf");
    if (cfg.depth < 1 || cfg.depth > int(weights->blocks.size()))
        return Status::error(StatusCode::InvalidInput, "depth: " + std::to_string(cfg.depth) + " layers asked, " +
                                                           std::to_string(weights->blocks.size()) + " in the weights");
    if (cfg.norm == NormPlacement::Sandwich)
        return Status::error(StatusCode::InvalidInput, "norm: the stack's LayerNorms sit before or after a sub-block");
    if (!cfg.keyPadding.empty() && int(cfg.keyPadding.size()) != t)
        return Status::error(StatusCode::InvalidInput, "inputs.key_padding_mask: length " +
                                                           std::to_string(cfg.keyPadding.size()) + ", expected t_k " +
                                                           std::to_string(t));
    if (cfg.attnMask.size() && (cfg.attnMask.rows() != t || cfg.attnMask.cols() != t))
        return Status::error(StatusCode::InvalidInput, "inputs.attn_mask: shape " +
                                                           shape(cfg.attnMask.rows(), cfg.attnMask.cols()) +
                                                           ", expected " + shape(t, t));
    if (weights != m_source || cfg.depth != m_depth || cfg.attention.numHeads != m_heads ||
        cfg.attention.dHead != m_dHead || d != m_d || cfg.positions != m_positions || !m_weights) {
        m_weights.reset();
        m_source = weights;
        if (Status st = layout(cfg, d); !st) {
            m_source.reset();
            return st;
        }
    }
    ModelWeights<T> &w = *m_weights;
    if (cfg.positions == PositionEncoding::Learned && w.positions.rows() < t)
        return Status::error(StatusCode::InvalidInput, "positions: the learned table has " +
                                                           std::to_string(w.positions.rows()) + " positions, the text " +
                                                           std::to_string(t) + " tokens");
    if (cfg.positions == PositionEncoding::Sinusoidal && w.positions.rows() < t)
        w.positions = positionTable(t, d).template cast<T>();
    w.tokens = tokens;

    const Projections<T> &p0 = *w.layers.front().attn;
    Architecture a;
    a.family = a.modelType = "stack";
    a.layers = cfg.depth;
    a.heads = a.kvHeads = cfg.attention.numHeads;
    a.dModel = d;
    if (Status st = headWidth(cfg.attention, int(p0.q.W.rows()), a.dHead); !st)
        return Status::error(st.code, layerName(0) + st.message);
    a.dFeedForward = int(w.layers.front().up.W.rows());
    a.vocabulary = a.maxPositions = t;
    a.norm = NormKind::LayerNorm;
    a.placement = cfg.norm;
    a.finalNorm = cfg.finalNorm;
    a.positions = PositionKind::Learned;
    a.activation = cfg.activation;
    const double scale = scaleFor(cfg.attention, d, a.dHead);
    if (!std::isfinite(scale))
        return Status::error(StatusCode::NonFinite, "scale: not a finite number");
    a.attentionScale = scale;
    a.causal = cfg.attention.causal;
    a.weightRule.normalization = cfg.attention.normalization;
    a.weightRule.maskMethod = cfg.attention.maskMethod;
    a.weightRule.fullyMasked = cfg.attention.fullyMasked;
    a.weightRule.dropout = cfg.attention.dropout;
    a.weightRule.dropoutSeed = cfg.attention.dropoutSeed;
    a.weightRule.dropoutStream = cfg.attention.dropoutStream;
    if (!(a.weightRule.dropout >= 0.0 && a.weightRule.dropout < 1.0))
        return Status::error(StatusCode::InvalidInput, "dropout: rate must be in [0, 1), got " +
                                                           std::to_string(a.weightRule.dropout));
    a.tiedEmbeddings = true;
    a.head = LmHead::None;

    ForwardInput in;
    in.ids.resize(size_t(t));
    std::iota(in.ids.begin(), in.ids.end(), 0);
    for (int j = 0; j < int(cfg.keyPadding.size()); ++j)
        if (cfg.keyPadding[size_t(j)])
            in.paddedKeys.push_back(j);
    for (Eigen::Index i = 0; i < cfg.attnMask.rows(); ++i)
        for (Eigen::Index j = 0; j < cfg.attnMask.cols(); ++j)
            if (cfg.attnMask(i, j))
                in.maskedCells.emplace_back(int(i), int(j));
    in.keepScores = cfg.attention.keepScores;
    return runForward<T>(a, m_weights, in, 0, out);
}

template <typename T>
Status computeStack(const StackConfig &cfg, const StackWeights<T> &w, const Mat<T> &tokens, StackResult<T> &r)
{
    StackForward<T> forward;
    Trace<T> trace;
    // lent for the call: nothing of the trace outlives it but the values moved into `r`
    const std::shared_ptr<const StackWeights<T>> lent(std::shared_ptr<void>(), &w);
    if (Status st = forward.run(cfg, lent, tokens, trace); !st)
        return st;
    r.embeddings = std::move(trace.embeddings);
    r.input = std::move(trace.input);
    r.layers.resize(trace.layers.size());
    for (size_t l = 0; l < trace.layers.size(); ++l) {
        r.layers[l].attention = std::move(trace.layers[l].attention);
        r.layers[l].afterAttention = std::move(trace.layers[l].afterAttention);
        r.layers[l].output = std::move(trace.layers[l].output);
    }
    r.final = std::move(trace.final);
    r.pooled = r.final.colwise().mean().transpose();
    r.logProbs.resize(0);
    if (!w.classifier.isIdentity()) {
        Vec<T> logits = w.classifier.W * r.pooled;
        if (w.classifier.hasBias())
            logits += w.classifier.b;
        const T mx = logits.maxCoeff();
        const T lse = mx + std::log((logits.array() - mx).exp().sum());
        r.logProbs = logits.array() - lse;
    }
    return {};
}

template <typename T>
Status seededStackWeights(int d, int depth, uint64_t seed, PositionEncoding pos, int maxPositions, StackWeights<T> &out)
{
    if (d <= 0 || depth <= 0)
        return Status::error(StatusCode::InvalidInput, "stack: d and depth must be positive");
    TorchGenerator g(seed);
    StackWeights<T> w;
    for (int l = 0; l < depth; ++l) {
        BlockWeights<T> b;
        b.attn.k = drawTorchLinear<T>(g, d, d, false);
        b.attn.q = drawTorchLinear<T>(g, d, d, false);
        b.attn.v = drawTorchLinear<T>(g, d, d, false);
        b.attn.o = drawTorchLinear<T>(g, d, d, true);
        b.ff1 = drawTorchLinear<T>(g, d, 4 * d, true);
        b.ff2 = drawTorchLinear<T>(g, 4 * d, d, true);
        w.blocks.push_back(std::move(b));
    }
    if (pos == PositionEncoding::Learned) {
        // N(0, 0.02^2) as GPT-2 initializes wpe, by Box-Muller from the same generator
        w.positions.resize(maxPositions, d);
        for (Eigen::Index i = 0; i < w.positions.size(); ++i) {
            const double u1 = std::max(1e-12, double(g.uniformFloat(0.0f, 1.0f)));
            const double u2 = g.uniformFloat(0.0f, 1.0f);
            w.positions.data()[i] = T(0.02 * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
        }
    }
    out = std::move(w);
    return {};
}

#define ATTNVIZ_STACK(T)                                                                                               \
    template class StackForward<T>;                                                                                    \
    template Status computeStack<T>(const StackConfig &, const StackWeights<T> &, const Mat<T> &, StackResult<T> &);   \
    template Status seededStackWeights<T>(int, int, uint64_t, PositionEncoding, int, StackWeights<T> &);
ATTNVIZ_STACK(float)
ATTNVIZ_STACK(double)

} // namespace attnviz
