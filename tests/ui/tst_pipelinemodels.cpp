// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline on checkpoints with grouped-query heads and rotary positions (llama-tiny: 4 heads on 2
// key/value heads, llama3 RoPE; qwen3-tiny: the same with q/k RMSNorm and d_head 6): Q and K as
// projected, the rotated Q and K after them, K and V named and captioned once per key/value group,
// the gated MLP's stages after the attention's (tst_mlpgate checks their cells); GPT-2's stages as
// they were. The stage list, names, captions and plotted cells are read back.
// Also the layers × heads role grid's head names: the key/value head each query head reads.
#include "live/livesession.h"
#include "testsupport.h"
#include "views/headrolesview.h"
#include "views/pipelineview.h"

#include <qcustomplot.h>

#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::ui;
using namespace attnviz::test;
using Kind = PipelineView::StageKind;

namespace {

const QString kText = QStringLiteral("The animal didn't cross the street because it was too tired.");

QVector<Kind> kinds(const PipelineView &view)
{
    QVector<Kind> k;
    for (int i = 0; i < view.stageCount(); ++i)
        k << view.stageKind(i);
    return k;
}

double plotted(const PipelineView &view, Kind k, int row, int col)
{
    auto *map = qobject_cast<QCPColorMap *>(view.stagePlot(view.indexOf(k))->plottable(0));
    return double(map->data()->cell(col, row));
}

} // namespace

