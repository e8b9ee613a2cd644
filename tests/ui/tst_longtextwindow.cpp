// SPDX-License-Identifier: GPL-3.0-or-later
// Long texts in the window (offscreen): with a trace budget too small for every head's weights
// (ATTNVIZ_TRACE_BUDGET_KB), a text past it is traced without them (q, k, v and each row's
// log-sum-exp) instead of being cut; the Weights heatmap draws the pooled map of what it shows and
// equals pooling the full matrix of a core trace that kept the weights, zoomed to single cells
// too; the Selected query dock's row equals the full trace's; the Layers tab's role scores and
// readings (sink mass, entropy over sampled rows, span mass set in its range fields) equal the core's
// on a trace that kept the weights; the Logit lens, attribution and the residual stream read a window
// of positions around the selected row (every layer's stages recomputed: the lens equals the short
// text's lens of the whole prefix), name it and follow the selected row; the Heads tab draws every
// head's pooled map, equal to pooling the full matrices, panel by panel off the GUI thread, and
// another layer stops the maps not begun; the Pipeline and Embeddings tabs read the same window as the
// lens, every stage equal to the same rows and columns of the short-text pipeline's; the Rollout tab
// draws the selected query's row, equal to that row of the full rollout; with the norm-weighted switch
// on, the map, the selected query's row and the rollout's row are those of the norm-weighted
// matrices of the full trace; Compare draws two long texts of one length as the Weights tab's pooled
// maps and their difference (by the mean, the pooled difference of the full matrices); every other
// view says in one
// line that it needs the whole matrices; matrix export is refused; a short text is drawn as before.
#include "testpaths.h"
#include "live/livesession.h"
#include "live/longtext.h"
#include "live/longtextmaps.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "drawntext.h"
#include "files/figureexport.h"
#include "files/session.h"
#include "controls/sentenceedit.h"
#include "controls/tokenchipsview.h"
#include "views/headgridview.h"
#include "views/headrolesview.h"
#include "window/dockfold.h"
#include "views/heatmapview.h"
#include "views/compareview.h"
#include "views/normweighting.h"
#include "views/dlaview.h"
#include "views/embeddingview.h"
#include "views/linesview.h"
#include "views/logitlensview.h"
#include "views/pipelineview.h"
#include "views/plotzoom.h"
#include "views/residualview.h"
#include "views/rolloutview.h"
#include "views/rowview.h"
#include "window/viewrouter.h"

#include "attnviz/attentiontiles.h"
#include "attnviz/headroles.h"
#include "attnviz/pretrained.h"
#include "attnviz/reads.h"

#include <qcustomplot.h>

#include <QAction>
#include <QPushButton>
#include <QProgressBar>
#include <QTextCursor>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QScopeGuard>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QSemaphore>
#include <QThreadPool>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

using Window = test::PromptedWindow;

QString fixture(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + name; }

// About 1,000 tokens of the float32 fixture: past the ~430 whose weights fit in 4 MB, well within
// what its q, k and v take, and more than the plot has pixels (its map pools them).
QString longText()
{
    QString text;
    for (int i = 0; i < 90; ++i)
        text += QStringLiteral("The quick brown fox jumps over the lazy dog. ");
    return text.trimmed();
}

// Every text a widget shows: its labels', its plots' titles, texts and axis labels, on one line.
QString shownTexts(QWidget *w)
{
    QStringList out;
    for (QLabel *l : w->findChildren<QLabel *>())
        if (l->isVisibleTo(w))
            out << l->text();
    QList<QCustomPlot *> plots = w->findChildren<QCustomPlot *>();
    if (auto *p = qobject_cast<QCustomPlot *>(w))
        plots << p;
    for (QCustomPlot *p : plots) {
        for (int i = 0; i < p->plotLayout()->elementCount(); ++i)
            if (auto *t = qobject_cast<QCPTextElement *>(p->plotLayout()->elementAt(i)))
                out << t->text();
        for (int i = 0; i < p->itemCount(); ++i)
            if (auto *t = qobject_cast<QCPItemText *>(p->item(i)))
                out << t->text();
    }
    for (QCustomPlot *p : plots) // what a layer paints by hand (the Lines view's note)
        for (const test::DrawnText &t : test::drawnTexts(p))
            out << t.text;
    return out.join(QLatin1Char(' ')).replace(QLatin1Char('\n'), QLatin1Char(' ')).simplified();
}

// Head `head` shown, -1 the average over heads.
void selectHead(Window &win, int head)
{
    win.w.session()->setHeadDisplay(head < 0 ? HeadDisplay::Average : HeadDisplay::One);
    if (head >= 0)
        win.w.session()->setSelectedHead(head);
    QCoreApplication::processEvents();
}

double worst(const Mat<float> &a, const Mat<float> &b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols())
        return 1e9;
    return double((a - b).cwiseAbs().maxCoeff());
}

// The cells of `region` (x keys, y queries) of `full` pooled into outR x outC as AttentionTiles::pooled
// partitions them, in float64.
Mat<double> pooledRegion(const Mat<double> &full, const QRect &region, int outR, int outC, Pooling pool)
{
    Mat<double> out(outR, outC);
    for (int a = 0; a < outR; ++a)
        for (int b = 0; b < outC; ++b) {
            const int r0 = region.top() + int(int64_t(a) * region.height() / outR);
            const int r1 = region.top() + int(int64_t(a + 1) * region.height() / outR);
            const int c0 = region.left() + int(int64_t(b) * region.width() / outC);
            const int c1 = region.left() + int(int64_t(b + 1) * region.width() / outC);
            const auto blk = full.block(r0, c0, r1 - r0, c1 - c0);
            out(a, b) = pool == Pooling::Mean ? blk.mean() : blk.maxCoeff();
        }
    return out;
}

} // namespace

class TestLongTextWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        QVERIFY(openPretrained(fixture(QStringLiteral("mistral-tiny")).toStdString(), {}, m_model).ok());
        TraceRequest req;
        req.text = longText().toStdString();
        QVERIFY(m_model->trace(req, m_full).ok()); // every weight kept: the reference
    }
    void init() { qputenv("ATTNVIZ_TRACE_BUDGET_KB", "4096"); }
    void cleanup() { qunsetenv("ATTNVIZ_TRACE_BUDGET_KB"); }

    void notCutWhereWeightsWouldBe();
    void mapEqualsPooledFullMatrix();
    void zoomShowsSingleCells();
    void cachesOnlyTheLayersInView();
    void smallWeightsTwoDigits();
    void selectedQueryRow();
    void otherViewsSayNotYet();
    void headsTabMapsEqualPooledFullMatrix();
    void headsTabFollowsLayer();
    void headMapsCancelled();
    void stageViewsReadWindow();
    void pipelineAndEmbeddingsReadWindow();
    void rolloutRowOfSelectedQuery();
    void normWeightedSwitch();
    void compareLongTexts();
    void compareFollowsZoom();
    void linesDrawOneRow();
    void headRolesReadLongText();
    void headRolesNormWeighted();
    void headReadingsProgressAndCancel();
    void spanFromSelection();
    void exportRefused();
    void sixteenBitModel();
    void shortTextUnchanged();
    void screenshots();
    void windowScreenshots();

private:
    // The fixture opened in `win`, the long text shown on the Weights tab.
    SnapshotPtr showLong(Window &win)
    {
        if (!win.w.openModel(fixture(QStringLiteral("mistral-tiny")), nullptr))
            return nullptr;
        win.w.showView(QStringLiteral("weights"));
        return win.show(longText());
    }

    // Compare on the long text: A and B the same text at layers 0 and 1, head `head` shown on both;
    // null if it cannot be shown.
    CompareView *compareLayers(Window &win, int head)
    {
        const SnapshotPtr s = showLong(win);
        if (!s || !s->longText)
            return nullptr;
        selectHead(win, head);
        win.w.session()->setSelectedLayer(0);
        if (!win.w.showView(QStringLiteral("compare")))
            return nullptr;
        CompareView *cv = win.w.compareView();
        cv->copyAToB();
        cv->sessionB()->setSelectedLayer(1);
        return cv;
    }

    std::unique_ptr<Model> m_model;
    Trace<float> m_full;
};

void TestLongTextWindow::notCutWhereWeightsWouldBe()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->hasResult());
    QVERIFY(s->longText);
    QVERIFY(!s->trace->observed.weights);
    QCOMPARE(s->tq(), int(m_full.tokens.size()));
    QVERIFY(!s->trace->cut());
    // the weights policy would have cut it here
    QVERIFY2(s->longTextFrom > 100 && s->longTextFrom < s->tq(), qPrintable(QString::number(s->longTextFrom)));
    QCOMPARE(s->trace->layers[0].attention.batch[0].weights.size(), size_t(0));
    bool said = false;
    for (QLabel *l : win.w.findChildren<QLabel *>())
        said = said || l->text().contains(longTextPolicy());
    QVERIFY2(said, "the status line names the long-text policy");
}

// Only the layers handed out last keep their caches of drawn tiles and maps: a layer that drops
// out gives its bytes back, and reading it again computes the same cells.
void TestLongTextWindow::cachesOnlyTheLayersInView()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText && s->trace && s->trace->layers.size() >= 2);
    const int t = s->tq();
    LongTextTiles one(s->trace, 1);
    const auto first = one.layer(0);
    QVERIFY(first);
    const Mat<float> map = first->pooled(1, 0, t, 0, t, 64, 64, Pooling::Max);
    QVERIFY(first->cachedBytes() > 0);
    const auto second = one.layer(1);
    QVERIFY(second);
    second->pooled(1, 0, t, 0, t, 64, 64, Pooling::Max);
    QVERIFY(second->cachedBytes() > 0);
    QCOMPARE(first->cachedBytes(), size_t(0)); // layer 0 dropped out
    QCOMPARE(one.layer(0)->pooled(1, 0, t, 0, t, 64, 64, Pooling::Max), map);
    QCOMPARE(second->cachedBytes(), size_t(0));
    // the window's: the two layers last shown keep theirs
    LongTextTiles two(s->trace);
    two.layer(0)->pooled(1, 0, t, 0, t, 64, 64, Pooling::Max);
    two.layer(1)->pooled(1, 0, t, 0, t, 64, 64, Pooling::Max);
    QVERIFY(two.layer(0)->cachedBytes() > 0 && two.layer(1)->cachedBytes() > 0);
}

void TestLongTextWindow::mapEqualsPooledFullMatrix()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    HeatmapView *hv = win.w.heatmapView();
    for (int layer : {0, 1})
        for (int head : {1, -1}) {
            win.w.session()->setSelectedLayer(layer);
            selectHead(win, head);
            QCOMPARE(win.w.session()->shownHead(), head);
            hv->refreshMap();
            const Mat<float> &drawn = hv->mapCells();
            QCOMPARE(hv->mapRegion(), QRect(0, 0, s->tk(), s->tq()));
            QVERIFY2(drawn.rows() < s->tq() && drawn.cols() < s->tk(),
                     qPrintable(QStringLiteral("%1 x %2 cells drawn").arg(drawn.rows()).arg(drawn.cols())));
            const AttentionTiles<float> full(m_full, layer, AttentionTiles<float>::Source::Stored);
            QVERIFY(full.valid());
            for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
                hv->setPooling(pool);
                const Mat<float> want =
                    full.pooled(head, 0, s->tq(), 0, s->tk(), int(drawn.rows()), int(drawn.cols()), pool);
                QVERIFY2(worst(hv->mapCells(), want) < 1e-5,
                         qPrintable(QStringLiteral("layer %1 head %2: %3").arg(layer).arg(head).arg(worst(hv->mapCells(), want))));
                // the plotted colour map holds those cells; hover says what a cell pools
                QCOMPARE(hv->cellValue(s->tq() - 1, 0), double(hv->mapCells()(drawn.rows() - 1, 0)));
                QVERIFY(hv->hoverText(s->tq() - 1, 0).contains(pool == Pooling::Max ? QStringLiteral("the max of")
                                                                                     : QStringLiteral("the mean of")));
            }
            hv->setPooling(Pooling::Max);
            QVERIFY(hv->title().contains(QStringLiteral("Long text")));
        }
    // a large map is computed on a pool thread: the same cells once it comes back
    const Mat<float> before = hv->mapCells();
    hv->setMapWorkOnThread(0);
    selectHead(win, 3);
    selectHead(win, -1);
    QTRY_VERIFY(!hv->mapPending());
    QVERIFY(worst(hv->mapCells(), before) < 1e-7);
    hv->setMapWorkOnThread(5e7);
    // the switch is the heatmap's context-menu action
    QVERIFY(hv->meanPoolingAction()->isVisible());
    hv->meanPoolingAction()->setChecked(true);
    QCOMPARE(hv->pooling(), Pooling::Mean);
    // kept with the session
    const SessionState saved = win.w.captureSession();
    QVERIFY(saved.meanPooling);
    SessionState read;
    QStringList problems;
    QVERIFY(sessionFromJson(sessionToJson(saved), read, &problems));
    QVERIFY(read.meanPooling);
    hv->setPooling(Pooling::Max);
    QVERIFY(!hv->meanPoolingAction()->isChecked());
    win.w.applySession(read, &problems);
    QCOMPARE(hv->pooling(), Pooling::Mean);
}

