// SPDX-License-Identifier: GPL-3.0-or-later
// Norm-weighted attention and direct logit attribution (reads.h): both read each head's output
// through its slice of W_O. The value norms use the Gram matrix W_O^h^T W_O^h (d_head x d_head),
// computed once per head and kept beside the projections it came from, so that a keystroke pays
// t x d_head^2 per head instead of t x d_head x d.
#include "readout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace attnviz {

namespace {

// Per head h: W_O^h^T W_O^h, for the projections of one layer (null: W_O is the identity). Keyed by
// the projections while they live (a weak reference: closing a model frees its weights, and 16-bit
// ones are widened only to compute these); a cache over 256 layers starts over.
template <typename T>
std::shared_ptr<const std::vector<Mat<T>>> outputGrams(const ProjectionsRef<T> &ref, int heads, int dHead)
{
    static std::mutex mutex;
    static std::map<const void *, std::pair<std::weak_ptr<const void>, std::shared_ptr<const std::vector<Mat<T>>>>> cache;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = cache.find(ref.key());
        if (it != cache.end() && it->second.first.lock() == ref.owner() &&
            (!it->second.second || int(it->second.second->size()) == heads))
            return it->second.second;
    }
    const std::shared_ptr<const Projections<T>> P = ref.get();
    std::shared_ptr<std::vector<Mat<T>>> grams;
    if (!P->o.isIdentity())
        grams = std::make_shared<std::vector<Mat<T>>>(size_t(heads));
    for (int h = 0; grams && h < heads; ++h) {
        const auto Wh = P->o.W.middleCols(Eigen::Index(h) * dHead, dHead);
        (*grams)[size_t(h)] = Wh.transpose() * Wh;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() >= 256)
        cache.clear();
    cache[ref.key()] = {ref.owner(), grams};
    return grams;
}

template <typename T>
Status checkLayer(const Trace<T> &trace, int layer, const char *what)
{
    if (layer < 0 || layer >= trace.numLayers())
        return Status::error(StatusCode::InvalidInput, std::string(what) + ": layer " + std::to_string(layer) + " is not in the trace (0.." +
                                                           std::to_string(trace.numLayers() - 1) + ")");
    if (trace.layers[size_t(layer)].attention.batch.empty())
        return Status::error(StatusCode::InvalidInput, std::string(what) + ": layer " + std::to_string(layer) + " has no attention");
    return {};
}

using RowD = Eigen::Matrix<double, 1, Eigen::Dynamic>;

// A norm's per-dimension factor with its scale frozen from `x`: s * w, s * (1 + w) or s.
template <typename T>
RowD frozenGain(NormKind kind, const LayerNorm<T> &ln, const RowD &x)
{
    const double d = double(x.size());
    const double ms = kind == NormKind::LayerNorm ? (x.array() - x.mean()).square().sum() / d : x.squaredNorm() / d;
    const double s = 1.0 / std::sqrt(ms + ln.eps);
    RowD g = RowD::Constant(x.size(), s);
    if (ln.gamma.size()) {
        const RowD gamma = ln.gamma.transpose().template cast<double>();
        if (kind == NormKind::RmsNormPlusOne)
            g.array() *= 1.0 + gamma.array();
        else
            g.array() *= gamma.array();
    }
    return g;
}

RowD centred(const RowD &c, bool centre)
{
    if (!centre)
        return c;
    return (c.array() - c.mean()).matrix();
}

} // namespace

