// SPDX-License-Identifier: GPL-3.0-or-later
// The shipped weights of the bundled trained model (resources/models/attnviz-tiny), through
// the Qt-free core only: openPretrained on the folder against tests/fixtures/models/
// attnviz-tiny-expected.json (float64 numpy forward of the same model.safetensors: token ids, every
// head's attention, the top 5 next tokens and the argmax at every position), and the head roles the
// MANIFEST and the lessons claim (headroles.h): a previous-token head in layer 0, an induction head in
// layer 1, and the loss on a second copy of random tokens far below the first copy's.
#include "testpaths.h"
#include "attnviz/headroles.h"
#include "attnviz/pretrained.h"

#include "../support/referencecase.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace attnviz;
using attnviz::test::intsOf;

namespace {

const char *const kModelDir = ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny");

QJsonArray cases()
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/attnviz-tiny-expected.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray();
}

std::unique_ptr<Model> openTiny()
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(kModelDir, {}, m);
    if (!st.ok())
        qWarning("%s", st.message.c_str());
    return m;
}

// Mean of -ln p(actual next token) over positions [from, to).
double lossOver(const Predictions &p, int from, int to)
{
    double sum = 0;
    for (int i = from; i < to; ++i)
        sum -= std::log(p.actualNext[size_t(i)]);
    return sum / (to - from);
}

} // namespace

class TestBundledModel : public QObject {
    Q_OBJECT
private slots:
    void info()
    {
        const std::unique_ptr<Model> m = openTiny();
        QVERIFY(m);
        const ModelInfo i = m->info();
        QCOMPARE(i.family, std::string("gpt2"));
        QCOMPARE(i.layers, 2);
        QCOMPARE(i.heads, 4);
        QCOMPARE(i.dModel, 128);
        QCOMPARE(i.vocabulary, 4096);
        QCOMPARE(i.maxPositions, 256);
        QCOMPARE(i.parameters, int64_t(822272));
        QVERIFY(i.causal);
        QVERIFY(cases().size() >= 3);
    }

    void matchesReference_data()
    {
        QTest::addColumn<int>("caseIndex");
        QTest::addColumn<bool>("float64");
        for (int c = 0; c < cases().size(); ++c) {
            QTest::addRow("case %d float64", c) << c << true;
            QTest::addRow("case %d float32", c) << c << false;
        }
    }
    void matchesReference()
    {
        QFETCH(int, caseIndex);
        QFETCH(bool, float64);
        const std::unique_ptr<Model> m = openTiny();
        QVERIFY(m);
        const QJsonObject c = cases().at(caseIndex).toObject();
        if (float64)
            test::checkReferenceCase<double>(*m, c, 1e-10); // the fixture keeps 10 significant digits
        else
            test::checkReferenceCase<float>(*m, c, 1e-5);
    }

    // Previous-token on natural text (the fixture's sentences): layer 0 has a head >= 0.7.
    void previousTokenHead_data()
    {
        QTest::addColumn<int>("caseIndex");
        for (int c = 0; c < cases().size(); ++c)
            QTest::addRow("case %d", c) << c;
    }
    void previousTokenHead()
    {
        QFETCH(int, caseIndex);
        const std::unique_ptr<Model> m = openTiny();
        QVERIFY(m);
        TraceRequest req;
        req.text = cases().at(caseIndex).toObject().value(QStringLiteral("text")).toString().toStdString();
        Trace<float> tr;
        QVERIFY(m->trace(req, tr).ok());
        const Mat<double> prev = previousTokenScores(tr);
        QCOMPARE(int(prev.rows()), 2);
        QVERIFY2(prev.row(0).maxCoeff() >= 0.7, qPrintable(QString::number(prev.row(0).maxCoeff())));
        QVERIFY(prev(0, 1) >= 0.7);            // the MANIFEST's and the lesson's head: layer 0, head 1
        QVERIFY(prev.row(1).maxCoeff() < 0.3); // layer 1 does something else
    }

    // 50 random tokens said twice (the grid's probe): an induction head in layer 1, none in layer 0,
    // and the second copy predicted far better than the first.
    void inductionHead()
    {
        const std::unique_ptr<Model> m = openTiny();
        QVERIFY(m);
        const InductionProbe probe = inductionProbe(m->info(), *m, 50, 1);
        QCOMPARE(probe.length, 50);
        QCOMPARE(int(probe.ids.size()), probe.offset + 100);
        TraceRequest req;
        req.ids = probe.ids;
        req.allPredictions = true; // the loss on both copies
        Trace<double> tr;
        const Status st = m->trace(req, tr);
        QVERIFY2(st.ok(), st.message.c_str());
        const Mat<double> ind = inductionScores(tr, probe.offset, probe.length);
        qInfo("induction, layer 1: %.3f %.3f %.3f %.3f; layer 0 at most %.3f", ind(1, 0), ind(1, 1), ind(1, 2),
              ind(1, 3), ind.row(0).maxCoeff());
        QVERIFY(ind.row(1).maxCoeff() >= 0.4);
        QVERIFY(ind(1, 0) >= 0.4); // the lessons' head
        QVERIFY(ind.row(0).maxCoeff() < 0.1);
        // tokens 2..L of each copy, predicted from the ones before
        const int o = probe.offset, L = probe.length;
        const double first = lossOver(tr.predictions, o, o + L - 1);
        const double second = lossOver(tr.predictions, o + L, o + 2 * L - 1);
        qInfo("loss: first copy %.3f, second copy %.3f", first, second);
        QVERIFY(first > 5.0);  // random tokens: no better than a guess (ln 4,095 = 8.3)
        QVERIFY(second < 1.0); // copied
        QVERIFY(second < first / 10);
    }
};

QTEST_GUILESS_MAIN(TestBundledModel)
#include "tst_bundledmodel.moc"