void TestLongTextWindow::zoomShowsSingleCells()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    win.w.session()->setSelectedLayer(1);
    selectHead(win, 2);
    HeatmapView *hv = win.w.heatmapView();
    const QRect cells(190, 200, 20, 20); // x keys, y queries: the diagonal (a sliding window of 4 keys)
    hv->zoomToCells(cells);
    QTRY_VERIFY(!hv->mapPending()); // computed once the zoom stops
    QCOMPARE(hv->mapRegion(), cells);
    const Mat<float> &drawn = hv->mapCells();
    QCOMPARE(drawn.rows(), Eigen::Index(20));
    const Mat<float> want = m_full.weights(1, 2).toDense().block(200, 190, 20, 20);
    QVERIFY2(worst(drawn, want) < 1e-5, qPrintable(QString::number(worst(drawn, want))));
    QVERIFY(want(5, 13) > 0.01); // query 205, key 203: inside the window
    QCOMPARE(hv->cellValue(205, 203), double(drawn(5, 13)));
    // single cells: hover gives the exact weight, without a pooled cell's line
    const QString hover = hv->hoverText(205, 203);
    QVERIFY2(hover.contains(QString::number(double(m_full.weights(1, 2)(205, 203)), 'f', 4)), qPrintable(hover));
    QVERIFY(!hover.contains(QStringLiteral("of the map")));
    QVERIFY(hv->title().contains(QStringLiteral("each weight computed from q and k")));
    // back to the whole matrix: a map again
    hv->resetZoom();
    QTRY_VERIFY(!hv->mapPending());
    QCOMPARE(hv->mapRegion(), QRect(0, 0, s->tk(), s->tq()));
}

// A cell's number: two decimals, or two significant digits where those read "0.00"; on a long
// text's map zoomed to single cells, a weight of 1e-3 is drawn so.
void TestLongTextWindow::smallWeightsTwoDigits()
{
    QCOMPARE(HeatmapView::cellNumberText(0.25f), QStringLiteral("0.25"));
    QCOMPARE(HeatmapView::cellNumberText(0.006f), QStringLiteral("0.01"));
    QCOMPARE(HeatmapView::cellNumberText(0.0f), QStringLiteral("0.00"));
    QCOMPARE(HeatmapView::cellNumberText(3.14e-4f), QStringLiteral("3.1e-4"));
    QCOMPARE(HeatmapView::cellNumberText(0.0041f), QStringLiteral("4.1e-3"));
    QCOMPARE(HeatmapView::cellNumberText(1.26e-12f), QStringLiteral("1.3e-12"));
    QCOMPARE(HeatmapView::cellNumberText(std::numeric_limits<float>::quiet_NaN()), QStringLiteral("NaN"));

    // the smallest positive weight of a layer's first head that is not on its first rows
    int layer = -1, qi = 0, kj = 0;
    float small = 1;
    for (int l = 0; l < m_full.numLayers() && layer < 0; ++l) {
        const Mat<float> w = m_full.weights(l, 0).toDense();
        for (int i = 20; i < int(w.rows()); ++i)
            for (int j = 0; j <= i; ++j)
                if (w(i, j) > 0 && w(i, j) < 0.004f && w(i, j) < small) {
                    small = w(i, j);
                    qi = i;
                    kj = j;
                    layer = l;
                }
    }
    QVERIFY2(layer >= 0, "no weight below 0.004 in the fixture");
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    win.w.session()->setSelectedLayer(layer);
    selectHead(win, 0);
    HeatmapView *hv = win.w.heatmapView();
    hv->setShowNumbers(true);
    const int k0 = std::clamp(kj - 2, 0, s->tk() - 5), q0 = std::clamp(qi - 2, 0, s->tq() - 5);
    hv->zoomToCells(QRect(k0, q0, 5, 5));
    QTRY_VERIFY(!hv->mapPending());
    QCOMPARE(hv->mapRegion(), QRect(k0, q0, 5, 5));
    hv->plot()->replot();
    const QString want = HeatmapView::cellNumberText(float(hv->mapCells()(qi - q0, kj - k0)));
    QVERIFY2(want.contains(QLatin1Char('e')), qPrintable(want));
    QStringList drawn;
    for (const test::DrawnText &t : test::drawnTexts(hv->plot()))
        drawn << t.text;
    QVERIFY2(drawn.contains(want), qPrintable(want + QStringLiteral(" not in: ") + drawn.join(QLatin1Char(' '))));
}

void TestLongTextWindow::selectedQueryRow()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    RowView *row = win.w.rowView();
    for (int head : {0, -1}) {
        selectHead(win, head);
        win.w.session()->setSelectedQuery(250);
        QCoreApplication::processEvents();
        row->show();
        QTRY_COMPARE(int(row->values().size()), s->tk());
        const WeightMatrix<float> &w = m_full.weights(0, head);
        double err = 0;
        for (int j = 0; j < s->tk(); ++j)
            err = std::max(err, std::abs(row->values()[j] - double(w(250, j))));
        QVERIFY2(err < 1e-5, qPrintable(QString::number(err)));
    }
}

void TestLongTextWindow::otherViewsSayNotYet()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    for (const char *id : {"layers"}) {
        const QString view = QString::fromLatin1(id);
        const SnapshotPtr handed = win.w.views()->snapshotFor(s, view);
        QVERIFY2(handed && !handed->hasResult(), id);
        QVERIFY2(handed->message.contains(QStringLiteral("not yet for texts past %L1 tokens (this one has %L2)")
                                              .arg(s->longTextFrom)
                                              .arg(s->tq())),
                 qPrintable(handed->message));
        // its tab shows the line, where it is listed for this model (asked for the stack's Layers
        // tab, a model's window shows its own, which reads long texts)
        if (win.w.showView(view) && win.w.currentViewId() == view) {
            QWidget *page = win.w.viewWidget(view);
            QTRY_VERIFY2(shownTexts(page).contains(QStringLiteral("not yet for texts past")), qPrintable(view + QStringLiteral(": ") + shownTexts(page)));
        }
    }
    // the weights, all heads, the selected query and the Layers tab's readings read it themselves
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("weights")), s);
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("grid")), s);
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("headRoles")), s);
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("row")), s);
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("lines")), s); // the selected query's row
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("rollout")), s); // its rollout row
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("compare")), s); // pooled maps (compareLongTexts)
    // the norm-weighted switch can be turned on (normWeightedSwitch)
    QVERIFY(win.w.views()->normWeightedAction()->isEnabled());
}

// The Heads tab on a long text: each panel of the page a map of the whole matrix at about its pixels,
// computed off the GUI thread head by head (the panels fill one at a time); every head's map and the
// average's equal pooling the full weights of the trace that kept them (the short-text path), by
// the max (2e-6) and, on the Weights tab's switch, by the mean (1e-6), and are exactly what the Weights map's
// machinery computes from the long text's q and k; hover gives a cell's exact weight and what its
// map cell pools; clicking a panel selects its head.
void TestLongTextWindow::headsTabMapsEqualPooledFullMatrix()
{
    Window win;
    win.w.resize(1600, 1200); // every head on one page
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    const int layer = 1, tq = s->tq(), tk = s->tk();
    win.w.session()->setSelectedLayer(layer);
    HeadGridView *grid = win.w.headGridView();
    auto *maps = grid->findChild<LongTextMaps *>();
    QVERIFY(maps);
    std::vector<int> drawnAtEach; // the panels holding their map as each head comes back
    const auto counting = connect(maps, &LongTextMaps::ready, this, [&] {
        int n = 0;
        for (int p = 0; p < grid->panelCount(); ++p)
            n += grid->mapCells(grid->headOfPanel(p)).size() > 0;
        drawnAtEach.push_back(n);
    });
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    QTRY_VERIFY_WITH_TIMEOUT(grid->mapsPending(), 5000);
    QVERIFY(shownTexts(grid).contains(QStringLiteral("computing")));
    QTRY_VERIFY_WITH_TIMEOUT(!grid->mapsPending(), 60000);
    disconnect(counting);
    const int panels = grid->panelCount();
    QCOMPARE(panels, s->attention(layer).numHeads + 1); // every head and the average fit the page
    // one more panel drawn with each head (a fill begun anew where the panels were laid out again)
    QVERIFY(int(drawnAtEach.size()) >= panels);
    for (size_t k = 0; k < drawnAtEach.size(); ++k)
        QVERIFY2(drawnAtEach[k] == 1 || (k > 0 && drawnAtEach[k] == drawnAtEach[k - 1] + 1), qPrintable(QString::number(k)));
    QCOMPARE(drawnAtEach.back(), panels);
    QVERIFY2(!shownTexts(grid).contains(QStringLiteral("not yet")), qPrintable(shownTexts(grid)));
    QVERIFY2(grid->title().contains(QStringLiteral("Long text")), qPrintable(grid->title()));
    const AttentionTiles<float> full(m_full, layer, AttentionTiles<float>::Source::Stored);
    QVERIFY(full.valid());
    const AttentionTiles<float> fresh(*s->trace, layer, AttentionTiles<float>::Source::Recompute); // no cache
    QVERIFY(fresh.valid());
    for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
        if (pool == Pooling::Mean) { // the Weights tab's switch
            win.w.heatmapView()->meanPoolingAction()->setChecked(true);
            QCOMPARE(grid->pooling(), Pooling::Mean);
            QTRY_VERIFY_WITH_TIMEOUT(!grid->mapsPending(), 60000);
            QVERIFY(grid->title().contains(QStringLiteral("the mean of")));
        }
        QCOMPARE(grid->mapRegion(), QRect(0, 0, tk, tq));
        for (int n = 0; n < panels; ++n) {
            const int head = grid->headOfPanel(n);
            const Mat<float> &cells = grid->mapCells(head);
            // about the panel's pixels: fewer cells than tokens
            const QRect px = grid->panelRect(n);
            QVERIFY2(cells.rows() > 20 && cells.rows() < tq && cells.cols() > 20 && cells.cols() < tk
                         && std::abs(int(cells.cols()) - px.width()) <= px.width() / 4,
                     qPrintable(QStringLiteral("head %1: %2 x %3 cells, panel %4 x %5 px")
                                    .arg(head).arg(cells.rows()).arg(cells.cols()).arg(px.height()).arg(px.width())));
            // a weight recomputed as exp(s - lse) is the forward's softmax to a few float ulps (up to
            // 9.5e-7 here on weights near 1), which the max keeps and the mean averages out (7e-8)
            const Mat<float> want = full.pooled(head, 0, tq, 0, tk, int(cells.rows()), int(cells.cols()), pool);
            QVERIFY2(worst(cells, want) < (pool == Pooling::Max ? 2e-6 : 1e-6),
                     qPrintable(QStringLiteral("head %1, %2: %3").arg(head).arg(int(pool)).arg(worst(cells, want))));
            // and exactly what the Weights map's machinery computes from the long text's q and k
            QCOMPARE(cells, fresh.pooled(head, 0, tq, 0, tk, int(cells.rows()), int(cells.cols()), pool));
        }
    }
    win.w.heatmapView()->meanPoolingAction()->setChecked(false);
    QCOMPARE(grid->pooling(), Pooling::Max);
    QTRY_VERIFY_WITH_TIMEOUT(!grid->mapsPending(), 60000);
    // hover: the exact weight, and the map's cell
    const QString hover = grid->hoverText(2, 500, 498);
    QVERIFY2(hover.contains(QStringLiteral("weight ") + QString::number(double(m_full.weights(layer, 2)(500, 498)), 'f', 4))
                 && hover.contains(QStringLiteral("its cell of the map: the max of")),
             qPrintable(hover));
    // clicking a panel selects its head, on the Weights tab
    grid->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QTest::mouseClick(grid->plot(), Qt::LeftButton, Qt::NoModifier, grid->plot()->mapFrom(grid, grid->panelCenter(2)));
    QTRY_COMPARE(win.w.session()->shownHead(), grid->headOfPanel(2));
}

