// SPDX-License-Identifier: GPL-3.0-or-later
// The window on a 1280 × 720 projector with a model open: the current view keeps most of the height
// (the Selected query dock gives way, then folds to its title bar; by hand it unfolds and stays so),
// and larger text enlarges the view's own labels.
#include "live/livesession.h"
#include "mainwindow.h"
#include "style/appearance.h"
#include "drawntext.h"
#include "views/heatmapview.h"
#include "views/rowview.h"
#include "window/dockfold.h"
#include "window/framefit.h"

#include <qcustomplot.h>

#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QScreen>
#include <QToolButton>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

class TestSmallScreen : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();
    void mainViewKeepsTheHeight_data();
    void mainViewKeepsTheHeight();
    void foldedDockUnfoldsByHand();
    void foldedDockUnfoldsOnATallWindow();
    void frameFitsTheScreen_data();
    void frameFitsTheScreen();
    void largerTextStaysOnTheScreen();

private:
    bool waitForResult();
    void openAt(double textScale);
    QDockWidget *rowDock() const { return m_w->findChild<QDockWidget *>(QStringLiteral("rowDock")); }
    DockFold *rowFold() const { return m_w->findChild<DockFold *>(QStringLiteral("rowDockFold")); }
    MainWindow *m_w = nullptr;
};

void TestSmallScreen::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_smallscreen"));
}

void TestSmallScreen::init()
{
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->show();
    m_w->setGeometry(QRect(0, 0, 1280, 720));
    QVERIFY(QTest::qWaitForWindowExposed(m_w));
}

void TestSmallScreen::cleanup()
{
    AppearanceManager::instance()->setAppearance(Appearance());
    delete m_w;
    m_w = nullptr;
}

bool TestSmallScreen::waitForResult()
{
    for (int i = 0; i < 500; ++i) {
        const SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->generation == m_w->session()->generation())
            return s->hasResult();
        QTest::qWait(20);
    }
    return false;
}

void TestSmallScreen::openAt(double textScale)
{
    Appearance look = AppearanceManager::instance()->appearance();
    look.fontScale = textScale;
    AppearanceManager::instance()->setAppearance(look);
    QString error;
    QVERIFY2(m_w->openModel(QStringLiteral("bundled"), &error), qPrintable(error));
    QVERIFY(waitForResult());
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    // as the window opens at 720 px: no later resize that would fit the docks again
    QTest::qWait(400);
}

void TestSmallScreen::mainViewKeepsTheHeight_data()
{
    QTest::addColumn<double>("textScale");
    QTest::addColumn<int>("labelPx"); // the smallest a key label may be drawn: 10 px times the scale
    QTest::addRow("text 1") << 1.0 << 10;
    QTest::addRow("larger text x1") << 1.15 << 12; // View ▸ Larger text once
    QTest::addRow("larger text x2") << 1.15 * 1.15 << 13;
    QTest::addRow("larger text x3") << 1.15 * 1.15 * 1.15 << 15;
}

