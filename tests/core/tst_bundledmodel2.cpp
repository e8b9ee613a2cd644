// SPDX-License-Identifier: GPL-3.0-or-later
// The shipped weights of attnviz-tiny 2 (resources/models/attnviz-tiny-2, `bundled`: a Llama folder
// with rotary positions, grouped-query attention, RMSNorm and SwiGLU), through the Qt-free core only:
// openPretrained on the folder against tests/fixtures/models/attnviz-tiny-2-expected.json (float64
// numpy forward of the same model.safetensors, make_tiny2_expected.py), and the MANIFEST's claims on
// text the training never saw: the copied word of ten sentences said twice, an induction head on
// common words said twice, previous-token and first-token heads on held-out text.
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

const char *const kModelDir = ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny-2");

const QJsonObject &expected()
{
    static const QJsonObject doc = [] {
        QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/attnviz-tiny-2-expected.json")));
        return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
    }();
    return doc;
}

std::unique_ptr<Model> openTiny2()
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(kModelDir, {}, m);
    if (!st.ok())
        qWarning("%s", st.message.c_str());
    return m;
}

// The largest |a - b| over a (layers, heads) table of scores.
double worstScore(const Mat<double> &got, const QJsonArray &want)
{
    double worst = 0;
    for (int l = 0; l < want.size(); ++l) {
        const QJsonArray row = want[l].toArray();
        for (int h = 0; h < row.size(); ++h)
            worst = std::max(worst, std::abs(got(l, h) - row[h].toDouble()));
    }
    return worst;
}

} // namespace

class TestBundledModel2 : public QObject {
    Q_OBJECT
private slots:
    void info()
    {
        const std::unique_ptr<Model> m = openTiny2();
        QVERIFY(m);
        const ModelInfo i = m->info();
        QCOMPARE(i.family, std::string("llama"));
        QCOMPARE(i.layers, 4);
        QCOMPARE(i.heads, 8);
        QCOMPARE(i.dModel, 256);
        QCOMPARE(i.vocabulary, 4096);
        QCOMPARE(i.maxPositions, 512);
        QCOMPARE(i.parameters, int64_t(4065536));
        QVERIFY(i.causal);
        QVERIFY(expected().value(QStringLiteral("cases")).toArray().size() >= 3);
    }

    void matchesReference_data()
    {
        QTest::addColumn<int>("caseIndex");
        QTest::addColumn<bool>("float64");
        for (int c = 0; c < expected().value(QStringLiteral("cases")).toArray().size(); ++c) {
            QTest::addRow("case %d float64", c) << c << true;
            QTest::addRow("case %d float32", c) << c << false;
        }
    }
    void matchesReference()
    {
        QFETCH(int, caseIndex);
        QFETCH(bool, float64);
        const std::unique_ptr<Model> m = openTiny2();
        QVERIFY(m);
        const QJsonObject c = expected().value(QStringLiteral("cases")).toArray().at(caseIndex).toObject();
        if (float64)
            test::checkReferenceCase<double>(*m, c, 1e-9);
        else
            test::checkReferenceCase<float>(*m, c, 2e-5);
    }