// Another layer while the Heads tab is shown: the maps of the layer before are dropped at once (no
// result of theirs is drawn), the new layer's come panel by panel and equal its full weights pooled.
void TestLongTextWindow::headsTabFollowsLayer()
{
    Window win;
    win.w.resize(1600, 1200); // every head on one page
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    const int tq = s->tq(), tk = s->tk();
    HeadGridView *grid = win.w.headGridView();
    win.w.session()->setSelectedLayer(0);
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    QTRY_VERIFY_WITH_TIMEOUT(!grid->mapsPending() && grid->mapCells(0).size() > 0, 60000);
    win.w.session()->setSelectedLayer(1);
    QCOMPARE(grid->mapCells(0).size(), Eigen::Index(0));
    QVERIFY(grid->mapsPending());
    win.w.session()->setSelectedLayer(0); // and back before layer 1's maps are in
    QCOMPARE(grid->mapCells(0).size(), Eigen::Index(0));
    win.w.session()->setSelectedLayer(1);
    QTRY_VERIFY_WITH_TIMEOUT(!grid->mapsPending(), 60000);
    const AttentionTiles<float> full(m_full, 1, AttentionTiles<float>::Source::Stored);
    for (int n = 0; n < grid->panelCount(); ++n) {
        const int head = grid->headOfPanel(n);
        const Mat<float> &cells = grid->mapCells(head);
        QVERIFY(cells.size() > 0);
        const Mat<float> want = full.pooled(head, 0, tq, 0, tk, int(cells.rows()), int(cells.cols()), Pooling::Max);
        QVERIFY2(worst(cells, want) < 2e-6, qPrintable(QStringLiteral("head %1: %2").arg(head).arg(worst(cells, want))));
    }
    // zoomed to a region: every panel's cells are that region's weights, one a cell
    grid->zoom()->zoomTo(QRectF(QPointF(189.5, 199.5), QPointF(209.5, 219.5)));
    QTRY_VERIFY2_WITH_TIMEOUT(!grid->mapsPending() && grid->mapRegion() == QRect(190, 200, 20, 20)
                                  && grid->mapCells(2).size() > 0,
                              qPrintable(QStringLiteral("pending %1, region %2 %3 %4 %5, cells %6")
                                             .arg(grid->mapsPending())
                                             .arg(grid->mapRegion().x())
                                             .arg(grid->mapRegion().y())
                                             .arg(grid->mapRegion().width())
                                             .arg(grid->mapRegion().height())
                                             .arg(grid->mapCells(2).size())),
                              20000);
    QCOMPARE(grid->mapCells(2).rows(), Eigen::Index(20));
    const Mat<float> block = m_full.weights(1, 2).toDense().block(200, 190, 20, 20);
    QVERIFY2(worst(grid->mapCells(2), block) < 2e-6, qPrintable(QString::number(worst(grid->mapCells(2), block))));
    QVERIFY2(grid->title().contains(QStringLiteral("each weight computed from q and k")), qPrintable(grid->title()));
    // a short text while the panels wait for their maps: every panel drawn from its weights
    win.w.session()->setSelectedLayer(0);
    QVERIFY(grid->mapsPending());
    const SnapshotPtr brief = win.show(QStringLiteral("The quick brown fox jumps over the lazy dog."));
    QVERIFY(brief && !brief->longText);
    QVERIFY(!grid->mapsPending());
    QCOMPARE(grid->panelCount(), brief->attention(0).numHeads + 1);
    for (int i = 0; i < grid->plot()->plottableCount(); ++i)
        QVERIFY(grid->plot()->plottable(i)->visible());
    QVERIFY(!grid->meanPoolingAction()->isVisible());
}

// LongTextMaps: a request cancelled before it begins computes no map and hands none back; a newer
// request replaces the one before, only its heads come back, in its order, equal to the tiles' maps.
void TestLongTextWindow::headMapsCancelled()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    LongTextTiles layers(s->trace);
    const std::shared_ptr<const AttentionTiles<float>> tiles = layers.layer(0);
    QVERIFY(tiles && tiles->cachedEntries() == 0);
    LongTextMaps maps;
    std::vector<int> came;
    int finished = 0;
    connect(&maps, &LongTextMaps::ready, this, [&](int head, const Mat<float> &cells) {
        came.push_back(head);
        QCOMPARE(cells, tiles->pooled(head, 0, s->tq(), 0, s->tk(), 48, 40, Pooling::Max));
    });
    connect(&maps, &LongTextMaps::finished, this, [&] { ++finished; });
    LongTextMaps::Request r{tiles, {0, 1, 2, 3, -1}, QRect(0, 0, s->tk(), s->tq()), 48, 40, Pooling::Max};
    // the pool's threads held, so that the request is cancelled before any head begins
    QThreadPool *pool = QThreadPool::globalInstance();
    QThreadPool::globalInstance()->waitForDone();
    QSemaphore hold;
    const int threads = pool->maxThreadCount();
    for (int i = 0; i < threads; ++i)
        pool->start([&hold] { hold.acquire(); });
    maps.start(r);
    QVERIFY(maps.running());
    maps.cancel();
    QVERIFY(!maps.running());
    hold.release(threads);
    pool->waitForDone();
    QCoreApplication::processEvents();
    QCOMPARE(tiles->cachedEntries(), 0); // no map computed
    QVERIFY(came.empty());
    QCOMPARE(finished, 0);
    // replaced: only the newer request's heads, in its order
    for (int i = 0; i < threads; ++i)
        pool->start([&hold] { hold.acquire(); });
    maps.start(r);
    LongTextMaps::Request newer = r;
    newer.heads = {2, 0};
    maps.start(newer);
    hold.release(threads);
    QTRY_COMPARE(finished, 1);
    pool->waitForDone();
    QCoreApplication::processEvents();
    QCOMPARE(came, (std::vector<int>{2, 0}));
    QVERIFY(!maps.running());
}

// The lens, attribution and the residual stream on a long text: the window of positions ending just
// after the selected row, computed on the pool; the lens's column at the selected row equals the lens
// of a short text, the whole prefix to the token after it (every layer's top token, its probability,
// the next token's probability and the entropy to 1e-5); the views name the window, follow the
// selected row, and a row picked in a window selects the text's position.
void TestLongTextWindow::stageViewsReadWindow()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    const int t = s->tq(), query = 300;
    win.w.session()->setSelectedQuery(query);
    QCoreApplication::processEvents();
    QVERIFY(win.w.showView(QStringLiteral("lens")));
    auto *lens = qobject_cast<LogitLensView *>(win.w.viewWidget(QStringLiteral("lens")));
    QVERIFY(lens);
    const auto [p0, p1] = LongTextWindows::range(query, t);
    QCOMPARE(p0, query + 2 - LongTextWindows::kSize);
    QCOMPARE(p1, query + 2);
    const QString note = QStringLiteral("positions %L1–%L2 of %L3").arg(p0).arg(p1 - 1).arg(t);
    QTRY_VERIFY_WITH_TIMEOUT(lens->positionCount() == p1 - p0 && lens->selectedReady(), 60000);
    QVERIFY2(lens->title().contains(note), qPrintable(lens->title()));
    QCOMPARE(lens->selectedPosition(), query - p0);
    // positions named as the text's, on hover and on the thinned axis ("650 ␣fox", not "12 ␣fox")
    QVERIFY2(lens->cellText(0, query - p0).contains(QStringLiteral("(position %1)").arg(query)),
             qPrintable(lens->cellText(0, query - p0)));
    for (QCPAxisRect *r : lens->findChild<QCustomPlot *>()->axisRects())
        if (auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(r->axis(QCPAxis::atBottom)->ticker()))
            for (const QString &label : ticker->ticks()) {
                bool number = false;
                const int at = label.section(QLatin1Char(' '), 0, 0).toInt(&number);
                QVERIFY2(!number || !label.contains(QLatin1Char(' ')) || (at >= p0 && at < p1), qPrintable(label));
            }
    // the short text of the whole prefix, every stage kept: its lens at the same position
    TraceRequest req;
    for (int i = 0; i < p1; ++i)
        req.ids.push_back(m_full.tokens[size_t(i)].id);
    Trace<float> prefix;
    QVERIFY(m_model->trace(req, prefix).ok());
    std::vector<LensCell> want;
    QVERIFY(lensColumn(*m_model, prefix, query, 5, want).ok());
    QCOMPARE(int(want.size()), lens->layerCount());
    for (int l = 0; l < lens->layerCount(); ++l) {
        const LensCell &got = lens->grid().at(l, query - p0);
        QCOMPARE(got.top.front().id, want[size_t(l)].top.front().id);
        QVERIFY(std::abs(got.top.front().p - want[size_t(l)].top.front().p) < 1e-5);
        QCOMPARE(got.actualRank, want[size_t(l)].actualRank);
        QVERIFY(std::abs(got.actualP - want[size_t(l)].actualP) < 1e-5);
        QVERIFY(std::abs(got.entropy - want[size_t(l)].entropy) < 1e-5);
    }
    // attribution and the residual stream: the same window, the text's position named
    QVERIFY(win.w.showView(QStringLiteral("dla")));
    auto *dla = qobject_cast<DlaView *>(win.w.viewWidget(QStringLiteral("dla")));
    QTRY_VERIFY_WITH_TIMEOUT(dla->title().contains(note), 60000);
    QVERIFY2(dla->title().contains(QStringLiteral("(position %1)").arg(query)), qPrintable(dla->title()));
    QVERIFY(win.w.showView(QStringLiteral("residual")));
    auto *residual = qobject_cast<ResidualView *>(win.w.viewWidget(QStringLiteral("residual")));
    QTRY_VERIFY_WITH_TIMEOUT(residual->title().contains(note), 60000);
    // the window follows the selected row
    win.w.showView(QStringLiteral("lens"));
    win.w.session()->setSelectedQuery(100);
    const QString moved = QStringLiteral("positions %L1–%L2 of %L3").arg(102 - LongTextWindows::kSize).arg(101).arg(t);
    QTRY_VERIFY_WITH_TIMEOUT(lens->title().contains(moved) && lens->selectedReady(), 60000);
    QCOMPARE(lens->selectedPosition(), 100 - (102 - LongTextWindows::kSize));
    // a row picked in the window is the text's
    emit lens->querySelected(10);
    QCOMPARE(win.w.session()->selectedQuery(), 102 - LongTextWindows::kSize + 10);
}

