// SPDX-License-Identifier: GPL-3.0-or-later
// The decoder's logit lens and direct logit attribution of an encoder-decoder model
// (seq2seqreads.h), read from a trace: the stream after each sub-layer (LayerTrace::afterAttention,
// EncoderDecoderTrace::cross[l].output, LayerTrace::output) through the decoder's head as
// forward/seq2seq.cpp computes it (final norm where there is one, times outputScale, the
// unembedding, the logits bias), and each head's z_h W_O^h of both attentions through that head with
// the final norm's scale frozen.
#include "attnviz/seq2seqreads.h"
#include "../models/forward/seq2seq.h"
#include "../models/seq2seqmodel.h"

#include <algorithm>
#include <cmath>

namespace attnviz {

// named, not anonymous: the unity build puts this file beside lens.cpp and attribution.cpp
namespace seq2seqreadsimpl {

using RowD = Eigen::Matrix<double, 1, Eigen::Dynamic>;

template <typename T>
const Seq2SeqWeights<T> *weightsOf(const detail::Seq2SeqReadout &r)
{
    if constexpr (std::is_same_v<T, float>)
        return r.floatWeights.get();
    else
        return r.doubleWeights.get();
}

// The readout, checked against the trace's shape (a trace of another model is refused).
template <typename T>
Status readoutOf(const Model &model, const Trace<T> &trace, detail::Seq2SeqReadout &r, const char *what)
{
    if (Status st = detail::seq2seqReadout(model, std::is_same_v<T, double>, r); !st)
        return Status::error(StatusCode::Unavailable, std::string(what) + ": " + st.message);
    if (!trace.encoderDecoder())
        return Status::error(StatusCode::InvalidInput, std::string(what) + ": the trace is not an encoder-decoder model's");
    const Seq2SeqWeights<T> &w = *weightsOf<T>(r);
    if (trace.numLayers() != int(w.decoder.size()) || int(trace.seq2seq.cross.size()) != trace.numLayers() ||
        trace.final.cols() != w.output().cols())
        return Status::error(StatusCode::InvalidInput, std::string(what) + ": the trace is not " + r.name + "'s");
    for (int l = 0; l < trace.numLayers(); ++l)
        if (trace.layers[size_t(l)].afterAttention.rows() != Eigen::Index(trace.tokens.size()) ||
            trace.seq2seq.cross[size_t(l)].output.rows() != Eigen::Index(trace.tokens.size()))
            return Status::error(StatusCode::InvalidInput, std::string(what) + ": the trace kept no residual stream of layer " +
                                                               std::to_string(l));
    return {};
}

// The stream at stage row `row` (3l + stage), position p.
template <typename T>
auto stageRow(const Trace<T> &trace, int row, int p)
{
    const int l = row / 3;
    switch (DecoderStage(row % 3)) {
    case DecoderStage::Self: return trace.layers[size_t(l)].afterAttention.row(p);
    case DecoderStage::Cross: return trace.seq2seq.cross[size_t(l)].output.row(p);
    case DecoderStage::Mlp: break;
    }
    return trace.layers[size_t(l)].output.row(p);
}

// Rows of the stream through the decoder's final norm (as forward/seq2seq.cpp's normed: T5's RMS
// norm, or a LayerNorm; none where the model has none) and outputScale.
template <typename T>
Mat<T> headInput(const Architecture &a, const Seq2SeqWeights<T> &w, Mat<T> x)
{
    const LayerNorm<T> &ln = w.decoderFinal;
    if (ln.gamma.size())
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            if (a.norm == NormKind::LayerNorm) {
                const auto c = (x.row(i).array() - x.row(i).mean()).eval();
                const T inv = T(1) / std::sqrt(c.square().sum() / T(x.cols()) + T(ln.eps));
                x.row(i) = (c * inv * ln.gamma.transpose().array()).matrix();
                if (ln.beta.size())
                    x.row(i) += ln.beta.transpose();
            } else {
                const T inv = T(1) / std::sqrt(x.row(i).squaredNorm() / T(x.cols()) + T(ln.eps));
                x.row(i) = (x.row(i).array() * inv * ln.gamma.transpose().array()).matrix();
            }
        }
    if (a.outputScale != 1.0)
        x *= T(a.outputScale);
    return x;
}

// Cells for `positions` x every stage row (position-major, stage rows within).
template <typename T>
void lensRows(const detail::Seq2SeqReadout &r, const Trace<T> &trace, const std::vector<int> &positions, int topK,
              std::vector<LensCell> &cells)
{
    const Seq2SeqWeights<T> &w = *weightsOf<T>(r);
    const int R = 3 * trace.numLayers(), d = int(trace.final.cols()), t = int(trace.tokens.size());
    Mat<T> x(Eigen::Index(positions.size()) * R, d);
    for (size_t k = 0; k < positions.size(); ++k)
        for (int row = 0; row < R; ++row)
            x.row(Eigen::Index(k) * R + row) = stageRow(trace, row, positions[k]);
    const Mat<T> h = headInput(r.arch, w, std::move(x));
    Mat<T> logits = h * w.output().transpose();
    if (w.logitsBias.size())
        logits.rowwise() += w.logitsBias.transpose();
    cells.assign(size_t(logits.rows()), LensCell());
    std::vector<std::pair<double, int>> order;
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
        const int p = positions[size_t(i / R)];
        const int actual = p + 1 < t ? trace.tokens[size_t(p) + 1].id : -1;
        const auto row = logits.row(i).template cast<double>().eval();
        const double mx = row.maxCoeff();
        const double z = (row.array() - mx).exp().sum();
        const double logZ = mx + std::log(z);
        LensCell &c = cells[size_t(i)];
        // entropy: log Z - sum p x
        double px = 0;
        for (Eigen::Index j = 0; j < row.size(); ++j)
            px += std::exp(row[j] - logZ) * row[j];
        c.entropy = logZ - px;
        order.clear();
        for (Eigen::Index j = 0; j < row.size(); ++j)
            order.emplace_back(row[j], int(j));
        const int k = std::min<int>(topK, int(order.size()));
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [](const auto &a, const auto &b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        for (int j = 0; j < k; ++j) {
            TokenProb tp = r.token(order[size_t(j)].second);
            tp.p = std::exp(order[size_t(j)].first - logZ);
            c.top.push_back(std::move(tp));
        }
        if (actual >= 0 && actual < int(row.size())) {
            const double a = row[actual];
            int rank = 1;
            for (Eigen::Index j = 0; j < row.size(); ++j)
                if (row[j] > a || (row[j] == a && j < actual))
                    ++rank;
            c.actualRank = rank;
            c.actualP = std::exp(a - logZ);
        }
    }
}

// A norm's per-dimension factor with its scale frozen from `x`: s * gamma.
template <typename T>
RowD frozenGain(NormKind kind, const LayerNorm<T> &ln, const RowD &x)
{
    const double d = double(x.size());
    const double ms = kind == NormKind::LayerNorm ? (x.array() - x.mean()).square().sum() / d : x.squaredNorm() / d;
    RowD g = RowD::Constant(x.size(), 1.0 / std::sqrt(ms + ln.eps));
    g.array() *= ln.gamma.transpose().template cast<double>().array();
    return g;
}

} // namespace seq2seqreadsimpl

