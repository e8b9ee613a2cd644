// SPDX-License-Identifier: GPL-3.0-or-later
// Classroom-grade views: each defect a teacher found, read back from what the views
// draw — bars that stay in their panels, every head count giving a view, ticks that never touch a
// cell's number, token labels kept while they fit (and a thinned axis that says so), nothing
// clipped, a pipeline that fills its width and scrolls under the wheel, exports that carry their
// configuration and look the same in PNG, PDF and a real SVG renderer.
#include "testpaths.h"
#include "style/appearance.h"
#include "views/compareview.h"
#include "teaching/comparison.h"
#include "controls/controlpanel.h"
#include "views/embeddingview.h"
#include "files/figureexport.h"
#include "views/headgridview.h"
#include "views/heatmapview.h"
#include "views/linesview.h"
#include "style/legibility.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/pipelineview.h"
#include "style/plotstyle.h"
#include "teaching/presets.h"
#include "views/rowview.h"
#include "window/dockfold.h"
#include "controls/sentenceedit.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QDockWidget>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

const QString kAnimal = QStringLiteral("The animal didn't cross the street because it was too tired");

// The token axes of a plot: those labelled through a text ticker.
QList<QCPAxis *> textAxes(QCustomPlot *plot)
{
    QList<QCPAxis *> out;
    for (QCPAxisRect *r : plot->axisRects())
        for (QCPAxis *a : r->axes())
            if (a->visible() && a->tickLabels() && qSharedPointerDynamicCast<QCPAxisTickerText>(a->ticker()))
                out << a;
    return out;
}

QStringList tickTexts(QCPAxis *a)
{
    auto t = qSharedPointerDynamicCast<QCPAxisTickerText>(a->ticker());
    return t ? t->ticks().values() : QStringList();
}

} // namespace

class TestClassroom : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();

    void embeddingBarsStayInTheirPanels_data();
    void embeddingBarsStayInTheirPanels();
    void everyHeadCountGivesAView_data();
    void everyHeadCountGivesAView();
    void readmeCommandsRun_data();
    void readmeCommandsRun();
    void ticksNeverTouchCellNumbers();
    void dimensionLabelsPrintedOnce();
    void tokenLabelsKeptWhileTheyFit();
    void thinnedAxisSaysSo();
    void selectedRowKeepsItsLabel();
    void nothingClipped();
    void largerTextKeepsLabelsApart();
    void smallerTextUndoesTheTightChart();
    void smallerTextGivesTheControlsTheirWidthBack();
    void notesFollowTheTextSize();
    void pipelineFillsItsWidthAndScrolls();
    void stageExportCarriesConfiguration();
    void pdfTextMatchesPng();
    void svgInARealRenderer();
    void presentationReadsFromTheBack_data();
    void presentationReadsFromTheBack();
    void everyThemeMeetsWcagAA_data();
    void everyThemeMeetsWcagAA();
    void presentationStepsAtOnceAndEscRestores();
    void presentationFitsTheScreen_data();
    void presentationFitsTheScreen();
    void presentationScreenshotAtAScreenSize_data();
    void presentationScreenshotAtAScreenSize();
    void hiddenStagesKeepTheThemeBackground();
    void gridPanelsHaveEqualCells_data();
    void gridPanelsHaveEqualCells();
    void gridFitsEveryHeadCount_data();
    void gridFitsEveryHeadCount();

private:
    bool waitForResult();
    bool applyPreset(const QString &id);
    // Shows a view and lets its labels settle (each label change costs one more layout pass).
    void settle(QCustomPlot *plot);
    // Seed 001's causal preset on the Weights tab, settled (for the export checks); null if it fails.
    QCustomPlot *causalWeights();
    // Twelve times kAnimal (132 tokens) on the Weights tab, settled: its axes are thinned; null if it fails.
    QCustomPlot *longWeights();
    MainWindow *m_w = nullptr;
};

void TestClassroom::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_classroom"));
}

void TestClassroom::init()
{
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->resize(1600, 1000);
    m_w->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_w));
}

void TestClassroom::cleanup()
{
    AppearanceManager::instance()->setAppearance(Appearance());
    delete m_w;
    m_w = nullptr;
}

bool TestClassroom::waitForResult()
{
    for (int i = 0; i < 300; ++i) {
        const SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->generation == m_w->session()->generation())
            return s->hasResult();
        QTest::qWait(20);
    }
    return false;
}

bool TestClassroom::applyPreset(const QString &id) { return m_w->applyPreset(id) && waitForResult(); }

void TestClassroom::settle(QCustomPlot *plot)
{
    for (int i = 0; i < 6; ++i) {
        QCoreApplication::processEvents();
        plot->replot(QCustomPlot::rpImmediateRefresh);
    }
    QTest::qWait(30);
    plot->replot(QCustomPlot::rpImmediateRefresh);
}

QCustomPlot *TestClassroom::causalWeights()
{
    if (!applyPreset(QStringLiteral("causal-neg-inf")) || !m_w->showView(QStringLiteral("weights")))
        return nullptr;
    settle(m_w->heatmapView()->plot());
    return m_w->heatmapView()->plot();
}

QCustomPlot *TestClassroom::longWeights()
{
    QString lng;
    for (int i = 0; i < 12; ++i)
        lng += kAnimal + QLatin1Char(' ');
    m_w->setSentence(lng);
    if (!waitForResult() || !m_w->showView(QStringLiteral("weights")))
        return nullptr;
    settle(m_w->heatmapView()->plot());
    return m_w->heatmapView()->plot();
}

// Defect 1: with an output width other than d_model there is no |y − x| nor cosine; the bars
// were NaN and QCPBars drew them across both heatmaps.
void TestClassroom::embeddingBarsStayInTheirPanels_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<bool>("comparable");
    for (const char *id : {"journey-v1", "multihead-wrapper", "causal-neg-inf", "causal-renormalize", "dropout"})
        QTest::addRow("%s", id) << QString::fromLatin1(id) << false;
    QTest::addRow("journey-scores") << QStringLiteral("journey-scores") << true;
}

void TestClassroom::embeddingBarsStayInTheirPanels()
{
    QFETCH(QString, preset);
    QFETCH(bool, comparable);
    QVERIFY(applyPreset(preset));
    QVERIFY(m_w->showView(QStringLiteral("embeddings")));
    QCustomPlot *plot = m_w->embeddingView()->plot();
    settle(plot);
    int bars = 0;
    for (int i = 0; i < plot->plottableCount(); ++i) {
        auto *b = qobject_cast<QCPBars *>(plot->plottable(i));
        if (!b)
            continue;
        const QRect rect = b->keyAxis()->axisRect()->rect();
        for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) {
            QVERIFY2(std::isfinite(it->value), qPrintable(preset));
            // the bar's end lies inside its own panel
            const double x = b->valueAxis()->coordToPixel(it->value);
            QVERIFY2(x >= rect.left() - 1 && x <= rect.right() + 1, qPrintable(QStringLiteral("%1: %2").arg(preset).arg(x)));
            ++bars;
        }
    }
    const int t = m_w->session()->snapshot()->tq();
    if (comparable) {
        QVERIFY(bars >= 2 * t); // norms and cosines, plus the selected query's
    } else {
        QCOMPARE(bars, 0);
        bool said = false;
        for (QCPAxisRect *r : plot->axisRects())
            said = said || r->axis(QCPAxis::atBottom)->label().contains(QStringLiteral("not defined"));
        QVERIFY2(said, "the panels say why there are no bars");
    }
}

