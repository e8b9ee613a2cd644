// SPDX-License-Identifier: GPL-3.0-or-later
#include "livecompute.h"

#include "headslices.h"

#include "attnviz/attention.h"
#include "attnviz/projections.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace attnviz::ui {

bool ComputeSettings::operator==(const ComputeSettings &o) const
{
    return numHeads == o.numHeads && dHead == o.dHead && scaleRule == o.scaleRule && temperature == o.temperature
        && normalization == o.normalization && mask == o.mask && maskMethod == o.maskMethod
        && projection == o.projection && projectionSeed == o.projectionSeed && initScheme == o.initScheme
        && drawOrder == o.drawOrder && outWidth == o.outWidth
        && loadedProjections == o.loadedProjections && dropout == o.dropout && dropoutSeed == o.dropoutSeed
        && backend == o.backend && stack == o.stack;
}

const Mat<float> &ComputeSnapshot::weights(int head) const
{
    const SequenceResult<float> &s = seq();
    if (head < 0 || head >= int(s.weights.size()))
        return s.weightsAvg;
    return s.weights[size_t(head)];
}

int tokenLimit(int numHeads)
{
    const double budget = 256.0 * 1024 * 1024;
    const int h = std::max(1, numHeads);
    int t = int(std::sqrt(budget / (4.0 * (h + 1))));
    t = std::min(4096, std::max(256, (t / 256) * 256));
    return t;
}

QString describeTable(const EmbeddingTable &t)
{
    return QObject::tr("%1 — %L2 words, %3 dimensions")
        .arg(QString::fromStdString(t.source()))
        .arg(t.size())
        .arg(t.dim());
}

QString tokenText(const Token &t)
{
    return QString::fromUtf8(t.text.data(), int(t.text.size()));
}

QString scaleRuleName(ScaleRule r)
{
    switch (r) {
    case ScaleRule::InvSqrtDHead: return QStringLiteral("1/√d_head");
    case ScaleRule::InvSqrtDModel: return QStringLiteral("1/√d_model");
    case ScaleRule::None: return QStringLiteral("no scaling");
    case ScaleRule::Temperature: return QStringLiteral("1/(T·√d_head)");
    case ScaleRule::Explicit: return QStringLiteral("explicit");
    }
    return {};
}

QString normalizationName(Normalization n)
{
    switch (n) {
    case Normalization::Softmax: return QStringLiteral("softmax");
    case Normalization::Sum: return QStringLiteral("sum");
    case Normalization::Cosine: return QStringLiteral("cosine");
    }
    return {};
}

QString maskName(MaskChoice m)
{
    switch (m) {
    case MaskChoice::None: return QStringLiteral("no mask");
    case MaskChoice::Causal: return QStringLiteral("causal");
    case MaskChoice::Padding: return QStringLiteral("padding");
    case MaskChoice::CausalPadding: return QStringLiteral("causal + padding");
    case MaskChoice::Custom: return QStringLiteral("custom mask");
    }
    return {};
}

QString describeConfig(const ComputeSnapshot &s, int head, HeadDisplay display)
{
    const ComputeSettings &c = s.settings;
    QStringList parts;
    if (display == HeadDisplay::All)
        parts << QStringLiteral("all %1 heads").arg(c.numHeads);
    else if (head < 0 || display == HeadDisplay::Average)
        parts << QStringLiteral("average of %1 heads").arg(c.numHeads);
    else
        parts << QStringLiteral("head %1 of %2").arg(head).arg(c.numHeads);
    if (s.result.dHead > 0)
        parts << QStringLiteral("d_model %1, d_head %2").arg(s.result.dModel).arg(s.result.dHead);
    QString scale = scaleRuleName(c.scaleRule);
    if (c.scaleRule == ScaleRule::Temperature)
        scale += QStringLiteral(", T=%1").arg(c.temperature, 0, 'g', 3);
    parts << scale << normalizationName(c.normalization);
    QString mask = maskName(c.mask);
    if ((c.mask == MaskChoice::Causal || c.mask == MaskChoice::CausalPadding) && c.normalization == Normalization::Softmax)
        mask += c.maskMethod == MaskMethod::NegInf ? QStringLiteral(" (−∞)") : QStringLiteral(" (renormalize)");
    parts << mask;
    if (s.stack)
        parts << describeStack(s);
    else switch (c.projection) {
    case ProjectionMode::Identity: parts << QStringLiteral("identity projections"); break;
    case ProjectionMode::Random: parts << QStringLiteral("random projections, seed %1").arg(c.projectionSeed); break;
    case ProjectionMode::File: parts << QStringLiteral("projections from %1").arg(c.projectionSource); break;
    }
    if (c.dropout > 0)
        parts << QStringLiteral("dropout %1 (seed %2)").arg(c.dropout, 0, 'g', 3).arg(c.dropoutSeed);
    if (s.cross)
        parts << QStringLiteral("cross-attention");
    return parts.join(QStringLiteral(" · "));
}