namespace s2sreads = seq2seqreadsimpl;

std::string decoderStageName(int layer, DecoderStage stage)
{
    static const char *names[] = {"self", "cross", "MLP"};
    return "L" + std::to_string(layer) + " " + names[int(stage)];
}

template <typename T>
Status seq2seqLens(const Model &model, const Trace<T> &trace, int topK, Seq2SeqLens &out, const std::atomic<bool> *cancel)
{
    detail::Seq2SeqReadout r;
    if (Status st = s2sreads::readoutOf(model, trace, r, "lens"); !st)
        return st;
    const int L = trace.numLayers(), t = int(trace.tokens.size()), R = 3 * L, chunk = 16;
    out.layers = L;
    out.positions = t;
    out.topK = std::max(1, topK);
    out.cells.assign(size_t(R) * size_t(t), LensCell());
    std::vector<LensCell> cells;
    for (int p0 = 0; p0 < t; p0 += chunk) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status::error(StatusCode::Cancelled, "lens: stopped");
        const int n = std::min(chunk, t - p0);
        std::vector<int> positions(static_cast<size_t>(n));
        for (int k = 0; k < n; ++k)
            positions[size_t(k)] = p0 + k;
        s2sreads::lensRows(r, trace, positions, out.topK, cells);
        for (int k = 0; k < n; ++k)
            for (int row = 0; row < R; ++row)
                out.at(row, p0 + k) = std::move(cells[size_t(k) * size_t(R) + size_t(row)]);
    }
    return {};
}

template <typename T>
Status seq2seqLensColumn(const Model &model, const Trace<T> &trace, int position, int topK, std::vector<LensCell> &out)
{
    detail::Seq2SeqReadout r;
    if (Status st = s2sreads::readoutOf(model, trace, r, "lens"); !st)
        return st;
    const int t = int(trace.tokens.size());
    if (position < 0 || position >= t)
        return Status::error(StatusCode::InvalidInput, "lens: position " + std::to_string(position) + " is not in the target (0.." +
                                                           std::to_string(t - 1) + ")");
    s2sreads::lensRows(r, trace, {position}, std::max(1, topK), out);
    return {};
}

double Seq2SeqAttribution::sum() const
{
    double s = input + normBias + logitsBias;
    for (const std::vector<double> *v : {&selfHead, &crossHead, &selfBias, &crossBias, &mlp})
        for (double x : *v)
            s += x;
    return s;
}