// Defect 2: any head count from 1 to 16 gives a view with the bundled 50-d vectors, with identity
// projections (unequal slices) and random ones (d_head = ⌈50 / heads⌉).
void TestClassroom::everyHeadCountGivesAView_data()
{
    QTest::addColumn<int>("heads");
    QTest::addColumn<bool>("identity");
    for (int h = 1; h <= 16; ++h) {
        QTest::addRow("identity %d", h) << h << true;
        QTest::addRow("random %d", h) << h << false;
    }
}

void TestClassroom::everyHeadCountGivesAView()
{
    QFETCH(int, heads);
    QFETCH(bool, identity);
    m_w->setSentence(kAnimal);
    ComputeSettings s = m_w->controls()->settings();
    s.numHeads = heads;
    s.dHead = 0;
    s.projection = identity ? ProjectionMode::Identity : ProjectionMode::Random;
    m_w->controls()->setSettings(s);
    QVERIFY(waitForResult());
    const SnapshotPtr snap = m_w->session()->snapshot();
    const int dModel = int(snap->trace->embeddings.cols());
    QCOMPARE(dModel, 50);
    QCOMPARE(snap->attention(0).numHeads, heads);
    QCOMPARE(snap->attention(0).dHead, (dModel + heads - 1) / heads);
    QCOMPARE(int(snap->seq(0).output.cols()), dModel);
    QVERIFY(m_w->heatmapView()->message().isEmpty());
    if (identity) {
        // the last head attends with its own slice of X: softmax(X_s X_sᵀ / √d_head)
        const int w = dModel / heads, start = dModel - w, dh = snap->attention(0).dHead;
        const Mat<float> x = snap->trace->embeddings.middleCols(start, w);
        Eigen::MatrixXd sc = (x.cast<double>() * x.cast<double>().transpose()) / std::sqrt(double(dh));
        const Eigen::VectorXd row = sc.row(3).transpose();
        const Eigen::VectorXd e = (row.array() - row.maxCoeff()).exp();
        const Eigen::VectorXd p = e / e.sum();
        for (int j = 0; j < int(p.size()); ++j)
            QVERIFY(std::abs(double(snap->weights(0, heads - 1)(3, j)) - p(j)) < 1e-5);
        // and W_o puts the slices back: with one key per query the output would be X itself;
        // here every output column comes from its own input column's head
        QVERIFY(snap->seq(0).output.allFinite());
    }
    m_w->showView(QStringLiteral("grid"));
    // every head and the average: on one page, or a page at a time where they do not all fit at
    // HeadGridView::kMinPanelPx (tst_zoom::allHeadsReadableOnLongTexts)
    const HeadGridView *g = m_w->headGridView();
    QVERIFY2(g->pageCount() == 1 ? g->panelCount() == heads + 1
                                 : g->panelCount() * g->pageCount() >= heads + 1 && g->panelCount() * (g->pageCount() - 1) < heads + 1,
             qPrintable(QStringLiteral("%1 panels a page, %2 pages").arg(g->panelCount()).arg(g->pageCount())));
}

// Every command the README shows runs (README "Command line" and the tour's export line).
void TestClassroom::readmeCommandsRun_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("readme"); // the line as the README writes it
    QTest::addColumn<QString>("out");
    const QString s = QStringLiteral("I must go back to my ship and to my crew");
    for (const char *view : {"weights", "grid", "embeddings", "row", "lines"})
        QTest::addRow("export %s", view)
            << QStringList{"export", "--sentence", s, "--view", QString::fromLatin1(view), "--heads", "4", "--mask",
                           "causal", "--out", "OUT/fig.png"}
            << QStringLiteral("attnviz export --sentence \"...\" --view weights|grid|embeddings|row|lines --heads 4 "
                              "--mask causal --out fig.png")
            << QStringLiteral("fig.png");
    QTest::addRow("compute --check") << QStringList{"compute", ATTNVIZ_SOURCE_PATH("/resources/examples/journey_causal.json"),
                                                   "--check"}
                                     << QStringLiteral("attnviz compute /usr/share/attnviz/examples/journey_causal.json --check")
                                     << QString();
    QTest::addRow("compute -o") << QStringList{"compute", ATTNVIZ_SOURCE_PATH("/resources/examples/journey_causal.json"), "-o",
                                              "OUT/result.json"}
                                << QStringLiteral("attnviz compute CASE.json [-o RESULT.json]") << QStringLiteral("result.json");
    QTest::addRow("preset list") << QStringList{"--preset", "list"} << QStringLiteral("`attnviz --preset list`") << QString();
    QTest::addRow("version") << QStringList{"--version"} << QStringLiteral("attnviz --version") << QString();
}