// The Weights heatmap at 1280 × 720 with the bundled model: at least 55 % of the window's height
// (the Selected query dock under it took a quarter of the window and left the heatmap 44 %, at
// larger text ×3 36 %), also with larger text, whose view labels grow with it (they stayed at 9 px
// while the heatmap shrank to 70, and at ×1.15 shrank to 11 px where the text scale makes 12).
void TestSmallScreen::mainViewKeepsTheHeight()
{
    QFETCH(double, textScale);
    QFETCH(int, labelPx);
    openAt(textScale);
    QCustomPlot *plot = m_w->heatmapView()->plot();
    const double share = double(plot->height()) / m_w->height();
    const int keyPx = QFontInfo(plot->xAxis->tickLabelFont()).pixelSize();
    qInfo("text x%.2f: window %d × %d px; heatmap %d px (%.1f %%); Selected query dock %d px%s; key labels %d px, "
          "query labels %d px, axis title %d px",
          textScale, m_w->width(), m_w->height(), plot->height(), 100 * share, rowDock()->height(),
          rowFold() && rowFold()->folded() ? " (folded)" : "", keyPx, QFontInfo(plot->yAxis->tickLabelFont()).pixelSize(),
          QFontInfo(plot->xAxis->labelFont()).pixelSize());
    if (qEnvironmentVariableIsSet("ATTNVIZ_SHOTS"))
        m_w->grab().save(QStringLiteral("%1/smallscreen-%2.png").arg(qEnvironmentVariable("ATTNVIZ_SHOTS")).arg(QTest::currentDataTag()).replace(QLatin1Char(' '), QLatin1Char('-')));
    // the map itself keeps room inside its plot: the title on one line, the key labels shortened
    // (with larger text they took all but 5 px of it)
    const double mapShare = double(plot->axisRect()->height()) / plot->height();
    QVERIFY2(mapShare >= 0.35, qPrintable(QStringLiteral("the map is %1 px of its plot's %2 px").arg(plot->axisRect()->height()).arg(plot->height())));
    // larger text enlarges the key labels: never shrunk below 10 px times the text scale, as drawn
    QVERIFY2(keyPx >= labelPx, qPrintable(QStringLiteral("key labels at %1 px, the scale makes %2").arg(keyPx).arg(labelPx)));
    const QStringList keys = m_w->heatmapView()->keyLabels();
    int drawnKeys = 0;
    for (const test::DrawnText &t : test::drawnTexts(plot))
        if (t.box.top() > plot->axisRect()->bottom() && t.box.top() < plot->axisRect()->bottom() + 12 && !t.text.isEmpty()) {
            ++drawnKeys;
            QVERIFY2(t.pixels >= labelPx, qPrintable(QStringLiteral("“%1” drawn at %2 px").arg(t.text).arg(t.pixels)));
        }
    QVERIFY2(drawnKeys > 0, qPrintable(keys.join(QLatin1Char(' '))));
    // the main view first, also with larger text: the chips' help on one line, no key/value
    // sentence for a model, and the dock under it gives way or folds
    QVERIFY2(share >= DockFold::kMainShare,
             qPrintable(QStringLiteral("the heatmap is %1 px of the window's %2 px").arg(plot->height()).arg(m_w->height())));
    // the dock's title stays one line, folded or not
    auto *title = rowDock()->findChild<QLabel *>(QStringLiteral("dockTitle"));
    QVERIFY(title && title->isVisible());
    QVERIFY2(title->height() < 2 * title->fontMetrics().lineSpacing(), qPrintable(QString::number(title->height())));
    if (rowFold()->folded()) {
        // folded to its title bar: nothing under it
        QVERIFY(!m_w->rowView()->isVisible());
        QVERIFY2(rowDock()->height() <= rowDock()->titleBarWidget()->height() + 4,
                 qPrintable(QStringLiteral("%1 px for a title of %2").arg(rowDock()->height()).arg(rowDock()->titleBarWidget()->height())));
        return;
    }
    // unfolded, the dock keeps its chart: a title line, the bars and their key labels
    QVERIFY(m_w->rowView()->isVisible());
    QVERIFY2(m_w->rowView()->plot()->axisRect()->height() >= 20,
             qPrintable(QStringLiteral("%1 px").arg(m_w->rowView()->plot()->axisRect()->height())));
    // no word cut: "masked" over a stub lies inside the chart's axis (the axis clips what is above),
    // and the heatmap's thinned query axis says what it shows without an ellipsis
    const QRectF axis = QRectF(m_w->rowView()->plot()->axisRect()->rect()).adjusted(-1, -1, 1, 1);
    for (const test::DrawnText &t : test::drawnTexts(m_w->rowView()->plot()))
        if (t.text == QLatin1String("masked"))
            QVERIFY2(axis.contains(t.box), qPrintable(QStringLiteral("“masked” at y %1..%2, the axis from %3").arg(t.box.top()).arg(t.box.bottom()).arg(axis.top())));
    const QString queryTitle = plot->yAxis->label();
    QVERIFY2(!queryTitle.contains(QChar(0x2026)), qPrintable(queryTitle));
}