// The Pipeline and Contextual embeddings tabs on a long text read the same window of positions as the
// lens: every stage matrix of the window (the input, Q, K and V as projected and turned, the scores,
// the mask, the weights, the context, the heads concatenated, the output) equals the same rows (and,
// for the t x t stages, columns) of the short-text path's pipeline on the whole text, where every
// weight was kept; the embeddings' change norms and cosines likewise; both name their positions.
void TestLongTextWindow::pipelineAndEmbeddingsReadWindow()
{
    using K = PipelineView::StageKind;
    const int query = 300, layer = 1, head = 1;
    const auto weightsOf = [](PipelineView *v) {
        const int i = v->indexOf(K::Weights);
        return i >= 0 ? v->stageMatrix(i) : nullptr;
    };
    const auto pick = [&](Window &w, const QString &view) {
        w.w.session()->setSelectedLayer(layer);
        selectHead(w, head);
        w.w.session()->setSelectedQuery(query);
        QCoreApplication::processEvents();
        return w.w.showView(view);
    };
    // the short-text path: the whole text under the default budget, every weight and stage kept
    QHash<int, Mat<float>> stages;
    QVector<double> norms, cosines;
    int t = 0;
    {
        qunsetenv("ATTNVIZ_TRACE_BUDGET_KB");
        const auto budget = qScopeGuard([] { qputenv("ATTNVIZ_TRACE_BUDGET_KB", "4096"); });
        Window ref;
        const SnapshotPtr full = showLong(ref);
        QVERIFY(full && full->hasResult() && !full->longText);
        t = full->tq();
        QVERIFY(pick(ref, QStringLiteral("pipeline")));
        auto *theirs = qobject_cast<PipelineView *>(ref.w.viewWidget(QStringLiteral("pipeline")));
        QTRY_VERIFY_WITH_TIMEOUT(weightsOf(theirs) && weightsOf(theirs)->rows() == t, 60000);
        QCOMPARE(theirs->shownHead(), head);
        for (int i = 0; i < theirs->stageCount(); ++i)
            if (const Mat<float> *m = theirs->stageMatrix(i))
                stages.insert(int(theirs->stageKind(i)), *m);
        QVERIFY(ref.w.showView(QStringLiteral("embeddings")));
        auto *emb = qobject_cast<EmbeddingView *>(ref.w.viewWidget(QStringLiteral("embeddings")));
        QTRY_COMPARE(int(emb->changeNorms().size()), t);
        norms = emb->changeNorms();
        cosines = emb->cosines();
    }
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QCOMPARE(s->tq(), t);
    const auto [p0, p1] = LongTextWindows::range(query, t);
    const int n = p1 - p0;
    const QString note = QStringLiteral("positions %L1–%L2 of %L3").arg(p0).arg(p1 - 1).arg(t);
    QVERIFY(pick(win, QStringLiteral("pipeline")));
    auto *mine = qobject_cast<PipelineView *>(win.w.viewWidget(QStringLiteral("pipeline")));
    QVERIFY(mine);
    QTRY_VERIFY_WITH_TIMEOUT(weightsOf(mine) && weightsOf(mine)->rows() == n, 60000);
    QCOMPARE(mine->shownHead(), head);
    QVERIFY2(shownTexts(mine).contains(QStringLiteral("Positions %L1–%L2 of %L3 around the selected query").arg(p0).arg(p1 - 1).arg(t)),
             qPrintable(shownTexts(mine)));
    const QList<K> square{K::RawScores, K::Scaled, K::Masked, K::Weights};
    QList<K> compared;
    double worstError = 0;
    for (int i = 0; i < mine->stageCount(); ++i) {
        const K kind = mine->stageKind(i);
        const Mat<float> *a = mine->stageMatrix(i);
        if (!a) { // only the MLP's products, which a window does not keep
            QVERIFY2(kind == K::MlpGate || kind == K::MlpActivated || kind == K::MlpUp || kind == K::MlpProduct,
                     qPrintable(mine->stageName(i) + QStringLiteral(": ") + mine->stageMessage(i)));
            continue;
        }
        if (!stages.contains(int(kind))) { // the short text's scores are too many to derive: from its Q and K
            QVERIFY2(kind == K::RawScores || kind == K::Scaled || kind == K::Masked, qPrintable(mine->stageName(i)));
            const Mat<float> &q = stages[int(K::QRotated)], &k = stages[int(K::KRotated)];
            const AttentionResult<float> &att = s->attention(layer);
            Mat<float> raw = q * k.transpose();
            if (kind != K::RawScores)
                raw *= float(att.scale);
            if (kind == K::Masked)
                for (int r = 0; r < t; ++r)
                    for (int c = 0; c < t; ++c)
                        if (c > r || (att.window > 0 && r - att.window >= c))
                            raw(r, c) = -std::numeric_limits<float>::infinity();
            stages.insert(int(kind), raw);
        }
        const Mat<float> &b = stages[int(kind)];
        const Mat<float> want = square.contains(kind) ? Mat<float>(b.block(p0, p0, n, n)) : Mat<float>(b.middleRows(p0, n));
        QCOMPARE(a->rows(), want.rows());
        QCOMPARE(a->cols(), want.cols());
        for (Eigen::Index r = 0; r < a->rows(); ++r)
            for (Eigen::Index c = 0; c < a->cols(); ++c) {
                const float x = (*a)(r, c), y = want(r, c);
                if (std::isinf(y)) { // a masked score
                    QVERIFY2(x == y, qPrintable(mine->stageName(i)));
                    continue;
                }
                const double e = std::abs(double(x) - double(y)) / std::max(1.0, std::abs(double(y)));
                worstError = std::max(worstError, e);
                QVERIFY2(e < 2e-5, qPrintable(QStringLiteral("%1 (%2, %3): %4 vs %5").arg(mine->stageName(i)).arg(r).arg(c).arg(x).arg(y)));
            }
        compared << kind;
    }
    qInfo("pipeline window: worst relative difference %.3g over %lld stages", worstError, qlonglong(compared.size()));
    for (K kind : {K::Input, K::Q, K::K, K::V, K::QRotated, K::KRotated, K::RawScores, K::Scaled, K::Masked, K::Weights,
                   K::Context, K::Concat, K::Output})
        QVERIFY2(compared.contains(kind), qPrintable(mine->stageName(mine->indexOf(kind))));
    // the masked scores are the causal ones: nothing after the query
    const Mat<float> &masked = *mine->stageMatrix(mine->indexOf(K::Masked));
    QVERIFY(std::isinf(masked(0, 1)) && !std::isinf(masked(1, 0)));
    // a click on the context says where the rest of its sum comes from
    QVERIFY(mine->explainCell(mine->indexOf(K::Context), query - p0, 0));
    QVERIFY2(mine->explanation().contains(QStringLiteral("keys before them add the rest")), qPrintable(mine->explanation()));
    QVERIFY2(mine->explanation().contains(QStringLiteral("row %L1 is position %L2").arg(query - p0).arg(query)), qPrintable(mine->explanation()));

    // the contextual embeddings: the same window, the same numbers as the short text's rows
    QVERIFY(win.w.showView(QStringLiteral("embeddings")));
    auto *emb = qobject_cast<EmbeddingView *>(win.w.viewWidget(QStringLiteral("embeddings")));
    QVERIFY(emb);
    QTRY_VERIFY_WITH_TIMEOUT(emb->changeNorms().size() == n, 60000);
    QVERIFY2(emb->title().contains(note), qPrintable(emb->title()));
    for (int i = 0; i < n; ++i) {
        QVERIFY(std::abs(emb->changeNorms()[i] - norms[p0 + i]) < 1e-4 * std::max(1.0, norms[p0 + i]));
        QVERIFY(std::abs(emb->cosines()[i] - cosines[p0 + i]) < 1e-5);
    }
}

// The Rollout tab on a long text: the selected query's row up to the selected layer, computed off the
// GUI thread through the tiles, equals that row of the full rollout of the trace that kept every
// weight (1e-6); another query or layer computes anew, the row asked last wins; the title says it
// is one query's row.
void TestLongTextWindow::rolloutRowOfSelectedQuery()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    const int t = s->tq();
    const std::vector<Mat<double>> full = attentionRollout(m_full);
    QCOMPARE(int(full.size()), s->numLayers());
    win.w.session()->setSelectedQuery(300);
    QCoreApplication::processEvents();
    QVERIFY(win.w.showView(QStringLiteral("rollout")));
    auto *rollout = qobject_cast<RolloutView *>(win.w.viewWidget(QStringLiteral("rollout")));
    QVERIFY(rollout);
    const auto check = [&](int query, int layer) {
        QTRY_VERIFY_WITH_TIMEOUT(!rollout->rowPending() && rollout->rowQuery() == query && rollout->rolloutLayer() == layer
                                     && rollout->ready(), 60000);
        double err = 0;
        for (int j = 0; j < t; ++j)
            err = std::max(err, std::abs(rollout->value(query, j) - full[size_t(layer)](query, j)));
        QVERIFY2(err < 1e-6, qPrintable(QStringLiteral("query %1 layer %2: %3").arg(query).arg(layer).arg(err)));
        QVERIFY(std::isnan(rollout->value(query + 1, 0))); // one row only
        QVERIFY2(rollout->title().contains(QStringLiteral("One query's row")), qPrintable(rollout->title()));
        QVERIFY2(rollout->title().contains(QStringLiteral("query %L1").arg(query)), qPrintable(rollout->title()));
    };
    check(300, 0);
    win.w.session()->setSelectedLayer(1);
    check(300, 1);
    // rows asked in turn: the last one's is drawn
    win.w.session()->setSelectedQuery(500);
    QCoreApplication::processEvents();
    win.w.session()->setSelectedQuery(900);
    check(900, 1);
    // the drawn cell of the row holds its value (the largest of the keys it covers)
    QVERIFY(std::abs(rollout->cellValue(900, 900) - rollout->value(900, 900)) < 1e-6 || t > 512);
    // a short text: the whole matrix again
    const SnapshotPtr brief = win.show(QStringLiteral("The quick brown fox jumps over the lazy dog."));
    QVERIFY(brief && !brief->longText);
    QTRY_VERIFY(rollout->ready() && rollout->rowQuery() == -1);
    QVERIFY(!rollout->title().contains(QStringLiteral("One query's row")));
}

// The norm-weighted switch on a long text: each weight times its key's ‖v W_O‖, read through the
// tiles. The Weights map (max and mean), the Selected query dock's row and the Rollout tab's row equal
// those of the full trace's norm-weighted matrices (reads.h normWeighted, attentionRollout of them),
// relative 1e-5 of the largest weight, and so do the Heads tab's panels; the titles say norm-weighted; turned off, the weights again.
void TestLongTextWindow::normWeightedSwitch()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    const int t = s->tq();
    QAction *sw = win.w.views()->normWeightedAction();
    QVERIFY(sw->isEnabled());
    sw->setChecked(true);
    QCoreApplication::processEvents();
    HeatmapView *hv = win.w.heatmapView();
    Trace<float> weighted = m_full; // the full trace's norm-weighted matrices, for the rollout
    for (int layer : {0, 1})
        for (int head : {1, -1}) {
            win.w.session()->setSelectedLayer(layer);
            selectHead(win, head);
            hv->refreshMap();
            Mat<float> want;
            QVERIFY(normWeighted(m_full, layer, head, want).ok());
            const double top = double(want.maxCoeff());
            QVERIFY2(top > 1.0, "norms past 1: not the weights"); // the fixture's value norms
            const Mat<float> &drawn = hv->mapCells();
            QCOMPARE(hv->mapRegion(), QRect(0, 0, t, t));
            QVERIFY(drawn.rows() < t);
            AttentionTiles<float> full(m_full, layer, AttentionTiles<float>::Source::Stored);
            Mat<float> norms;
            QVERIFY(valueNorms(m_full, layer, norms).ok());
            QVERIFY(full.setKeyWeights(norms));
            for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
                hv->setPooling(pool);
                const Mat<float> p = full.pooled(head, 0, t, 0, t, int(drawn.rows()), int(drawn.cols()), pool);
                QVERIFY2(worst(hv->mapCells(), p) < 1e-5 * top,
                         qPrintable(QStringLiteral("layer %1 head %2: %3").arg(layer).arg(head).arg(worst(hv->mapCells(), p))));
            }
            hv->setPooling(Pooling::Max);
            QVERIFY2(hv->title().startsWith(QStringLiteral("Norm-weighted attention ‖α·v·W_O‖")), qPrintable(hv->title()));
            win.w.session()->setSelectedQuery(250);
            QCoreApplication::processEvents();
            RowView *row = win.w.rowView();
            row->show();
            QTRY_COMPARE(int(row->values().size()), t);
            double err = 0;
            for (int j = 0; j < t; ++j)
                err = std::max(err, std::abs(row->values()[j] - double(want(250, j))));
            QVERIFY2(err < 1e-5 * top, qPrintable(QStringLiteral("row: %1").arg(err)));
            // the chart's axis follows the weighted values past 1, as on a short text
            const double rowTop = *std::max_element(row->values().begin(), row->values().end());
            const QCPRange yr = row->plot()->yAxis->range();
            QVERIFY2(yr.upper >= rowTop && yr.upper < 1.5 * rowTop + 0.05,
                     qPrintable(QStringLiteral("y axis %1–%2, values up to %3").arg(yr.lower).arg(yr.upper).arg(rowTop)));
            SequenceResult<float> &ws = weighted.layers[size_t(layer)].attention.batch.front();
            for (int h = -1; h < m_full.numHeads(); ++h) {
                Mat<float> w;
                QVERIFY(normWeighted(m_full, layer, h, w).ok());
                if (h < 0)
                    ws.weightsAvg = WeightMatrix<float>(w);
                else
                    ws.weights[size_t(h)] = WeightMatrix<float>(w);
            }
        }
    // the rollout's row: that of the norm-weighted matrices (their rows as shares)
    const std::vector<Mat<double>> full = attentionRollout(weighted);
    win.w.session()->setSelectedQuery(700);
    QCoreApplication::processEvents();
    QVERIFY(win.w.showView(QStringLiteral("rollout")));
    auto *rollout = qobject_cast<RolloutView *>(win.w.viewWidget(QStringLiteral("rollout")));
    QVERIFY(rollout);
    QTRY_VERIFY_WITH_TIMEOUT(!rollout->rowPending() && rollout->rowQuery() == 700 && rollout->rolloutLayer() == 1 && rollout->ready(), 60000);
    double err = 0;
    for (int j = 0; j < t; ++j)
        err = std::max(err, std::abs(rollout->value(700, j) - full[1](700, j)));
    QVERIFY2(err < 1e-5, qPrintable(QStringLiteral("rollout row: %1").arg(err)));
    QVERIFY2(rollout->title().contains(normWeightedLabel()), qPrintable(rollout->title()));
    QVERIFY2(rollout->explanation().startsWith(QStringLiteral("Norm-weighted attention rollout")), qPrintable(rollout->explanation()));
    // the Heads tab's panels (layer 1): each head's and the average's map of the weighted matrices
    HeadGridView *grid = win.w.headGridView();
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    QTRY_VERIFY_WITH_TIMEOUT(grid->panelCount() > 0 && !grid->mapsPending(), 60000);
    AttentionTiles<float> weighted1(m_full, 1, AttentionTiles<float>::Source::Stored);
    Mat<float> norms1;
    QVERIFY(valueNorms(m_full, 1, norms1).ok());
    QVERIFY(weighted1.setKeyWeights(norms1));
    for (int n = 0; n < grid->panelCount(); ++n) {
        const int head = grid->headOfPanel(n);
        const Mat<float> &cells = grid->mapCells(head);
        QVERIFY(cells.size() > 0);
        const Mat<float> want = weighted1.pooled(head, 0, t, 0, t, int(cells.rows()), int(cells.cols()), Pooling::Max);
        QVERIFY2(worst(cells, want) < 1e-5 * std::max(1.0f, want.maxCoeff()),
                 qPrintable(QStringLiteral("Heads tab, head %1: %2").arg(head).arg(worst(cells, want))));
    }
    QVERIFY2(grid->title().contains(normWeightedLabel()), qPrintable(grid->title()));
    // off: the weights themselves again
    sw->setChecked(false);
    QCoreApplication::processEvents();
    win.w.showView(QStringLiteral("weights"));
    win.w.session()->setSelectedLayer(0);
    selectHead(win, 1);
    hv->refreshMap();
    QVERIFY(hv->title().startsWith(QStringLiteral("Attention weights")) && !hv->title().contains(normWeightedLabel()));
    const AttentionTiles<float> plain(m_full, 0, AttentionTiles<float>::Source::Stored);
    const Mat<float> &drawn = hv->mapCells();
    QVERIFY(worst(drawn, plain.pooled(1, 0, t, 0, t, int(drawn.rows()), int(drawn.cols()), Pooling::Max)) < 1e-5);
}

