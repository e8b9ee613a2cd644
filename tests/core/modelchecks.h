// SPDX-License-Identifier: GPL-3.0-or-later
// Checks shared by the model suites (tst_models, tst_families): a trace against a float64
// reference case of a fixture folder's expected.json (tests/fixtures/models: every layer's and
// head's attention, the hidden states, the final norm, the top-10 predictions), and the largest
// difference between two traces of the same text.
#pragma once

#include "testpaths.h"
#include "attnviz/pretrained.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

namespace attnviz::testing {

inline QString fixture(const QString &model) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model; }

inline std::unique_ptr<Model> open(const QString &model)
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(fixture(model).toStdString(), {}, m);
    if (!st)
        qWarning("%s", st.message.c_str());
    return m;
}

inline QJsonArray cases(const QString &model)
{
    QFile f(fixture(model) + QStringLiteral("/expected.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray();
}

// Largest |a - b| / max(1, largest |b| of the row) (as traceDifference) between a matrix and a JSON
// [[...]] table of the same shape: float32's error is relative to the row's scale (a residual stream
// of entries up to 40 carries ~1e-5 of rounding into its entries near 0 after two layers).
template <typename T>
double deviation(const Mat<T> &m, const QJsonArray &rows)
{
    if (m.rows() != rows.size())
        return INFINITY;
    double worst = 0;
    for (int i = 0; i < rows.size(); ++i) {
        const QJsonArray r = rows[i].toArray();
        if (m.cols() != r.size())
            return (qWarning("structure differs at line %d", __LINE__), INFINITY);
        double scale = 1.0;
        for (int j = 0; j < r.size(); ++j)
            scale = std::max(scale, std::abs(r[j].toDouble()));
        for (int j = 0; j < r.size(); ++j)
            worst = std::max(worst, std::abs(double(m(i, j)) - r[j].toDouble()) / scale);
    }
    return worst;
}

// The top tokens: every probability within tol; ids equal where the expected neighbours are
// apart by more than tol (a near-tie may swap in float32).
inline void compareTop(const std::vector<TokenProb> &got, const QJsonArray &want, double tol, const char *where)
{
    QCOMPARE(int(got.size()), int(want.size()));
    for (int k = 0; k < want.size(); ++k) {
        const QJsonObject w = want[k].toObject();
        const double p = w.value(QStringLiteral("p")).toDouble();
        if (std::abs(got[size_t(k)].p - p) > tol)
            QFAIL(qPrintable(QStringLiteral("%1: rank %2 p %3, expected %4").arg(where).arg(k).arg(got[size_t(k)].p).arg(p)));
        const double prev = k ? want[k - 1].toObject().value(QStringLiteral("p")).toDouble() : 2.0;
        const double next = k + 1 < want.size() ? want[k + 1].toObject().value(QStringLiteral("p")).toDouble() : -1.0;
        if (prev - p > tol && p - next > tol)
            QCOMPARE(got[size_t(k)].id, w.value(QStringLiteral("id")).toInt());
        QVERIFY(!got[size_t(k)].token.empty());
    }
}

inline std::vector<int> idsOf(const QJsonObject &c)
{
    std::vector<int> ids;
    for (const QJsonValue &v : c.value(QStringLiteral("ids")).toArray())
        ids.push_back(v.toInt());
    return ids;
}

template <typename T>
void checkCase(Model &model, const QJsonObject &c, double tol, double probTol = 0)
{
    TraceRequest req;
    req.ids = idsOf(c);
    req.keepScores = true;
    req.allPredictions = true;
    Trace<T> tr;
    const Status st = model.trace(req, tr);
    QVERIFY2(st.ok(), st.message.c_str());
    const QJsonArray tokens = c.value(QStringLiteral("tokens")).toArray();
    QCOMPARE(int(tr.tokens.size()), tokens.size());
    for (int i = 0; i < tokens.size(); ++i)
        QCOMPARE(QString::fromStdString(tr.tokens[size_t(i)].text), tokens[i].toString());
    const QJsonArray attentions = c.value(QStringLiteral("attentions")).toArray();
    const QJsonArray hidden = c.value(QStringLiteral("hidden")).toArray();
    QCOMPARE(tr.numLayers(), attentions.size());
    QVERIFY(deviation(tr.input, hidden[0].toArray()) < tol);
    for (int l = 0; l < tr.numLayers(); ++l) {
        const QJsonArray heads = attentions[l].toArray();
        QCOMPARE(tr.numHeads(), heads.size());
        Mat<T> mean = Mat<T>::Zero(tr.weights(l, 0).rows(), tr.weights(l, 0).cols());
        for (int h = 0; h < heads.size(); ++h) {
            const double dev = deviation(tr.weights(l, h).toDense(), heads[h].toArray());
            if (!(dev < tol))
                QFAIL(qPrintable(QStringLiteral("layer %1 head %2: attention off by %3").arg(l).arg(h).arg(dev)));
            mean += tr.weights(l, h).toDense();
        }
        QVERIFY((tr.weights(l, -1).toDense() - mean / T(heads.size())).cwiseAbs().maxCoeff() < tol);
        const double dev = deviation(tr.layers[size_t(l)].output, hidden[l + 1].toArray());
        if (!(dev < tol))
            QFAIL(qPrintable(QStringLiteral("layer %1: hidden state off by %2").arg(l).arg(dev)));
        // the stages the pipeline view shows fit together: q = attentionIn W_q^T + b_q (before q/k norm
        // and rotation where the model has them)
        const LayerTrace<T> &lt = tr.layers[size_t(l)];
        QVERIFY(lt.projections);
        const std::shared_ptr<const Projections<T>> P = lt.projections.get();
        Mat<T> q = lt.attentionIn * P->q.W.transpose();
        if (P->q.hasBias())
            q.rowwise() += P->q.b.transpose();
        const SequenceResult<T> &sr = lt.attention.batch[0];
        QVERIFY((q - (sr.qPre.size() ? sr.qPre : sr.q)).cwiseAbs().maxCoeff() < tol * 10);
        QCOMPARE(lt.attention.batch[0].scores.size(), size_t(tr.numHeads()));
    }
    const double finalDev = deviation(tr.final, c.value(QStringLiteral("final")).toArray());
    if (!(finalDev < tol))
        QFAIL(qPrintable(QStringLiteral("final hidden state off by %1").arg(finalDev)));
    if (c.contains(QStringLiteral("next"))) {
        const QJsonArray next = c.value(QStringLiteral("next")).toArray();
        const QJsonArray actual = c.value(QStringLiteral("actual_next")).toArray();
        QCOMPARE(int(tr.predictions.next.size()), next.size());
        for (int i = 0; i < next.size(); ++i) {
            compareTop(tr.predictions.next[size_t(i)], next[i].toArray(), probTol > 0 ? probTol : tol, "next");
            if (i < actual.size())
                QVERIFY(std::abs(tr.predictions.actualNext[size_t(i)] - actual[i].toDouble()) < (probTol > 0 ? probTol : tol));
            else
                QVERIFY(std::isnan(tr.predictions.actualNext[size_t(i)]));
        }
        QVERIFY(tr.predictions.masked.empty());
    } else {
        const QJsonArray masked = c.value(QStringLiteral("masked")).toArray();
        QVERIFY(!masked.isEmpty());
        QCOMPARE(int(tr.predictions.masked.size()), masked.size());
        for (int m = 0; m < masked.size(); ++m) {
            const QJsonObject w = masked[m].toObject();
            QCOMPARE(tr.predictions.masked[size_t(m)].position, w.value(QStringLiteral("position")).toInt());
            compareTop(tr.predictions.masked[size_t(m)].top, w.value(QStringLiteral("top")).toArray(), tol, "masked");
        }
        QVERIFY(tr.predictions.next.empty());
    }
}

// Largest |a - b| / max(1, largest |b| of the row) over every stage and prediction of two traces.
template <typename T>
double traceDifference(const Trace<T> &a, const Trace<T> &b)
{
    double worst = 0;
    auto cmp = [&](const Mat<T> &x, const Mat<T> &y) {
        if (x.rows() != y.rows() || x.cols() != y.cols())
            worst = INFINITY;
        else if (x.size())
            worst = std::max(worst, double(((x - y).cwiseAbs().rowwise().maxCoeff().array() /
                                            y.cwiseAbs().rowwise().maxCoeff().array().max(T(1)))
                                               .maxCoeff()));
    };
    cmp(a.embeddings, b.embeddings);
    cmp(a.input, b.input);
    cmp(a.final, b.final);
    if (a.layers.size() != b.layers.size())
        return INFINITY;
    for (size_t l = 0; l < a.layers.size(); ++l) {
        const LayerTrace<T> &x = a.layers[l], &y = b.layers[l];
        cmp(x.residualIn, y.residualIn);
        cmp(x.attentionIn, y.attentionIn);
        cmp(x.afterAttention, y.afterAttention);
        cmp(x.output, y.output);
        const SequenceResult<T> &s = x.attention.batch[0], &r = y.attention.batch[0];
        for (const auto &[m1, m2] :
             {std::pair{&s.q, &r.q}, {&s.k, &r.k}, {&s.v, &r.v}, {&s.context, &r.context}, {&s.output, &r.output}})
            cmp(*m1, *m2);
        cmp(s.weightsAvg, r.weightsAvg);
        if (s.weights.size() != r.weights.size() || s.scores.size() != r.scores.size() || s.mask != r.mask)
            return (qWarning("structure differs at line %d", __LINE__), INFINITY);
        for (size_t h = 0; h < s.weights.size(); ++h)
            cmp(s.weights[h], r.weights[h]);
        for (size_t h = 0; h < s.scores.size(); ++h)
            cmp(s.scores[h], r.scores[h]);
    }
    if (a.predictions.next.size() != b.predictions.next.size())
        return INFINITY;
    for (size_t i = 0; i < a.predictions.next.size(); ++i) {
        if (a.predictions.next[i].empty() != b.predictions.next[i].empty())
            continue; // computed in one only (a position kept from an earlier trace, or on demand)
        if (a.predictions.next[i].size() != b.predictions.next[i].size())
            return (qWarning("structure differs at line %d", __LINE__), INFINITY);
        for (size_t k = 0; k < a.predictions.next[i].size(); ++k)
            worst = std::max(worst, std::abs(a.predictions.next[i][k].p - b.predictions.next[i][k].p));
        const double x = a.predictions.actualNext[i], y = b.predictions.actualNext[i];
        if (std::isnan(x) != std::isnan(y))
            return (qWarning("structure differs at line %d", __LINE__), INFINITY);
        if (!std::isnan(x))
            worst = std::max(worst, std::abs(x - y));
    }
    return worst;
}

} // namespace attnviz::testing
