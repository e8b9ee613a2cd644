// SPDX-License-Identifier: GPL-3.0-or-later
#include "stackcompute.h"

#include "livecompute.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

std::shared_ptr<const StackWeights<float>> StackWeightsCache::seeded(int dModel, int depth, quint64 seed,
                                                                     PositionEncoding pos, Status &status)
{
    // Learned positions are drawn after the blocks, so they belong to the key; sinusoidal and none
    // draw the same weights.
    const PositionEncoding drawn = pos == PositionEncoding::Learned ? pos : PositionEncoding::None;
    if (m_weights && m_d == dModel && m_depth == depth && m_seed == seed && m_pos == drawn)
        return m_weights;
    m_weights.reset(); // frees the old set before drawing a new one
    auto w = std::make_shared<StackWeights<float>>();
    status = seededStackWeights<float>(dModel, depth, seed, drawn, kMaxPositions, *w);
    if (!status.ok())
        return {};
    m_d = dModel;
    m_depth = depth;
    m_seed = seed;
    m_pos = drawn;
    m_weights = std::move(w);
    return m_weights;
}

int stackTokenLimit(int numHeads, int depth)
{
    // every layer keeps (heads + 1) t x t matrices (the heads and their average)
    return tokenLimit(std::max(1, depth) * (std::max(1, numHeads) + 1) - 1);
}

QString stackHeadsProblem(int dModel, int heads)
{
    if (heads < 1)
        return QStringLiteral("At least one head is needed.");
    if (dModel > 0 && dModel % heads != 0)
        return QStringLiteral("%1 heads do not divide d_model %2 (d_head would be %3). In a transformer stack every "
                              "layer splits d_model into equal heads: choose %4.")
            .arg(heads)
            .arg(dModel)
            .arg(double(dModel) / heads, 0, 'g', 4)
            .arg(divisorsOf(dModel));
    return {};
}

Status computeStackSnapshot(const ComputeRequest &req, const AttentionConfig &attention,
                            const std::vector<uint8_t> &keyPadding, const BoolMat &attnMask, ComputeSnapshot &snap,
                            StackWeightsCache &cache)
{
    const StackSettings &ss = req.settings.stack;
    if (snap.cross)
        return Status::error(StatusCode::InvalidInput,
                             "The transformer stack is self-attention: clear the key/value sentence, or set the depth "
                             "to 1 for cross-attention.");
    const int d = int(snap.query.matrix.cols());
    std::shared_ptr<const StackWeights<float>> weights;
    if (ss.source == StackWeightsSource::File) {
        if (!ss.loaded)
            return Status::error(StatusCode::InvalidInput, "No stack weights loaded: use \"Load weights…\".");
        if (ss.depth > int(ss.loaded->blocks.size()))
            return Status::error(StatusCode::InvalidInput, QStringLiteral("Depth %1: %2 holds %3 blocks.")
                                                               .arg(ss.depth)
                                                               .arg(ss.loadedSource)
                                                               .arg(ss.loaded->blocks.size())
                                                               .toStdString());
        const Linear<float> &q = ss.loaded->blocks.front().attn.q;
        if (!q.isIdentity() && q.W.cols() != d)
            return Status::error(
                StatusCode::InvalidInput,
                QStringLiteral("%1 has d_model %2, the word vectors %3: load a table of the same width.")
                    .arg(ss.loadedSource)
                    .arg(q.W.cols())
                    .arg(d)
                    .toStdString());
        weights = ss.loaded;
    } else {
        Status st;
        weights = cache.seeded(d, ss.depth, ss.seed, ss.positions, st);
        if (!weights)
            return st;
    }
    StackConfig cfg;
    cfg.depth = ss.depth;
    cfg.attention = attention;
    cfg.attention.dHead = 0; // every layer splits d_model into equal heads
    cfg.norm = ss.norm;
    cfg.activation = ss.activation;
    cfg.positions = ss.positions;
    cfg.finalNorm = ss.norm == NormPlacement::Pre; // GPT-2's ln_f (ones/zeros when not loaded)
    cfg.keyPadding = keyPadding;
    cfg.attnMask = attnMask;
    auto result = std::make_shared<StackResult<float>>();
    if (Status st = computeStack(cfg, *weights, snap.query.matrix, *result); !st.ok())
        return st;
    snap.stack = std::move(result);
    const int layer = std::clamp(req.layer, 0, ss.depth - 1);
    // fill result and query/key for `layer`
    const StackResult<float> &r = *snap.stack;
    snap.layer = layer;
    snap.result = r.layers[size_t(layer)].attention;
    snap.query.matrix = layer == 0 ? r.input : r.layers[size_t(layer - 1)].output;
    snap.key = snap.query;
    return {};
}