// Compare's maps follow zoom as the Weights map does: each of A, B and the difference is computed
// again for the region its plot shows once a zoom stops, pooled while that region is wider than
// kPooledCells, then single cells (the weights themselves, their numbers drawn). The cells equal the
// full matrices' (1e-5): pooled by the max and the mean, and the difference that of A's and B's maps
// of the difference plot's region, whichever regions A and B show.
void TestLongTextWindow::compareFollowsZoom()
{
    Window win;
    const int head = 2;
    CompareView *cv = compareLayers(win, head);
    QVERIFY(cv);
    const int t = win.w.session()->snapshot()->tq();
    const auto settled = [&] {
        return cv->isCurrent() && !cv->mapsPending() && cv->showsPooled() && cv->pooledA().size() > 0 &&
               cv->pooledB().size() > 0 && cv->pooledDifference().size() > 0 && cv->sessionB()->snapshot() &&
               cv->sessionB()->snapshot()->longText && cv->sessionB()->selectedLayer() == 1;
    };
    QTRY_VERIFY_WITH_TIMEOUT(settled() && cv->pooledRegionA() == QRect(0, 0, t, t), 60000);
    const Mat<float> fullA = m_full.weights(0, head).toDense(), fullB = m_full.weights(1, head).toDense();
    const AttentionTiles<float> storedA(m_full, 0, AttentionTiles<float>::Source::Stored);
    const AttentionTiles<float> storedB(m_full, 1, AttentionTiles<float>::Source::Stored);
    const auto poolOf = [](const Mat<float> &full, const QRect &g, int outR, int outC, Pooling pool) {
        return pooledRegion(full.cast<double>(), g, outR, outC, pool);
    };
    const auto off = [](const Mat<float> &got, const Mat<double> &want) {
        return got.rows() == want.rows() && got.cols() == want.cols() ? (got.cast<double>() - want).cwiseAbs().maxCoeff() : 1e9;
    };
    // A: rows 600–999 x keys 100–899 (pooled, 400 x 800 cells); B: rows 640–759 x keys 520–759
    // (single cells); the difference: rows 200–299 x keys 150–299 (single), then 0–767 x 0–1023 (pooled)
    const QRect zoomA(100, 600, 800, 400), zoomB(520, 640, 240, 120);
    for (const QRect &zoomD : {QRect(150, 200, 150, 100), QRect(0, 0, 1024, 768)})
        for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
            const QString name = (pool == Pooling::Max ? QStringLiteral("max") : QStringLiteral("mean")) +
                                 QStringLiteral(", difference over %1 x %2").arg(zoomD.width()).arg(zoomD.height());
            win.w.heatmapView()->meanPoolingAction()->setChecked(pool == Pooling::Mean);
            QCOMPARE(cv->pooling(), pool);
            cv->pairZoom()->zoomTo(QRectF(zoomA.left(), zoomA.top(), zoomA.width() - 1, zoomA.height() - 1), cv->rectA());
            cv->pairZoom()->zoomTo(QRectF(zoomB.left(), zoomB.top(), zoomB.width() - 1, zoomB.height() - 1), cv->rectB());
            cv->differenceZoom()->zoomTo(QRectF(zoomD.left(), zoomD.top(), zoomD.width() - 1, zoomD.height() - 1));
            QTRY_VERIFY_WITH_TIMEOUT(settled() && cv->pooledRegionA() == zoomA && cv->pooledRegionB() == zoomB &&
                                         cv->differenceRegion() == zoomD,
                                     60000);
            // A pooled (at most kPooledCells a side), B single cells
            QCOMPARE(int(cv->pooledA().rows()), CompareView::kPooledCells);
            QCOMPARE(int(cv->pooledA().cols()), CompareView::kPooledCells);
            const double da = off(cv->pooledA(), poolOf(fullA, zoomA, CompareView::kPooledCells, CompareView::kPooledCells, pool));
            QVERIFY2(da < 1e-5, qPrintable(name + QStringLiteral(": A off by %1").arg(da)));
            QCOMPARE(int(cv->pooledB().rows()), zoomB.height());
            QCOMPARE(int(cv->pooledB().cols()), zoomB.width());
            const double db = off(cv->pooledB(), fullB.block(zoomB.top(), zoomB.left(), zoomB.height(), zoomB.width()).cast<double>());
            QVERIFY2(db < 1e-5, qPrintable(name + QStringLiteral(": B off by %1").arg(db)));
            QVERIFY2(cv->titleB().contains(QStringLiteral("single weights")), qPrintable(cv->titleB()));
            QVERIFY2(cv->titleA().contains(QStringLiteral("queries 600–999, keys 100–899")), qPrintable(cv->titleA()));
            // the difference: A's and B's maps of its own region
            const int outR = std::min(zoomD.height(), CompareView::kPooledCells), outC = std::min(zoomD.width(), CompareView::kPooledCells);
            const Mat<double> pa = poolOf(fullA, zoomD, outR, outC, pool), pb = poolOf(fullB, zoomD, outR, outC, pool);
            const double dd = off(cv->pooledDifference(), pa - pb);
            QVERIFY2(dd < 1e-5, qPrintable(name + QStringLiteral(": difference off by %1").arg(dd)));
            if (pool == Pooling::Mean) { // the mean is linear: the mean-pooled difference of the weights
                const Mat<float> diff = fullA - fullB;
                QVERIFY(off(cv->pooledDifference(), poolOf(diff, zoomD, outR, outC, Pooling::Mean)) < 1e-5);
            }
            QVERIFY(cv->maxAbsDifference() > 0.0);
        }
    // home again: the whole matrices at most kPooledCells a side
    win.w.heatmapView()->meanPoolingAction()->setChecked(false);
    cv->pairZoom()->reset();
    cv->differenceZoom()->reset();
    QTRY_VERIFY_WITH_TIMEOUT(settled() && cv->pooledRegionA() == QRect(0, 0, t, t) && cv->differenceRegion() == QRect(0, 0, t, t), 60000);
    QCOMPARE(int(cv->pooledA().rows()), std::min(t, CompareView::kPooledCells));
}

// Compare on a long text: A and B the same long text at layers 0 and 1, A's selected head on both.
// Each side is the Weights tab's pooled map of its layer's full matrix (1e-5); A − B is A's map
// minus B's, which pooled by the mean (the Weights tab's switch) is the mean-pooled difference of
// the full matrices (1e-5), and pooled by the max a difference of maxima, as its title says. A long
// text beside a short one says in one line what Compare needs.
void TestLongTextWindow::compareLongTexts()
{
    Window win;
    const int head = 2;
    CompareView *cv = compareLayers(win, head);
    QVERIFY(cv);
    const int t = win.w.session()->snapshot()->tq();
    const int n = std::min(t, CompareView::kPooledCells);
    const auto settled = [&] {
        return cv->isCurrent() && !cv->mapsPending() && cv->showsPooled() && cv->pooledA().rows() == n &&
               cv->pooledB().rows() == n && cv->sessionB()->snapshot() && cv->sessionB()->snapshot()->longText;
    };
    QTRY_VERIFY_WITH_TIMEOUT(settled(), 60000);
    QCOMPARE(cv->comparedHead(), head);
    const Mat<float> fullA = m_full.weights(0, head).toDense(), fullB = m_full.weights(1, head).toDense();
    const AttentionTiles<float> storedA(m_full, 0, AttentionTiles<float>::Source::Stored);
    const AttentionTiles<float> storedB(m_full, 1, AttentionTiles<float>::Source::Stored);
    for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
        win.w.heatmapView()->meanPoolingAction()->setChecked(pool == Pooling::Mean); // the Weights tab's switch
        QCOMPARE(cv->pooling(), pool);
        QTRY_VERIFY_WITH_TIMEOUT(settled(), 60000);
        const QString name = pool == Pooling::Max ? QStringLiteral("max") : QStringLiteral("mean");
        const double da = worst(cv->pooledA(), storedA.pooled(head, 0, t, 0, t, n, n, pool));
        const double db = worst(cv->pooledB(), storedB.pooled(head, 0, t, 0, t, n, n, pool));
        QVERIFY2(da < 1e-5 && db < 1e-5, qPrintable(name + QStringLiteral(": A %1, B %2 (B layer %3) ").arg(da).arg(db).arg(cv->sessionB()->selectedLayer()) + cv->titleB()));
        QVERIFY(worst(cv->pooledDifference(), Mat<float>(cv->pooledA() - cv->pooledB())) == 0.0);
        QVERIFY2(cv->titleA().contains(QStringLiteral("Long text")), qPrintable(cv->titleA()));
        if (pool == Pooling::Mean) {
            const Mat<double> want = pooledRegion(fullA.cast<double>() - fullB.cast<double>(), QRect(0, 0, t, t), n, n, Pooling::Mean);
            const double d = (cv->pooledDifference().cast<double>() - want).cwiseAbs().maxCoeff();
            QVERIFY2(d < 1e-5, qPrintable(QStringLiteral("mean-pooled difference off by %1").arg(d)));
            QVERIFY2(cv->differenceTitle().contains(QStringLiteral("mean-pooled difference of the weights")), qPrintable(cv->differenceTitle()));
        } else {
            QVERIFY2(cv->differenceTitle().contains(QStringLiteral("a difference of maxima")), qPrintable(cv->differenceTitle()));
        }
        QVERIFY(cv->maxAbsDifference() > 0.01); // layers 0 and 1 differ
    }
    win.w.heatmapView()->meanPoolingAction()->setChecked(false);
    // B a short text: no cells pair up, said in one line
    cv->sessionB()->setSentence(QStringLiteral("The quick brown fox jumps over the lazy dog."));
    QTRY_VERIFY_WITH_TIMEOUT(cv->isCurrent() && !cv->showsPooled(), 60000);
    QVERIFY2(cv->messageA().contains(QStringLiteral("the other side a long text of the same length")), qPrintable(cv->messageA()));
}