std::shared_ptr<const Projections<float>> ProjectionCache::get(const RandomProjectionSpec &spec, Status &status)
{
    auto same = [](const RandomProjectionSpec &a, const RandomProjectionSpec &b) {
        return a.dModel == b.dModel && a.kdim == b.kdim && a.vdim == b.vdim && a.numHeads == b.numHeads
            && a.dHead == b.dHead && a.dOut == b.dOut && a.outProj == b.outProj && a.qkvBias == b.qkvBias
            && a.outBias == b.outBias && a.scheme == b.scheme && a.order == b.order && a.seed == b.seed;
    };
    if (m_valid && same(spec, m_spec))
        return m_proj;
    auto p = std::make_shared<Projections<float>>();
    status = randomProjections(spec, *p);
    if (!status.ok())
        return {};
    m_spec = spec;
    m_valid = true;
    m_proj = p;
    return m_proj;
}

QString divisorsOf(int n)
{
    QStringList d;
    for (int i = 1; i <= n; ++i)
        if (n % i == 0)
            d << QString::number(i);
    return d.join(QStringLiteral(", "));
}

QString headsProblem(int, int heads, int, ProjectionMode)
{
    // a head count that does not divide d_model still gives a view (headslices.h, issue 14)
    if (heads < 1)
        return QStringLiteral("At least one head is needed.");
    return {};
}

namespace {

void truncateTo(EmbeddedSentence &e, int limit)
{
    if (int(e.tokens.size()) <= limit)
        return;
    e.tokens.resize(size_t(limit));
    e.unknown.resize(size_t(limit));
    Mat<float> m = e.matrix.topRows(limit);
    e.matrix = std::move(m);
}

} // namespace