// Folded at 1280 × 720 with larger text, the dock unfolds by its title's arrow with its chart, and
// stays so through a resize (the user's choice); folded again by hand it stays folded on a tall window.
void TestSmallScreen::foldedDockUnfoldsByHand()
{
    openAt(1.15 * 1.15 * 1.15);
    QVERIFY(rowFold());
    QVERIFY(rowFold()->folded());
    auto *arrow = rowDock()->findChild<QToolButton *>(QStringLiteral("foldButton"));
    QVERIFY(arrow && arrow->isVisible());
    QCOMPARE(arrow->arrowType(), Qt::RightArrow);
    QTest::mouseClick(arrow, Qt::LeftButton);
    QTest::qWait(200);
    QVERIFY(!rowFold()->folded());
    QCOMPARE(arrow->arrowType(), Qt::DownArrow);
    QVERIFY(m_w->rowView()->isVisible());
    QVERIFY2(m_w->rowView()->plot()->axisRect()->height() >= 20,
             qPrintable(QStringLiteral("%1 px").arg(m_w->rowView()->plot()->axisRect()->height())));
    m_w->resize(1280, 700);
    QTest::qWait(200);
    QVERIFY(!rowFold()->folded());
    QVERIFY(m_w->rowView()->isVisible());

    QTest::mouseClick(arrow, Qt::LeftButton);
    m_w->resize(1400, 1000);
    QTest::qWait(200);
    QVERIFY(rowFold()->folded());
    QVERIFY(!m_w->rowView()->isVisible());
}

// Folded by itself on a short window, the dock unfolds by itself once the window is tall enough for
// a readable chart beside the main view's share (the main view keeps that share while it is folded).
void TestSmallScreen::foldedDockUnfoldsOnATallWindow()
{
    openAt(1.15 * 1.15 * 1.15);
    QVERIFY(rowFold()->folded());
    QCustomPlot *plot = m_w->heatmapView()->plot();
    for (int h : {760, 900, 1050, 1200}) {
        m_w->resize(1280, h);
        QTest::qWait(200);
        const double share = double(plot->height()) / m_w->height();
        qInfo("%d px: heatmap %d px (%.1f %%), dock %d px%s", m_w->height(), plot->height(), 100 * share,
              rowDock()->height(), rowFold()->folded() ? " (folded)" : "");
        // folded or not, the main view keeps its share: unfolded, the dock takes at most what
        // leaves it that (a quarter of a 1050 px window would leave the heatmap 51 %)
        QVERIFY2(share >= DockFold::kMainShare, qPrintable(QStringLiteral("%1 of %2 px").arg(plot->height()).arg(m_w->height())));
    }
    QVERIFY(!rowFold()->folded());
    QVERIFY(m_w->rowView()->isVisible());
    QVERIFY2(m_w->rowView()->plot()->axisRect()->height() >= 20,
             qPrintable(QStringLiteral("%1 px").arg(m_w->rowView()->plot()->axisRect()->height())));
}

