// SPDX-License-Identifier: GPL-3.0-or-later
// One case of a bundled model's expected.json (make_tiny_expected.py, make_tiny2_expected.py: a text,
// its ids, every head's attention, the top 5 after the last token and the argmax at every position,
// from a float64 numpy forward) checked against the model's trace. Header-only, for the Qt-free core
// suites (tst_bundledmodel, tst_bundledmodel2).
#pragma once

#include "attnviz/model.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnviz::test {

inline std::vector<int> intsOf(const QJsonValue &v)
{
    std::vector<int> out;
    for (const QJsonValue &x : v.toArray())
        out.push_back(x.toInt());
    return out;
}

// Within `tol` everywhere; the ids of near-ties (within tol) may swap in float32.
template <typename T> void checkReferenceCase(Model &model, const QJsonObject &c, double tol)
{
    TraceRequest req;
    req.text = c.value(QStringLiteral("text")).toString().toStdString();
    req.topK = 5;
    req.allPredictions = true; // the argmax at every position is checked too
    Trace<T> tr;
    const Status st = model.trace(req, tr);
    QVERIFY2(st.ok(), st.message.c_str());
    const std::vector<int> ids = intsOf(c.value(QStringLiteral("ids")));
    QCOMPARE(int(tr.tokens.size()), int(ids.size()));
    for (size_t i = 0; i < ids.size(); ++i)
        QCOMPARE(tr.tokens[i].id, ids[i]);
    const int t = int(ids.size());

    // every head's attention
    const QJsonArray attention = c.value(QStringLiteral("attention")).toArray();
    QCOMPARE(attention.size(), tr.numLayers() * tr.numHeads());
    for (const QJsonValue &v : attention) {
        const QJsonObject a = v.toObject();
        const int layer = a.value(QStringLiteral("layer")).toInt(), head = a.value(QStringLiteral("head")).toInt();
        const WeightMatrix<T> &w = tr.weights(layer, head);
        const QJsonArray rows = a.value(QStringLiteral("weights")).toArray();
        QCOMPARE(int(w.rows()), t);
        QCOMPARE(rows.size(), t);
        double worst = 0;
        for (int i = 0; i < t; ++i) {
            const QJsonArray r = rows[i].toArray();
            for (int j = 0; j < t; ++j)
                worst = std::max(worst, std::abs(double(w(i, j)) - r[j].toDouble()));
        }
        QVERIFY2(worst <= tol, qPrintable(QStringLiteral("layer %1 head %2: %3").arg(layer).arg(head).arg(worst)));
    }

    // the top 5 after the last token; near-ties (within tol) may swap in float32
    const Predictions &pred = tr.predictions;
    QCOMPARE(int(pred.next.size()), t);
    const QJsonArray top = c.value(QStringLiteral("top_next")).toArray();
    const std::vector<TokenProb> &last = pred.next.back();
    QVERIFY(int(last.size()) >= top.size());
    for (int k = 0; k < top.size(); ++k) {
        const QJsonObject w = top[k].toObject();
        const double p = w.value(QStringLiteral("prob")).toDouble();
        QVERIFY2(std::abs(last[size_t(k)].p - p) <= tol,
                 qPrintable(QStringLiteral("rank %1: p %2, expected %3").arg(k).arg(last[size_t(k)].p).arg(p)));
        const double above = k ? top[k - 1].toObject().value(QStringLiteral("prob")).toDouble() : 2.0;
        const double below = k + 1 < top.size() ? top[k + 1].toObject().value(QStringLiteral("prob")).toDouble() : -1.0;
        if (above - p > tol && p - below > tol)
            QCOMPARE(last[size_t(k)].id, w.value(QStringLiteral("id")).toInt());
    }
    // the argmax at every position
    const std::vector<int> argmax = intsOf(c.value(QStringLiteral("argmax_next")));
    QCOMPARE(int(argmax.size()), t);
    for (int i = 0; i < t; ++i) {
        const std::vector<TokenProb> &n = pred.next[size_t(i)];
        if (n.size() < 2 || n[0].p - n[1].p > tol)
            QVERIFY2(
                n[0].id == argmax[size_t(i)],
                qPrintable(QStringLiteral("position %1: %2, expected %3").arg(i).arg(n[0].id).arg(argmax[size_t(i)])));
    }
}

} // namespace attnviz::test
