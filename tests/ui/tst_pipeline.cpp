// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline view in the live window (offscreen), on seed 001's journey table: the numbers each
// stage plots, the titles' formulas, the explanations of clicked cells, masking, and stepping.
#include "controls/controlpanel.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/pipelineview.h"
#include "style/plotstyle.h"
#include "teaching/seedtables.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QLabel>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTextBrowser>
#include <QtTest>

#include <cmath>
#include <functional>

using namespace attnviz;
using namespace attnviz::ui;
using Kind = PipelineView::StageKind;

class TestPipeline : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<MainWindow> m_w;

    PipelineView *view() const { return m_w->pipelineView(); }

    // Applies settings and waits until the views were updated with a snapshot satisfying `pred`.
    bool apply(const std::function<void(ComputeSettings &)> &change,
               const std::function<bool(const ComputeSnapshot &)> &pred = {})
    {
        ComputeSettings st = m_w->controls()->settings();
        change(st);
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        m_w->controls()->setSettings(st);
        const ComputeSettings want = m_w->controls()->settings(); // as the controls hold it
        return waitViews(spy, [&](const ComputeSnapshot &s) {
            return s.hasResult() && s.settings == want && (!pred || pred(s));
        });
    }

    bool waitViews(QSignalSpy &spy, const std::function<bool(const ComputeSnapshot &)> &pred, int ms = 20000)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < ms) {
            if (!spy.isEmpty() && !m_w->session()->busy()) {
                const SnapshotPtr s = m_w->session()->snapshot();
                if (s && pred(*s)) {
                    QCoreApplication::processEvents(); // queued replots
                    for (int i = 0; i < view()->stageCount(); ++i)
                        view()->stagePlot(i)->replot(); // layout known: cell centres are right
                    return true;
                }
                spy.clear();
            }
            spy.wait(50);
        }
        return false;
    }

    int stageOf(Kind k) const
    {
        const int i = view()->indexOf(k);
        if (i < 0)
            qFatal("no stage %d", int(k));
        return i;
    }

    // The value the stage's colour map holds for a cell (what is drawn, not the snapshot).
    double plotted(Kind k, int row, int col) const
    {
        auto *map = qobject_cast<QCPColorMap *>(view()->stagePlot(stageOf(k))->plottable(0));
        if (!map)
            qFatal("stage %d has no colour map", int(k));
        return map->data()->cell(col, row);
    }

    static bool near(double a, double b, double tol = 5e-5) { return std::abs(a - b) <= tol; }