template <typename T>
Status valueNorms(const Trace<T> &trace, int layer, Mat<T> &out)
{
    if (Status st = checkLayer(trace, layer, "value norms"); !st)
        return st;
    const LayerTrace<T> &lt = trace.layers[size_t(layer)];
    const SequenceResult<T> &s = lt.attention.batch.front();
    Mat<T> wide; // v kept in 16 bits (a long text): this layer's widened while it is read
    const Mat<T> &values = widenedOr(s.v, s.v16, wide);
    const int H = lt.attention.numHeads, dh = lt.attention.dHead;
    // a copy per query head, or (a layer whose other stages a long text's trace left out) the
    // key/value heads' own
    const int kv = lt.attention.kvHeads > 0 ? lt.attention.kvHeads : H;
    const bool shared = kv < H && values.cols() == Eigen::Index(kv) * dh;
    if (values.cols() != Eigen::Index(H) * dh && !shared)
        return Status::error(StatusCode::InvalidInput, "value norms: layer " + std::to_string(layer) + " kept no values");
    out.resize(values.rows(), H);
    const std::shared_ptr<const std::vector<Mat<T>>> grams = lt.projections ? outputGrams(lt.projections, H, dh) : nullptr;
    const bool identity = !grams;
    for (int h = 0; h < H; ++h) {
        const auto V = values.middleCols(Eigen::Index(shared ? lt.attention.kvHeadOf(h) : h) * dh, dh);
        if (identity) {
            out.col(h) = V.rowwise().norm();
        } else {
            const Mat<T> VG = V * (*grams)[size_t(h)];
            out.col(h) = (VG.cwiseProduct(V)).rowwise().sum().cwiseMax(T(0)).cwiseSqrt();
        }
    }
    return {};
}

template <typename T>
Status normWeighted(const Trace<T> &trace, int layer, int head, Mat<T> &out)
{
    Mat<T> norms;
    if (Status st = valueNorms(trace, layer, norms); !st)
        return st;
    const int H = int(norms.cols());
    if (head >= H)
        return Status::error(StatusCode::InvalidInput, "norm-weighted attention: head " + std::to_string(head) +
                                                           " is not in layer " + std::to_string(layer) + " (0.." + std::to_string(H - 1) + ")");
    if (head >= 0) {
        out = trace.weights(layer, head).toDense().array().rowwise() * norms.col(head).transpose().array();
        return {};
    }
    const WeightMatrix<T> &w0 = trace.weights(layer, 0);
    out = Mat<T>::Zero(w0.rows(), w0.cols());
    for (int h = 0; h < H; ++h) { // row by row: a causal trace stores each row's keys up to its query
        const WeightMatrix<T> &w = trace.weights(layer, h);
        for (Eigen::Index i = 0; i < w.rows(); ++i)
            out.row(i).head(w.stored(i)).array() +=
                w.storedRow(i).array() * norms.col(h).head(w.stored(i)).transpose().array();
    }
    out /= T(H);
    return {};
}

double Attribution::sum() const
{
    double s = input + normBias + outputBias;
    for (double v : head)
        s += v;
    for (double v : attnBias)
        s += v;
    for (double v : mlp)
        s += v;
    return s;
}