void TestClassroom::readmeCommandsRun()
{
    QFETCH(QStringList, args);
    QFETCH(QString, readme);
    QFETCH(QString, out);
    QFile f(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/README.md")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    QVERIFY2(text.contains(readme), qPrintable(QStringLiteral("the README no longer shows: ") + readme));
    QTemporaryDir dir;
    for (QString &a : args)
        a.replace(QStringLiteral("OUT/"), dir.path() + QLatin1Char('/'));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    if (!out.isEmpty())
        QVERIFY(QFileInfo(dir.filePath(out)).size() > 0);
}

// Defect 3: a tick pointing into the plot touched the first column's number ("-0.95").
void TestClassroom::ticksNeverTouchCellNumbers()
{
    QVERIFY(applyPreset(QStringLiteral("journey-scores")));
    QList<QCustomPlot *> plots;
    m_w->showView(QStringLiteral("weights"));
    settle(m_w->heatmapView()->plot());
    plots << m_w->heatmapView()->plot();
    m_w->showView(QStringLiteral("pipeline"));
    for (int i = 0; i < m_w->pipelineView()->stageCount(); ++i)
        if (QCustomPlot *p = m_w->pipelineView()->stagePlot(i); p && p->isVisible()) {
            settle(p);
            plots << p;
        }
    ComparisonSpec spec;
    QVERIFY(findSeedComparison(QStringLiteral("scaled-unscaled"), spec));
    m_w->startComparison(spec);
    QTest::qWait(300);
    settle(m_w->compareView()->pairPlot());
    plots << m_w->compareView()->pairPlot();
    int axes = 0;
    for (QCustomPlot *p : plots)
        for (QCPAxis *a : textAxes(p)) {
            QCOMPARE(a->tickLengthIn(), 0);
            QCOMPARE(a->subTickLengthIn(), 0);
            ++axes;
        }
    QVERIFY(axes >= 2 * 8);
}

// Defect 4: a thinned index axis printed "0 0 10 10 20 20".
void TestClassroom::dimensionLabelsPrintedOnce()
{
    m_w->setSentence(kAnimal);
    QVERIFY(waitForResult());
    m_w->showView(QStringLiteral("pipeline"));
    QCustomPlot *x = m_w->pipelineView()->stagePlot(0); // X: 11 × 50
    QVERIFY(x);
    settle(x);
    const QStringList labels = tickTexts(x->xAxis);
    QVERIFY(!labels.isEmpty());
    static const QRegularExpression twice(QStringLiteral("^(\\d+) \\1$"));
    for (const QString &l : labels) {
        QVERIFY2(!twice.match(l).hasMatch(), qPrintable(l));
        bool ok = false;
        l.toInt(&ok);
        QVERIFY2(ok, qPrintable(l));
    }
}

// Defect 5: every token labelled while the labels fit at a readable size: All heads (queries and
// keys), the pipeline's weights and Compare's side A, on a 1600 × 1000 window.
void TestClassroom::tokenLabelsKeptWhileTheyFit()
{
    m_w->setSentence(kAnimal);
    ComputeSettings s = m_w->controls()->settings();
    s.numHeads = 4;
    m_w->controls()->setSettings(s);
    QVERIFY(waitForResult());
    const int t = m_w->session()->snapshot()->tq();
    QCOMPARE(t, 11);
    auto everyToken = [&](QCPAxis *a, const QString &where) {
        const QStringList l = tickTexts(a);
        QVERIFY2(l.size() == t, qPrintable(QStringLiteral("%1: %2 labels").arg(where).arg(l.size())));
        QVERIFY(l.contains(QStringLiteral("animal")) && l.contains(QStringLiteral("it")));
        QCOMPARE(tokenAxisLabelStep(a), 1);
        QVERIFY(QFontInfo(a->tickLabelFont()).pixelSize() >= minimumLabelPixels());
    };
    m_w->showView(QStringLiteral("grid"));
    QCustomPlot *grid = m_w->headGridView()->plot();
    settle(grid);
    int left = 0, bottom = 0;
    for (QCPAxisRect *r : grid->axisRects()) {
        if (r->axis(QCPAxis::atLeft)->tickLabels()) {
            everyToken(r->axis(QCPAxis::atLeft), QStringLiteral("grid queries"));
            ++left;
        }
        if (r->axis(QCPAxis::atBottom)->tickLabels()) {
            everyToken(r->axis(QCPAxis::atBottom), QStringLiteral("grid keys"));
            ++bottom;
        }
    }
    QVERIFY(left >= 2);
    QVERIFY(bottom >= 3); // the bottom panel of every column
    // the title fits the plot: no line wider than the plot
    for (QCPLayoutElement *el : grid->plotLayout()->elements(true))
        if (auto *te = qobject_cast<QCPTextElement *>(el)) {
            const QFontMetrics fm(te->font());
            for (const QString &line : te->text().split(QLatin1Char('\n')))
                QVERIFY2(fm.horizontalAdvance(line) <= grid->width(), qPrintable(line));
        }

    m_w->showView(QStringLiteral("pipeline"));
    for (int i = 0; i < m_w->pipelineView()->stageCount(); ++i)
        if (m_w->pipelineView()->stageName(i).contains(QStringLiteral("eights"))) {
            QCustomPlot *p = m_w->pipelineView()->stagePlot(i);
            settle(p);
            everyToken(p->yAxis, QStringLiteral("pipeline queries"));
            everyToken(p->xAxis, QStringLiteral("pipeline keys"));
        }

    ComparisonSpec spec;
    QVERIFY(findSeedComparison(QStringLiteral("heads-1-4"), spec));
    m_w->startComparison(spec);
    QTest::qWait(300);
    QCustomPlot *pair = m_w->compareView()->pairPlot();
    settle(pair);
    for (QCPAxis *a : textAxes(pair))
        QCOMPARE(tokenAxisLabelStep(a), 1);
}

// Defect 5: when the tokens cannot be labelled at a readable size, the axis says so and how to zoom.
void TestClassroom::thinnedAxisSaysSo()
{
    QCustomPlot *p = longWeights();
    QVERIFY(p);
    QVERIFY(tokenAxisLabelStep(p->yAxis) > 1);
    QVERIFY2(p->yAxis->label().contains(QStringLiteral("drag a rectangle to zoom")), qPrintable(p->yAxis->label()));
    QVERIFY(p->yAxis->label().startsWith(QStringLiteral("query")));
    QVERIFY(QFontInfo(p->yAxis->tickLabelFont()).pixelSize() >= minimumLabelPixels());
    // zoomed in far enough, every token in view is labelled again and the note goes
    p->yAxis->setRange(-0.5, 9.5);
    p->xAxis->setRange(-0.5, 9.5);
    settle(p);
    QCOMPARE(tokenAxisLabelStep(p->yAxis), 1);
    QCOMPARE(p->yAxis->label(), QStringLiteral("query"));
}

// A thinned query axis counts its labels from the selected row, so that row's label is never the
// one dropped (it was, e.g. row 23 of the tiny-induction lesson at 1280 x 720).
void TestClassroom::selectedRowKeepsItsLabel()
{
    QCustomPlot *p = longWeights();
    QVERIFY(p);
    const int step = tokenAxisLabelStep(p->yAxis);
    QVERIFY(step > 1);
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(p->yAxis->ticker());
    QVERIFY(ticker);
    const int query = 3 * step + 1; // not on the labels counted from 0
    QVERIFY(query < p->yAxis->range().upper);
    QVERIFY(!ticker->ticks().contains(query));
    m_w->heatmapView()->setSelection(0, 0, query);
    settle(p);
    QCOMPARE(tokenAxisLabelStep(p->yAxis), step);
    QVERIFY2(ticker->ticks().contains(query), qPrintable(QStringList(ticker->ticks().values()).join(QLatin1Char('|'))));
    QVERIFY(ticker->ticks().contains(query + step));
    QVERIFY(!ticker->ticks().contains(query + 1));
}

// Defect 6: the tallest bar's value label was cut at the top of the selected-query chart, and long
// pipeline titles were cut at both sides.
void TestClassroom::nothingClipped()
{
    QVERIFY(applyPreset(QStringLiteral("journey-scores")));
    m_w->showView(QStringLiteral("weights")); // the row dock shows beside it
    QCustomPlot *row = m_w->rowView()->plot();
    settle(row);
    const QRect rect = row->axisRect()->rect();
    int labels = 0;
    for (int i = 0; i < row->itemCount(); ++i) {
        auto *t = qobject_cast<QCPItemText *>(row->item(i));
        if (!t || !t->visible() || t->text().isEmpty() || t->brush().style() != Qt::NoBrush)
            continue;
        const double top = t->position->pixelPosition().y() - QFontMetricsF(t->font()).height();
        QVERIFY2(top >= rect.top(), qPrintable(QStringLiteral("%1: top %2 above %3").arg(t->text()).arg(top).arg(rect.top())));
        ++labels;
    }
    QCOMPARE(labels, 6);

    m_w->showView(QStringLiteral("pipeline"));
    for (int i = 0; i < m_w->pipelineView()->stageCount(); ++i) {
        QCustomPlot *p = m_w->pipelineView()->stagePlot(i);
        if (!p || !p->isVisible())
            continue;
        settle(p);
        for (QCPLayoutElement *el : p->plotLayout()->elements(true))
            if (auto *te = qobject_cast<QCPTextElement *>(el)) {
                const QFontMetrics fm(te->font());
                for (const QString &line : te->text().split(QLatin1Char('\n')))
                    QVERIFY2(fm.horizontalAdvance(line) <= p->width(), qPrintable(line));
            }
    }
}

// Defect 6: three steps of larger text made the bar chart's weight labels one blob.
void TestClassroom::largerTextKeepsLabelsApart()
{
    QVERIFY(applyPreset(QStringLiteral("journey-scores")));
    m_w->showView(QStringLiteral("weights"));
    Appearance a = AppearanceManager::instance()->appearance();
    a.fontScale = 1.15 * 1.15 * 1.15;
    AppearanceManager::instance()->setAppearance(a);
    QCustomPlot *row = m_w->rowView()->plot();
    settle(row);
    // at 1000 px the Selected query chart's least readable height does not fit beside the main
    // view's share: its dock folds rather than squeeze the chart, and unfolded by hand it takes
    // that least height
    auto *fold = m_w->findChild<DockFold *>(QStringLiteral("rowDockFold"));
    QVERIFY(fold);
    QVERIFY(fold->folded());
    QVERIFY(!row->isVisible());
    fold->setFolded(false);
    settle(row);
    QVERIFY(row->isVisible());
    const QVector<double> ticks = row->yAxis->tickVector();
    const double h = QFontMetricsF(row->yAxis->tickLabelFont()).height();
    int inRange = 0;
    double last = -1e9;
    for (double v : ticks) {
        if (!row->yAxis->range().contains(v))
            continue;
        const double y = row->yAxis->coordToPixel(v);
        if (inRange++)
            QVERIFY2(std::abs(y - last) >= h, qPrintable(QStringLiteral("%1 px apart, text %2 px").arg(std::abs(y - last)).arg(h)));
        last = y;
    }
    QVERIFY2(inRange >= 2, qPrintable(QStringLiteral("%1 px high, %2 ticks").arg(row->axisRect()->height()).arg(ticks.size())));
    // and the Controls panel is as wide as its widest row: nothing cut
    QWidget *controls = m_w->controls();
    QVERIFY2(controls->width() >= controls->minimumSizeHint().width(),
             qPrintable(QStringLiteral("%1 < %2").arg(controls->width()).arg(controls->minimumSizeHint().width())));
    QVERIFY2(controls->width() >= controls->sizeHint().width(),
             qPrintable(QStringLiteral("%1 < %2").arg(controls->width()).arg(controls->sizeHint().width())));
}

// Larger text squeezes the Selected query chart into its tightest layout (three letters a key, no
// "key" title); the text made smaller again gives back the layout it had before.
void TestClassroom::smallerTextUndoesTheTightChart()
{
    QVERIFY(applyPreset(QStringLiteral("journey-scores")));
    m_w->showView(QStringLiteral("weights"));
    QCustomPlot *row = m_w->rowView()->plot();
    settle(row);
    QVERIFY(row->isVisible());
    const QString keyBefore = row->xAxis->label();
    const double rotationBefore = row->xAxis->tickLabelRotation();
    QCOMPARE(keyBefore, QStringLiteral("key"));
    Appearance a = AppearanceManager::instance()->appearance();
    a.fontScale = 1.15 * 1.15 * 1.15;
    AppearanceManager::instance()->setAppearance(a);
    settle(row);
    auto *fold = m_w->findChild<DockFold *>(QStringLiteral("rowDockFold"));
    QVERIFY(fold);
    fold->setFolded(false);
    settle(row);
    QVERIFY(row->isVisible());
    QVERIFY2(row->xAxis->label().isEmpty(), qPrintable(row->xAxis->label())); // the tight layout
    a.fontScale = 1.0;
    AppearanceManager::instance()->setAppearance(a);
    settle(row);
    settle(row);
    QCOMPARE(row->xAxis->label(), keyBefore);
    QCOMPARE(row->xAxis->tickLabelRotation(), rotationBefore);
}

// View ▸ Larger text widens the Controls dock to its rows' new width; made smaller again, the dock
// kept that width (430 → 515 px in a 1400 px window under Xvfb) and the main view lost it for good:
// QMainWindow widens a dock to a larger minimum, never narrows it back.
void TestClassroom::smallerTextGivesTheControlsTheirWidthBack()
{
    auto *dock = m_w->findChild<QDockWidget *>(QStringLiteral("controlsDock"));
    QVERIFY(dock && dock->isVisible());
    QTest::qWait(50);
    const int before = dock->width();
    const int tabsBefore = m_w->centralWidget()->width();
    Appearance a = AppearanceManager::instance()->appearance();
    a.fontScale = 1.15 * 1.15 * 1.15;
    AppearanceManager::instance()->setAppearance(a);
    QTRY_VERIFY2(dock->width() > before, qPrintable(QStringLiteral("%1 → %2 px").arg(before).arg(dock->width())));
    a.fontScale = 1.0;
    AppearanceManager::instance()->setAppearance(a);
    QTRY_COMPARE(dock->width(), before);
    QTRY_COMPARE(m_w->centralWidget()->width(), tabsBefore);
}

// The Controls' notes (the word vectors' table, "… has its own layers") kept the size they were made
// with while every other text grew with View ▸ Larger text: a note is 0.9 × the application's font,
// whatever its size now.
void TestClassroom::notesFollowTheTextSize()
{
    auto *table = m_w->findChild<QLabel *>(QStringLiteral("tableLabel"));
    QVERIFY(table);
    const double before = table->font().pointSizeF();
    QVERIFY(std::abs(before - 0.9 * QApplication::font().pointSizeF()) < 0.01);
    Appearance a = AppearanceManager::instance()->appearance();
    a.fontScale = 1.15 * 1.15 * 1.15;
    AppearanceManager::instance()->setAppearance(a);
    QTRY_VERIFY2(table->font().pointSizeF() > before * 1.4, qPrintable(QString::number(table->font().pointSizeF())));
    QCOMPARE(table->font().pointSizeF(), 0.9 * QApplication::font().pointSizeF());
    a.fontScale = 1.0;
    AppearanceManager::instance()->setAppearance(a);
    QTRY_COMPARE(table->font().pointSizeF(), before);
}

// Defect 7: one narrow column of cards with empty space beside it, and a wheel that did not scroll.
void TestClassroom::pipelineFillsItsWidthAndScrolls()
{
    m_w->setSentence(kAnimal);
    QVERIFY(waitForResult());
    m_w->showView(QStringLiteral("pipeline"));
    QTest::qWait(50);
    auto *scroll = m_w->pipelineView()->findChild<QScrollArea *>();
    QVERIFY(scroll);
    const int viewport = scroll->viewport()->width();
    int right = 0, left = 1 << 20;
    QSet<int> columns;
    for (int i = 0; i < m_w->pipelineView()->stageCount(); ++i) {
        QWidget *card = m_w->pipelineView()->stagePlot(i)->parentWidget();
        const QPoint at = card->mapTo(scroll->viewport(), QPoint(0, 0));
        columns.insert(at.x());
        left = std::min(left, at.x());
        right = std::max(right, at.x() + card->width());
    }
    QVERIFY2(right - left >= viewport * 0.9, qPrintable(QStringLiteral("cards span %1 of %2 px").arg(right - left).arg(viewport)));
    QVERIFY(columns.size() >= 2);
    // the wheel over a stage's heatmap scrolls the stages
    QCustomPlot *p = m_w->pipelineView()->stagePlot(0);
    QCOMPARE(scroll->verticalScrollBar()->value(), 0);
    QVERIFY(scroll->verticalScrollBar()->maximum() > 0);
    const QPointF c = QPointF(p->width() / 2.0, p->height() / 2.0);
    QWheelEvent wheel(c, p->mapToGlobal(c), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                      false);
    QCoreApplication::sendEvent(p, &wheel);
    QVERIFY(scroll->verticalScrollBar()->value() > 0);
}

// Defect 8: a stage exported from the window names the configuration (README: exports carry it).
void TestClassroom::stageExportCarriesConfiguration()
{
    QVERIFY(applyPreset(QStringLiteral("causal-neg-inf")));
    m_w->showView(QStringLiteral("pipeline"));
    PipelineView *pv = m_w->pipelineView();
    int stage = -1;
    for (int i = 0; i < pv->stageCount(); ++i)
        if (pv->stageName(i).contains(QStringLiteral("eights")))
            stage = i;
    QVERIFY(stage >= 0);
    const QString line = pv->stageFigureTitle(stage);
    const SnapshotPtr s = m_w->session()->snapshot();
    QVERIFY2(line.contains(describeConfig(*s, 0, pv->shownHead(), HeadDisplay::One)), qPrintable(line));
    QVERIFY(line.contains(QStringLiteral("causal")));
    QCustomPlot *plot = pv->stagePlot(stage);
    settle(plot);
    QString before;
    for (QCPLayoutElement *el : plot->plotLayout()->elements(true))
        if (auto *te = qobject_cast<QCPTextElement *>(el); te && before.isEmpty())
            before = te->text();
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("stage.svg"));
    FigureOptions o;
    o.width = 900;
    o.height = 700;
    o.titleLine = line;
    QString error;
    QVERIFY2(saveFigure(plot, path, o, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString svg = QString::fromUtf8(f.readAll());
    QVERIFY(svg.contains(QStringLiteral("causal")));
    QVERIFY(svg.contains(QStringLiteral("d_model")));
    QString after;
    for (QCPLayoutElement *el : plot->plotLayout()->elements(true))
        if (auto *te = qobject_cast<QCPTextElement *>(el); te && after.isEmpty())
            after = te->text();
    QCOMPARE(after, before); // the window's stage is as it was
}

namespace {

// The text sizes a PDF draws, in points: each run's Tf size times the scale of the page's matrix
// and of the run's own "cm" (QPdfEngine writes one before each run), from the deflated streams.
QList<double> pdfTextSizes(const QByteArray &pdf)
{
    QList<double> sizes;
    qsizetype at = 0;
    while ((at = pdf.indexOf("stream", at)) >= 0) {
        qsizetype start = pdf.indexOf('\n', at) + 1;
        const qsizetype end = pdf.indexOf("endstream", start);
        if (start <= 0 || end < 0)
            break;
        const QByteArray dict = pdf.mid(std::max<qsizetype>(0, at - 200), 200);
        QByteArray raw = pdf.mid(start, end - start);
        at = end + 9;
        if (!dict.mid(dict.lastIndexOf("<<")).contains("FlateDecode"))
            continue;
        // zlib stream: qUncompress wants the expected size in front
        QByteArray sized(4, '\0');
        const quint32 guess = quint32(raw.size()) * 40 + 1024;
        sized[0] = char(guess >> 24);
        sized[1] = char(guess >> 16);
        sized[2] = char(guess >> 8);
        sized[3] = char(guess);
        const QString text = QString::fromLatin1(qUncompress(sized + raw));
        if (!text.contains(QStringLiteral(" Tf")))
            continue;
        static const QRegularExpression cm(QStringLiteral("(-?[\\d.]+) -?[\\d.]+ -?[\\d.]+ -?[\\d.]+ -?[\\d.]+ -?[\\d.]+ cm"));
        static const QRegularExpression tf(QStringLiteral("([\\d.]+) Tf"));
        const auto first = cm.match(text);
        const double page = first.hasMatch() ? std::abs(first.captured(1).toDouble()) : 1.0;
        auto it = tf.globalMatch(text);
        while (it.hasNext()) {
            const auto m = it.next();
            double local = 1.0;
            const QString before = text.left(m.capturedStart());
            const qsizetype c = before.lastIndexOf(QStringLiteral(" cm"));
            if (c > first.capturedEnd()) {
                const qsizetype lineStart = before.lastIndexOf(QLatin1Char('\n'), c) + 1;
                local = std::abs(before.mid(lineStart).section(QLatin1Char(' '), 0, 0).toDouble());
            }
            sizes << page * local * m.captured(1).toDouble();
        }
    }
    return sizes;
}

} // namespace

// Defect 8: text in the PDF was 3/4 of the PNG's (72 dpi against 96): the same figure now has its
// text at the same share of the width in both.
void TestClassroom::pdfTextMatchesPng()
{
    QCustomPlot *plot = causalWeights();
    QVERIFY(plot);
    QTemporaryDir dir;
    FigureOptions o;
    o.width = 1000;
    o.height = 700;
    o.dpi = 96;
    QString error;
    QVERIFY2(saveFigure(plot, dir.filePath(QStringLiteral("f.pdf")), o, &error), qPrintable(error));
    QFile f(dir.filePath(QStringLiteral("f.pdf")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<double> sizes = pdfTextSizes(f.readAll());
    QVERIFY(sizes.size() > 10);
    // the PNG at 96 dpi draws the token labels at the font's pixel size on a 1000 px width; the
    // PDF's page is 1000 pt wide: its token labels (6 queries, 6 keys) are as large
    const double png = QFontInfo(plot->yAxis->tickLabelFont()).pixelSize();
    const auto same = std::count_if(sizes.begin(), sizes.end(), [png](double pt) { return std::abs(pt - png) <= 0.03 * png; });
    QStringList all;
    for (double pt : sizes)
        all << QString::number(pt, 'f', 1);
    QVERIFY2(same >= 12, qPrintable(QStringLiteral("PNG %1 px; PDF %2").arg(png).arg(all.join(QLatin1Char(' ')))));
}

// Defect 8: the SVG in a real renderer (rsvg-convert, packaging/dev.sh installs librsvg2-bin):
// the hatching of masked cells and the rotated key labels are there as in the PNG.
void TestClassroom::svgInARealRenderer()
{
    const QString rsvg = QStandardPaths::findExecutable(QStringLiteral("rsvg-convert"));
    if (rsvg.isEmpty())
        QSKIP("rsvg-convert is not installed (packaging/dev.sh installs librsvg2-bin)");
    QCustomPlot *plot = causalWeights();
    QVERIFY(plot);
    QTemporaryDir dir;
    FigureOptions o;
    o.width = 900;
    o.height = 700;
    QString error;
    QVERIFY2(saveFigure(plot, dir.filePath(QStringLiteral("f.svg")), o, &error), qPrintable(error));
    QVERIFY2(saveFigure(plot, dir.filePath(QStringLiteral("f.png")), o, &error), qPrintable(error));
    QProcess p;
    p.start(rsvg, {QStringLiteral("-o"), dir.filePath(QStringLiteral("r.png")), dir.filePath(QStringLiteral("f.svg"))});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    const QImage png = QImage(dir.filePath(QStringLiteral("f.png"))).convertToFormat(QImage::Format_RGB32);
    const QImage svg = QImage(dir.filePath(QStringLiteral("r.png"))).convertToFormat(QImage::Format_RGB32);
    QCOMPARE(svg.size(), png.size());
    // hatch pixels of the PNG (grey lines over the light fill of masked cells) are grey in the SVG too
    int hatch = 0, kept = 0;
    for (int y = 0; y < png.height(); ++y)
        for (int x = 0; x < png.width(); ++x) {
            const QColor c = png.pixelColor(x, y);
            if (c.red() == c.green() && c.green() == c.blue() && c.red() > 100 && c.red() < 200) {
                ++hatch;
                const QColor d = svg.pixelColor(x, y);
                kept += std::abs(d.red() - c.red()) < 60 && std::abs(d.blue() - c.blue()) < 60;
            }
        }
    QVERIFY2(hatch > 500, qPrintable(QString::number(hatch)));
    QVERIFY2(kept >= 0.7 * hatch, qPrintable(QStringLiteral("%1 of %2 hatch pixels").arg(kept).arg(hatch)));
    // the rotated key labels: as much dark text under the heatmap in both
    auto ink = [](const QImage &im, int y0, int y1) {
        int n = 0;
        for (int y = y0; y < y1; ++y)
            for (int x = 0; x < im.width(); ++x)
                n += qGray(im.pixel(x, y)) < 110;
        return n;
    };
    const int y0 = int(png.height() * 0.8), y1 = png.height();
    const int a = ink(png, y0, y1), b = ink(svg, y0, y1);
    QVERIFY2(a > 200 && b > 0.7 * a && b < 1.4 * a, qPrintable(QStringLiteral("PNG %1, SVG %2 dark pixels").arg(a).arg(b)));
}

// Presentation mode at 1920 × 1080 and 1280 × 720: one view fills the screen with the editors
// hidden, and every axis label, title and number in a cell of the current view is at least 18 px
// tall (a cell that cannot hold one shows none: its number is on hover and in the lesson).
void TestClassroom::presentationReadsFromTheBack_data()
{
    QTest::addColumn<QString>("view");
    QTest::addColumn<QSize>("screen");
    for (const QSize size : {QSize(1920, 1080), QSize(1280, 720)})
        for (const char *v : {"weights", "grid", "embeddings", "pipeline", "lines", "compare"})
            QTest::addRow("%s %dx%d", v, size.width(), size.height()) << QString::fromLatin1(v) << size;
}

void TestClassroom::presentationReadsFromTheBack()
{
    QFETCH(QString, view);
    QFETCH(QSize, screen);
    QVERIFY(applyPreset(QStringLiteral("causal-neg-inf")));
    if (view == QLatin1String("compare")) {
        ComparisonSpec spec;
        QVERIFY(findSeedComparison(QStringLiteral("causal-none"), spec));
        m_w->startComparison(spec);
        QTest::qWait(300);
    } else {
        QVERIFY(m_w->showView(view));
    }
    m_w->setPresentationMode(true);
    // the screen: the offscreen platform's is of its own size, so the full-screen window is given
    // this one's (a window manager would do the same)
    m_w->setWindowState(Qt::WindowNoState);
    m_w->setGeometry(QRect(QPoint(0, 0), screen));
    QTest::qWait(100);
    QList<QCustomPlot *> plots;
    if (view == QLatin1String("weights"))
        plots << m_w->heatmapView()->plot();
    else if (view == QLatin1String("grid"))
        plots << m_w->headGridView()->plot();
    else if (view == QLatin1String("embeddings"))
        plots << m_w->embeddingView()->plot();
    else if (view == QLatin1String("lines"))
        plots << m_w->linesView()->plot();
    else if (view == QLatin1String("compare"))
        plots << m_w->compareView()->pairPlot() << m_w->compareView()->differencePlot();
    else
        for (int i = 0; i < m_w->pipelineView()->stageCount(); ++i)
            if (m_w->pipelineView()->stageRevealed(i) && m_w->pipelineView()->stagePlot(i)->isVisible())
                plots << m_w->pipelineView()->stagePlot(i);
    QVERIFY(!plots.isEmpty());
    // one view, the editors and controls hidden
    QVERIFY(!m_w->sentenceEdit()->isVisible());
    QVERIFY(!m_w->controls()->isVisible());
    QWidget *v = m_w->tabs()->currentWidget();
    QVERIFY2(v->width() >= 0.6 * screen.width() && v->height() >= 0.75 * screen.height(),
             qPrintable(QStringLiteral("%1 × %2").arg(v->width()).arg(v->height())));
    auto atLeast18 = [&](const QFont &f, const QString &what) {
        QVERIFY2(QFontInfo(f).pixelSize() >= 18, qPrintable(QStringLiteral("%1: %2 px").arg(what).arg(QFontInfo(f).pixelSize())));
    };
    for (QCustomPlot *p : plots) {
        if (!p->isVisible())
            continue;
        settle(p);
        for (QCPAxisRect *r : p->axisRects())
            for (QCPAxis *a : r->axes()) {
                if (!a->visible())
                    continue;
                if (a->tickLabels() && !a->tickVectorLabels().isEmpty())
                    atLeast18(a->tickLabelFont(), QStringLiteral("ticks of ") + a->label());
                if (!a->label().isEmpty())
                    atLeast18(a->labelFont(), a->label());
            }
        for (QCPLayoutElement *el : p->plotLayout()->elements(true)) {
            if (auto *te = qobject_cast<QCPTextElement *>(el); te && te->visible() && !te->text().isEmpty())
                atLeast18(te->font(), te->text().left(30));
            if (auto *cs = qobject_cast<QCPColorScale *>(el); cs && cs->visible())
                atLeast18(cs->axis()->tickLabelFont(), QStringLiteral("colour scale"));
        }
        const QVariant cell = p->property("attnvizCellNumberPx");
        if (cell.isValid() && cell.toInt() > 0)
            QVERIFY2(cell.toInt() >= 18, qPrintable(QStringLiteral("numbers in cells: %1 px").arg(cell.toInt())));
    }
    if (view == QLatin1String("lines"))
        atLeast18(m_w->linesView()->font(), QStringLiteral("lines view tokens"));
}

// WCAG AA in each theme: text on the plot's background 4.5 : 1, axes and the lines view's lines
// 3 : 1, and the numbers on every colour of the weights and signed maps 4.5 : 1.
void TestClassroom::everyThemeMeetsWcagAA_data()
{
    QTest::addColumn<int>("theme");
    QTest::addRow("light") << int(Theme::Light);
    QTest::addRow("dark") << int(Theme::Dark);
    QTest::addRow("high contrast") << int(Theme::HighContrast);
}

void TestClassroom::everyThemeMeetsWcagAA()
{
    QFETCH(int, theme);
    Appearance a;
    a.theme = Theme(theme);
    AppearanceManager::instance()->setAppearance(a);
    QVERIFY(applyPreset(QStringLiteral("multihead-split")));
    for (const QString &view : {QStringLiteral("weights"), QStringLiteral("lines")}) {
        QVERIFY(m_w->showView(view));
        QCustomPlot *p = view == QLatin1String("weights") ? m_w->heatmapView()->plot() : m_w->linesView()->plot();
        settle(p);
        const QColor bg = p->property("attnviz.background").value<QColor>(); // what AppearanceManager painted
        QVERIFY(bg.isValid());
        for (QCPAxisRect *r : p->axisRects())
            for (QCPAxis *ax : r->axes()) {
                if (!ax->visible())
                    continue;
                QVERIFY2(contrastRatio(ax->tickLabelColor(), bg) >= 4.5, qPrintable(view));
                QVERIFY2(contrastRatio(ax->labelColor(), bg) >= 4.5, qPrintable(view));
                QVERIFY2(contrastRatio(ax->basePen().color(), bg) >= 3, qPrintable(view));
            }
        for (QCPLayoutElement *el : p->plotLayout()->elements(true))
            if (auto *te = qobject_cast<QCPTextElement *>(el))
                QVERIFY2(contrastRatio(te->textColor(), bg) >= 4.5, qPrintable(te->text().left(40)));
        if (view == QLatin1String("lines")) {
            m_w->linesView()->setHeadDisplay(HeadDisplay::All);
            const auto lines = m_w->linesView()->lines();
            QVERIFY(!lines.empty());
            for (const LinesView::Line &l : lines)
                QVERIFY2(contrastRatio(l.color, bg) >= 3,
                         qPrintable(QStringLiteral("head %1: %2 on %3").arg(l.head).arg(l.color.name(), bg.name())));
        }
    }
    for (QCPColorGradient g : {weightsGradient(), divergingGradient()})
        for (int k = 0; k <= 100; ++k) {
            const QColor c = QColor::fromRgb(g.color(k / 100.0, QCPRange(0, 1)));
            QVERIFY2(contrastRatio(contrastingText(c), c) >= 4.5, qPrintable(c.name()));
        }
}

// The step keys work from the moment the mode starts (even with the sentence editor focused), and
// Esc gives back exactly the window that was there.
void TestClassroom::presentationStepsAtOnceAndEscRestores()
{
    QVERIFY(applyPreset(QStringLiteral("causal-neg-inf")));
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    m_w->activateWindow();
    m_w->sentenceEdit()->setFocus();
    QTest::qWait(50);
    const QRect geometry = m_w->geometry();
    const Appearance appearance = AppearanceManager::instance()->appearance();
    QMap<QString, bool> docks;
    for (auto *d : m_w->findChildren<QDockWidget *>())
        docks[d->objectName()] = d->isVisible();
    settle(m_w->rowView()->plot());
    QFont valueFont;
    for (int i = 0; i < m_w->rowView()->plot()->itemCount(); ++i)
        if (auto *t = qobject_cast<QCPItemText *>(m_w->rowView()->plot()->item(i)); t && t->brush().style() == Qt::NoBrush)
            valueFont = t->font();

    m_w->setPresentationMode(true);
    QWidget *focus = QApplication::focusWidget();
    QVERIFY(focus != static_cast<QWidget *>(m_w->sentenceEdit()));
    const QString before = m_w->currentViewId();
    QTest::keyClick(focus ? focus : static_cast<QWidget *>(m_w), Qt::Key_Right);
    QVERIFY2(m_w->currentViewId() != before, qPrintable(m_w->currentViewId()));
    QTest::keyClick(QApplication::focusWidget() ? QApplication::focusWidget() : static_cast<QWidget *>(m_w), Qt::Key_Left);
    QCOMPARE(m_w->currentViewId(), before);

    QTest::keyClick(QApplication::focusWidget() ? QApplication::focusWidget() : static_cast<QWidget *>(m_w), Qt::Key_Escape);
    QVERIFY(!m_w->presentationMode());
    QTest::qWait(50);
    QCOMPARE(m_w->geometry(), geometry);
    QVERIFY(AppearanceManager::instance()->appearance() == appearance);
    for (auto *d : m_w->findChildren<QDockWidget *>())
        QCOMPARE(d->isVisible(), docks.value(d->objectName()));
    QVERIFY(m_w->sentenceEdit()->isVisible());
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget *>(m_w->sentenceEdit()));
    settle(m_w->rowView()->plot());
    for (int i = 0; i < m_w->rowView()->plot()->itemCount(); ++i)
        if (auto *t = qobject_cast<QCPItemText *>(m_w->rowView()->plot()->item(i)); t && t->brush().style() == Qt::NoBrush)
            QCOMPARE(QFontInfo(t->font()).pixelSize(), QFontInfo(valueFont).pixelSize());
    QCOMPARE(minimumLabelPixels(), 10);
}

// Presentation mode on a 1280 × 720 screen: the window was 1420 px wide, held there by minimum
// widths of the window as it was (the Controls dock, the preset combo's longest title, the status
// line). The top-level window, and its minimum, fit the screen at both sizes on every view.
void TestClassroom::presentationFitsTheScreen_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("view");
    QTest::addColumn<QSize>("screen");
    for (const QSize size : {QSize(1920, 1080), QSize(1280, 720)})
        for (const auto &[preset, view] : {std::pair{"journey-scores", "pipeline"}, std::pair{"causal-neg-inf", "weights"},
                                           std::pair{"multihead-bloem", "grid"}, std::pair{"journey-v1", "embeddings"},
                                           std::pair{"causal-neg-inf", "compare"}})
            QTest::addRow("%s %s %dx%d", preset, view, size.width(), size.height())
                << QString::fromLatin1(preset) << QString::fromLatin1(view) << size;
}

void TestClassroom::presentationFitsTheScreen()
{
    QFETCH(QString, preset);
    QFETCH(QString, view);
    QFETCH(QSize, screen);
    QVERIFY(applyPreset(preset));
    if (view == QLatin1String("compare")) {
        ComparisonSpec spec;
        QVERIFY(findSeedComparison(QStringLiteral("causal-none"), spec));
        m_w->startComparison(spec);
        QVERIFY(waitForResult());
    } else {
        QVERIFY(m_w->showView(view));
    }
    m_w->setPresentationMode(true);
    // the mode takes its screen's width (the offscreen platform's, smaller than both): no minimum
    // width left from the window as it was (the Controls dock, the larger status line) holds it wider
    const int own = m_w->screen()->geometry().width();
    QVERIFY2(m_w->width() <= std::max(own, m_w->minimumSizeHint().width()),
             qPrintable(QStringLiteral("%1 px; screen %2 px, minimum %3 px").arg(m_w->width()).arg(own).arg(m_w->minimumSizeHint().width())));
    // the classroom's screens, as a window manager gives them
    m_w->setWindowState(Qt::WindowNoState);
    m_w->setGeometry(QRect(QPoint(0, 0), screen));
    QVERIFY2(m_w->width() <= screen.width(), qPrintable(QStringLiteral("at once: %1 px on a %2 px screen").arg(m_w->width()).arg(screen.width())));
    QTest::qWait(150);
    QVERIFY2(m_w->minimumSizeHint().width() <= screen.width(),
             qPrintable(QStringLiteral("minimum %1 px on a %2 px screen").arg(m_w->minimumSizeHint().width()).arg(screen.width())));
    QVERIFY2(m_w->width() <= screen.width(), qPrintable(QStringLiteral("%1 px on a %2 px screen").arg(m_w->width()).arg(screen.width())));
}

// `attnviz --presentation --screenshot` at a given screen size without a display: the offscreen
// platform has no "size=" option (QT_QPA_PLATFORM=offscreen:size=1280x720 was ignored, and the shot
// was of its default 800 × 800 screen); its screens come from a JSON file named by "configfile="
// (qtbase, src/plugins/platforms/offscreen/qoffscreenintegration.cpp). Presenting takes that screen.
void TestClassroom::presentationScreenshotAtAScreenSize_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QSize>("screen");
    for (const QSize size : {QSize(1920, 1080), QSize(1280, 720)})
        for (const char *id : {"tiny-induction", "journey-scores"})
            QTest::addRow("%s %dx%d", id, size.width(), size.height()) << QString::fromLatin1(id) << size;
}

void TestClassroom::presentationScreenshotAtAScreenSize()
{
    QFETCH(QString, preset);
    QFETCH(QSize, screen);
    QTemporaryDir dir;
    QFile config(dir.filePath(QStringLiteral("screen.json")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(QStringLiteral("{\"screens\": [{\"name\": \"classroom\", \"x\": 0, \"y\": 0, \"width\": %1, "
                                "\"height\": %2, \"logicalDpi\": 96, \"logicalBaseDpi\": 96, \"dpr\": 1}]}")
                     .arg(screen.width())
                     .arg(screen.height())
                     .toUtf8());
    config.close();
    const QString shot = dir.filePath(QStringLiteral("shot.png"));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen:configfile=") + config.fileName());
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.path()); // no settings of a previous run
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), {QStringLiteral("--preset"), preset, QStringLiteral("--presentation"),
                                              QStringLiteral("--screenshot"), shot});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    QCOMPARE(QImage(shot).size(), screen);
}