std::shared_ptr<ComputeSnapshot> computeSnapshot(const ComputeRequest &req, Backend &backend, ProjectionCache &cache)
{
    QElapsedTimer timer;
    timer.start();
    auto snap = std::make_shared<ComputeSnapshot>();
    snap->generation = req.generation;
    snap->sentence = req.sentence;
    snap->keySentence = req.keySentence;
    snap->settings = req.settings;
    snap->paddedKeys = req.paddedKeys;
    snap->customMask = req.customMask;
    snap->backendName = QString::fromStdString(backend.name());
    snap->device = QString::fromStdString(backend.device());
    snap->cross = !req.keySentence.trimmed().isEmpty();
    auto fail = [&](StatusCode code, const QString &message) {
        snap->status = Status::error(code, message.toStdString());
        snap->message = message;
        snap->result = {};
        snap->computeMs = double(timer.nsecsElapsed()) / 1e6;
        return snap;
    };
    if (!req.table || req.table->empty())
        return fail(StatusCode::Unavailable,
                    QStringLiteral("No word vectors loaded: this build has no bundled vectors. Use "
                                   "\"Load embeddings…\" to open a GloVe, word2vec, fastText or .avec table."));
    snap->tableName = QString::fromStdString(req.table->source());

    const QByteArray q = req.sentence.toUtf8();
    snap->query = embedSentence(*req.table, std::string(q.constData(), size_t(q.size())));
    snap->invalidBytes = tokenize(std::string_view(q.constData(), size_t(q.size()))).invalidBytes;
    if (snap->cross) {
        const QByteArray k = req.keySentence.toUtf8();
        snap->key = embedSentence(*req.table, std::string(k.constData(), size_t(k.size())));
    }
    snap->totalQueryTokens = int(snap->query.tokens.size());
    snap->totalKeyTokens = snap->cross ? int(snap->key.tokens.size()) : snap->totalQueryTokens;
    const int limit = req.maxTokens > 0             ? req.maxTokens
        : req.settings.stack.enabled() ? stackTokenLimit(req.settings.numHeads, req.settings.stack.depth)
                                       : tokenLimit(req.settings.numHeads);
    truncateTo(snap->query, limit);
    if (snap->cross)
        truncateTo(snap->key, limit);
    else
        snap->key = snap->query;
    if (snap->query.tokens.empty())
        return fail(StatusCode::InvalidInput, req.sentence.trimmed().isEmpty()
                                                  ? QStringLiteral("Type a sentence above: each word becomes a token, "
                                                                   "and this view shows how much each token attends to "
                                                                   "every other.")
                                                  : QStringLiteral("The text has no words or symbols to attend to."));
    if (snap->cross && snap->key.tokens.empty())
        return fail(StatusCode::InvalidInput, QStringLiteral("The key/value sentence has no tokens."));

    const ComputeSettings &s = req.settings;
    const int dModel = req.table->dim();
    const QString problem = s.stack.enabled() ? stackHeadsProblem(dModel, s.numHeads)
                                              : headsProblem(dModel, s.numHeads, s.dHead, s.projection);
    if (!problem.isEmpty())
        return fail(StatusCode::InvalidInput, problem);

    AttentionConfig &cfg = snap->config;
    cfg.numHeads = s.numHeads;
    cfg.dHead = s.projection == ProjectionMode::Identity ? 0 : s.dHead;
    cfg.scaleRule = s.scaleRule;
    cfg.temperature = s.temperature;
    cfg.normalization = s.normalization;
    cfg.maskMethod = s.maskMethod;
    cfg.causal = s.mask == MaskChoice::Causal || s.mask == MaskChoice::CausalPadding;
    cfg.fullyMasked = FullyMaskedPolicy::NaN;
    cfg.dropout = s.dropout;
    cfg.dropoutSeed = s.dropoutSeed;
    cfg.keepScores = false;

    AttentionInput<float> &input = cache.input;
    input.batch.clear();
    input.attnMask.resize(0, 0);
    auto useProjections = [&](std::shared_ptr<const Projections<float>> p) {
        if (p == cache.inputProj)
            return;
        input.proj = p ? *p : Projections<float>{};
        cache.inputProj = std::move(p);
    };
    SequenceInput<float> seq;
    seq.query = snap->query.matrix;
    if (snap->cross)
        seq.key = snap->key.matrix;
    const int tq = snap->tq(), tk = snap->tk();
    if (s.mask == MaskChoice::Padding || s.mask == MaskChoice::CausalPadding) {
        seq.keyPadding.assign(size_t(tk), 0);
        for (int j : req.paddedKeys)
            if (j >= 0 && j < tk)
                seq.keyPadding[size_t(j)] = 1;
    }
    input.batch.push_back(std::move(seq));
    if (s.mask == MaskChoice::Custom && !req.customMask.empty()) {
        input.attnMask = BoolMat::Zero(tq, tk);
        for (const auto &[i, j] : req.customMask)
            if (i >= 0 && i < tq && j >= 0 && j < tk)
                input.attnMask(i, j) = 1;
    }
    if (s.stack.enabled()) { // a transformer stack: every layer kept (stackcompute.cpp)
        const Status st = computeStackSnapshot(req, cfg, input.batch[0].keyPadding, input.attnMask, *snap, cache.stackWeights);
        snap->computeMs = double(timer.nsecsElapsed()) / 1e6;
        if (!st.ok())
            return fail(st.code, QString::fromStdString(st.message));
        snap->status = st;
        return snap;
    }
    if (s.projection == ProjectionMode::Random) {
        RandomProjectionSpec spec;
        spec.dModel = spec.kdim = spec.vdim = dModel;
        spec.numHeads = s.numHeads;
        spec.dHead = s.dHead > 0 ? s.dHead : autoHeadWidth(dModel, s.numHeads);
        spec.outProj = s.outWidth >= 0;
        spec.dOut = s.outWidth > 0 ? s.outWidth : s.outWidth == 0 ? dModel : 0;
        spec.qkvBias = false;
        spec.outBias = spec.outProj;
        spec.scheme = s.initScheme;
        spec.order = s.drawOrder;
        spec.seed = s.projectionSeed;
        Status st;
        auto p = cache.get(spec, st);
        if (!p)
            return fail(st.code, QString::fromStdString(st.message));
        useProjections(p);
        cfg.dHead = spec.dHead;
    } else if (s.projection == ProjectionMode::File) {
        if (!s.loadedProjections)
            return fail(StatusCode::InvalidInput, QStringLiteral("No projection file loaded."));
        useProjections(s.loadedProjections);
    } else if (dModel % s.numHeads != 0) { // unequal identity slices (headslices.h)
        useProjections(std::make_shared<const Projections<float>>(identitySliceProjections(dModel, s.numHeads)));
        cfg.dHead = autoHeadWidth(dModel, s.numHeads);
    } else {
        useProjections(nullptr);
    }

    snap->projections = cache.inputProj;
    Status st = backend.compute(cfg, input, snap->result);
    snap->computeMs = double(timer.nsecsElapsed()) / 1e6;
    snap->backendName = QString::fromStdString(backend.name()); // what computed this one (a fallback names the CPU)
    snap->device = QString::fromStdString(backend.device());
    if (!st.ok())
        return fail(st.code, QString::fromStdString(st.message));
    snap->status = st;
    return snap;
}