private slots:
    void init()
    {
        m_w = std::make_unique<MainWindow>();
        m_w->resize(1400, 900);
        m_w->tabs()->setCurrentWidget(view());
        m_w->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_w.get()));
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        m_w->setEmbeddingTable(journeyTable(), QStringLiteral("journey"));
        m_w->setSentence(journeySentence());
        ComputeSettings st = m_w->controls()->settings();
        st.numHeads = 1;
        st.dHead = 0;
        st.projection = ProjectionMode::Identity;
        st.scaleRule = ScaleRule::None;
        st.normalization = Normalization::Softmax;
        st.mask = MaskChoice::None;
        st.dropout = 0;
        st.backend = QStringLiteral("cpu");
        m_w->controls()->setSettings(st);
        const ComputeSettings want = m_w->controls()->settings();
        QCOMPARE(want.scaleRule, ScaleRule::None);
        QVERIFY(waitViews(spy, [&](const ComputeSnapshot &s) { return s.hasResult() && s.tq() == 6 && s.settings == want; }));
    }
    void cleanup() { m_w.reset(); }

    void stagesPlotTheJourneyNumbers()
    {
        QCOMPARE(view()->stageCount(), 11); // X, Q, K, V, S, S', masked, A, C, concat, O
        // seed 001 prints the journey's raw scores row 1: [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
        const double raw[] = {0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865};
        const double w[] = {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581};
        for (int j = 0; j < 6; ++j) {
            QVERIFY2(near(plotted(Kind::RawScores, 1, j), raw[j]), qPrintable(QString::number(plotted(Kind::RawScores, 1, j))));
            QVERIFY(near(plotted(Kind::Scaled, 1, j), raw[j])); // no scaling
            QVERIFY2(near(plotted(Kind::Weights, 1, j), w[j]), qPrintable(QString::number(plotted(Kind::Weights, 1, j))));
        }
        const double ctx[] = {0.4419, 0.6515, 0.5683};
        for (int c = 0; c < 3; ++c) {
            QVERIFY(near(plotted(Kind::Context, 1, c), ctx[c]));
            QVERIFY(near(plotted(Kind::Concat, 1, c), ctx[c]));
            QVERIFY(near(plotted(Kind::Output, 1, c), ctx[c])); // no W_o
        }
        QVERIFY(near(plotted(Kind::Input, 1, 0), 0.55) && near(plotted(Kind::Q, 1, 1), 0.87));

        const QString rawTitle = view()->stageTitle(stageOf(Kind::RawScores));
        QVERIFY2(rawTitle.contains(QStringLiteral("S = Q·Kᵀ")) && rawTitle.contains(QStringLiteral("6 × 6")), qPrintable(rawTitle));
        QVERIFY(view()->stageTitle(stageOf(Kind::Scaled)).contains(QStringLiteral("no scaling")));
        QVERIFY(view()->stageTitle(stageOf(Kind::Weights)).contains(QStringLiteral("softmax")));
        QVERIFY(view()->stageTitle(stageOf(Kind::Input)).contains(QStringLiteral("6 × 3")));
        QVERIFY(view()->stageTitle(stageOf(Kind::Output)).contains(QStringLiteral("no W_o")));
        QVERIFY(view()->stageTitle(stageOf(Kind::Masked)).contains(QStringLiteral("no mask")));
        // the title drawn in the plot is the same text
        auto *title = qobject_cast<QCPTextElement *>(view()->stagePlot(stageOf(Kind::RawScores))->plotLayout()->element(0, 0));
        QVERIFY(title);
        QCOMPARE(title->text(), rawTitle);
        for (int i = 0; i < view()->stageCount(); ++i)
            QVERIFY2(!view()->stageCaption(i).isEmpty() && view()->stageMessage(i).isEmpty(), qPrintable(view()->stageName(i)));
    }

    void explainCellShowsTheArithmetic()
    {
        QVERIFY(view()->explainCell(stageOf(Kind::RawScores), 1, 0));
        QString e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("0.9544")) && e.contains(QStringLiteral("0.5500×0.4300"))
                     && e.contains(QStringLiteral("0.8700×0.1500")) && e.contains(QStringLiteral("0.6600×0.8900")),
                 qPrintable(e));
        QVERIFY(e.contains(QStringLiteral("journey")) && e.contains(QStringLiteral("your")));

        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("0.2379")) && e.contains(QStringLiteral("1.4950")) && e.contains(QStringLiteral("0.9544"))
                     && e.contains(QStringLiteral("m = 1.4950")),
                 qPrintable(e));
        // highlights: query row 1 in Q, key row 1 in K, the cell in every score stage, row 1 of the context
        QVERIFY(view()->highlights(stageOf(Kind::Q)).contains(QRect(QPoint(0, 1), QPoint(2, 1))));
        QVERIFY(view()->highlights(stageOf(Kind::K)).contains(QRect(QPoint(0, 1), QPoint(2, 1))));
        QVERIFY(view()->highlights(stageOf(Kind::RawScores)).contains(QRect(1, 1, 1, 1)));
        QVERIFY(view()->highlights(stageOf(Kind::Context)).contains(QRect(QPoint(0, 1), QPoint(2, 1))));
        QVERIFY(view()->highlights(stageOf(Kind::Output)).isEmpty());

        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 4));
        QVERIFY(view()->highlights(stageOf(Kind::K)).contains(QRect(QPoint(0, 4), QPoint(2, 4))));

        QVERIFY(view()->explainCell(stageOf(Kind::Context), 1, 0));
        e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("0.4419")) && e.contains(QStringLiteral("0.1385×0.4300")), qPrintable(e));

        QVERIFY(view()->explainCell(stageOf(Kind::Q), 1, 2));
        e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("Identity")) && e.contains(QStringLiteral("0.6600")), qPrintable(e));
        QVERIFY(view()->explainCell(stageOf(Kind::Output), 1, 0));
        QVERIFY(view()->explanation().contains(QStringLiteral("No W_o")));

        QVERIFY(!view()->explainCell(stageOf(Kind::RawScores), 6, 0)); // outside the stage
    }

    void mouseClickExplainsTheCell()
    {
        const int raw = stageOf(Kind::RawScores);
        QCustomPlot *plot = view()->stagePlot(raw);
        QVERIFY(plot->isVisible());
        int r = -1, c = -1;
        const QPoint p = view()->cellCenter(raw, 1, 0);
        QVERIFY(view()->cellAt(raw, p, r, c));
        QCOMPARE(r, 1);
        QCOMPARE(c, 0);
        QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, p);
        QVERIFY2(view()->explanation().contains(QStringLiteral("0.9544")), qPrintable(view()->explanation()));
        QVERIFY(view()->highlights(raw).contains(QRect(0, 1, 1, 1)));
    }

    void causalMaskIsHatchedAndExplained()
    {
        QVERIFY(apply([](ComputeSettings &s) {
            s.mask = MaskChoice::Causal;
            s.maskMethod = MaskMethod::NegInf;
        }));
        const int masked = stageOf(Kind::Masked);
        QVERIFY(view()->stageTitle(masked).contains(QStringLiteral("−∞")));
        // above the diagonal: masked (left out of the colour map, NaN); on and below: the scores
        QVERIFY(std::isnan(plotted(Kind::Masked, 1, 2)) && std::isnan(plotted(Kind::Masked, 0, 5)));
        QVERIFY(near(plotted(Kind::Masked, 1, 0), 0.9544) && near(plotted(Kind::Masked, 1, 1), 1.4950));
        QVERIFY(near(plotted(Kind::Weights, 1, 0), 0.3680) && near(plotted(Kind::Weights, 1, 1), 0.6320));
        QCOMPARE(plotted(Kind::Weights, 1, 2), 0.0);

        // hatched: the mask fill colour shows in masked cells only
        QCustomPlot *plot = view()->stagePlot(masked);
        const QImage img = plot->toPixmap().toImage();
        auto hasFill = [&](int row, int col) {
            const QPoint c = view()->cellCenter(masked, row, col);
            for (int dy = -8; dy <= 8; ++dy)
                for (int dx = -8; dx <= 8; ++dx)
                    if (QColor(img.pixel(c.x() + dx, c.y() + dy)) == maskFillColor())
                        return true;
            return false;
        };
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j)
                QVERIFY2(hasFill(i, j) == (j > i), qPrintable(QStringLiteral("cell %1,%2").arg(i).arg(j)));

        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 3));
        QString e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("Masked")) && e.contains(QStringLiteral("weight 0")) && e.contains(QStringLiteral("causal")),
                 qPrintable(e));
        QVERIFY(view()->explainCell(masked, 0, 4));
        QVERIFY(view()->explanation().contains(QStringLiteral("−∞")));
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        QVERIFY2(view()->explanation().contains(QStringLiteral("0.6320")), qPrintable(view()->explanation()));
    }

    void scaleRuleShowsInTheTitle()
    {
        QVERIFY(apply([](ComputeSettings &s) { s.scaleRule = ScaleRule::InvSqrtDHead; }));
        const QString t = view()->stageTitle(stageOf(Kind::Scaled));
        QVERIFY2(t.contains(QStringLiteral("/ √3")) && t.contains(QStringLiteral("0.5774")), qPrintable(t));
        QVERIFY(near(plotted(Kind::RawScores, 1, 1), 1.4950));
        QVERIFY(near(plotted(Kind::Scaled, 1, 1), 1.4950 / std::sqrt(3.0), 1e-4));
        QVERIFY(view()->explainCell(stageOf(Kind::Scaled), 1, 1));
        QVERIFY(view()->explanation().contains(QStringLiteral("1/√3 = 0.5774")));
    }

    void sumNormalizationExplainsTheQuotient()
    {
        QVERIFY(apply([](ComputeSettings &s) { s.normalization = Normalization::Sum; }));
        QVERIFY(view()->stageTitle(stageOf(Kind::Weights)).contains(QStringLiteral("row sum")));
        // row 1's raw scores sum to 6.5617: 1.4950 / 6.5617 = 0.2278
        QVERIFY(near(plotted(Kind::Weights, 1, 1), 1.4950 / 6.5617, 1e-4));
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        QVERIFY2(view()->explanation().contains(QStringLiteral("6.5617")), qPrintable(view()->explanation()));
    }

    // Seed 001's dropout: the kept weight is the pre-dropout one times 1/(1 - p), and says so.
    void dropoutExplainsTheScaling()
    {
        QVERIFY(apply([](ComputeSettings &s) {
            s.projection = ProjectionMode::Random;
            s.projectionSeed = 789;
            s.dHead = 2;
            s.outWidth = -1;
            s.scaleRule = ScaleRule::InvSqrtDHead;
            s.mask = MaskChoice::Causal;
            s.dropout = 0.5;
            s.dropoutSeed = 123;
        }));
        QVERIFY(near(plotted(Kind::Weights, 1, 1), 0.8966, 1e-4)); // 2 × 0.4483
        QVERIFY(near(plotted(Kind::Weights, 1, 0), 0.0, 1e-9));    // dropped
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        const QString e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("0.4483")) && e.contains(QStringLiteral("0.8966")), qPrintable(e));
        QVERIFY2(e.contains(QStringLiteral("ropout")), qPrintable(e));
    }

    // Multiply-renormalize gives the same weights as -inf, and the explanation shows the renormalizing.
    void multiplyRenormalizeExplains()
    {
        QVERIFY(apply([](ComputeSettings &s) {
            s.mask = MaskChoice::Causal;
            s.maskMethod = MaskMethod::MultiplyRenormalize;
        }));
        QVERIFY(near(plotted(Kind::Weights, 1, 0), 0.3680, 1e-4)); // seed 001: identity, unscaled, causal
        QVERIFY(near(plotted(Kind::Weights, 1, 1), 0.6320, 1e-4));
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        const QString e = view()->explanation();
        QVERIFY2(e.contains(QStringLiteral("0.6320")), qPrintable(e));
        QVERIFY2(e.contains(QStringLiteral("renormaliz"), Qt::CaseInsensitive), qPrintable(e));
    }

    // Cross-attention: 6 queries over a 3-word key sentence; the stages have those shapes.
    void crossAttentionShapes()
    {
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        m_w->setKeySentence(QStringLiteral("one step journey"));
        QVERIFY(waitViews(spy, [](const ComputeSnapshot &s) { return s.hasResult() && s.cross && s.tk() == 3; }));
        QVERIFY2(view()->stageTitle(stageOf(Kind::RawScores)).contains(QStringLiteral("6 × 3")),
                 qPrintable(view()->stageTitle(stageOf(Kind::RawScores))));
        // "journey" (query 1) · "step" (key 1) = 0.55·0.05 + 0.87·0.80 + 0.66·0.55 = 1.0865
        QVERIFY(near(plotted(Kind::RawScores, 1, 1), 1.0865, 1e-4));
        QVERIFY(view()->explainCell(stageOf(Kind::RawScores), 1, 1));
        QVERIFY2(view()->explanation().contains(QStringLiteral("1.0865")), qPrintable(view()->explanation()));
    }

    void stepping()
    {
        QSignalSpy spy(view(), &PipelineView::stageChanged);
        QCOMPARE(view()->currentStage(), -1);
        view()->setCurrentStage(2);
        QCOMPARE(view()->currentStage(), 2);
        QVERIFY(view()->stageRevealed(2) && !view()->stageRevealed(3));
        QVERIFY(!view()->stagePlot(3)->isVisible());
        // the next stage says how to reveal it right under its name: centred in the stage's plot
        // height, it lay below the screen's edge presenting ("9. Context" over a black space)
        QLabel *hidden = nullptr;
        for (QLabel *l : view()->stagePlot(3)->parentWidget()->findChildren<QLabel *>())
            if (l->isVisible() && l->text().startsWith(QStringLiteral("Step 4:")))
                hidden = l;
        QVERIFY(hidden);
        const QRect text = hidden->style()->itemTextRect(hidden->fontMetrics(), hidden->contentsRect(), int(hidden->alignment()), true, hidden->text());
        QVERIFY2(text.top() - hidden->contentsRect().top() <= 2 * hidden->fontMetrics().lineSpacing(),
                 qPrintable(QStringLiteral("the text %1 px down a %2 px placeholder").arg(text.top()).arg(hidden->height())));
        view()->nextStage();
        QCOMPARE(view()->currentStage(), 3);
        QCOMPARE(spy.count(), 2);
        QCOMPARE(spy.last().at(0).toInt(), 3);
        QVERIFY(view()->stageRevealed(3) && view()->stagePlot(3)->isVisible() && !view()->stageRevealed(4));

        view()->setFocus();
        QTest::keyClick(view(), Qt::Key_Right);
        QCOMPARE(view()->currentStage(), 4);
        QTest::keyClick(view(), Qt::Key_Left);
        QCOMPARE(view()->currentStage(), 3);
        QTest::keyClick(view(), Qt::Key_PageDown);
        QTest::keyClick(view(), Qt::Key_Space);
        QCOMPARE(view()->currentStage(), 5);
        QTest::keyClick(view(), Qt::Key_PageUp);
        QCOMPARE(view()->currentStage(), 4);
        auto *label = view()->findChild<QLabel *>(QStringLiteral("pipelineStepLabel"));
        QVERIFY(label && label->text().contains(QStringLiteral("Step 5 of 11")));

        // the last stage (Output, Wₒ) is a step of its own; the step after it shows every stage
        const int n = view()->stageCount();
        view()->setCurrentStage(n - 1);
        QCOMPARE(view()->currentStage(), n - 1);
        QVERIFY2(label->text().contains(QStringLiteral("Step %1 of %1: %2").arg(n).arg(view()->stageName(n - 1))),
                 qPrintable(label->text()));
        for (int i = 0; i < n; ++i)
            QVERIFY(view()->stageRevealed(i));
        view()->nextStage();
        QCOMPARE(view()->currentStage(), -1);
        QVERIFY(label->text().contains(QStringLiteral("All %1 stages").arg(n)));
        view()->previousStage();
        QCOMPARE(view()->currentStage(), n - 1);
        view()->previousStage();
        QCOMPARE(view()->currentStage(), n - 2);
        view()->showAllStages();
        QCOMPARE(view()->currentStage(), -1);
        QCOMPARE(spy.last().at(0).toInt(), -1);
    }

    // A step to a stage turns the explanation panel to that stage (it went on explaining the cell
    // clicked in an earlier one); a cell clicked there is explained as before.
    void stepExplainsTheStageSteppedTo()
    {
        view()->setCurrentStage(stageOf(Kind::RawScores));
        QVERIFY(view()->explainCell(stageOf(Kind::RawScores), 1, 0));
        const QString cell = view()->explanation();
        view()->nextStage();
        const int now = view()->currentStage();
        QCOMPARE(now, stageOf(Kind::RawScores) + 1);
        QVERIFY2(view()->explanation() != cell, qPrintable(view()->explanation()));
        QVERIFY2(view()->explanation().contains(view()->stageName(now)), qPrintable(view()->explanation()));
        QVERIFY(view()->explainCell(now, 1, 0));
        QVERIFY2(!view()->explanation().contains(QStringLiteral("Click a cell of this stage")), qPrintable(view()->explanation()));
    }

    void averageHeadSaysWhichHeadIsShown()
    {
        QVERIFY(apply([](ComputeSettings &s) { s.numHeads = 3; }, [](const ComputeSnapshot &s) { return s.attention(0).numHeads == 3; }));
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        m_w->session()->setSelectedHead(2);
        QCoreApplication::processEvents();
        QCOMPARE(view()->shownHead(), 2);
        // head 2 of 3 is column 2 of X (identity projections, d_head 1): its raw score (1,1) = 0.66²
        QVERIFY(near(plotted(Kind::RawScores, 1, 1), 0.66 * 0.66));
        QVERIFY(view()->stageTitle(stageOf(Kind::Concat)).contains(QStringLiteral("6 × 3·1")));
        m_w->session()->setHeadDisplay(HeadDisplay::Average);
        QCoreApplication::processEvents();
        QCOMPARE(view()->shownHead(), 0);
        auto *note = view()->findChild<QLabel *>(QStringLiteral("pipelineHeadNote"));
        QVERIFY(note && note->text().contains(QStringLiteral("head 0")));
        QVERIFY(near(plotted(Kind::RawScores, 1, 1), 0.55 * 0.55));
    }

    // The window as README shows it: causal, 1/√d_head, a weight clicked. Checks that the grab shows
    // drawn heatmaps (many colours) and writes it where ATTNVIZ_PIPELINE_SCREENSHOT says, if set.
    void screenshot()
    {
        QVERIFY(apply([](ComputeSettings &s) {
            s.mask = MaskChoice::Causal;
            s.scaleRule = ScaleRule::InvSqrtDHead;
        }));
        // room for the stages: the selected-query dock closed, the weights stage scrolled into view
        if (auto *dock = m_w->findChild<QDockWidget *>(QStringLiteral("rowDock")))
            dock->close();
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 3, 1));
        QCoreApplication::processEvents();
        auto *scroll = view()->findChild<QScrollArea *>();
        QVERIFY(scroll);
        scroll->ensureWidgetVisible(view()->stagePlot(stageOf(Kind::Weights)), 0, 0);
        QCoreApplication::processEvents();
        const QImage img = m_w->grab().toImage();
        QSet<QRgb> colours;
        for (int y = 0; y < img.height(); y += 3)
            for (int x = 0; x < img.width(); x += 3)
                colours.insert(img.pixel(x, y));
        QVERIFY2(colours.size() > 200, qPrintable(QString::number(colours.size())));
        const QString path = qEnvironmentVariable("ATTNVIZ_PIPELINE_SCREENSHOT");
        if (!path.isEmpty())
            QVERIFY(img.save(path, "PNG"));
    }

    void largeInputSaysWhatWasNotDerived()
    {
        QStringList words;
        for (int i = 0; i < 1100; ++i)
            words << QStringLiteral("your journey starts with one step").split(QLatin1Char(' ')).at(i % 6);
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        m_w->setSentence(words.join(QLatin1Char(' ')));
        QVERIFY(waitViews(spy, [](const ComputeSnapshot &s) { return s.hasResult() && s.tq() == 1100; }));
        const QString msg = view()->stageMessage(stageOf(Kind::RawScores));
        QVERIFY2(msg.contains(QStringLiteral("1100 × 1100")), qPrintable(msg));
        QVERIFY(view()->stageMessage(stageOf(Kind::Weights)).isEmpty());
        QVERIFY(view()->stageCaption(stageOf(Kind::Weights)).contains(QStringLiteral("5 × 5 blocks")));
        // a click on a pooled stage still explains the exact cell
        QVERIFY(view()->explainCell(stageOf(Kind::Weights), 1, 1));
        QVERIFY(view()->explanation().contains(QStringLiteral("1.4950")));
    }
};

QTEST_MAIN(TestPipeline)
#include "tst_pipeline.moc"
