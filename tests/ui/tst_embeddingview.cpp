// SPDX-License-Identifier: GPL-3.0-or-later
// The contextual-embeddings view: narrow vectors (d ≤ 16) show every cell's number, each
// bar shows its value, wide vectors (the bundled 50-d table) show no numbers in cells, and the
// dimension axes tick at whole dimensions only (3 dimensions: 0, 1, 2 — not −0.5 … 2.5). Read back
// from the strings the plot draws.
#include "drawntext.h"

#include "live/livesession.h"
#include "mainwindow.h"
#include "views/embeddingview.h"

#include <qcustomplot.h>

#include <QStandardPaths>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

class TestEmbeddingView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();
    void numbersWhenNarrow_data();
    void numbersWhenNarrow();
    void noNumbersWhenWide();
    void barValuesBesideBars();
    void ticksAtWholeDimensions_data();
    void ticksAtWholeDimensions();

private:
    // The preset's result on the embeddings tab, settled; null when it fails.
    QCustomPlot *open(const QString &preset);
    QCPAxis *dimensionAxis(QCustomPlot *plot, bool output) const;
    MainWindow *m_w = nullptr;
};

void TestEmbeddingView::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_embeddingview"));
}

void TestEmbeddingView::init()
{
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->resize(1600, 1000);
    m_w->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_w));
}

void TestEmbeddingView::cleanup()
{
    delete m_w;
    m_w = nullptr;
}

QCustomPlot *TestEmbeddingView::open(const QString &preset)
{
    if (!m_w->applyPreset(preset))
        return nullptr;
    for (int i = 0; i < 300; ++i) {
        const SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->generation == m_w->session()->generation())
            break;
        QTest::qWait(20);
    }
    if (!m_w->session()->snapshot() || !m_w->session()->snapshot()->hasResult() ||
        !m_w->showView(QStringLiteral("embeddings")))
        return nullptr;
    QCustomPlot *plot = m_w->embeddingView()->plot();
    for (int i = 0; i < 4; ++i) {
        QCoreApplication::processEvents();
        plot->replot(QCustomPlot::rpImmediateRefresh);
    }
    return plot;
}

QCPAxis *TestEmbeddingView::dimensionAxis(QCustomPlot *plot, bool output) const
{
    for (QCPAxisRect *r : plot->axisRects())
        if (r->axis(QCPAxis::atTop)
                ->label()
                .startsWith(output ? QStringLiteral("contextual") : QStringLiteral("input")))
            return r->axis(QCPAxis::atBottom);
    return nullptr;
}

void TestEmbeddingView::numbersWhenNarrow_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addRow("journey-v1: 3-d in, 2-d out") << QStringLiteral("journey-v1");
    QTest::addRow("journey-scores: 3-d") << QStringLiteral("journey-scores");
    QTest::addRow("bloem-basic: 4-d") << QStringLiteral("bloem-basic");
    QTest::addRow("multihead-wrapper: 4-d out") << QStringLiteral("multihead-wrapper");
}

void TestEmbeddingView::numbersWhenNarrow()
{
    QFETCH(QString, preset);
    QCustomPlot *plot = open(preset);
    QVERIFY(plot);
    const QStringList drawn = test::textsInView(plot);
    const SnapshotPtr s = m_w->session()->snapshot();
    for (const Mat<float> *m : {&s->queryInput(0), &s->seq(0).output}) {
        QVERIFY(m->cols() <= 16);
        for (Eigen::Index i = 0; i < m->rows(); ++i)
            for (Eigen::Index j = 0; j < m->cols(); ++j) {
                const QString v = QString::number(double((*m)(i, j)), 'f', 4);
                bool found = false;
                for (const QString &d : drawn)
                    found = found || test::sameNumber(v, d);
                QVERIFY2(found, qPrintable(QStringLiteral("cell (%1, %2) = %3 is not drawn").arg(i).arg(j).arg(v)));
            }
    }
}

void TestEmbeddingView::noNumbersWhenWide()
{
    QCustomPlot *plot = open(QStringLiteral("ship-odyssey")); // the bundled 50-d vectors
    QVERIFY(plot);
    const SnapshotPtr s = m_w->session()->snapshot();
    QCOMPARE(int(s->queryInput(0).cols()), 50);
    int numbers = 0;
    for (const QString &d : test::textsInView(plot))
        numbers += d.contains(QLatin1Char('.')) ? 1 : 0;
    // the bars' values (two per token) and the scales' ticks, not 2 × 11 × 50 cells
    QVERIFY2(numbers <= 2 * s->tq() + 30, qPrintable(QString::number(numbers)));
    QVERIFY(numbers >= 2 * s->tq()); // the bars' values are there
}

void TestEmbeddingView::barValuesBesideBars()
{
    QCustomPlot *plot = open(QStringLiteral("journey-scores"));
    QVERIFY(plot);
    const QStringList drawn = test::textsInView(plot);
    const EmbeddingView *v = m_w->embeddingView();
    QCOMPARE(v->changeNorms().size(), 6);
    for (int i = 0; i < 6; ++i) {
        QVERIFY2(drawn.contains(QString::number(v->changeNorms()[i], 'f', 2)), qPrintable(QString::number(i)));
        QVERIFY2(drawn.contains(QString::number(v->cosines()[i], 'f', 2)), qPrintable(QString::number(i)));
    }
}

void TestEmbeddingView::ticksAtWholeDimensions_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("dIn");
    QTest::addColumn<int>("dOut");
    QTest::addRow("3 and 2") << QStringLiteral("journey-v1") << 3 << 2;
    QTest::addRow("3 and 3") << QStringLiteral("journey-scores") << 3 << 3;
    QTest::addRow("50 and 50") << QStringLiteral("ship-odyssey") << 50 << 50;
}

void TestEmbeddingView::ticksAtWholeDimensions()
{
    QFETCH(QString, preset);
    QFETCH(int, dIn);
    QFETCH(int, dOut);
    QCustomPlot *plot = open(preset);
    QVERIFY(plot);
    for (const bool output : {false, true}) {
        QCPAxis *a = dimensionAxis(plot, output);
        QVERIFY(a);
        const int d = output ? dOut : dIn;
        QCOMPARE(a->range().lower, -0.5); // the cells, and nothing beside them
        QCOMPARE(a->range().upper, d - 0.5);
        const QVector<double> ticks = a->tickVector();
        QVERIFY(!ticks.isEmpty());
        if (d <= 3)
            QCOMPARE(ticks.size(), d); // every dimension
        for (double t : ticks) {
            QCOMPARE(t, std::round(t));
            QVERIFY(t >= 0 && t <= d - 1);
        }
        for (const QString &l : a->tickVectorLabels())
            QVERIFY2(!l.contains(QLatin1Char('.')), qPrintable(l));
    }
}

QTEST_MAIN(TestEmbeddingView)
#include "tst_embeddingview.moc"
