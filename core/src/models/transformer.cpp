// SPDX-License-Identifier: GPL-3.0-or-later
// A stack of transformer blocks on one sequence. Shapes: tokens x (t, d); per block
//   attention (t, d) -> residual + LayerNorm -> feed-forward (t, f) -> (t, d) -> residual + LayerNorm.
// Every product runs on the core's pool (linear.h, attention.cpp); a block's weights are lent to the
// attention by reference, never copied per call.
#include "attnviz/transformer.h"
#include "attnviz/attention.h"
#include "attnviz/linear.h"
#include "attnviz/projections.h"
#include "attnviz/torchrng.h"

#include <algorithm>
#include <cmath>

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

template <typename T>
void layerNorm(Mat<T> &x, const LayerNorm<T> &ln)
{
    const Eigen::Index d = x.cols();
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        auto row = x.row(i);
        const T mean = row.mean();
        const T var = (row.array() - mean).square().sum() / T(d); // biased, as torch
        row = (row.array() - mean) / std::sqrt(var + T(ln.eps));
        if (ln.gamma.size())
            row.array() *= ln.gamma.transpose().array();
        if (ln.beta.size())
            row.array() += ln.beta.transpose().array();
    }
}

template <typename T>
void activate(Mat<T> &x, Activation a)
{
    switch (a) {
    case Activation::Relu: x = x.cwiseMax(T(0)); break;
    case Activation::GeluErf:
        x = x.unaryExpr([](T v) { return T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2)))); });
        break;
    case Activation::GeluTanh:
        x = x.unaryExpr([](T v) {
            const T c = std::sqrt(T(2) / T(M_PI));
            return T(0.5) * v * (T(1) + std::tanh(c * (v + T(0.044715) * v * v * v)));
        });
        break;
    case Activation::Silu: x = x.unaryExpr([](T v) { return v / (T(1) + std::exp(-v)); }); break;
    }
}

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

template <typename T>
Status checkNorm(const LayerNorm<T> &ln, int d, const std::string &what)
{
    if ((ln.gamma.size() && ln.gamma.size() != d) || (ln.beta.size() && ln.beta.size() != d))
        return Status::error(StatusCode::InvalidInput, what + ": LayerNorm width differs from d_model " + std::to_string(d));
    return {};
}

} // namespace

template <typename T>
Status computeStack(const StackConfig &cfg, const StackWeights<T> &w, const Mat<T> &tokens, StackResult<T> &r)
{
    const int t = int(tokens.rows()), d = int(tokens.cols());
    if (t == 0 || d == 0)
        return Status::error(StatusCode::InvalidInput, "tokens: empty sequence");
    if (!tokens.allFinite())
        return Status::error(StatusCode::NonFinite, "tokens: contains NaN or Inf");
    if (cfg.depth < 1 || cfg.depth > int(w.blocks.size()))
        return Status::error(StatusCode::InvalidInput, "depth: " + std::to_string(cfg.depth) + " layers asked, " +
                                                           std::to_string(w.blocks.size()) + " in the weights");
    r.embeddings = tokens;
    r.input = tokens;
    if (cfg.positions == PositionEncoding::Sinusoidal) {
        r.input += positionTable(t, d).topRows(t).cast<T>();
    } else if (cfg.positions == PositionEncoding::Learned) {
        if (w.positions.cols() != d)
            return Status::error(StatusCode::InvalidInput, "positions: no learned table of width " + std::to_string(d));
        if (w.positions.rows() < t)
            return Status::error(StatusCode::InvalidInput, "positions: the learned table has " +
                                                               std::to_string(w.positions.rows()) + " positions, the text " +
                                                               std::to_string(t) + " tokens");
        r.input += w.positions.topRows(t);
    }
    r.layers.resize(size_t(cfg.depth));
    Mat<T> x = r.input, h, ffIn, ff, ffOut;
    AttentionInput<T> in;
    in.batch.resize(1);
    in.batch[0].keyPadding = cfg.keyPadding;
    in.attnMask = cfg.attnMask;
    for (int l = 0; l < cfg.depth; ++l) {
        const BlockWeights<T> &b = w.blocks[size_t(l)];
        LayerResult<T> &lr = r.layers[size_t(l)];
        if (Status st = checkNorm(b.ln1, d, layerName(l) + "ln_1"); !st)
            return st;
        if (Status st = checkNorm(b.ln2, d, layerName(l) + "ln_2"); !st)
            return st;
        in.batch[0].query = x;
        if (cfg.norm == NormPlacement::Pre)
            layerNorm(in.batch[0].query, b.ln1);
        if (Status st = computeAttention(cfg.attention, in, b.attn, lr.attention); !st)
            return Status::error(st.code, layerName(l) + st.message);
        const Mat<T> &a = lr.attention.batch[0].output;
        if (a.cols() != d)
            return Status::error(StatusCode::InvalidInput, layerName(l) + "attention output width " +
                                                               std::to_string(a.cols()) + " differs from d_model " +
                                                               std::to_string(d));
        h = a + x;
        if (cfg.norm == NormPlacement::Post)
            layerNorm(h, b.ln1);
        lr.afterAttention = h;
        ffIn = h;
        if (cfg.norm == NormPlacement::Pre)
            layerNorm(ffIn, b.ln2);
        if (!b.ff1.isIdentity() && b.ff1.W.cols() != d)
            return Status::error(StatusCode::InvalidInput, layerName(l) + "feed-forward input width differs from d_model");
        applyLinear(ffIn, b.ff1, ff);
        activate(ff, cfg.activation);
        if (!b.ff2.isIdentity() && (b.ff2.W.cols() != ff.cols() || b.ff2.W.rows() != d))
            return Status::error(StatusCode::InvalidInput, layerName(l) + "feed-forward output shape does not fit");
        applyLinear(ff, b.ff2, ffOut);
        x = ffOut + h;
        if (cfg.norm == NormPlacement::Post)
            layerNorm(x, b.ln2);
        lr.output = x;
    }
    r.final = x;
    if (cfg.finalNorm)
        layerNorm(r.final, w.lnFinal);
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
    template Status computeStack<T>(const StackConfig &, const StackWeights<T> &, const Mat<T> &, StackResult<T> &);   \
    template Status seededStackWeights<T>(int, int, uint64_t, PositionEncoding, int, StackWeights<T> &);
ATTNVIZ_STACK(float)
ATTNVIZ_STACK(double)

} // namespace attnviz