// View ▸ Larger text three times at 1280 × 720 with a model: the docks' minimum widths grew the window
// to 1296 px, 16 px past the screen (the right dock cut), and Ctrl+0 left it there. The window stays
// within the screen's free width at every step (a step that does not fit is refused), and the
// reset gives back the size it had.
void TestSmallScreen::largerTextStaysOnTheScreen()
{
    const QRect free = m_w->screen()->availableGeometry();
    if (free.width() != 1280)
        QSKIP("needs a screen 1280 px wide (xvfb-run -s \"-screen 0 1280x1024x24\")");
    openAt(1.0);
    m_w->setSentence(QStringLiteral("The lecturer wrote the answer on the board and the students copied it"));
    QVERIFY(waitForResult());
    QTest::qWait(400);
    const QSize start = m_w->size();
    QCOMPARE(start, QSize(1280, 720));
    QAction *larger = nullptr, *reset = nullptr; // as the keys find them: Ctrl+= and Ctrl+0
    for (QAction *action : m_w->findChildren<QAction *>()) {
        if (action->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+="))))
            larger = action;
        if (action->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+0"))))
            reset = action;
    }
    QVERIFY(larger && reset);
    for (int step = 1; step <= 3; ++step) {
        const double scale = AppearanceManager::instance()->appearance().fontScale;
        larger->trigger();
        QTest::qWait(1500); // the fonts, the layouts' minimum sizes and the window's growth settle
        qInfo("larger text x%d: text scale %.3f, window %d × %d px", step,
              AppearanceManager::instance()->appearance().fontScale, m_w->width(), m_w->height());
        QVERIFY2(m_w->frameGeometry().width() <= free.width(), qPrintable(QStringLiteral("%1 px").arg(m_w->width())));
        if (AppearanceManager::instance()->appearance().fontScale == scale) { // a refused step says why
            QVERIFY2(m_w->statusBar()->currentMessage().contains(QStringLiteral("does not fit on this screen")),
                     qPrintable(m_w->statusBar()->currentMessage()));
            // alone on the bar: the status line it stands in for is not drawn under it
            const QWidget *line = m_w->findChild<QWidget *>(QStringLiteral("statusLabel"));
            QVERIFY(line);
            QVERIFY(!line->isVisible());
        }
    }
    QVERIFY(AppearanceManager::instance()->appearance().fontScale > 1.0); // not every step refused
    reset->trigger();
    QTest::qWait(500);
    QCOMPARE(AppearanceManager::instance()->appearance().fontScale, 1.0);
    QCOMPARE(m_w->size(), start);
}

QTEST_MAIN(TestSmallScreen)
// Under openbox at 1280 x 720 a first start's client area had the screen's free size and its frame
// (a title bar of 38 px, borders) pushed the status bar off the screen.
void TestSmallScreen::frameFitsTheScreen_data()
{
    QTest::addColumn<QRect>("client");
    QTest::addColumn<QMargins>("frame");
    QTest::addColumn<QRect>("free");
    QTest::addColumn<QRect>("expected");
    QTest::addRow("openbox 720") << QRect(2, 40, 1280, 720) << QMargins(2, 40, 2, 2) << QRect(0, 0, 1280, 720)
                                 << QRect(2, 40, 1276, 678);
    QTest::addRow("no frame") << QRect(0, 0, 1280, 720) << QMargins() << QRect(0, 0, 1280, 720) << QRect(0, 0, 1280, 720);
    QTest::addRow("fits already") << QRect(100, 100, 1400, 900) << QMargins(1, 24, 1, 1) << QRect(0, 0, 1920, 1080)
                                  << QRect(100, 100, 1400, 900);
    QTest::addRow("moved up, same size") << QRect(100, 200, 1400, 900) << QMargins(1, 24, 1, 1) << QRect(0, 0, 1920, 1080)
                                         << QRect(100, 179, 1400, 900);
    QTest::addRow("panel at the top") << QRect(0, 30, 1280, 690) << QMargins(4, 30, 4, 4) << QRect(0, 30, 1280, 690)
                                      << QRect(4, 60, 1272, 656);
    QTest::addRow("off to the left") << QRect(-50, 40, 800, 600) << QMargins(2, 40, 2, 2) << QRect(0, 0, 1280, 720)
                                     << QRect(2, 40, 800, 600);
}

void TestSmallScreen::frameFitsTheScreen()
{
    QFETCH(QRect, client);
    QFETCH(QMargins, frame);
    QFETCH(QRect, free);
    QFETCH(QRect, expected);
    const QRect fit = FrameFit::fitted(client, frame, free);
    QCOMPARE(fit, expected);
    QVERIFY(free.contains(fit.marginsAdded(frame)));
}

#include "tst_smallscreen.moc"