namespace {

bool readMatrix(const QJsonValue &v, Mat<float> &m, QString &error, const QString &field)
{
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isArray()) {
        error = field + QStringLiteral(": expected an array of rows");
        return false;
    }
    const QJsonArray rows = v.toArray();
    const int r = int(rows.size());
    const int c = r > 0 && rows.at(0).isArray() ? int(rows.at(0).toArray().size()) : 0;
    if (r == 0 || c == 0) {
        error = field + QStringLiteral(": empty matrix");
        return false;
    }
    m.resize(r, c);
    for (int i = 0; i < r; ++i) {
        const QJsonArray row = rows.at(i).toArray();
        if (row.size() != c) {
            error = field + QStringLiteral(": row %1 has %2 numbers, expected %3").arg(i).arg(row.size()).arg(c);
            return false;
        }
        for (int j = 0; j < c; ++j) {
            if (!row.at(j).isDouble()) {
                error = field + QStringLiteral(": [%1][%2] is not a number").arg(i).arg(j);
                return false;
            }
            m(i, j) = float(row.at(j).toDouble());
        }
    }
    return true;
}

bool readVector(const QJsonValue &v, Vec<float> &b, QString &error, const QString &field)
{
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isArray()) {
        error = field + QStringLiteral(": expected an array of numbers");
        return false;
    }
    const QJsonArray a = v.toArray();
    b.resize(a.size());
    for (int i = 0; i < a.size(); ++i) {
        if (!a.at(i).isDouble()) {
            error = field + QStringLiteral(": [%1] is not a number").arg(i);
            return false;
        }
        b(i) = float(a.at(i).toDouble());
    }
    return true;
}

} // namespace

Status loadProjectionsFile(const QString &path, Projections<float> &out)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return Status::error(StatusCode::IoError, (path + QStringLiteral(": ") + f.errorString()).toStdString());
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (doc.isNull())
        return Status::error(StatusCode::ParseError,
                             (path + QStringLiteral(": offset %1: %2").arg(pe.offset).arg(pe.errorString())).toStdString());
    QJsonObject o = doc.object();
    if (o.contains(QStringLiteral("inputs")) && o.value(QStringLiteral("inputs")).isObject())
        o = o.value(QStringLiteral("inputs")).toObject(); // a case file
    Projections<float> p;
    QString error;
    const bool ok = readMatrix(o.value(QStringLiteral("W_q")), p.q.W, error, QStringLiteral("W_q"))
        && readVector(o.value(QStringLiteral("b_q")), p.q.b, error, QStringLiteral("b_q"))
        && readMatrix(o.value(QStringLiteral("W_k")), p.k.W, error, QStringLiteral("W_k"))
        && readVector(o.value(QStringLiteral("b_k")), p.k.b, error, QStringLiteral("b_k"))
        && readMatrix(o.value(QStringLiteral("W_v")), p.v.W, error, QStringLiteral("W_v"))
        && readVector(o.value(QStringLiteral("b_v")), p.v.b, error, QStringLiteral("b_v"))
        && readMatrix(o.value(QStringLiteral("W_o")), p.o.W, error, QStringLiteral("W_o"))
        && readVector(o.value(QStringLiteral("b_o")), p.o.b, error, QStringLiteral("b_o"));
    if (!ok)
        return Status::error(StatusCode::ParseError, (path + QStringLiteral(": ") + error).toStdString());
    if (p.q.isIdentity() && p.k.isIdentity() && p.v.isIdentity() && p.o.isIdentity())
        return Status::error(StatusCode::ParseError,
                             (path + QStringLiteral(": no W_q, W_k, W_v or W_o found")).toStdString());
    out = std::move(p);
    return {};
}

} // namespace attnviz::ui