// High contrast: a stage not yet revealed was a white block (a style sheet's palette(), read once,
// kept the light theme). Grabbed while stepping from the first stage, the pipeline has no large
// light area where a hidden stage is: no pixel row holds a run of 300 px of one light colour.
void TestClassroom::hiddenStagesKeepTheThemeBackground()
{
    // pixel rows holding a run of 300 px of one light colour
    const auto lightRows = [](const QImage &grab) {
        const QImage img = grab.convertToFormat(QImage::Format_RGB32);
        int rows = 0;
        for (int y = 0; y < img.height(); ++y) {
            const auto *line = reinterpret_cast<const QRgb *>(img.constScanLine(y));
            for (int x = 1, run = 1; x < img.width(); ++x) {
                run = line[x] == line[x - 1] ? run + 1 : 1;
                if (run == 300 && relativeLuminance(QColor(line[x])) > 0.5) {
                    ++rows;
                    break;
                }
            }
        }
        return rows;
    };
    QVERIFY(applyPreset(QStringLiteral("journey-scores")));
    m_w->setPresentationMode(true); // high contrast
    m_w->setWindowState(Qt::WindowNoState);
    m_w->setGeometry(QRect(0, 0, 1280, 720));
    QTest::qWait(100);
    PipelineView *pv = m_w->pipelineView();
    pv->setCurrentStage(0);
    QTest::qWait(100);
    QVERIFY(!pv->stageRevealed(1));
    const QImage img = pv->grab().toImage();
    QVERIFY(img.width() > 300);
    const int dark = lightRows(img);
    // a line or two (an outline's halo) is no block; the hidden stage's block was 48 rows in view
    QVERIFY2(dark <= 4, qPrintable(QStringLiteral("%1 pixel rows with a light block").arg(dark)));
    // and the same grab in the light theme has them (the check sees a block where there is one)
    m_w->setPresentationMode(false);
    QTest::qWait(50);
    pv->setCurrentStage(0);
    QTest::qWait(100);
    QVERIFY(lightRows(pv->grab().toImage()) > 20);
}

