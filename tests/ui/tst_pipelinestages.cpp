// SPDX-License-Identifier: GPL-3.0-or-later
// Every stage of the pipeline on every kind of trace the stage table serves (word vectors with each
// mask, scale, normalization, dropout and cross-attention; a word-vector stack; GPT-2, Llama's rotary
// grouped heads, Qwen 3's q/k norm, Gemma 2's soft-cap and window, BERT): each stage's name, title,
// caption and plotted cells, and a click on its corner and middle cells explains them. With ATTNVIZ_PIPELINE_DUMP=FILE it writes all of it (texts, plotted values, highlights)
// to FILE, so a change to how the stages are built can be compared with the view before it.
#include "live/livesession.h"
#include "teaching/seedtables.h"
#include "testsupport.h"
#include "views/pipelineview.h"

#include <qcustomplot.h>

#include <QFile>
#include <QTextStream>
#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::ui;
using namespace attnviz::test;

namespace {

const QString kText = QStringLiteral("The animal didn't cross the street because it was too tired.");

// The journey table's sentence (and a second one for cross-attention) under `settings`.
SnapshotPtr traceWords(const ComputeSettings &settings, const QString &keySentence, const std::set<int> &padded,
                       const std::set<std::pair<int, int>> &custom)
{
    LiveSession session;
    session.setDebounceMs(0);
    session.setTable(journeyTable());
    session.setSettings(settings);
    session.setSentence(journeySentence());
    if (!keySentence.isEmpty())
        session.setKeySentence(keySentence);
    if (!padded.empty())
        session.setPaddedKeys(padded);
    if (!custom.empty())
        session.setCustomMask(custom);
    session.requestNow();
    waitForCurrentResult(session);
    return session.snapshot();
}

QString rectText(const QRect &r)
{
    return QStringLiteral("(%1,%2)-(%3,%4)").arg(r.top()).arg(r.left()).arg(r.bottom()).arg(r.right());
}

} // namespace

class TestPipelineStages : public QObject {
    Q_OBJECT

    QString m_dump;
    int m_checked = 0;