// The Lines view on a long text: the selected query's row only, read through AttentionTiles, its
// strongest keys drawn with their weights (the full trace's row to 1e-6), and the view says so.
void TestLongTextWindow::linesDrawOneRow()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QVERIFY(win.w.showView(QStringLiteral("lines")));
    LinesView *view = win.w.linesView();
    const int query = 700, layer = 1;
    win.w.session()->setSelectedLayer(layer);
    selectHead(win, 2);
    win.w.session()->setSelectedQuery(query);
    QTRY_VERIFY(view->firstQuery() == query && view->shownQueries() == 1 && !view->longTextKeys().empty());
    QVERIFY2(view->title().contains(QStringLiteral("one query's row is drawn, query 700's")), qPrintable(view->title()));
    QVERIFY(!view->title().contains(QStringLiteral("not yet")));
    // the row read equals the tiles' and the full trace's
    const auto tiles = longTextTiles(*win.w.session()->snapshot(), layer);
    QVERIFY(tiles);
    const Mat<float> row = tiles->wholeRows(2, {query});
    QCOMPARE(int(view->longTextRows().size()), 1);
    QCOMPARE(view->shownHeads().front(), 2);
    const std::vector<float> &read = view->longTextRows().front();
    QCOMPARE(int(read.size()), s->tq());
    const WeightMatrix<float> &full = m_full.weights(layer, 2);
    double worstTiles = 0, worstFull = 0;
    for (int j = 0; j < s->tq(); ++j) {
        worstTiles = std::max(worstTiles, std::abs(double(read[size_t(j)]) - double(row(0, j))));
        worstFull = std::max(worstFull, std::abs(double(read[size_t(j)]) - double(full(query, j))));
    }
    QVERIFY2(worstTiles <= 1e-6, qPrintable(QString::number(worstTiles)));
    QVERIFY2(worstFull <= 1e-5, qPrintable(QString::number(worstFull))); // recomputed in float32, as the Selected query row
    // the keys drawn: the row's 20 largest (of the keys its sliding window lets it weigh), in text
    // order, each line with its weight
    std::vector<int> order;
    for (int j = 0; j < s->tq(); ++j)
        if (full(query, j) != 0.0f)
            order.push_back(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return full(query, a) > full(query, b); });
    const std::vector<int> keys = view->longTextKeys();
    QCOMPARE(int(keys.size()), std::min(int(order.size()), LinesView::kLongTextKeys));
    QVERIFY(std::is_sorted(keys.begin(), keys.end()));
    const float cut = full(query, order[keys.size() - 1]);
    for (int j : keys)
        QVERIFY2(full(query, j) >= cut - 1e-5f, qPrintable(QString::number(j)));
    int lines = 0;
    for (const LinesView::Line &l : view->lines()) {
        QCOMPARE(l.query, query);
        QVERIFY(std::binary_search(keys.begin(), keys.end(), l.key));
        QVERIFY(std::abs(l.weight - double(row(0, l.key))) <= 1e-6);
        ++lines;
    }
    QVERIFY(lines > 0);
    // its labels: drawn where the hit test finds them
    QVERIFY(!view->tokenRect(LinesView::Side::Query, query).isEmpty());
    QVERIFY(!view->tokenRect(LinesView::Side::Key, keys.back()).isEmpty());
    QVERIFY(view->tokenRect(LinesView::Side::Query, query - 1).isEmpty());
    // every head: one row each, the union of their keys
    win.w.session()->setHeadDisplay(HeadDisplay::All);
    QTRY_COMPARE(int(view->longTextRows().size()), s->trace->numHeads());
    QVERIFY(view->longTextKeys().size() >= keys.size());
    // a model without a sliding window (llama-tiny): the row's 20 strongest keys of ~1,000
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    QVERIFY(win.settle());
    QTRY_VERIFY(win.w.session()->snapshot()->longText && win.w.session()->snapshot()->hasResult() &&
                win.w.session()->snapshot()->model != s->model);
    win.w.session()->setHeadDisplay(HeadDisplay::One);
    win.w.session()->setSelectedHead(1);
    win.w.session()->setSelectedLayer(0);
    QTRY_VERIFY(view->shownHeads() == std::vector<int>{1} && view->firstQuery() == query);
    const auto llamaTiles = longTextTiles(*win.w.session()->snapshot(), 0);
    QVERIFY(llamaTiles);
    const Mat<float> llamaRow = llamaTiles->wholeRows(1, {query});
    QCOMPARE(int(view->longTextKeys().size()), LinesView::kLongTextKeys);
    std::vector<float> sorted(llamaRow.data(), llamaRow.data() + llamaRow.size());
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int j : view->longTextKeys())
        QVERIFY(llamaRow(0, j) >= sorted[size_t(LinesView::kLongTextKeys - 1)]);
    for (int j = 0; j < int(llamaRow.cols()); ++j)
        QVERIFY(std::abs(double(view->longTextRows().front()[size_t(j)]) - double(llamaRow(0, j))) <= 1e-6);
}

namespace {

double worstOf(const Mat<double> &want, const std::function<double(int, int)> &got)
{
    double worst = 0;
    for (int l = 0; l < int(want.rows()); ++l)
        for (int h = 0; h < int(want.cols()); ++h) {
            const double a = want(l, h), b = got(l, h);
            if (std::isnan(a) != std::isnan(b))
                return 1e9;
            if (!std::isnan(a))
                worst = std::max(worst, std::abs(a - b));
        }
    return worst;
}

// `full` with every head's (and the mean's) weights replaced by its norm-weighted matrix made into
// shares of each row: what the grid reads with the norm-weighted switch on.
bool normWeightedShares(const Trace<float> &full, Trace<float> &shares)
{
    shares = full;
    for (int l = 0; l < full.numLayers(); ++l) {
        SequenceResult<float> &ws = shares.layers[size_t(l)].attention.batch.front();
        for (int h = -1; h < full.numHeads(); ++h) {
            Mat<float> w;
            if (!normWeighted(full, l, h, w).ok())
                return false;
            makeRowShares(w);
            (h < 0 ? ws.weightsAvg : ws.weights[size_t(h)]) = WeightMatrix<float>(w);
        }
    }
    return true;
}

} // namespace