// All heads: the first column's panels also hold the query labels and the last row's the key
// labels; their cells were smaller than the other panels' (seen in the screenshots). Every panel's
// plotting area is now the same size, in the window and in presentation mode.
void TestClassroom::gridPanelsHaveEqualCells_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<bool>("presenting");
    for (const char *id : {"multihead-bloem", "cross-attention", "multihead-split"})
        for (const bool on : {false, true})
            QTest::addRow("%s%s", id, on ? " presenting" : "") << QString::fromLatin1(id) << on;
}

void TestClassroom::gridPanelsHaveEqualCells()
{
    QFETCH(QString, preset);
    QFETCH(bool, presenting);
    QVERIFY(applyPreset(preset));
    QVERIFY(m_w->showView(QStringLiteral("grid")));
    if (presenting) {
        m_w->setPresentationMode(true);
        m_w->setWindowState(Qt::WindowNoState);
        m_w->setGeometry(QRect(0, 0, 1280, 720));
        QTest::qWait(100);
    }
    QCustomPlot *p = m_w->headGridView()->plot();
    settle(p);
    const QList<QCPAxisRect *> rects = p->axisRects();
    QCOMPARE(rects.size(), m_w->headGridView()->panelCount());
    QVERIFY(rects.size() >= 3);
    for (QCPAxisRect *r : rects) {
        QVERIFY2(std::abs(r->width() - rects.first()->width()) <= 2,
                 qPrintable(QStringLiteral("%1 px wide, the first %2").arg(r->width()).arg(rects.first()->width())));
        QVERIFY2(std::abs(r->height() - rects.first()->height()) <= 2,
                 qPrintable(QStringLiteral("%1 px high, the first %2").arg(r->height()).arg(rects.first()->height())));
    }
}