    // The ten sentences said twice: the copied word's probability as the reference computes it, and
    // the MANIFEST's targets (top prediction in at least 9 of 10, mean probability at least 0.5).
    void copiesSentencesSaidTwice()
    {
        const std::unique_ptr<Model> m = openTiny2();
        QVERIFY(m);
        const QJsonArray copy = expected().value(QStringLiteral("copy")).toArray();
        QCOMPARE(copy.size(), 10);
        int top1 = 0;
        double sum = 0;
        for (const QJsonValue &v : copy) {
            const QJsonObject c = v.toObject();
            TraceRequest req;
            req.text = c.value(QStringLiteral("sentence")).toString().toStdString(); // tokenized here too
            Trace<float> said;
            QVERIFY(m->tokenize(req.text, said.tokens).ok());
            req = {};
            req.ids = intsOf(c.value(QStringLiteral("ids")));
            req.topK = 4096; // every entry: the target's probability wherever it ranks
            Trace<float> tr;
            QVERIFY(m->trace(req, tr).ok());
            const int target = c.value(QStringLiteral("target")).toInt();
            const std::vector<TokenProb> &next = tr.predictions.next.back();
            double p = -1;
            for (const TokenProb &tp : next)
                if (tp.id == target)
                    p = tp.p;
            QVERIFY2(std::abs(p - c.value(QStringLiteral("p")).toDouble()) < 1e-4,
                     qPrintable(c.value(QStringLiteral("word")).toString()));
            top1 += next.front().id == target;
            sum += p;
            // the prompt is the sentence's own tokens, said again (BOS, then the sentence)
            for (size_t i = 0; i < said.tokens.size(); ++i)
                QCOMPARE(req.ids[i], said.tokens[i].id);
        }
        qInfo("copied word: top prediction in %d of 10, mean p %.3f", top1, sum / 10);
        QVERIFY(top1 >= 9);
        QVERIFY(sum / 10 >= 0.5);
    }

    // Fifty common words said twice (not random ids): every head's induction score as the reference
    // computes it; the best head is in layer 1 and scores at least 0.6.
    void inductionOnWords()
    {
        const std::unique_ptr<Model> m = openTiny2();
        QVERIFY(m);
        const QJsonObject ind = expected().value(QStringLiteral("induction")).toObject();
        TraceRequest req;
        req.ids = intsOf(ind.value(QStringLiteral("ids")));
        Trace<double> tr;
        QVERIFY(m->trace(req, tr).ok());
        const Mat<double> s = inductionScores(tr, ind.value(QStringLiteral("offset")).toInt(),
                                              ind.value(QStringLiteral("length")).toInt());
        QVERIFY(worstScore(s, ind.value(QStringLiteral("scores")).toArray()) < 1e-9);
        Eigen::Index l, h;
        const double best = s.maxCoeff(&l, &h);
        qInfo("induction on words said twice: layer %d head %d, %.3f", int(l), int(h), best);
        QVERIFY(best >= 0.6);
        QCOMPARE(int(l), 1);
        // the grid's own probe (random ids said twice) starts with the model's BOS
        const InductionProbe probe = inductionProbe(m->info(), *m, 50, 1);
        QCOMPARE(probe.offset, 1);
        QCOMPARE(probe.ids.front(), 4095);
        for (size_t i = 1; i < probe.ids.size(); ++i)
            QVERIFY(probe.ids[i] >= 1000 && probe.ids[i] < 4095); // ordinary tokens, below BOS
    }

    // Held-out text: previous-token and first-token scores of every head as the reference computes
    // them; the sink is a later layer's.
    void heldOutRoles()
    {
        const std::unique_ptr<Model> m = openTiny2();
        QVERIFY(m);
        const QJsonObject held = expected().value(QStringLiteral("heldout")).toObject();
        const QJsonArray windows = held.value(QStringLiteral("windows")).toArray();
        QCOMPARE(windows.size(), 4);
        double bestPrev = 0, bestSink = 0;
        for (int k = 0; k < windows.size(); ++k) {
            TraceRequest req;
            req.ids = intsOf(windows[k]);
            Trace<float> tr;
            QVERIFY(m->trace(req, tr).ok());
            const Mat<double> prev = previousTokenScores(tr), sink = firstTokenScores(tr);
            QVERIFY(worstScore(prev, held.value(QStringLiteral("previous_token")).toArray()[k].toArray()) < 1e-4);
            QVERIFY(worstScore(sink, held.value(QStringLiteral("first_token")).toArray()[k].toArray()) < 1e-4);
            bestPrev = std::max(bestPrev, prev.maxCoeff());
            bestSink = std::max(bestSink, sink.bottomRows(sink.rows() - 1).maxCoeff());
        }
        qInfo("held-out text: best previous-token head %.3f, best first-token head after layer 0 %.3f", bestPrev,
              bestSink);
        QVERIFY(bestSink >= 0.5);
    }
};

QTEST_GUILESS_MAIN(TestBundledModel2)
#include "tst_bundledmodel2.moc"