class TestPipelineModels : public QObject {
    Q_OBJECT
private slots:
    void rotaryGroupedStages_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("layer");
        QTest::addColumn<int>("head");
        QTest::addColumn<bool>("qkNorm");
        QTest::addRow("llama-tiny L1 H3") << "llama-tiny" << 1 << 3 << false;
        QTest::addRow("qwen3-tiny L0 H1") << "qwen3-tiny" << 0 << 1 << true;
    }
    void rotaryGroupedStages()
    {
        QFETCH(QString, model);
        QFETCH(int, layer);
        QFETCH(int, head);
        QFETCH(bool, qkNorm);
        const SnapshotPtr s = traceFixtureModel(model, kText);
        QVERIFY(s && s->hasResult());
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        view.setSelection(layer, head, 0);
        QCOMPARE(kinds(view), (QVector<Kind>{Kind::Input, Kind::Q, Kind::K, Kind::V, Kind::QRotated, Kind::KRotated,
                                             Kind::RawScores, Kind::Scaled, Kind::Masked, Kind::Weights, Kind::Context,
                                             Kind::Concat, Kind::Output, Kind::MlpGate, Kind::MlpActivated,
                                             Kind::MlpUp, Kind::MlpProduct}));
        const AttentionResult<float> &att = s->trace->layers[size_t(layer)].attention;
        const SequenceResult<float> &r = att.batch.front();
        const int dh = att.dHead, kv = head / 2; // 4 query heads on 2 key/value heads
        QCOMPARE(att.kvHeads, 2);
        // Q and K as projected, then as the scores read them
        for (int i = 0; i < s->tq(); ++i)
            for (int d = 0; d < dh; ++d) {
                QCOMPARE(plotted(view, Kind::Q, i, d), double(r.qPre(i, head * dh + d)));
                QCOMPARE(plotted(view, Kind::K, i, d), double(r.kPre(i, head * dh + d)));
                QCOMPARE(plotted(view, Kind::QRotated, i, d), double(r.q(i, head * dh + d)));
                QCOMPARE(plotted(view, Kind::KRotated, i, d), double(r.k(i, head * dh + d)));
                QCOMPARE(plotted(view, Kind::V, i, d), double(r.v(i, head * dh + d)));
            }
        // position 0 is not turned: without a q/k norm its rotated q is the projected one
        if (!qkNorm)
            QCOMPARE(r.q.row(0), r.qPre.row(0));
        QVERIFY(r.q.row(5) != r.qPre.row(5));
        // K and V once per key/value group
        const QString group = QStringLiteral("key/value head %1 (query heads %2–%3)").arg(kv).arg(2 * kv).arg(2 * kv + 1);
        QCOMPARE(view.stageName(view.indexOf(Kind::Q)), QStringLiteral("Q of head %1").arg(head));
        QCOMPARE(view.stageName(view.indexOf(Kind::K)), QStringLiteral("K of ") + group);
        QCOMPARE(view.stageName(view.indexOf(Kind::V)), QStringLiteral("V of ") + group);
        QVERIFY2(view.stageTitle(view.indexOf(Kind::K)).startsWith(QStringLiteral("K_kv%1 = ").arg(kv)),
                 qPrintable(view.stageTitle(view.indexOf(Kind::K))));
        for (Kind k : {Kind::K, Kind::V}) {
            const QString c = view.stageCaption(view.indexOf(k));
            QVERIFY2(c.contains(QStringLiteral("Grouped-query attention: 2 key/value heads for 4 query heads, shown once "
                                               "per group: key/value head %1 serves query heads %2–%3")
                                    .arg(kv).arg(2 * kv).arg(2 * kv + 1)),
                     qPrintable(c));
        }
        QVERIFY(!view.stageCaption(view.indexOf(Kind::Q)).contains(QStringLiteral("Grouped")));
        QVERIFY2(view.stageTitle(view.indexOf(Kind::RawScores)).startsWith(QStringLiteral("S = Q_%1·K_kv%2ᵀ").arg(head).arg(kv)),
                 qPrintable(view.stageTitle(view.indexOf(Kind::RawScores))));
        // the rotary stages
        const QString turn = qkNorm ? QStringLiteral("the per-head norm and rotary positions") : QStringLiteral("rotary positions");
        QCOMPARE(view.stageName(view.indexOf(Kind::QRotated)), QStringLiteral("Q rotated of head %1").arg(head));
        QCOMPARE(view.stageName(view.indexOf(Kind::KRotated)), QStringLiteral("K rotated of key/value head %1").arg(kv));
        QVERIFY2(view.stageCaption(view.indexOf(Kind::Q)).contains(QStringLiteral("As projected, before ") + turn),
                 qPrintable(view.stageCaption(view.indexOf(Kind::Q))));
        QVERIFY2(view.stageCaption(view.indexOf(Kind::QRotated)).startsWith(QStringLiteral("Queries after ") + turn),
                 qPrintable(view.stageCaption(view.indexOf(Kind::QRotated))));
        QVERIFY2(view.stageTitle(view.indexOf(Kind::QRotated))
                     .startsWith(qkNorm ? QStringLiteral("Q_%1 = RoPE(RMSNorm(Q_%1), position)").arg(head)
                                        : QStringLiteral("Q_%1 = RoPE(Q_%1, position)").arg(head)),
                 qPrintable(view.stageTitle(view.indexOf(Kind::QRotated))));
        // a clicked rotated cell: the pair's rotation with the real numbers
        auto num = [](double v) { return QString::number(v, 'f', 4); };
        const int i = 5, j = 1;
        QVERIFY(view.explainCell(view.indexOf(Kind::QRotated), i, j));
        const QString text = view.explanation();
        QVERIFY2(text.contains(num(r.q(i, head * dh + j))), qPrintable(text));
        if (qkNorm) {
            QVERIFY2(text.contains(QStringLiteral("normalizes")), qPrintable(text));
        } else {
            QVERIFY2(text.contains(QStringLiteral("pair of dimensions (1, %1)").arg(1 + dh / 2)), qPrintable(text));
            QVERIFY2(text.contains(num(r.qPre(i, head * dh + j))), qPrintable(text));
        }
        // a clicked score: the rotated rows light up beside the projected ones
        QVERIFY(view.explainCell(view.indexOf(Kind::RawScores), i, 2));
        QCOMPARE(view.highlights(view.indexOf(Kind::QRotated)).size(), 1);
        QCOMPARE(view.highlights(view.indexOf(Kind::KRotated)).size(), 1);
    }

    void gpt2StagesUnchanged()
    {
        const SnapshotPtr s = traceFixtureModel(QStringLiteral("gpt2-tiny"), kText);
        QVERIFY(s && s->hasResult());
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        view.setSelection(1, 2, 0);
        QCOMPARE(kinds(view), (QVector<Kind>{Kind::Input, Kind::Q, Kind::K, Kind::V, Kind::RawScores, Kind::Scaled,
                                             Kind::Masked, Kind::Weights, Kind::Context, Kind::Concat, Kind::Output}));
        QCOMPARE(view.stageName(view.indexOf(Kind::K)), QStringLiteral("K of head 2"));
        QCOMPARE(view.stageCaption(view.indexOf(Kind::K)), QStringLiteral("Keys: what each token offers to be found by."));
        QVERIFY(view.stageTitle(view.indexOf(Kind::K)).startsWith(QStringLiteral("K_2 = LN₁(X)·W_kᵀ + b_k")));
        QCOMPARE(view.stageCaption(view.indexOf(Kind::Masked)),
                 QStringLiteral("Hatched keys are later tokens: a causal model (gpt2-tiny) lets each token see only "
                                "itself and what came before."));
    }

    // A sliding-window layer says so under the mask (mistral-tiny: a window of 4 on every layer).
    void slidingWindowCaption()
    {
        const SnapshotPtr s = traceFixtureModel(QStringLiteral("mistral-tiny"), kText);
        QVERIFY(s && s->hasResult());
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        view.setSelection(1, 0, 0);
        const QString caption = view.stageCaption(view.indexOf(Kind::Masked));
        QVERIFY2(caption.contains(QStringLiteral("a causal model (mistral-tiny)")), qPrintable(caption));
        QVERIFY2(caption.endsWith(QStringLiteral("This layer slides a window of 4 tokens: keys 4 or more tokens back are "
                                                 "hatched too.")),
                 qPrintable(caption));
    }

    // The role grid names each query head's key/value head (llama-tiny: heads 0-1 read kv 0, 2-3 kv 1);
    // GPT-2's heads keep their plain names.
    void headRolesNameKeyValueHeads()
    {
        for (const QString &model : {QStringLiteral("llama-tiny"), QStringLiteral("gpt2-tiny")}) {
            const SnapshotPtr s = traceFixtureModel(model, kText);
            QVERIFY(s && s->hasResult());
            HeadRolesView view;
            view.resize(1000, 700);
            view.show();
            view.setSnapshot(s);
            QTRY_VERIFY(view.headCount() > 0);
            if (model == QStringLiteral("llama-tiny")) {
                QCOMPARE(view.headCount(), 4);
                QCOMPARE(view.headName(1), QStringLiteral("H1 · kv 0"));
                QCOMPARE(view.headName(2), QStringLiteral("H2 · kv 1"));
            } else {
                QCOMPARE(view.headName(1), QStringLiteral("H1"));
            }
        }
    }
};

QTEST_MAIN(TestPipelineModels)
#include "tst_pipelinemodels.moc"