template <typename T>
Status attribute(const Model &model, const Trace<T> &trace, int position, int target, Attribution &out)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    const Architecture &a = r->arch;
    if (a.head != LmHead::CausalLm)
        return Status::error(StatusCode::Unavailable, r->name + ": attribution reads a causal LM's unembedding; a masked LM's head is "
                                                                "not linear in its input");
    if (a.placement == NormPlacement::Post)
        return Status::error(StatusCode::Unavailable, r->name + ": post-norm blocks normalize after each residual add, so the "
                                                                "output is no sum of the heads' outputs");
    const ModelWeights<T> &w = *r->weights<T>();
    const Weight<T> &E = w.outputEmbedding();
    const int t = int(trace.tokens.size()), L = trace.numLayers(), V = int(E.rows());
    if (position < 0 || position >= t)
        return Status::error(StatusCode::InvalidInput, "attribution: position " + std::to_string(position) + " is not in the text (0.." +
                                                           std::to_string(t - 1) + ")");
    if (target < 0 || target >= V)
        return Status::error(StatusCode::InvalidInput, "attribution: token id " + std::to_string(target) + " is not in the vocabulary (0.." +
                                                           std::to_string(V - 1) + ")");
    const RowD e = E.row(target).transpose().template cast<double>();
    // the final norm's frozen scale on the last residual: a part c contributes centre(c) . (g * e)
    const RowD x = trace.layers[size_t(L - 1)].output.row(position).template cast<double>();
    RowD u = e;
    const bool centre = a.finalNorm && a.norm == NormKind::LayerNorm;
    out.normBias = 0;
    if (a.finalNorm) {
        u = frozenGain(a.norm, w.finalNorm, x).cwiseProduct(e);
        if (centre && w.finalNorm.beta.size())
            out.normBias = w.finalNorm.beta.template cast<double>().dot(e.transpose());
    }
    auto through = [&](const RowD &c) { return centred(c, centre).dot(u); };
    out.position = position;
    out.target = target;
    out.targetToken = r->token(target).token;
    out.layers = L;
    out.heads = trace.numHeads();
    out.softcap = a.finalSoftcap;
    out.outputBias = w.outputBias.size() ? double(w.outputBias(target)) : 0.0;
    out.input = through(trace.input.row(position).template cast<double>());
    out.head.assign(size_t(L) * size_t(out.heads), 0.0);
    out.attnBias.assign(size_t(L), 0.0);
    out.mlp.assign(size_t(L), 0.0);
    for (int l = 0; l < L; ++l) {
        const LayerTrace<T> &lt = trace.layers[size_t(l)];
        const SequenceResult<T> &s = lt.attention.batch.front();
        const int H = lt.attention.numHeads, dh = lt.attention.dHead;
        // each head's output z_h W_O^h (H, d), from W_O as the layer keeps it: in T, or as the file
        // stores it, widened 64 rows at a time (never the whole layer's projections)
        const LayerWeights<T> &lw = w.layers[size_t(l)];
        const Weight<T> *packedO = lw.packed ? &lw.packed->o.W : nullptr;
        const Linear<T> *denseO = lw.packed ? nullptr : &lw.attn->o;
        const Vec<T> &outBias = lw.packed ? lw.packed->o.b : denseO->b;
        const Eigen::Index D = packedO ? packedO->rows() : denseO->W.rows();
        const RowD z = s.context.row(position).template cast<double>();
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> o(H, D);
        auto headOutputs = [&](const auto &rows, Eigen::Index r0) {
            for (int h = 0; h < H; ++h)
                o.row(h).segment(r0, rows.rows()).noalias() =
                    z.segment(Eigen::Index(h) * dh, dh) * rows.middleCols(Eigen::Index(h) * dh, dh).transpose().template cast<double>();
        };
        Mat<T> widened;
        for (Eigen::Index r0 = 0; r0 < D; r0 += 64) {
            const Eigen::Index n = std::min<Eigen::Index>(64, D - r0);
            if (packedO) {
                widened.resize(n, packedO->cols());
                packedO->widen(r0, n, widened.data());
                headOutputs(widened, r0);
            } else {
                headOutputs(denseO->W.middleRows(r0, n), r0);
            }
        }
        // a sandwich block's norm on the attention's sum, its scale frozen from that sum
        RowD post = RowD::Ones(x.size());
        const bool sandwich = a.placement == NormPlacement::Sandwich;
        const bool postCentre = sandwich && a.norm == NormKind::LayerNorm;
        double postBias = 0;
        if (sandwich) {
            const LayerNorm<T> &pn = w.layers[size_t(l)].postAttnNorm;
            post = frozenGain(a.norm, pn, s.output.row(position).template cast<double>());
            if (postCentre && pn.beta.size())
                postBias = through(pn.beta.transpose().template cast<double>());
        }
        auto attnPart = [&](const RowD &c) { return through(centred(c, postCentre).cwiseProduct(post)); };
        for (int h = 0; h < H; ++h)
            out.head[size_t(l) * size_t(out.heads) + size_t(h)] = attnPart(o.row(h));
        out.attnBias[size_t(l)] = (outBias.size() ? attnPart(outBias.transpose().template cast<double>()) : 0.0) + postBias;
        out.mlp[size_t(l)] = through((lt.output.row(position) - lt.afterAttention.row(position)).template cast<double>());
    }
    double logit = double(trace.final.row(position).template cast<double>().dot(e));
    logit += out.outputBias;
    out.logit = logit;
    out.cappedLogit = a.finalSoftcap > 0 ? std::tanh(logit / a.finalSoftcap) * a.finalSoftcap : logit;
    return {};
}

template Status valueNorms<float>(const Trace<float> &, int, Mat<float> &);
template Status valueNorms<double>(const Trace<double> &, int, Mat<double> &);
template Status normWeighted<float>(const Trace<float> &, int, int, Mat<float> &);
template Status normWeighted<double>(const Trace<double> &, int, int, Mat<double> &);
template Status attribute<float>(const Model &, const Trace<float> &, int, int, Attribution &);
template Status attribute<double>(const Model &, const Trace<double> &, int, int, Attribution &);

} // namespace attnviz
