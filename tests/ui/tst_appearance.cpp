// SPDX-License-Identifier: GPL-3.0-or-later
// Themes, colour maps, text size and presentation mode: every plot follows the chosen
// appearance; presentation mode fills the screen with large high-contrast text, steps through the
// pipeline's stages from the keyboard and gives everything back on Esc.
#include "style/appearance.h"
#include "views/heatmapview.h"
#include "mainwindow.h"
#include "live/livesession.h"
#include "views/pipelineview.h"
#include "style/plotstyle.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QDockWidget>
#include <QSettings>
#include <QStandardPaths>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QCPColorScale *firstScale(QCustomPlot *plot)
{
    for (QCPLayoutElement *el : plot->plotLayout()->elements(true))
        if (auto *s = qobject_cast<QCPColorScale *>(el))
            return s;
    return nullptr;
}

bool waitForResult(MainWindow &w)
{
    for (int i = 0; i < 200; ++i) {
        if (w.session()->snapshot() && w.session()->snapshot()->hasResult() && !w.session()->busy())
            return true;
        QTest::qWait(20);
    }
    return false;
}

} // namespace

class TestAppearance : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_appearance"));
    }
    void cleanup() { AppearanceManager::instance()->setAppearance(Appearance()); }

    void idsRoundTrip()
    {
        for (Theme t : {Theme::System, Theme::Light, Theme::Dark, Theme::HighContrast}) {
            Theme back = Theme::System;
            QVERIFY(parseTheme(themeId(t), back));
            QCOMPARE(back, t);
        }
        SequentialMap m = SequentialMap::Viridis;
        QVERIFY(parseSequential(QStringLiteral("cividis"), m));
        QCOMPARE(m, SequentialMap::Cividis);
        QVERIFY(!parseSequential(QStringLiteral("jet"), m));
        DivergingMap d = DivergingMap::RedBlue;
        QVERIFY(parseDiverging(QStringLiteral("purple-orange"), d));
        QCOMPARE(d, DivergingMap::PurpleOrange);
    }

    // The maps are the published ones at their ends, and the chosen one is what the views get.
    void colourMapsFollowTheChoice()
    {
        MainWindow w;
        w.show();
        QVERIFY(waitForResult(w));
        QCPColorScale *scale = firstScale(w.heatmapView()->plot());
        QVERIFY(scale);
        QCPColorGradient g = scale->gradient();
        QCOMPARE(QColor::fromRgb(g.color(1.0, QCPRange(0, 1))), QColor(253, 231, 37)); // viridis yellow
        Appearance a;
        a.sequential = SequentialMap::Cividis;
        AppearanceManager::instance()->setAppearance(a);
        w.heatmapView()->plot()->replot();
        g = scale->gradient();
        QCOMPARE(QColor::fromRgb(g.color(1.0, QCPRange(0, 1))), QColor(254, 232, 56));
        QCOMPARE(QColor::fromRgb(g.color(0.0, QCPRange(0, 1))), QColor(0, 34, 78));
        a.diverging = DivergingMap::PurpleOrange;
        AppearanceManager::instance()->setAppearance(a);
        QCPColorGradient div = divergingGradient();
        QCOMPARE(QColor::fromRgb(div.color(0.0, QCPRange(0, 1))), QColor(45, 0, 75));
        QVERIFY(QColor::fromRgb(div.color(0.5, QCPRange(0, 1))).lightness() > 240); // white at 0 (256 levels)
    }

    // Dark: plot backgrounds and axis text take the palette's colours, in the pixels too.
    void darkThemeRestylesPlots()
    {
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QVERIFY(waitForResult(w));
        Appearance a;
        a.theme = Theme::Dark;
        AppearanceManager::instance()->setAppearance(a);
        QVERIFY(AppearanceManager::instance()->isDark());
        QCustomPlot *plot = w.heatmapView()->plot();
        plot->replot();
        const QColor text = QApplication::palette().color(QPalette::Text);
        QCOMPARE(plot->xAxis->tickLabelColor(), text);
        QVERIFY(text.lightness() > 200);
        const QImage img = plot->toPixmap(400, 300).toImage();
        QVERIFY(QColor(img.pixel(2, 2)).lightness() < 60); // the background, top-left
        // back to light
        a.theme = Theme::Light;
        AppearanceManager::instance()->setAppearance(a);
        plot->replot();
        QVERIFY(!AppearanceManager::instance()->isDark());
        QVERIFY(QColor(plot->toPixmap(400, 300).toImage().pixel(2, 2)).lightness() > 200);
    }

    void appearanceIsSavedAndRestored()
    {
        Appearance a;
        a.theme = Theme::HighContrast;
        a.sequential = SequentialMap::Magma;
        a.fontScale = 1.4;
        AppearanceManager::instance()->setAppearance(a);
        AppearanceManager::instance()->save();
        AppearanceManager::instance()->setAppearance(Appearance());
        AppearanceManager::instance()->restore();
        QVERIFY(AppearanceManager::instance()->appearance() == a);
        QSettings().remove(QStringLiteral("appearance"));
    }

    void presentationMode()
    {
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QVERIFY(w.applyPreset(QStringLiteral("journey-scores"))); // opens the pipeline
        QVERIFY(waitForResult(w));
        QCOMPARE(w.currentViewId(), QStringLiteral("pipeline"));
        const double baseSize = QApplication::font().pointSizeF();
        auto *controls = w.findChild<QDockWidget *>(QStringLiteral("controlsDock"));
        auto *lesson = w.findChild<QDockWidget *>(QStringLiteral("lessonDock"));
        QVERIFY(controls && lesson && controls->isVisible());
        // (a lesson turns the fixed 0–1 weight scale on; Esc gives back this appearance)
        const Appearance before = AppearanceManager::instance()->appearance();
        QVERIFY(before.fixedWeights);

        w.setPresentationMode(true);
        QVERIFY(w.presentationMode());
        QVERIFY(w.windowState() & Qt::WindowFullScreen);
        QVERIFY(!controls->isVisible());
        QVERIFY(lesson->isVisible());
        QCOMPARE(AppearanceManager::instance()->appearance().theme, Theme::HighContrast);
        QVERIFY(QApplication::font().pointSizeF() >= baseSize * 1.59);
        // presenting keeps the stage the lesson opened on (lessons open on what they talk
        // about); from X the keys step through the stages
        PipelineView *pipe = w.pipelineView();
        QCOMPARE(pipe->stageKind(pipe->currentStage()), PipelineView::StageKind::Weights); // the preset's stage
        pipe->setCurrentStage(0);
        QCOMPARE(pipe->currentStage(), 0);
        w.tabs()->setFocus();
        QTest::keyClick(&w, Qt::Key_Right);
        QCOMPARE(pipe->currentStage(), 1);
        QTest::keyClick(&w, Qt::Key_Space);
        QCOMPARE(pipe->currentStage(), 2);
        QTest::keyClick(&w, Qt::Key_Left);
        QCOMPARE(pipe->currentStage(), 1);
        // past the last stage: every stage shown, then the next view
        for (int i = 0; i < pipe->stageCount() && pipe->currentStage() >= 0; ++i)
            w.presentationStep(1);
        QCOMPARE(pipe->currentStage(), -1);
        w.presentationStep(1);
        QVERIFY(w.currentViewId() != QStringLiteral("pipeline"));

        QTest::keyClick(&w, Qt::Key_Escape);
        QVERIFY(!w.presentationMode());
        QVERIFY(!(w.windowState() & Qt::WindowFullScreen));
        QVERIFY(AppearanceManager::instance()->appearance() == before);
        QCOMPARE(QApplication::font().pointSizeF(), baseSize);
        QTRY_VERIFY(controls->isVisible());
    }

    // Outside presentation mode the arrow keys belong to the widgets, not to stepping.
    void stepKeysOnlyWhilePresenting()
    {
        MainWindow w;
        w.show();
        QVERIFY(w.applyPreset(QStringLiteral("journey-scores")));
        QVERIFY(waitForResult(w));
        const int tab = w.tabs()->currentIndex();
        w.tabs()->setFocus();
        QTest::keyClick(&w, Qt::Key_PageDown);
        QCOMPARE(w.tabs()->currentIndex(), tab);
        QVERIFY(!w.presentationMode());
    }
};

QTEST_MAIN(TestAppearance)
#include "tst_appearance.moc"
