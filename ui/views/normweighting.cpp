// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/normweighting.h"

#include "live/longtext.h"

#include "attnviz/parallel.h"
#include "attnviz/reads.h"

namespace attnviz::ui {

QString normWeightingExplanation()
{
    return QStringLiteral("Norm-weighted: each weight times the length of what that key’s value adds through W_O "
                          "(‖α·v·W_O‖, Kobayashi et al. 2020) — a head that attends to a token whose value is tiny moves nothing.");
}

QString normWeightingCaption()
{
    return QStringLiteral("Each weight times its key’s value norm ‖v·W_O‖ (Kobayashi et al. 2020)");
}

QString normWeightedLabel() { return QStringLiteral("norm-weighted ‖α·v·W_O‖"); }

bool isNormWeighted(const ComputeSnapshot &s) { return s.modelLabel.endsWith(normWeightedLabel()); }

bool keepsValues(const Trace<float> &trace, int layer)
{
    if (layer < 0 || layer >= trace.numLayers() || trace.layers[size_t(layer)].attention.batch.empty())
        return false;
    const AttentionResult<float> &a = trace.layers[size_t(layer)].attention;
    const SequenceResult<float> &r = a.batch.front();
    const Eigen::Index v = r.v16.empty() ? r.v.cols() : r.v16.cols; // per query head, or per key/value head
    return v == Eigen::Index(a.numHeads) * a.dHead || (a.kvHeads > 0 && v == Eigen::Index(a.kvHeads) * a.dHead);
}

SnapshotPtr normWeightedSnapshot(const SnapshotPtr &s, QString *why)
{
    if (!s || !s->hasResult()) {
        if (why)
            *why = QStringLiteral("no attention to weigh");
        return nullptr;
    }
    const Trace<float> &tr = *s->trace;
    if (s->longText) { // the same trace, read through tiles that weigh each key (per layer, as drawn)
        for (int l = 0; l < tr.numLayers(); ++l)
            if (!keepsValues(tr, l)) {
                if (why)
                    *why = QStringLiteral("layer %1 kept no value vectors").arg(l);
                return nullptr;
            }
        auto copy = std::make_shared<ComputeSnapshot>(*s);
        copy->tiles = std::make_shared<LongTextTiles>(s->trace, LongTextTiles::kCachedLayers, true);
        copy->modelLabel = copy->modelLabel.isEmpty() ? normWeightedLabel() : copy->modelLabel + QStringLiteral(" · ") + normWeightedLabel();
        return copy;
    }
    auto out = std::make_shared<Trace<float>>();
    out->tokens = tr.tokens;
    out->keyTokens = tr.keyTokens;
    out->totalTokens = tr.totalTokens;
    out->totalKeyTokens = tr.totalKeyTokens;
    out->cutReason = tr.cutReason;
    out->device = tr.device;
    out->paddedKeys = tr.paddedKeys;
    out->maskedCells = tr.maskedCells;
    out->observed = tr.observed;
    out->layers.resize(tr.layers.size());
    // the layers side by side (each writes its own): on the keystroke's path while the switch is on
    std::vector<Status> failed(tr.layers.size());
    const double work = double(tr.numLayers()) * double(tr.numHeads()) * double(tr.tokens.size()) * double(tr.tokens.size()) * 8;
    parallelFor(tr.numLayers(), work, [&](int l) {
        const LayerTrace<float> &from = tr.layers[size_t(l)];
        LayerTrace<float> &to = out->layers[size_t(l)];
        const AttentionResult<float> &a = from.attention;
        to.attention.numHeads = a.numHeads;
        to.attention.dHead = a.dHead;
        to.attention.dModel = a.dModel;
        to.attention.dOut = a.dOut;
        to.attention.scale = a.scale;
        to.attention.kvHeads = a.kvHeads;
        to.attention.softcap = a.softcap;
        to.projections = from.projections;
        const SequenceResult<float> &sf = a.batch.front();
        SequenceResult<float> st;
        st.mask = sf.mask;
        st.fullyMaskedRows = sf.fullyMaskedRows;
        if (!tr.observed.layer(l)) { // left on the GPU, as in the trace weighed
            to.attention.batch.push_back(std::move(st));
            return;
        }
        st.v = sf.v; // the value norms on hover
        Mat<float> norms;
        if (Status r = valueNorms(tr, l, norms); !r) {
            failed[size_t(l)] = r;
            return;
        }
        st.weights.resize(size_t(a.numHeads));
        st.weightsAvg.resize(sf.weightsAvg.rows(), sf.weightsAvg.cols());
        st.weightsAvg.setZero();
        for (int h = 0; h < a.numHeads; ++h) {
            const WeightMatrix<float> &w = sf.weights[size_t(h)];
            st.weights[size_t(h)].resize(w.rows(), w.cols());
            st.weights[size_t(h)].dense().array() = w.toDense().array().rowwise() * norms.col(h).transpose().array();
            st.weightsAvg.dense() += st.weights[size_t(h)].dense();
        }
        st.weightsAvg.dense() /= float(std::max(1, a.numHeads));
        to.attention.batch.push_back(std::move(st));
    });
    for (const Status &r : failed)
        if (!r) {
            if (why)
                *why = QString::fromStdString(r.message);
            return nullptr;
        }
    auto copy = std::make_shared<ComputeSnapshot>(*s);
    copy->trace = std::move(out);
    copy->modelLabel = copy->modelLabel.isEmpty() ? normWeightedLabel() : copy->modelLabel + QStringLiteral(" · ") + normWeightedLabel();
    return copy;
}

QString valueNormText(const ComputeSnapshot &s, int layer, int head, int key)
{
    if (!s.hasResult() || head < 0 || key < 0)
        return QString();
    Mat<float> norms;
    if (!valueNorms(*s.trace, s.layerIndex(layer), norms) || head >= norms.cols() || key >= norms.rows())
        return QString();
    return QStringLiteral("‖v·W_O‖ of “%1”: %2 (head %3)").arg(s.keyLabels.value(key)).arg(double(norms(key, head)), 0, 'f', 3).arg(head);
}

} // namespace attnviz::ui
