// SPDX-License-Identifier: GPL-3.0-or-later
// The pieces reads.h's computations share: finding a trace's readout (readout.h), a residual row
// through the head's norms, the vocabulary scanned in chunks (top-k, normalizer, entropy, a
// target's rank in one pass, never the whole n x V logits at once), and token names.
#include "readout.h"

#include "attnviz/parallel.h"

#include <algorithm>
#include <cmath>

namespace attnviz {
namespace reads {

template <typename T>
Status readoutFor(const Model &model, const Trace<T> &trace, std::shared_ptr<const ReadoutWeights> &out)
{
    std::shared_ptr<const ReadoutWeights> r = model.readout();
    if (!r && model.info().architecture.encoderDecoder)
        return Status::error(StatusCode::Unavailable, model.info().name + ": the logit lens and attribution of encoder-decoder models (" +
                                                          model.info().family + ") are not computed yet");
    if (!r)
        return Status::error(StatusCode::Unavailable, model.info().name + ": no unembedding to read through (a checkpoint has one)");
    if (!r->weights<T>() || trace.producer != r->producer<T>())
        return Status::error(StatusCode::InvalidInput, "reads: the trace was not made by " + r->name +
                                                           (std::is_same_v<T, float> ? "" : " in float64"));
    if (trace.numLayers() != r->arch.layers || trace.final.rows() != Eigen::Index(trace.tokens.size()))
        return Status::error(StatusCode::InvalidInput, "reads: the trace's layers do not match " + r->name);
    out = std::move(r);
    return {};
}

namespace {

// y = N(x) row by row, as the forward's norms (biased variance; RMSNorm x / rms * w or * (1 + w)).
template <typename T>
Mat<T> normalized(NormKind kind, const Mat<T> &x, const LayerNorm<T> &ln)
{
    Mat<T> y = x;
    const T d = T(x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        auto row = y.row(i);
        if (kind == NormKind::LayerNorm)
            row.array() -= row.sum() / d;
        const T ms = row.squaredNorm() / d;
        row *= T(1) / std::sqrt(ms + T(ln.eps));
    }
    if (ln.gamma.size()) {
        if (kind == NormKind::RmsNormPlusOne)
            y = y.array().rowwise() * (T(1) + ln.gamma.array()).transpose();
        else
            y = y.array().rowwise() * ln.gamma.array().transpose();
    }
    if (kind == NormKind::LayerNorm && ln.beta.size())
        y.rowwise() += ln.beta.transpose();
    return y;
}

template <typename T>
void activateInPlace(Mat<T> &m, Activation act)
{
    auto a = m.array();
    switch (act) {
    case Activation::GeluTanh: {
        const T c = T(std::sqrt(2.0 / M_PI));
        m = (T(0.5) * a * (T(1) + (c * (a + T(0.044715) * a.cube())).tanh())).matrix();
        break;
    }
    case Activation::GeluErf:
        for (Eigen::Index i = 0; i < m.size(); ++i)
            m.data()[i] = T(0.5) * m.data()[i] * (T(1) + std::erf(m.data()[i] * T(M_SQRT1_2)));
        break;
    case Activation::Relu: m = m.cwiseMax(T(0)); break;
    case Activation::Silu: m = (a / (T(1) + (-a).exp())).matrix(); break;
    }
}

// h E[v0, v0 + n)^T: the unembedding's rows read in place, or widened a block at a time where the
// file keeps them in 16 bits or quantized.
template <typename T>
Mat<T> logitsOf(const Mat<T> &h, const Weight<T> &E, Eigen::Index v0, Eigen::Index n)
{
    if (!E.packed())
        return h * E.dense.middleRows(v0, n).transpose();
    Mat<T> rows(n, E.cols());
    E.widen(v0, n, rows.data());
    return h * rows.transpose();
}

template <typename T>
double capped(const ReadoutWeights &r, T logit)
{
    const double c = r.arch.finalSoftcap;
    return c > 0 ? std::tanh(double(logit) / c) * c : double(logit);
}

} // namespace

template <typename T>
Mat<T> headInput(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &residual)
{
    Mat<T> h = r.arch.finalNorm ? normalized(r.arch.norm, residual, w.finalNorm) : residual;
    if (r.arch.head == LmHead::MaskedLm && w.hasMlmHead) {
        Mat<T> t = h * w.mlmTransform.W.transpose();
        if (w.mlmTransform.hasBias())
            t.rowwise() += w.mlmTransform.b.transpose();
        activateInPlace(t, r.arch.activation);
        h = normalized(NormKind::LayerNorm, t, w.mlmNorm);
    }
    return h;
}

template <typename T>
void scanLogits(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &h, const std::vector<int> &target,
                int topK, std::vector<ScanRow> &out)
{
    const Weight<T> &E = w.outputEmbedding();
    const int n = int(h.rows()), V = int(E.rows());
    out.assign(size_t(n), ScanRow());
    for (int i = 0; i < n; ++i) {
        const int id = i < int(target.size()) ? target[size_t(i)] : -1;
        if (id >= 0 && id < V) {
            T l = h.row(i).dot(E.row(id));
            if (w.outputBias.size())
                l += w.outputBias(id);
            out[size_t(i)].targetLogit = capped(r, l);
            out[size_t(i)].targetRank = 1;
        }
    }
    constexpr int chunk = 2048;
    const int chunks = (V + chunk - 1) / chunk;
    struct Part {
        std::vector<std::vector<std::pair<double, int>>> top;
        std::vector<double> mx, sum, sumL;
        std::vector<int> above;
    };
    std::vector<Part> parts(static_cast<size_t>(chunks));
    const double cap = r.arch.finalSoftcap;
    parallelFor(chunks, 2.0 * n * double(V) * double(h.cols()), [&](int c) {
        const int v0 = c * chunk, vw = std::min(chunk, V - v0);
        Mat<T> L = logitsOf(h, E, v0, vw);
        if (w.outputBias.size())
            L.rowwise() += w.outputBias.segment(v0, vw).transpose();
        if (cap > 0)
            L = ((L.array() / T(cap)).tanh() * T(cap)).matrix();
        Part &part = parts[size_t(c)];
        part.top.assign(size_t(n), {});
        part.mx.assign(size_t(n), 0);
        part.sum.assign(size_t(n), 0);
        part.sumL.assign(size_t(n), 0);
        part.above.assign(size_t(n), 0);
        Eigen::Array<T, 1, Eigen::Dynamic> e(vw);
        for (int i = 0; i < n; ++i) {
            const auto row = L.row(i).array();
            const T mxT = row.maxCoeff();
            const double mx = double(mxT);
            // the softmax's sums in the trace's precision (Eigen's vectorised exp), added up in double
            e = (row - mxT).exp();
            const double s = e.template cast<double>().sum();
            const double sl = (e * row).template cast<double>().sum();
            int above = 0;
            const double tl = out[size_t(i)].targetLogit;
            const bool ranked = out[size_t(i)].targetRank > 0;
            const int self = ranked ? target[size_t(i)] - v0 : -1; // its own logit, rounded apart here
            if (ranked) { // the logits above the target's, counted vectorised
                above = int((row.template cast<double>() > tl).count());
                if (self >= 0 && self < vw && double(row(self)) > tl)
                    --above;
            }
            // the top k: a block of logits is looked into only when its largest would enter
            auto &top = part.top[size_t(i)];
            constexpr int block = 64;
            for (int j0 = 0; j0 < vw; j0 += block) {
                const int bw = std::min(block, vw - j0);
                if (int(top.size()) == topK && !(double(row.segment(j0, bw).template maxCoeff<Eigen::PropagateNumbers>()) > top.back().first))
                    continue;
                for (int j = j0; j < j0 + bw; ++j) {
                    const double v = double(L(i, j));
                    if (int(top.size()) == topK && !(v > top.back().first))
                        continue;
                    auto at = std::upper_bound(top.begin(), top.end(), v,
                                               [](double a, const std::pair<double, int> &b) { return a > b.first; });
                    top.insert(at, {v, v0 + j});
                    if (int(top.size()) > topK)
                        top.pop_back();
                }
            }
            part.mx[size_t(i)] = mx;
            part.sum[size_t(i)] = s;
            part.sumL[size_t(i)] = sl;
            part.above[size_t(i)] = above;
        }
    });
    for (int i = 0; i < n; ++i) {
        ScanRow &row = out[size_t(i)];
        double M = -std::numeric_limits<double>::infinity();
        for (const Part &p : parts)
            M = std::max(M, p.mx[size_t(i)]);
        double S = 0, SL = 0;
        for (const Part &p : parts) {
            const double f = std::exp(p.mx[size_t(i)] - M);
            S += p.sum[size_t(i)] * f;
            SL += p.sumL[size_t(i)] * f;
            row.top.insert(row.top.end(), p.top[size_t(i)].begin(), p.top[size_t(i)].end());
            if (row.targetRank > 0)
                row.targetRank += p.above[size_t(i)];
        }
        std::stable_sort(row.top.begin(), row.top.end(), [](const auto &a, const auto &b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        if (int(row.top.size()) > topK)
            row.top.resize(size_t(topK));
        row.logNormalizer = M + std::log(S);
        row.entropy = row.logNormalizer - SL / S;
    }
}

template <typename T>
void allLogits(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &h, std::vector<double> &out)
{
    const Weight<T> &E = w.outputEmbedding();
    const int V = int(E.rows());
    out.assign(size_t(V), 0.0);
    constexpr int chunk = 4096;
    const int chunks = (V + chunk - 1) / chunk;
    parallelFor(chunks, 2.0 * double(V) * double(h.cols()), [&](int c) {
        const int v0 = c * chunk, vw = std::min(chunk, V - v0);
        const Mat<T> L = logitsOf(Mat<T>(h.topRows(1)), E, v0, vw);
        for (int j = 0; j < vw; ++j)
            out[size_t(v0 + j)] = capped(r, w.outputBias.size() ? L(0, j) + w.outputBias(v0 + j) : L(0, j));
    });
}

template Status readoutFor<float>(const Model &, const Trace<float> &, std::shared_ptr<const ReadoutWeights> &);
template Status readoutFor<double>(const Model &, const Trace<double> &, std::shared_ptr<const ReadoutWeights> &);
template Mat<float> headInput<float>(const ReadoutWeights &, const ModelWeights<float> &, const Mat<float> &);
template Mat<double> headInput<double>(const ReadoutWeights &, const ModelWeights<double> &, const Mat<double> &);
template void scanLogits<float>(const ReadoutWeights &, const ModelWeights<float> &, const Mat<float> &,
                                const std::vector<int> &, int, std::vector<ScanRow> &);
template void scanLogits<double>(const ReadoutWeights &, const ModelWeights<double> &, const Mat<double> &,
                                 const std::vector<int> &, int, std::vector<ScanRow> &);
template void allLogits<float>(const ReadoutWeights &, const ModelWeights<float> &, const Mat<float> &, std::vector<double> &);
template void allLogits<double>(const ReadoutWeights &, const ModelWeights<double> &, const Mat<double> &, std::vector<double> &);

} // namespace reads

TokenProb tokenOf(const Model &model, int id)
{
    std::shared_ptr<const ReadoutWeights> r = model.readout();
    if (!r) {
        TokenProb p;
        p.id = id;
        p.token = p.display = "#" + std::to_string(id);
        return p;
    }
    return r->token(id);
}

std::string Model::decode(const std::vector<int> &ids) const
{
    std::shared_ptr<const ReadoutWeights> r = readout();
    return r && r->decode ? r->decode(ids) : std::string();
}

std::string decodeIds(const Model &model, const std::vector<int> &ids) { return model.decode(ids); }

Status vocabularyId(const Model &model, const std::string &token, int &id)
{
    std::shared_ptr<const ReadoutWeights> r = model.readout();
    if (!r)
        return Status::error(StatusCode::Unavailable, model.info().name + ": no vocabulary");
    const int V = r->floatWeights ? int(r->floatWeights->outputEmbedding().rows()) : r->arch.vocabulary;
    if (int exact = r->id(token); exact >= 0 && exact < V) {
        id = exact;
        return {};
    }
    std::vector<TraceToken> tokens;
    if (r->tokenize && r->tokenize(token, tokens)) {
        std::vector<TraceToken> plain;
        for (const TraceToken &t : tokens)
            if (!t.special)
                plain.push_back(t);
        if (plain.size() == 1 && plain.front().id >= 0 && plain.front().id < V) {
            id = plain.front().id;
            return {};
        }
        if (plain.size() > 1)
            return Status::error(StatusCode::InvalidInput, "token: " + quoteText(token) + " is not in the vocabulary of " +
                                                               r->name + " (it is " + std::to_string(plain.size()) + " tokens)");
    }
    return Status::error(StatusCode::InvalidInput, "token: " + quoteText(token) + " is not in the vocabulary of " + r->name);
}

} // namespace attnviz