// All heads with 1 … 16 heads, self- and cross-attention, in the window (1600 × 1000): with 8 heads
// (rows of 4, 4 and 1) the panel above the last row's key labels was taller than its neighbours, and
// a thinned query axis's rotated note ("1 in 2 labels shown…") ran past the small panels into the
// rows above and below. Every panel is the same size, every axis title fits its own panel, every
// column has its key labels, and labels that had to be thinned are said so once, in the title.
void TestClassroom::gridFitsEveryHeadCount_data()
{
    QTest::addColumn<int>("heads");
    QTest::addColumn<bool>("cross");
    for (int h = 1; h <= 16; ++h)
        QTest::addRow("%d heads", h) << h << false;
    for (int h : {2, 5, 8, 16})
        QTest::addRow("%d heads, cross-attention", h) << h << true;
}

void TestClassroom::gridFitsEveryHeadCount()
{
    QFETCH(int, heads);
    QFETCH(bool, cross);
    m_w->setSentence(kAnimal);
    m_w->setKeySentence(cross ? QStringLiteral("we process and ship your order to the street") : QString());
    ComputeSettings s = m_w->controls()->settings();
    s.numHeads = heads;
    s.dHead = 0;
    m_w->controls()->setSettings(s);
    QVERIFY(waitForResult());
    QCOMPARE(m_w->session()->snapshot()->tk(), cross ? 9 : 11);
    QVERIFY(m_w->showView(QStringLiteral("grid")));
    HeadGridView *g = m_w->headGridView();
    QCustomPlot *p = g->plot();
    settle(p);
    const QList<QCPAxisRect *> rects = p->axisRects();
    // every panel on this page (heads that do not fit at HeadGridView::kMinPanelPx go on further pages)
    QCOMPARE(rects.size(), g->panelCount());
    QVERIFY(g->panelCount() * g->pageCount() >= heads + 1);
    QCOMPARE(g->pageCount() == 1, g->panelCount() == heads + 1);
    int thinned = 0;
    for (QCPAxisRect *r : rects) {
        const QString where = r->axis(QCPAxis::atTop)->label();
        QVERIFY2(std::abs(r->width() - rects.first()->width()) <= 2 && std::abs(r->height() - rects.first()->height()) <= 2,
                 qPrintable(QStringLiteral("%1: %2 × %3 px, the first %4 × %5").arg(where).arg(r->width()).arg(r->height())
                                .arg(rects.first()->width()).arg(rects.first()->height())));
        QVERIFY(r->height() >= 20);
        for (QCPAxis *a : r->axes()) {
            if (!a->visible() || a->label().isEmpty())
                continue;
            // a title runs along its own panel's side, no further
            const int room = a->orientation() == Qt::Horizontal ? r->width() : r->height();
            const int len = QFontMetrics(a->labelFont()).horizontalAdvance(a->label());
            QVERIFY2(len <= room, qPrintable(QStringLiteral("%1: “%2” is %3 px along %4 px").arg(where, a->label()).arg(len).arg(room)));
        }
        for (QCPAxis *a : {r->axis(QCPAxis::atLeft), r->axis(QCPAxis::atBottom)})
            if (a->tickLabels()) {
                QVERIFY(QFontInfo(a->tickLabelFont()).pixelSize() >= minimumLabelPixels());
                if (tokenAxisLabelStep(a) > 1)
                    ++thinned;
                else
                    QCOMPARE(int(tickTexts(a).size()), a->orientation() == Qt::Horizontal ? m_w->session()->snapshot()->tk() : 11);
            }
        // the keys under the lowest panel of each column
        bool keys = r->axis(QCPAxis::atBottom)->tickLabels();
        for (QCPAxisRect *o : rects)
            keys = keys || (o != r && std::abs(o->left() - r->left()) <= 2 && o->top() > r->top() && o->axis(QCPAxis::atBottom)->tickLabels());
        QVERIFY2(keys, qPrintable(where + QStringLiteral(": no key labels in its column")));
    }
    // the first panel of each row holds the query labels
    QSet<int> rows, labelled;
    for (QCPAxisRect *r : rects) {
        rows.insert(r->top());
        if (r->axis(QCPAxis::atLeft)->tickLabels())
            labelled.insert(r->top());
    }
    QCOMPARE(labelled, rows);
    // thinned labels are never silent: the title says so, once, and how to see them all
    QCOMPARE(g->title().contains(QStringLiteral("labels shown")), thinned > 0);
    if (thinned)
        QVERIFY2(g->title().contains(QStringLiteral("1 in ")) && g->title().contains(QStringLiteral("zoom")), qPrintable(g->title()));
    // and the title's lines fit its own column (beside the colour scale), none cut at both ends
    for (QCPLayoutElement *el : p->plotLayout()->elements(true))
        if (auto *te = qobject_cast<QCPTextElement *>(el)) {
            const QFontMetrics fm(te->font());
            for (const QString &line : te->text().split(QLatin1Char('\n')))
                QVERIFY2(fm.horizontalAdvance(line) <= te->outerRect().width(),
                         qPrintable(QStringLiteral("%1 px in %2: %3").arg(fm.horizontalAdvance(line)).arg(te->outerRect().width()).arg(line)));
        }
}

QTEST_MAIN(TestClassroom)
#include "tst_classroom.moc"