SnapshotPtr snapshotForLayer(const SnapshotPtr &s, int layer)
{
    if (!s || !s->stack || s->stack->layers.empty())
        return s;
    layer = std::clamp(layer, 0, int(s->stack->layers.size()) - 1);
    if (layer == s->layer)
        return s;
    auto c = std::make_shared<ComputeSnapshot>(*s);
    const StackResult<float> &r = *s->stack;
    c->layer = layer;
    c->result = r.layers[size_t(layer)].attention;
    c->query.matrix = layer == 0 ? r.input : r.layers[size_t(layer - 1)].output;
    c->key = c->query;
    return c;
}

ResidualMetrics residualMetrics(const StackResult<float> &r)
{
    const int depth = int(r.layers.size());
    const int t = int(r.input.rows());
    ResidualMetrics m;
    m.norms.resize(depth + 1, t);
    m.cosines.resize(depth + 1, t);
    for (int l = 0; l <= depth; ++l) {
        const Mat<float> &x = l == 0 ? r.input : r.layers[size_t(l - 1)].output;
        for (int i = 0; i < t; ++i) {
            const Eigen::VectorXd v = x.row(i).transpose().cast<double>();
            const Eigen::VectorXd v0 = r.input.row(i).transpose().cast<double>();
            const double n = v.norm(), n0 = v0.norm();
            m.norms(l, i) = n;
            m.cosines(l, i) = n > 0 && n0 > 0 ? v.dot(v0) / (n * n0) : std::nan("");
        }
    }
    return m;
}

QString normPlacementName(NormPlacement n)
{
    return n == NormPlacement::Post ? QStringLiteral("post-norm") : QStringLiteral("pre-norm");
}

QString activationName(Activation a)
{
    switch (a) {
    case Activation::ReLU:
        return QStringLiteral("ReLU");
    case Activation::Gelu:
        return QStringLiteral("GELU");
    case Activation::GeluTanh:
        return QStringLiteral("GELU (tanh)");
    }
    return {};
}

QString positionEncodingName(PositionEncoding p)
{
    switch (p) {
    case PositionEncoding::None:
        return QStringLiteral("no positions");
    case PositionEncoding::Sinusoidal:
        return QStringLiteral("sinusoidal positions");
    case PositionEncoding::Learned:
        return QStringLiteral("learned positions");
    }
    return {};
}

QString describeStack(const ComputeSnapshot &s)
{
    const StackSettings &ss = s.settings.stack;
    QStringList parts;
    parts << QStringLiteral("layer %1 of %2").arg(s.layer).arg(ss.depth);
    parts << QStringLiteral("%1, %2, %3")
                 .arg(normPlacementName(ss.norm), activationName(ss.activation), positionEncodingName(ss.positions));
    parts << (ss.source == StackWeightsSource::File ? QStringLiteral("weights from %1").arg(ss.loadedSource)
                                                    : QStringLiteral("seeded weights (seed %1)").arg(ss.seed));
    return parts.join(QStringLiteral(" · "));
}

bool loadStackWeightsFile(const QString &path, StackWeights<float> &out, int &depth, QString *error)
{
    SafetensorsFile file;
    Status st = readSafetensors(path.toStdString(), file);
    StackWeights<float> w;
    int n = 0;
    if (st.ok())
        st = stackWeightsFromGpt2(file, w, n);
    if (st.ok() && n < 1)
        st = Status::error(StatusCode::InvalidInput, "no transformer blocks (h.0.attn.c_attn.weight) in the file");
    if (!st.ok()) {
        if (error) {
            const QString msg = QString::fromStdString(st.message);
            const QString name = QFileInfo(path).fileName();
            *error = msg.contains(name) ? msg : name + QStringLiteral(": ") + msg;
        }
        return false;
    }
    out = std::move(w);
    depth = n;
    return true;
}

} // namespace attnviz::ui