// The Layers tab on a long text: no thumbnails of the weights, a reading per head (sink mass until
// another is chosen) and the text's role scores, computed on the pool through AttentionTiles, equal
// to the core's on the trace that kept every weight.
void TestLongTextWindow::headRolesReadLongText()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    QVERIFY(view);
    QTRY_VERIFY(view->layerCount() > 0 && !view->computing());
    QCOMPARE(view->layerCount(), m_full.numLayers());
    QCOMPARE(view->shownReading(), int(HeadReading::SinkMass));
    QVERIFY2(!view->note().contains(QStringLiteral("not yet")), qPrintable(view->note()));
    auto *chooser = view->findChild<QComboBox *>(QStringLiteral("headRolesReading"));
    QVERIFY(chooser);
    QCOMPARE(chooser->currentData().toInt(), int(HeadReading::SinkMass)); // the weights' entry: not on a long text
    QVERIFY2(view->note().contains(QStringLiteral("Long text")), qPrintable(view->note()));
    using R = HeadRolesView::Role;
    const std::pair<R, Mat<double>> roles[] = {{R::PreviousToken, previousTokenScores(m_full)},
                                               {R::FirstToken, firstTokenScores(m_full)},
                                               {R::SameToken, sameTokenScores(m_full)},
                                               {R::Self, selfScores(m_full)}};
    for (const auto &[role, want] : roles) {
        const double d = worstOf(want, [&](int l, int h) { return view->score(role, l, h); });
        QVERIFY2(d < 1e-5, qPrintable(HeadRolesView::roleName(role) + QStringLiteral(": %1").arg(d)));
    }
    QVERIFY(worstOf(sinkMassScores(m_full), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    // entropy over 256 evenly spaced rows of the ~1,000, said in the note
    view->setReading(int(HeadReading::Entropy));
    QTRY_VERIFY(!view->computing());
    QVERIFY(worstOf(entropyScores(m_full), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-4);
    QVERIFY2(view->note().contains(QStringLiteral("256 evenly spaced query rows")), qPrintable(view->note()));
    // span mass over tokens set in the range fields
    auto *from = view->findChild<QSpinBox *>(QStringLiteral("headRolesSpanFrom"));
    auto *to = view->findChild<QSpinBox *>(QStringLiteral("headRolesSpanTo"));
    QVERIFY(from && to);
    view->setReading(int(HeadReading::SpanMass));
    from->setValue(100);
    to->setValue(120);
    QCOMPARE(view->span(), qMakePair(100, 120));
    QTRY_VERIFY(!view->computing());
    QVERIFY(worstOf(spanMassScores(m_full, 100, 120), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    QVERIFY2(view->note().contains(QStringLiteral("tokens 100–119")), qPrintable(view->note()));
    // the grid shows every head
    QCOMPARE(int(view->shownOrder().size()), m_full.numLayers() * m_full.numHeads());
}

// The norm-weighted switch on the Layers tab's readings: every score and reading of each head on
// each query's shares of ‖α·v·W_O‖, as the short text's grid reads the full weighted matrices made
// into shares (1e-5); off, the weights' own again.
void TestLongTextWindow::headRolesNormWeighted()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    QTRY_VERIFY(view->layerCount() > 0 && !view->computing());
    // the full trace's norm-weighted matrices, each row as shares of its sum
    Trace<float> shares;
    QVERIFY(normWeightedShares(m_full, shares));
    QAction *sw = win.w.views()->normWeightedAction();
    QVERIFY(sw->isEnabled());
    sw->setChecked(true);
    QCoreApplication::processEvents();
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing() && view->note().contains(QStringLiteral("‖α·v·W_O‖")), 60000);
    using R = HeadRolesView::Role;
    const std::pair<R, Mat<double>> roles[] = {{R::PreviousToken, previousTokenScores(shares)},
                                               {R::FirstToken, firstTokenScores(shares)},
                                               {R::SameToken, sameTokenScores(shares)},
                                               {R::Self, selfScores(shares)}};
    for (const auto &[role, want] : roles) {
        const double d = worstOf(want, [&](int l, int h) { return view->score(role, l, h); });
        QVERIFY2(d < 1e-5, qPrintable(HeadRolesView::roleName(role) + QStringLiteral(": %1").arg(d)));
    }
    // not the weights' own: the switch changes what the grid reads (by 1.3e-4 on this fixture)
    const double plainOff = worstOf(sinkMassScores(m_full), [&](int l, int h) { return view->readingValue(l, h); });
    const double sharesOff = worstOf(sinkMassScores(shares), [&](int l, int h) { return view->readingValue(l, h); });
    QVERIFY2(plainOff > 5e-5 && sharesOff < 1e-5, qPrintable(QStringLiteral("sink mass: %1 from the weights', %2 from the shares'").arg(plainOff).arg(sharesOff)));
    view->setReading(int(HeadReading::RecentMass));
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(worstOf(recentMassScores(shares), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    view->setReading(int(HeadReading::Entropy));
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(worstOf(entropyScores(shares), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-4);
    view->setReading(int(HeadReading::SpanMass));
    view->setSpan(100, 120);
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(worstOf(spanMassScores(shares, 100, 120), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    QVERIFY2(view->note().contains(QStringLiteral("Norm-weighted")), qPrintable(view->note()));
    // off: the weights' own scores again
    sw->setChecked(false);
    QCoreApplication::processEvents();
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing() && !view->note().contains(QStringLiteral("‖α·v·W_O‖")), 60000);
    QVERIFY(worstOf(previousTokenScores(m_full), [&](int l, int h) { return view->score(R::PreviousToken, l, h); }) < 1e-5);
    QVERIFY(worstOf(spanMassScores(m_full, 100, 120), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
}

// The Layers x heads grid's readings on a long text, norm-weighted (every row of every head summed:
// minutes at 32k tokens): after a moment the layers read show in a progress bar with Cancel;
// cancelled, the grid keeps what was read (here nothing: cancelled before the job began), says so,
// and "Compute again" reads every head, the shares' numbers; while the window computes a new trace
// the readings in flight stop and none start, and when it ends without one they start again.
void TestLongTextWindow::headReadingsProgressAndCancel()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    QTRY_VERIFY_WITH_TIMEOUT(view->layerCount() > 0 && !view->computing(), 60000);
    const int layers = view->layerCount();
    auto *progress = view->findChild<QProgressBar *>(QStringLiteral("headRolesProgress"));
    auto *cancel = view->findChild<QPushButton *>(QStringLiteral("headRolesCancel"));
    QVERIFY(progress && cancel);
    QVERIFY(!progress->isVisible() && !cancel->isVisible()); // done: nothing to show
    Trace<float> shares;
    QVERIFY(normWeightedShares(m_full, shares));
    // the readings' thread held: the readings asked wait to begin
    QThreadPool *pool = view->readingsPool();
    pool->waitForDone();
    QCOMPARE(pool->maxThreadCount(), 1);
    QSemaphore hold;
    const int threads = 1;
    pool->start([&hold] { hold.acquire(); });
    QAction *sw = win.w.views()->normWeightedAction();
    sw->setChecked(true);
    QCoreApplication::processEvents();
    QVERIFY(view->computing());
    QTRY_VERIFY(progress->isVisible() && cancel->isVisible());
    QCOMPARE(progress->maximum(), layers);
    QCOMPARE(progress->value(), 0);
    QVERIFY(cancel->isEnabled() && cancel->text() == QStringLiteral("Cancel"));
    if (const QString dir = qEnvironmentVariable("ATTNVIZ_WINDOW_SHOTS"); !dir.isEmpty())
        win.w.grab().save(dir + QStringLiteral("/w-longtext-readings-progress.png"));
    QTest::mouseClick(cancel, Qt::LeftButton);
    QVERIFY(!cancel->isEnabled());
    hold.release(threads);
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(view->readingsStopped());
    QCOMPARE(view->layersRead(), 0);
    QVERIFY(!progress->isVisible());
    QVERIFY(cancel->isVisible() && cancel->isEnabled() && cancel->text() == QStringLiteral("Compute again"));
    QVERIFY2(view->note().contains(QStringLiteral("Stopped after 0 of %1 layers").arg(layers)), qPrintable(view->note()));
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < view->headCount(); ++h)
            QVERIFY(std::isnan(view->readingValue(l, h)));
    if (const QString dir = qEnvironmentVariable("ATTNVIZ_WINDOW_SHOTS"); !dir.isEmpty())
        win.w.grab().save(dir + QStringLiteral("/w-longtext-readings-stopped.png"));
    // computed again: every head, the shares' numbers
    QTest::mouseClick(cancel, Qt::LeftButton);
    QVERIFY(view->computing());
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(!view->readingsStopped());
    QCOMPARE(view->layersRead(), layers);
    QVERIFY(!progress->isVisible() && !cancel->isVisible());
    QVERIFY(!view->note().contains(QStringLiteral("Stopped")));
    QVERIFY(worstOf(sinkMassScores(shares), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    using R = HeadRolesView::Role;
    QVERIFY(worstOf(previousTokenScores(shares), [&](int l, int h) { return view->score(R::PreviousToken, l, h); }) < 1e-5);
    // the window computes a new trace (its busy signal): the readings asked meanwhile wait for it
    pool->waitForDone();
    pool->start([&hold] { hold.acquire(); });
    view->setReading(int(HeadReading::RecentMass));
    QVERIFY(view->computing());
    emit win.w.session()->busyChanged(true, s->tq());
    QVERIFY(!view->computing()); // dropped: its job, when it begins, stops before its first layer
    view->setReading(int(HeadReading::Entropy));
    QVERIFY(!view->computing()); // none starts while the trace is computed
    hold.release(threads);
    pool->waitForDone();
    QCoreApplication::processEvents();
    QVERIFY(!view->computing());
    // ended without a new snapshot (cancelled): the snapshot's readings are computed after all
    emit win.w.session()->busyChanged(false, s->tq());
    QTRY_VERIFY(view->computing());
    QTRY_VERIFY_WITH_TIMEOUT(!view->computing(), 60000);
    QVERIFY(!view->readingsStopped());
    QVERIFY(worstOf(entropyScores(shares), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-4);
}

// "Use selection as span": tokens selected by a drag across the chips, or words selected in the
// text, become the span-mass reading's range.
void TestLongTextWindow::spanFromSelection()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    auto *use = view->findChild<QPushButton *>(QStringLiteral("headRolesUseSelection"));
    QVERIFY(use);
    QVERIFY(!use->isEnabled());
    // a drag from chip 100 to chip 119
    TokenChipsView *chips = win.w.queryChips();
    QVERIFY(chips->chipCount() > 120);
    QTest::mousePress(chips, Qt::LeftButton, {}, chips->chipRect(100).center());
    QTest::mouseMove(chips, chips->chipRect(119).center());
    QTest::mouseRelease(chips, Qt::LeftButton, {}, chips->chipRect(119).center());
    QCOMPARE(chips->selectedRange(), qMakePair(100, 120));
    QCOMPARE(view->selectedTokens(), qMakePair(100, 120));
    QVERIFY(use->isEnabled());
    use->click();
    QCOMPARE(view->span(), qMakePair(100, 120));
    QCOMPARE(view->shownReading(), int(HeadReading::SpanMass));
    QTRY_VERIFY(!view->computing());
    QVERIFY(worstOf(spanMassScores(m_full, 100, 120), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    // the span's key columns outlined on the Weights map, over every query row, and named in its title
    HeatmapView *hv = win.w.heatmapView();
    QCOMPARE(hv->markedKeys(), qMakePair(100, 120));
    QCOMPARE(hv->markedBand(), QRectF(QPointF(99.5, -0.5), QPointF(119.5, s->tq() - 0.5)));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    hv->refreshMap();
    QVERIFY2(hv->title().contains(QStringLiteral("Dashed blue band: keys 100–119, the span marked on the Layers tab")),
             qPrintable(hv->title()));
    {
        // drawn: the band's left edge in the outline's blue, at least 6 px wide where 20 keys take fewer pixels
        QCustomPlot *plot = hv->plot();
        plot->replot();
        const QImage img = plot->toPixmap().toImage();
        const double ratio = plot->toPixmap().devicePixelRatio();
        const int left = int(std::lround(plot->xAxis->coordToPixel(99.5) * ratio));
        const QRect axes = plot->axisRect()->rect();
        int blue = 0;
        for (int y = int(axes.top() * ratio) + 4; y < int(axes.bottom() * ratio) - 4; ++y)
            for (int x = left - 4; x <= left + 4; ++x) {
                const QColor c = img.pixelColor(x, y);
                if (c.red() < 40 && c.green() > 150 && c.green() < 230 && c.blue() > 220)
                    ++blue;
            }
        QVERIFY2(blue > axes.height() / 4, qPrintable(QString::number(blue)));
    }
    // cleared with the span: no band, no line in the title
    view->setSpan(0, 0);
    QCOMPARE(hv->markedKeys(), qMakePair(0, 0));
    QVERIFY(hv->markedBand().isNull());
    QVERIFY(!hv->title().contains(QStringLiteral("Dashed blue band")));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
        // a click on one chip ends the selection
    QTest::mouseClick(chips, Qt::LeftButton, {}, chips->chipRect(5).center());
    QCOMPARE(chips->selectedRange(), qMakePair(-1, -1));
    QVERIFY(!use->isEnabled());
    // words selected in the text: the tokens they overlap (tokens 300 to 309, past the chips' first rows)
    SentenceEdit *edit = win.w.sentenceEdit();
    const TraceToken &first = s->trace->tokens[300], &last = s->trace->tokens[309];
    QTextCursor c = edit->textCursor();
    c.setPosition(int(first.begin)); // the text is ASCII: bytes are characters
    c.setPosition(int(last.end), QTextCursor::KeepAnchor);
    edit->setTextCursor(c);
    QCOMPARE(view->selectedTokens(), qMakePair(300, 310));
    use->click();
    QCOMPARE(view->span(), qMakePair(300, 310));
    QTRY_VERIFY(!view->computing());
    QVERIFY(worstOf(spanMassScores(m_full, 300, 310), [&](int l, int h) { return view->readingValue(l, h); }) < 1e-5);
    QVERIFY2(view->note().contains(QStringLiteral("tokens 300–309")), qPrintable(view->note()));
}

void TestLongTextWindow::exportRefused()
{
    Window win;
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    QTemporaryDir dir;
    QString error;
    QVERIFY(!saveMatrices(*s, ExportView::Weights, 0, 0, 0, dir.filePath(QStringLiteral("w.csv")), &error));
    QVERIFY2(error.contains(QStringLiteral("not kept whole")), qPrintable(error));
    QVERIFY(!saveAllLayers(*s, dir.filePath(QStringLiteral("w.npy")), &error));
    QVERIFY2(error.contains(QStringLiteral("not kept whole")), qPrintable(error));
    // the figure is what is drawn: the map
    QVERIFY2(saveFigure(win.w.heatmapView()->plot(), dir.filePath(QStringLiteral("w.png")), {}, &error), qPrintable(error));
}

// A model whose weights are 16-bit keeps q, k and v so (Observe::sixteenBit): the map equals pooling
// what the core's own trace of that policy recomputes, and the full weights within 16-bit rounding.
void TestLongTextWindow::sixteenBitModel()
{
    Window win;
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    const SnapshotPtr s = win.show(longText());
    QVERIFY(s && s->longText);
    QVERIFY(s->trace->observed.sixteenBit);
    QVERIFY(!s->trace->cut());
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(fixture(QStringLiteral("llama-tiny")).toStdString(), {}, m).ok());
    TraceRequest req;
    req.text = longText().toStdString();
    Trace<float> full;
    QVERIFY(m->trace(req, full).ok());
    QCOMPARE(int(full.tokens.size()), s->tq());
    // the core's trace of the same policy: recomputed alike
    req.observe.weights = false;
    req.observe.stages = false;
    req.observe.sixteenBit = true;
    Trace<float> lean;
    QVERIFY(m->trace(req, lean).ok());
    HeatmapView *hv = win.w.heatmapView();
    hv->refreshMap();
    const Mat<float> &drawn = hv->mapCells();
    const int head = win.w.session()->shownHead();
    const Mat<float> same = AttentionTiles<float>(lean, 0).pooled(head, 0, s->tq(), 0, s->tk(), int(drawn.rows()),
                                                                  int(drawn.cols()), Pooling::Max);
    QVERIFY2(worst(drawn, same) < 1e-6, qPrintable(QString::number(worst(drawn, same))));
    // and the float forward's full weights within 16-bit rounding of q and k
    const Mat<float> want = AttentionTiles<float>(full, 0, AttentionTiles<float>::Source::Stored)
                                .pooled(head, 0, s->tq(), 0, s->tk(), int(drawn.rows()), int(drawn.cols()), Pooling::Max);
    QVERIFY2(worst(drawn, want) < 5e-2, qPrintable(QString::number(worst(drawn, want))));
}

void TestLongTextWindow::shortTextUnchanged()
{
    Window win;
    QVERIFY(win.w.openModel(fixture(QStringLiteral("mistral-tiny")), nullptr));
    const QString text = QStringLiteral("The quick brown fox jumps over the lazy dog.");
    const SnapshotPtr s = win.show(text);
    QVERIFY(s && s->hasResult());
    QVERIFY(!s->longText);
    QVERIFY(s->trace->observed.weights);
    const WeightMatrix<float> *shown = win.w.heatmapView()->shownMatrix();
    QVERIFY(shown);
    TraceRequest req;
    req.text = text.toStdString();
    Trace<float> full;
    QVERIFY(m_model->trace(req, full).ok());
    const Mat<float> w = full.weights(0, win.w.session()->shownHead()).toDense();
    QVERIFY((shown->toDense() - w).cwiseAbs().maxCoeff() < 1e-6);
    QCOMPARE(win.w.heatmapView()->mapCells().size(), Eigen::Index(0));
    QVERIFY(!win.w.heatmapView()->meanPoolingAction()->isVisible());
    QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("rollout")), s);
    // the Layers tab draws the weights until a reading is chosen; a reading equals the core's
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *roles = win.w.headRolesView();
    QTRY_VERIFY(roles->layerCount() > 0);
    QCOMPARE(roles->shownReading(), -1);
    QVERIFY(std::isnan(roles->readingValue(0, 0)));
    roles->setReading(int(HeadReading::SinkMass));
    QVERIFY(!roles->computing()); // a short text's on the GUI thread
    const Mat<double> sink = sinkMassScores(full);
    for (int l = 0; l < int(sink.rows()); ++l)
        for (int h = 0; h < int(sink.cols()); ++h)
            QVERIFY(std::abs(roles->readingValue(l, h) - sink(l, h)) < 1e-6);
    QVERIFY2(roles->note().contains(QStringLiteral("sink mass")), qPrintable(roles->note()));
    roles->setReading(-1);
}

// With ATTNVIZ_LONGTEXT_SHOTS=DIR: the window on README.md pasted until it is past 10,000 tokens
// (llama-tiny, the default budget), the whole map, a zoomed region and single cells, the Layers tab's
// readings, as PNGs; and the
// bundled model's 512 positions with a budget that makes them a long text.
void TestLongTextWindow::screenshots()
{
    qunsetenv("ATTNVIZ_TRACE_BUDGET_KB");
    const QString dir = qEnvironmentVariable("ATTNVIZ_LONGTEXT_SHOTS");
    if (dir.isEmpty())
        QSKIP("set ATTNVIZ_LONGTEXT_SHOTS=DIR to write the screenshots");
    QFile readme(QString::fromUtf8(ATTNVIZ_SOURCE_DIR) + QStringLiteral("/README.md"));
    QVERIFY(readme.open(QIODevice::ReadOnly));
    const QString once = QString::fromUtf8(readme.readAll());
    auto shoot = [&](Window &win, const QString &name) {
        for (int i = 0; i < 10; ++i) {
            QCoreApplication::processEvents();
            QTest::qWait(50);
        }
        win.w.heatmapView()->refreshMap();
        QCoreApplication::processEvents();
        win.w.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
    };
    {
        Window win;
        QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
        win.w.showView(QStringLiteral("weights"));
        std::unique_ptr<Model> llama;
        QVERIFY(openPretrained(fixture(QStringLiteral("llama-tiny")).toStdString(), {}, llama).ok());
        QString text;
        std::vector<TraceToken> pieces;
        while (pieces.size() < 10000) {
            text += once;
            pieces.clear();
            QVERIFY(llama->tokenize(text.toStdString(), pieces).ok());
        }
        QElapsedTimer timer;
        timer.start();
        const SnapshotPtr s = win.show(text);
        QVERIFY(s && s->longText);
        qInfo("llama-tiny, %d tokens: traced and drawn in %lld ms (%s)", s->tq(), timer.elapsed(),
              qPrintable(s->trace->cutReason.empty() ? QStringLiteral("not cut") : QString::fromStdString(s->trace->cutReason)));
        selectHead(win, 0);
        timer.restart();
        win.w.heatmapView()->refreshMap();
        qInfo("the whole map of head 0: %lld ms (%lld x %lld cells)", timer.elapsed(),
              qlonglong(win.w.heatmapView()->mapCells().rows()), qlonglong(win.w.heatmapView()->mapCells().cols()));
        shoot(win, QStringLiteral("longtext-llama-tiny-map"));
        win.w.heatmapView()->zoomToCells(QRect(4000, 4100, 400, 400));
        timer.restart();
        win.w.heatmapView()->refreshMap();
        qInfo("a 400 x 400 region: %lld ms", timer.elapsed());
        shoot(win, QStringLiteral("longtext-llama-tiny-zoom400"));
        win.w.resize(1600, 1200);
        win.w.session()->setSelectedQuery(4403);
        win.w.heatmapView()->setShowNumbers(true);
        win.w.heatmapView()->zoomToCells(QRect(4396, 4400, 10, 8));
        shoot(win, QStringLiteral("longtext-llama-tiny-cells"));
        win.w.showView(QStringLiteral("rollout"));
        shoot(win, QStringLiteral("longtext-llama-tiny-rollout"));
        // the Layers tab: each head's sink mass, then its entropy over sampled rows
        win.w.showView(QStringLiteral("headRoles"));
        HeadRolesView *roles = win.w.headRolesView();
        timer.restart();
        QTRY_VERIFY_WITH_TIMEOUT(roles->layerCount() > 0 && !roles->computing(), 120000);
        qInfo("the Layers tab's role scores and sink mass: %lld ms", timer.elapsed());
        shoot(win, QStringLiteral("longtext-llama-tiny-layers-sink"));
        roles->setReading(int(HeadReading::Entropy));
        timer.restart();
        QTRY_VERIFY_WITH_TIMEOUT(!roles->computing(), 120000);
        qInfo("entropy: %lld ms", timer.elapsed());
        shoot(win, QStringLiteral("longtext-llama-tiny-layers-entropy"));
    }
    {
        qputenv("ATTNVIZ_TRACE_BUDGET_KB", "16384");
        Window win;
        QVERIFY(win.w.openModel(QStringLiteral("bundled"), nullptr));
        win.w.showView(QStringLiteral("weights"));
        const SnapshotPtr s = win.show(once.left(6000));
        QVERIFY(s && s->longText);
        selectHead(win, -1);
        shoot(win, QStringLiteral("longtext-bundled-map"));
        win.w.heatmapView()->zoomToCells(QRect(0, 400, 60, 60));
        shoot(win, QStringLiteral("longtext-bundled-zoom"));
        win.w.showView(QStringLiteral("headRoles"));
        QTRY_VERIFY_WITH_TIMEOUT(win.w.headRolesView()->layerCount() > 0 && !win.w.headRolesView()->computing(), 120000);
        shoot(win, QStringLiteral("longtext-bundled-layers-sink"));
    }
}

// The lens and attribution on a long text, grabbed offscreen to ATTNVIZ_WINDOW_SHOTS (w-*.png).
void TestLongTextWindow::windowScreenshots()
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_WINDOW_SHOTS");
    if (dir.isEmpty())
        QSKIP("set ATTNVIZ_WINDOW_SHOTS=DIR to write the screenshots");
    Window win;
    win.w.resize(1400, 1000);
    const SnapshotPtr s = showLong(win);
    QVERIFY(s && s->longText);
    win.w.session()->setSelectedQuery(700);
    for (const char *id : {"lens", "dla", "residual", "pipeline", "embeddings", "rollout"}) {
        QVERIFY(win.w.showView(QString::fromLatin1(id)));
        if (auto *rollout = qobject_cast<RolloutView *>(win.w.viewWidget(QString::fromLatin1(id))))
            QTRY_VERIFY_WITH_TIMEOUT(rollout->ready() && !rollout->rowPending(), 60000);
        else
            QTRY_VERIFY_WITH_TIMEOUT(shownTexts(win.w.viewWidget(QString::fromLatin1(id))).contains(QStringLiteral("positions"), Qt::CaseInsensitive), 60000);
        if (auto *lens = qobject_cast<LogitLensView *>(win.w.viewWidget(QString::fromLatin1(id))))
            QTRY_VERIFY_WITH_TIMEOUT(lens->complete(), 60000);
        for (int i = 0; i < 10; ++i) {
            QCoreApplication::processEvents();
            QTest::qWait(50);
        }
        win.w.grab().save(dir + QStringLiteral("/w-longtext-") + QString::fromLatin1(id) + QStringLiteral(".png"));
        if (auto *pipeline = qobject_cast<PipelineView *>(win.w.viewWidget(QString::fromLatin1(id)))) {
            pipeline->focusCell(pipeline->indexOf(PipelineView::StageKind::Weights), 700 - 638, 690 - 638);
            for (int i = 0; i < 10; ++i) {
                QCoreApplication::processEvents();
                QTest::qWait(50);
            }
            win.w.grab().save(dir + QStringLiteral("/w-longtext-pipeline-weights.png"));
            pipeline->showAllStages();
        }
    }
    // the Heads tab while its maps come (after the first), with every head's map, then on a short text
    bool shot = false;
    auto *maps = win.w.headGridView()->findChild<LongTextMaps *>();
    QVERIFY(maps);
    const auto first = connect(maps, &LongTextMaps::ready, this, [&] {
        if (!shot) {
            shot = true;
            win.w.headGridView()->plot()->replot(QCustomPlot::rpImmediateRefresh);
            win.w.grab().save(dir + QStringLiteral("/w-longtext-grid-filling.png"));
        }
    });
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    QTRY_VERIFY_WITH_TIMEOUT(!win.w.headGridView()->mapsPending(), 60000);
    disconnect(first);
    for (int i = 0; i < 10; ++i) {
        QCoreApplication::processEvents();
        QTest::qWait(50);
    }
    win.w.grab().save(dir + QStringLiteral("/w-longtext-grid.png"));
    const auto settle = [] {
        for (int i = 0; i < 10; ++i) {
            QCoreApplication::processEvents();
            QTest::qWait(50);
        }
    };
    // Compare: layers 0 and 1 of head 2, pooled by the max, then by the mean
    selectHead(win, 2);
    win.w.session()->setSelectedLayer(0);
    QVERIFY(win.w.showView(QStringLiteral("compare")));
    CompareView *cv = win.w.compareView();
    cv->copyAToB();
    cv->sessionB()->setSelectedLayer(1);
    for (bool mean : {false, true}) {
        win.w.heatmapView()->meanPoolingAction()->setChecked(mean);
        QTRY_VERIFY_WITH_TIMEOUT(cv->isCurrent() && !cv->mapsPending() && cv->showsPooled() && cv->pooledB().size() > 0, 60000);
        settle();
        win.w.grab().save(dir + (mean ? QStringLiteral("/w-longtext-compare-mean.png") : QStringLiteral("/w-longtext-compare-max.png")));
    }
    // zoomed: A, B and the difference to 5 x 4 cells on the diagonal (single cells, their
    // numbers), then to 300 x 200 (pooled, refined)
    for (const QRect &zoom : {QRect(697, 698, 5, 4), QRect(500, 600, 300, 200)}) {
        const QRectF coords(zoom.left(), zoom.top(), zoom.width() - 1, zoom.height() - 1);
        cv->pairZoom()->zoomTo(coords, cv->rectA());
        cv->pairZoom()->zoomTo(coords, cv->rectB());
        cv->differenceZoom()->zoomTo(coords);
        QTRY_VERIFY_WITH_TIMEOUT(!cv->mapsPending() && cv->pooledRegionA() == zoom && cv->differenceRegion() == zoom, 60000);
        settle();
        win.w.grab().save(dir + QStringLiteral("/w-longtext-compare-zoomed-%1.png").arg(zoom.width()));
    }
    cv->pairZoom()->reset();
    cv->differenceZoom()->reset();
    win.w.heatmapView()->meanPoolingAction()->setChecked(false);
    // the norm-weighted switch: the Weights map and the rollout's row
    win.w.views()->normWeightedAction()->setChecked(true);
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    win.w.heatmapView()->refreshMap();
    settle();
    win.w.grab().save(dir + QStringLiteral("/w-longtext-normweighted-map.png"));
    // the Selected query dock unfolded: its axis follows the weighted row past 1
    if (auto *fold = win.w.findChild<DockFold *>(QStringLiteral("rowDockFold")))
        fold->setFolded(false);
    settle();
    win.w.grab().save(dir + QStringLiteral("/w-longtext-normweighted-row.png"));
    // the Layers tab's readings, norm-weighted
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QTRY_VERIFY_WITH_TIMEOUT(win.w.headRolesView()->layerCount() > 0 && !win.w.headRolesView()->computing(), 60000);
    settle();
    win.w.grab().save(dir + QStringLiteral("/w-longtext-normweighted-layers.png"));
    QVERIFY(win.w.showView(QStringLiteral("rollout")));
    auto *rollout = qobject_cast<RolloutView *>(win.w.viewWidget(QStringLiteral("rollout")));
    QTRY_VERIFY_WITH_TIMEOUT(rollout->ready() && !rollout->rowPending(), 60000);
    settle();
    win.w.grab().save(dir + QStringLiteral("/w-longtext-normweighted-rollout.png"));
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    QTRY_VERIFY_WITH_TIMEOUT(!win.w.headGridView()->mapsPending(), 60000);
    settle();
    win.w.grab().save(dir + QStringLiteral("/w-longtext-normweighted-grid.png"));
    win.w.views()->normWeightedAction()->setChecked(false);
    QVERIFY(win.w.showView(QStringLiteral("grid")));
    const SnapshotPtr brief = win.show(QStringLiteral("The quick brown fox jumps over the lazy dog."));
    QVERIFY(brief && !brief->longText);
    for (int i = 0; i < 10; ++i) {
        QCoreApplication::processEvents();
        QTest::qWait(50);
    }
    win.w.grab().save(dir + QStringLiteral("/w-shorttext-grid.png"));
}

QTEST_MAIN(TestLongTextWindow)
#include "tst_longtextwindow.moc"