    // Every stage of `view` at (layer, head): its texts and cells, and clicks on a few cells.
    void walk(const QString &config, const SnapshotPtr &s)
    {
        QVERIFY2(s && s->hasResult(), qPrintable(config + (s ? QStringLiteral(": ") + s->message : QString())));
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        const int layers = s->numLayers();
        for (int layer : {0, layers - 1}) {
            const int H = s->attention(layer).numHeads;
            for (int head : {-1, 0, H - 1}) {
                view.setSelection(layer, head, 0);
                QTextStream out(&m_dump);
                out << "=== " << config << " layer " << layer << " head " << head << " shown " << view.shownHead()
                    << " stages " << view.stageCount() << "\n";
                for (int i = 0; i < view.stageCount(); ++i) {
                    QCustomPlot *plot = view.stagePlot(i);
                    plot->replot();
                    auto *map = qobject_cast<QCPColorMap *>(plot->plottable(0));
                    out << "--- stage " << i << " kind " << int(view.stageKind(i)) << " name " << view.stageName(i)
                        << "\ntitle " << view.stageTitle(i) << "\ncaption " << view.stageCaption(i) << "\nmessage "
                        << view.stageMessage(i) << "\nfigure " << view.stageFigureTitle(i) << "\naxes "
                        << plot->xAxis->label() << " | " << plot->yAxis->label() << "\n";
                    QVERIFY(!view.stageName(i).isEmpty());
                    if (!view.stageMessage(i).isEmpty() || !map->visible())
                        continue;
                    const int nx = map->data()->keySize(), ny = map->data()->valueSize();
                    out << "range " << map->dataRange().lower << " " << map->dataRange().upper << " cells " << ny << "x"
                        << nx << "\n";
                    for (int r = 0; r < ny; ++r) {
                        for (int c = 0; c < nx; ++c)
                            out << QString::number(map->data()->cell(c, r), 'g', 9) << ' ';
                        out << '\n';
                    }
                    const int rows = ny, cols = nx;
                    const QVector<QPoint> cells{{0, 0}, {rows - 1, cols - 1}, {rows / 2, cols / 2}, {rows - 1, 0}, {0, cols - 1}};
                    for (const QPoint &rc : cells) {
                        if (!view.explainCell(i, rc.x(), rc.y()))
                            continue;
                        const QString text = view.explanation();
                        QVERIFY2(!text.isEmpty(), qPrintable(config));
                        ++m_checked;
                        out << "click " << rc.x() << "," << rc.y() << "\n" << text << "\n";
                        for (int o = 0; o < view.stageCount(); ++o) {
                            const QVector<QRect> hl = view.highlights(o);
                            if (hl.isEmpty())
                                continue;
                            out << "  highlights " << o << ":";
                            for (const QRect &r : hl)
                                out << ' ' << rectText(r);
                            out << "\n";
                        }
                    }
                }
            }
        }
    }

private slots:
    void wordVectors()
    {
        ComputeSettings st;
        st.numHeads = 2;
        st.projection = ProjectionMode::Random;
        st.projectionSeed = 7;
        st.mask = MaskChoice::Causal;
        walk(QStringLiteral("words causal random 2 heads"), traceWords(st, {}, {}, {}));

        ComputeSettings id;
        id.scaleRule = ScaleRule::None;
        walk(QStringLiteral("words identity unscaled"), traceWords(id, {}, {}, {}));

        ComputeSettings renorm = st;
        renorm.mask = MaskChoice::CausalPadding;
        renorm.maskMethod = MaskMethod::MultiplyRenormalize;
        renorm.scaleRule = ScaleRule::InvSqrtDModel;
        renorm.outWidth = -1;
        walk(QStringLiteral("words renormalized padding"), traceWords(renorm, {}, {1}, {}));

        ComputeSettings sum = st;
        sum.normalization = Normalization::Sum;
        sum.mask = MaskChoice::Custom;
        sum.scaleRule = ScaleRule::Temperature;
        sum.temperature = 2.0;
        walk(QStringLiteral("words sum custom temperature"), traceWords(sum, {}, {}, {{0, 1}, {2, 0}}));

        ComputeSettings cosine = st;
        cosine.normalization = Normalization::Cosine;
        cosine.mask = MaskChoice::None;
        walk(QStringLiteral("words cosine"), traceWords(cosine, {}, {}, {}));

        ComputeSettings drop = st;
        drop.dropout = 0.3;
        drop.dropoutSeed = 5;
        walk(QStringLiteral("words dropout"), traceWords(drop, {}, {}, {}));

        ComputeSettings cross = st;
        cross.mask = MaskChoice::Padding;
        walk(QStringLiteral("words cross"), traceWords(cross, QStringLiteral("the cat sat on the mat"), {0}, {}));

        ComputeSettings deep;
        deep.numHeads = 3;
        deep.mask = MaskChoice::Causal;
        deep.stack.depth = 2;
        walk(QStringLiteral("words stack of 2"), traceWords(deep, {}, {}, {}));
    }

    void models_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : {"gpt2-tiny", "llama-tiny", "qwen3-tiny", "gemma2-tiny", "bert-tiny"})
            QTest::newRow(m) << QString::fromLatin1(m);
    }
    void models()
    {
        QFETCH(QString, model);
        walk(model, traceFixtureModel(model, kText));
    }

    void cleanupTestCase()
    {
        QVERIFY(m_checked > 1000);
        const QByteArray path = qgetenv("ATTNVIZ_PIPELINE_DUMP");
        if (path.isEmpty())
            return;
        QFile f(QString::fromLocal8Bit(path));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(m_dump.toUtf8());
    }
};

QTEST_MAIN(TestPipelineStages)
#include "tst_pipelinestages.moc"
