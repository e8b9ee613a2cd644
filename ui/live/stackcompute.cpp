// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/stackcompute.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

StackModelSettings stackModelSettings(const StackSettings &s)
{
    StackModelSettings m;
    m.depth = s.depth;
    m.norm = s.norm;
    m.activation = s.activation;
    m.positions = s.positions;
    m.fromFile = s.source == StackWeightsSource::File;
    m.seed = s.seed;
    m.loaded = s.loaded;
    m.loadedSource = s.loadedSource.toStdString();
    return m;
}

QString stackHeadsProblem(int dModel, int heads)
{
    return QString::fromStdString(attnviz::stackHeadsProblem(dModel, heads));
}

ResidualMetrics residualMetrics(const Trace<float> &r)
{
    const int depth = r.numLayers();
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
    case Activation::Relu:
        return QStringLiteral("ReLU");
    case Activation::GeluErf:
        return QStringLiteral("GELU");
    case Activation::GeluTanh:
        return QStringLiteral("GELU (tanh)");
    case Activation::Silu:
        return QStringLiteral("SiLU");
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

QString describeStack(const StackSettings &ss)
{
    QStringList parts;
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