template <typename T>
Status seq2seqAttribute(const Model &model, const Trace<T> &trace, int position, int target, Seq2SeqAttribution &out)
{
    detail::Seq2SeqReadout r;
    if (Status st = s2sreads::readoutOf(model, trace, r, "attribution"); !st)
        return st;
    const Architecture &a = r.arch;
    if (a.placement == NormPlacement::Post)
        return Status::error(StatusCode::Unavailable,
                             r.name + ": a post-norm decoder (" + a.family + ") normalizes the whole stream after every add, so "
                                      "its logit is no sum of direct paths (attribution: pre-norm T5 and mBART)");
    const Seq2SeqWeights<T> &w = *s2sreads::weightsOf<T>(r);
    const Mat<T> &E = w.output();
    const int t = int(trace.tokens.size()), L = trace.numLayers(), V = int(E.rows());
    if (position < 0 || position >= t)
        return Status::error(StatusCode::InvalidInput, "attribution: position " + std::to_string(position) + " is not in the target (0.." +
                                                           std::to_string(t - 1) + ")");
    if (target < 0 || target >= V)
        return Status::error(StatusCode::InvalidInput, "attribution: token id " + std::to_string(target) + " is not in the vocabulary (0.." +
                                                           std::to_string(V - 1) + ")");
    // u = outputScale * gain * e: a part c gives centre(c) . u
    const s2sreads::RowD e = E.row(target).template cast<double>();
    const s2sreads::RowD x = trace.layers[size_t(L - 1)].output.row(position).template cast<double>();
    const bool centre = w.decoderFinal.gamma.size() && a.norm == NormKind::LayerNorm;
    s2sreads::RowD u = e * a.outputScale;
    out.normBias = 0;
    if (w.decoderFinal.gamma.size()) {
        u = u.cwiseProduct(s2sreads::frozenGain(a.norm, w.decoderFinal, x));
        if (centre && w.decoderFinal.beta.size())
            out.normBias = a.outputScale * w.decoderFinal.beta.template cast<double>().dot(e.transpose());
    }
    auto through = [&](const s2sreads::RowD &c) { return (centre ? s2sreads::RowD(c.array() - c.mean()) : c).dot(u); };
    out.position = position;
    out.target = target;
    const TokenProb spelled = r.token(target);
    out.targetToken = spelled.token;
    out.targetDisplay = spelled.display;
    out.layers = L;
    out.heads = a.heads;
    out.logitsBias = w.logitsBias.size() ? double(w.logitsBias(target)) : 0.0;
    out.input = through(trace.input.row(position).template cast<double>());
    const size_t H = size_t(a.heads);
    out.selfHead.assign(size_t(L) * H, 0.0);
    out.crossHead.assign(size_t(L) * H, 0.0);
    out.selfBias.assign(size_t(L), 0.0);
    out.crossBias.assign(size_t(L), 0.0);
    out.mlp.assign(size_t(L), 0.0);
    for (int l = 0; l < L; ++l) {
        const Seq2SeqBlock<T> &b = w.decoder[size_t(l)];
        for (int which = 0; which < 2; ++which) {
            const LayerTrace<T> &lt = which == 0 ? trace.layers[size_t(l)] : trace.seq2seq.cross[size_t(l)];
            const Projections<T> &P = which == 0 ? *b.self : *b.cross;
            std::vector<double> &heads = which == 0 ? out.selfHead : out.crossHead;
            const int dh = lt.attention.dHead;
            const s2sreads::RowD z = lt.attention.batch.front().context.row(position).template cast<double>();
            for (int h = 0; h < a.heads; ++h) {
                const s2sreads::RowD o = z.segment(Eigen::Index(h) * dh, dh) *
                               P.o.W.middleCols(Eigen::Index(h) * dh, dh).transpose().template cast<double>();
                heads[size_t(l) * H + size_t(h)] = through(o);
            }
            if (P.o.b.size())
                (which == 0 ? out.selfBias : out.crossBias)[size_t(l)] = through(P.o.b.transpose().template cast<double>());
        }
        out.mlp[size_t(l)] = through((trace.layers[size_t(l)].output.row(position) - trace.seq2seq.cross[size_t(l)].output.row(position))
                                         .template cast<double>());
    }
    const Mat<T> h = s2sreads::headInput(a, w, Mat<T>(trace.layers[size_t(L - 1)].output.row(position)));
    out.logit = double(h.row(0).template cast<double>().dot(e)) + out.logitsBias;
    return {};
}

template Status seq2seqLens<float>(const Model &, const Trace<float> &, int, Seq2SeqLens &, const std::atomic<bool> *);
template Status seq2seqLens<double>(const Model &, const Trace<double> &, int, Seq2SeqLens &, const std::atomic<bool> *);
template Status seq2seqLensColumn<float>(const Model &, const Trace<float> &, int, int, std::vector<LensCell> &);
template Status seq2seqLensColumn<double>(const Model &, const Trace<double> &, int, int, std::vector<LensCell> &);
template Status seq2seqAttribute<float>(const Model &, const Trace<float> &, int, int, Seq2SeqAttribution &);
template Status seq2seqAttribute<double>(const Model &, const Trace<double> &, int, int, Seq2SeqAttribution &);

} // namespace attnviz
