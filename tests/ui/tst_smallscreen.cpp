// SPDX-License-Identifier: GPL-3.0-or-later
// The window on a 1280 × 720 projector with a model open: the current view keeps most of the height
// (the docks give theirs up first).
#include "live/livesession.h"
#include "mainwindow.h"
#include "style/appearance.h"
#include "drawntext.h"
#include "views/heatmapview.h"
#include "views/rowview.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QSplitter>
#include <QStandardPaths>
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

private:
    bool waitForResult();
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

void TestSmallScreen::mainViewKeepsTheHeight_data()
{
    QTest::addColumn<double>("textScale");
    QTest::addRow("text 1") << 1.0;
    QTest::addRow("larger text x3") << 1.15 * 1.15 * 1.15; // View ▸ Larger text three times
}

// The Weights heatmap at 1280 × 720 with the bundled model: at least 55 % of the central area's
// height (the Selected query dock under it took 243 px and left the heatmap 210 of 424), also with
// larger text, whose view labels grow with it (they stayed at 9 px while the heatmap shrank to 70).
void TestSmallScreen::mainViewKeepsTheHeight()
{
    QFETCH(double, textScale);
    Appearance look = AppearanceManager::instance()->appearance();
    look.fontScale = textScale;
    AppearanceManager::instance()->setAppearance(look);
    QString error;
    QVERIFY2(m_w->openModel(QStringLiteral("bundled"), &error), qPrintable(error));
    QVERIFY(waitForResult());
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    // as the window opens at 720 px: no later resize that would fit the docks again
    QTest::qWait(400);
    QCustomPlot *plot = m_w->heatmapView()->plot();
    QWidget *central = m_w->centralWidget();
    const double share = double(plot->height()) / central->height();
    qInfo("text x%.2f: window %d px wide; heatmap %d of %d px; tick labels %d px, axis title %d px", textScale, m_w->width(), plot->height(), central->height(),
          QFontInfo(plot->xAxis->tickLabelFont()).pixelSize(), QFontInfo(plot->xAxis->labelFont()).pixelSize());
    // the map itself keeps room inside its plot: the title on one line, the key labels shortened
    // (with larger text they took all but 5 px of it)
    const double mapShare = double(plot->axisRect()->height()) / plot->height();
    QVERIFY2(mapShare >= 0.35, qPrintable(QStringLiteral("the map is %1 px of its plot's %2 px").arg(plot->axisRect()->height()).arg(plot->height())));
    if (qEnvironmentVariableIsSet("ATTNVIZ_SHOTS"))
        m_w->grab().save(QStringLiteral("%1/smallscreen-%2.png").arg(qEnvironmentVariable("ATTNVIZ_SHOTS")).arg(textScale > 1 ? "larger" : "normal"));
    // with larger text too: the chips' help on one line, no key/value sentence for a model (it took
    // the heatmap to 49 %)
    QVERIFY2(share >= 0.55, qPrintable(QStringLiteral("the heatmap is %1 px of the central %2 px").arg(plot->height()).arg(central->height())));
    // the dock keeps its chart: a title line, the bars and their key labels
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

QTEST_MAIN(TestSmallScreen)
#include "tst_smallscreen.moc"
