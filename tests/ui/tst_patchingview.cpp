// SPDX-License-Identifier: GPL-3.0-or-later
// The Patching tab (views/patchingview.h) in the window (offscreen), on the gpt2-tiny fixture: a
// sweep run through the tab equals patchSweep called directly (every cell, bit for bit, for each
// sweep and metric); prompts of different token counts are refused naming the first differing
// tokens; an answer of several tokens is named; a cancelled sweep keeps the cells done; clicking a
// cell puts exactly patchFor's edit into the window's edits, the window shows the corrupted prompt
// patched (the core's own patched forward), Clear patch and undo give the clean prompt back, a patch
// is no ablation (Restore all heads keeps it, the grid does not cross it out); the cache; the heatmap
// exported (PNG, SVG) and its numbers as CSV; a session keeps the tab's fields (and not the patch);
// the word vectors and an encoder refuse in one line. The path sweep: its receiver chooser, its cells
// equal to patchSweep's, a clicked sender cell puts exactly pathPatchFor's edit into the window's edits,
// a cell that is not a sender applies nothing; on the Layers grid a sender head Shift-dragged onto a
// receiver (real mouse events), or "Patch path from here…" then a click on the receiver, opens the
// tab on that receiver and runs the sweep.
// ATTNVIZ_PATCHING_SHOTS=DIR writes the tab after a sweep, at 1400 × 900 and at 1280 × 720.
#include "testpaths.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/patchingview.h"
#include "views/headablationmenu.h"
#include "views/headrolesview.h"
#include "window/headablations.h"
#include "files/figureexport.h"
#include "files/session.h"

#include "../support/modelfolders.h"

#include "bundledmodel.h"

#include "attnviz/patching.h"
#include "attnviz/reads.h"

#include <qcustomplot.h>

#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QUndoStack>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace attnviz;
using namespace attnviz::ui;
using attnviz_test::fixtureModel;

namespace {

using Window = test::PromptedWindow;

const QString kClean = QStringLiteral("The cat sat on the mat and the cat");
const QString kCorrupted = QStringLiteral("The dog sat on the mat and the cat");

std::unique_ptr<Model> fixture()
{
    std::unique_ptr<Model> m;
    if (!openModelSource(fixtureModel(QStringLiteral("gpt2-tiny")), m))
        return nullptr;
    return m;
}

// The clean run's most probable next token, and the corrupted run's (its second where they agree),
// as the vocabulary spells them.
void answers(Model &m, int &answer, int &wrong)
{
    TraceRequest r;
    r.text = kClean.toStdString();
    Trace<float> a, b;
    QVERIFY(m.trace(r, a).ok());
    r.text = kCorrupted.toStdString();
    QVERIFY(m.trace(r, b).ok());
    answer = a.predictions.next.back()[0].id;
    wrong = b.predictions.next.back()[0].id;
    if (wrong == answer)
        wrong = b.predictions.next.back()[1].id;
}

SnapshotPtr waitFor(Window &win, const std::function<bool(const ComputeSnapshot &)> &pred)
{
    const quint64 g = test::shownGeneration(*win.w.session());
    return test::waitForSnapshot(*win.w.session(), g, [&](const ComputeSnapshot &s) { return s.hasResult() && pred(s); }, 30000);
}

// The tab on the fixture with kClean as the window's text and the fields filled.
PatchingView *openTab(Window &win, const QString &answer, const QString &wrong)
{
    if (!win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr))
        return nullptr;
    if (!win.w.showView(QStringLiteral("patching")) || !win.show(kClean))
        return nullptr;
    PatchingView *v = win.w.patchingView();
    v->corruptedEdit()->setText(kCorrupted);
    v->answerEdit()->setText(answer);
    v->wrongEdit()->setText(wrong);
    return v;
}

bool runAndWait(PatchingView *v)
{
    QSignalSpy done(v, &PatchingView::sweepFinished);
    if (!v->run())
        return false;
    return done.count() > 0 || done.wait(60000);
}

} // namespace

class TestPatchingView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void sweepEqualsCore_data();
    void sweepEqualsCore();
    void refusesMismatchedPrompts();
    void longTextWaitsForTheTab();
    void cancelKeepsCellsDone();
    void clickAppliesThePatch();
    void sessionRoundTrip();
    void wordVectorsRefuse();
    void pathSweepAndClick();
    void pathFromTheGrid();
    void screenshots();
};

// The path sweep in the tab: the receiver chooser lists layer 1's heads, the cells equal patchSweep's
// (bit for bit), the drawn numbers are the cells', a sender cell clicked applies pathPatchFor's edit,
// a cell of the receiver's layer applies nothing.
void TestPatchingView::pathSweepAndClick()
{
    std::unique_ptr<Model> m = fixture();
    QVERIFY(m);
    int answer = -1, wrong = -1;
    answers(*m, answer, wrong);
    Window win;
    PatchingView *v = openTab(win, QString::fromStdString(tokenOf(*m, answer).token), QString::fromStdString(tokenOf(*m, wrong).token));
    QVERIFY(v);
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::Path));
    QVERIFY(v->receiverCombo()->isVisible());
    QCOMPARE(v->receiverCombo()->count(), 4); // layer 1's heads: a receiver has a layer before it
    QCOMPARE(v->receiverCombo()->itemText(3), QStringLiteral("L1 H3"));
    v->setReceiver(PathReceiver{1, 2, HeadInput::V});
    QCOMPARE(v->receiverCombo()->currentText(), QStringLiteral("L1 H2"));
    QVERIFY(v->receiver() == (PathReceiver{1, 2, HeadInput::V}));
    QVERIFY(v->settings().receiver == (PathReceiver{1, 2, HeadInput::V}));
    QVERIFY2(v->problem().isEmpty(), qPrintable(v->problem()));
    QVERIFY(runAndWait(v));
    const PatchResult *r = v->result();
    QVERIFY(r && r->sweep == PatchSweep::Path);
    QCOMPARE(v->progressBar()->maximum(), 4); // the senders of layer 0
    QCOMPARE(v->progressBar()->value(), 4);
    QVERIFY2(v->message().startsWith(QStringLiteral("Done: 4 cells.")), qPrintable(v->message()));
    PatchRequest req;
    req.sweep = PatchSweep::Path;
    req.receiver = {1, 2, HeadInput::V};
    req.clean = kClean.toStdString();
    req.corrupted = kCorrupted.toStdString();
    req.answer = answer;
    req.wrong = wrong;
    PatchResult want;
    QVERIFY(patchSweep<float>(*m, req, want).ok());
    QStringList numbers;
    double largest = 0;
    for (int h = 0; h < 4; ++h)
        largest = std::max(largest, std::abs(want.at(0, h)));
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            if (l == 0) {
                QCOMPARE(r->at(l, h), want.at(l, h));
                numbers << (largest < PatchingView::kSmallCells ? QString::number(want.at(l, h), 'g', 3)
                                                                : QString::number(want.at(l, h), 'f', 3));
            } else {
                QVERIFY(std::isnan(r->at(l, h)));
            }
        }
    QCOMPARE(v->cellNumbers(), numbers);
    QVERIFY(v->cellText(1, 0).contains(QStringLiteral("not a sender")));

    // the sender whose path moves the metric most, clicked
    int best = 0;
    for (int h = 1; h < 4; ++h)
        if (std::abs(want.at(0, h)) > std::abs(want.at(0, best)))
            best = h;
    QVERIFY(std::abs(want.at(0, best)) > 1e-6);
    TraceRequest tr;
    tr.keepHookOutputs = true;
    tr.text = req.clean;
    Trace<float> clean, corrupted;
    QVERIFY(m->trace(tr, clean).ok());
    tr.text = req.corrupted;
    QVERIFY(m->trace(tr, corrupted).ok());
    std::vector<Intervention> edits;
    QVERIFY(pathPatchFor(*m, clean, corrupted, 0, best, req.receiver, {}, edits).ok());
    QCOMPARE(edits.size(), size_t(1));
    QCustomPlot *plot = v->plot();
    plot->replot();
    // a cell of the receiver's layer: not a sender, nothing applied
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, QPoint(int(plot->xAxis->coordToPixel(0)), int(plot->yAxis->coordToPixel(1))));
    QVERIFY(win.w.session()->edits().empty());
    QVERIFY2(v->message().contains(QStringLiteral("not a sender")), qPrintable(v->message()));
    // the sender's edit is computed on the pool (two forwards): the GUI thread goes on, the edit comes
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, QPoint(int(plot->xAxis->coordToPixel(best)), int(plot->yAxis->coordToPixel(0))));
    QVERIFY2(v->message().startsWith(QStringLiteral("Computing the path L0 H%1").arg(best)) ||
                 win.w.session()->edits().size() == 1,
             qPrintable(v->message()));
    QTRY_COMPARE(win.w.session()->edits().size(), size_t(1));
    QVERIFY(win.w.session()->edits().front() == edits.front());
    QCOMPARE(win.w.session()->sentence(), kCorrupted);
    QVERIFY(v->patchApplied());
    // the window's run is the core's patched run, whose metric is the cell's
    // (shown already where it came while the edit was awaited above)
    SnapshotPtr patched = win.w.session()->snapshot();
    if (!patched || !patched->hasResult() || !patched->trace->edited())
        patched = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(patched);
    TraceRequest pr;
    pr.text = req.corrupted;
    pr.edits = edits;
    Trace<float> core;
    QVERIFY(m->trace(pr, core).ok());
    QVERIFY((patched->trace->layers.back().output - core.layers.back().output).cwiseAbs().maxCoeff() < 1e-5f);
    double d = 0;
    QVERIFY(logitDifference(*m, core, answer, wrong, d).ok());
    QVERIFY(std::abs((d - want.corruptedDiff) / (want.cleanDiff - want.corruptedDiff) - want.at(0, best)) < 1e-5);
}

// From the Layers grid: a sender Shift-dragged onto a receiver, and the menu's "Patch path from here…"
// then a click on the receiver; each opens the Patching tab on that receiver and runs the path sweep. A
// drop on a head of the sender's own layer asks for nothing.
void TestPatchingView::pathFromTheGrid()
{
    std::unique_ptr<Model> m = fixture();
    QVERIFY(m);
    int answer = -1, wrong = -1;
    answers(*m, answer, wrong);
    Window win;
    win.w.resize(1400, 900);
    PatchingView *v = openTab(win, QString::fromStdString(tokenOf(*m, answer).token), QString::fromStdString(tokenOf(*m, wrong).token));
    QVERIFY(v);
    v->receiverInputCombo()->setCurrentIndex(int(HeadInput::K));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *g = win.w.headRolesView();
    QTRY_VERIFY_WITH_TIMEOUT(g->layerCount() == 2 && !g->thumbnailRect(1, 3).isEmpty(), 10000);
    QWidget *canvas = g->canvas();
    QSignalSpy asked(g, &HeadRolesView::pathPatchRequested);
    // a drop in the sender's own layer: refused in the note, nothing asked
    QTest::mousePress(canvas, Qt::LeftButton, Qt::ShiftModifier, g->thumbnailRect(0, 1).center());
    QTest::mouseRelease(canvas, Qt::LeftButton, Qt::ShiftModifier, g->thumbnailRect(0, 2).center());
    QCOMPARE(asked.count(), 0);
    QVERIFY2(g->note().contains(QStringLiteral("A path runs forward")), qPrintable(g->note()));
    QSignalSpy finished(v, &PatchingView::sweepFinished);
    QTest::mousePress(canvas, Qt::LeftButton, Qt::ShiftModifier, g->thumbnailRect(0, 1).center());
    QTest::mouseMove(canvas, g->thumbnailRect(1, 3).center());
    QTest::mouseRelease(canvas, Qt::LeftButton, Qt::ShiftModifier, g->thumbnailRect(1, 3).center());
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked.front(), (QList<QVariant>{0, 1, 1, 3}));
    QCOMPARE(win.w.currentViewId(), QStringLiteral("patching"));
    QVERIFY(finished.count() > 0 || finished.wait(60000));
    QVERIFY(v->result() && v->result()->sweep == PatchSweep::Path);
    QVERIFY(v->result()->receiver == (PathReceiver{1, 3, HeadInput::K}));
    QVERIFY2(v->message().contains(QStringLiteral("The path L0 H1 → L1 H3 (k): %1").arg(v->result()->at(0, 1), 0, 'f', 4)),
             qPrintable(v->message()));
    // the menu's entry, then a click on the receiver
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QList<QAction *> actions = g->headActions(0, 2, g);
    QAction *from = nullptr;
    for (QAction *a : actions)
        if (a->objectName() == QLatin1String("pathFromHereAction"))
            from = a;
    QVERIFY(from && from->isEnabled());
    QVERIFY(!g->headActions(1, 0, g).last()->isEnabled()); // the last layer sends to no later head
    from->trigger();
    QCOMPARE(g->pendingPathSender(), qMakePair(0, 2));
    QVERIFY(g->note().contains(QStringLiteral("click the receiver head")));
    finished.clear();
    QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier, g->thumbnailRect(1, 0).center());
    QCOMPARE(asked.count(), 2);
    QCOMPARE(asked.back(), (QList<QVariant>{0, 2, 1, 0}));
    QCOMPARE(g->pendingPathSender(), qMakePair(-1, -1));
    QVERIFY(finished.count() > 0 || finished.wait(60000));
    QVERIFY(v->result()->receiver == (PathReceiver{1, 0, HeadInput::K}));
}

void TestPatchingView::sweepEqualsCore_data()
{
    QTest::addColumn<int>("sweep");
    QTest::addColumn<int>("metric");
    QTest::addRow("resid_pre, logit_diff") << int(PatchSweep::ResidPre) << int(PatchMetric::LogitDiff);
    QTest::addRow("heads, logit_diff") << int(PatchSweep::HeadsAllPositions) << int(PatchMetric::LogitDiff);
    QTest::addRow("heads_by_pos, prob") << int(PatchSweep::HeadsByPosition) << int(PatchMetric::Prob);
    QTest::addRow("mlp_out, kl") << int(PatchSweep::MlpOut) << int(PatchMetric::Kl);
}

void TestPatchingView::sweepEqualsCore()
{
    QFETCH(int, sweep);
    QFETCH(int, metric);
    std::unique_ptr<Model> m = fixture();
    QVERIFY(m);
    PatchRequest r;
    r.sweep = PatchSweep(sweep);
    r.metric = PatchMetric(metric);
    r.clean = kClean.toStdString();
    r.corrupted = kCorrupted.toStdString();
    answers(*m, r.answer, r.wrong);
    if (r.metric == PatchMetric::Kl)
        r.answer = r.wrong = -1;
    else if (r.metric == PatchMetric::Prob)
        r.wrong = -1;
    PatchResult want;
    QVERIFY(patchSweep<float>(*m, r, want).ok());

    Window win;
    const QString answer = QString::fromStdString(tokenOf(*m, r.answer < 0 ? 0 : r.answer).token);
    const QString wrong = QString::fromStdString(tokenOf(*m, r.wrong < 0 ? 0 : r.wrong).token);
    PatchingView *v = openTab(win, r.answer < 0 ? QString() : answer, r.wrong < 0 ? QString() : wrong);
    QVERIFY(v);
    v->sweepCombo()->setCurrentIndex(sweep);
    v->metricCombo()->setCurrentIndex(metric);
    QCOMPARE(v->problem(), QString());
    QVERIFY(v->runButton()->isEnabled());
    QVERIFY(!v->plot()); // nothing to export before a sweep
    QVERIFY(runAndWait(v));
    const PatchResult *got = v->result();
    QVERIFY(got);
    QCOMPARE(got->rows, want.rows);
    QCOMPARE(got->cols, want.cols);
    QCOMPARE(got->done, want.rows * want.cols);
    for (int y = 0; y < want.rows; ++y)
        for (int x = 0; x < want.cols; ++x)
            QCOMPARE(got->at(y, x), want.at(y, x)); // the same numbers, bit for bit
    QCOMPARE(v->progressBar()->value(), want.rows * want.cols);
    QCOMPARE(v->progressBar()->maximum(), want.rows * want.cols);
    QVERIFY2(v->message().startsWith(QStringLiteral("Done: ")), qPrintable(v->message()));
    // the heatmap: every cell's value, a scale naming the metric and centred on the corrupted run's
    // value (0 for the logit difference, its p(answer) for prob; 0, the clean run, for KL)
    auto *map = qobject_cast<QCPColorMap *>(v->plot()->plottable(0));
    QVERIFY(map);
    QCOMPARE(map->data()->keySize(), want.cols);
    QCOMPARE(map->data()->valueSize(), want.rows);
    QCOMPARE(map->data()->cell(want.cols - 1, want.rows - 1), want.at(want.rows - 1, want.cols - 1));
    const QCPRange range = map->colorScale()->dataRange();
    const double centre = r.metric == PatchMetric::Prob ? want.corruptedValue : 0.0;
    QCOMPARE(v->scaleCentre(), centre);
    QVERIFY(std::abs(range.center() - centre) < 1e-12);
    QCOMPARE(map->colorScale()->axis()->label(), v->scaleLabel());
    if (r.metric == PatchMetric::Prob)
        QCOMPARE(v->scaleLabel(),
                 QStringLiteral("p(answer), centred on the corrupted run's %1").arg(want.corruptedValue, 0, 'g', 3));
    QVERIFY(v->cellText(0, 0).contains(QString::number(want.at(0, 0), 'f', 4)));
    QCOMPARE(v->columnLabels().size(), want.cols);
    if (r.sweep == PatchSweep::ResidPre)
        QCOMPARE(v->columnLabels()[1], QStringLiteral("␣cat→␣dog"));

    // File ▸ Export current view writes the heatmap (PNG and SVG)
    QAction *exportAction = win.w.findChild<QAction *>(QStringLiteral("exportCurrentAction"));
    QVERIFY(exportAction && exportAction->isEnabled());
    QVERIFY(exportAction->toolTip().contains(QStringLiteral("patching")));
    QTemporaryDir tmp;
    QString error;
    for (const QString &suffix : {QStringLiteral("png"), QStringLiteral("svg")}) {
        const QString path = tmp.filePath(QStringLiteral("patching.") + suffix);
        QVERIFY2(saveFigure(v->plot(), path, FigureOptions(), &error), qPrintable(error));
        QVERIFY(QFileInfo(path).size() > 1000);
    }

    // the numbers as CSV: a header of the column labels, one row per layer, read back exactly
    const QString csv = tmp.filePath(QStringLiteral("patching.csv"));
    v->setCsvPrompt([csv] { return csv; });
    QVERIFY(v->csvButton()->isEnabled());
    v->csvButton()->click();
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), want.rows + 1);
    QVERIFY(lines[0].startsWith(QStringLiteral("layer,")));
    const QStringList last = lines.last().split(QLatin1Char(','));
    QCOMPARE(last.size(), want.cols + 1);
    QCOMPARE(last[0].toInt(), want.rows - 1);
    QCOMPARE(last[1].toDouble(), want.at(want.rows - 1, 0));

    // the same request again: from the cache, at once
    QSignalSpy again(v, &PatchingView::sweepFinished);
    QVERIFY(v->run());
    QCOMPARE(again.count(), 1);
    QVERIFY(!v->running());
    QVERIFY(v->message().contains(QStringLiteral("cache")));
}

void TestPatchingView::refusesMismatchedPrompts()
{
    Window win;
    PatchingView *v = openTab(win, QStringLiteral("Ġcat"), QStringLiteral("Ġdog"));
    QVERIFY(v);
    v->corruptedEdit()->setText(QStringLiteral("The big dog sat on the mat and the cat"));
    const QString p = v->problem();
    QVERIFY2(p.startsWith(QStringLiteral("Refused: the clean prompt has 9 tokens and the corrupted 10; they first differ at "
                                         "position 1 (clean “Ġcat”, corrupted “Ġbig”)")),
             qPrintable(p));
    QVERIFY(!v->runButton()->isEnabled());
    QVERIFY(!v->run());
    QCOMPARE(v->message(), p);
    QCOMPARE(v->tokenTable()->columnCount(), 10);
    QCOMPARE(v->tokenTable()->item(1, 1)->text(), QStringLiteral("␣big"));
    QVERIFY(v->tokenTable()->item(1, 1)->font().bold()); // marked as differing
    QVERIFY(!v->tokenTable()->item(0, 0)->font().bold());

    // same count: one differing position marked
    v->corruptedEdit()->setText(kCorrupted);
    QCOMPARE(v->problem(), QString());
    QCOMPARE(v->tokenTable()->columnCount(), 9);
    int bold = 0;
    for (int c = 0; c < 9; ++c)
        bold += v->tokenTable()->item(0, c)->font().bold() ? 1 : 0;
    QCOMPARE(bold, 1);

    // an answer of several tokens is named
    v->answerEdit()->setText(QStringLiteral(" cat sat"));
    QVERIFY2(v->problem().startsWith(QStringLiteral("Answer: “ cat sat” is 2 tokens (“Ġcat” “Ġsat”)")), qPrintable(v->problem()));
    QVERIFY(!v->runButton()->isEnabled());
}

// A long text: the tab lays out its token table only when shown (a column per token of 20,000,
// on every snapshot behind another tab, kept the window busy for minutes), and then its first 512.
void TestPatchingView::longTextWaitsForTheTab()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    PatchingView *v = win.w.patchingView();
    v->corruptedEdit()->setText(QStringLiteral("x"));
    QString text;
    for (int i = 0; i < 600; ++i)
        text += QStringLiteral(" cat");
    QVERIFY(win.show(text));
    QCOMPARE(v->tokenTable()->columnCount(), 0); // nothing laid out behind the Weights tab
    QVERIFY(win.w.showView(QStringLiteral("patching")));
    QTRY_COMPARE(v->tokenTable()->columnCount(), 512);
    QVERIFY2(v->problem().contains(QStringLiteral("600")), qPrintable(v->problem())); // the counts differ: refused
    v->corruptedEdit()->setText(text);
    QCOMPARE(v->tokenTable()->columnCount(), 512);
    QVERIFY2(!v->problem().startsWith(QStringLiteral("Refused")), qPrintable(v->problem())); // same counts now
}

void TestPatchingView::cancelKeepsCellsDone()
{
    std::unique_ptr<Model> m = fixture();
    QVERIFY(m);
    int answer = -1, wrong = -1;
    answers(*m, answer, wrong);
    Window win;
    PatchingView *v = openTab(win, QString::fromStdString(tokenOf(*m, answer).token), QString::fromStdString(tokenOf(*m, wrong).token));
    QVERIFY(v);
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::HeadsByPosition));
    v->setProgressHook([v](int done, int) {
        if (done == 5)
            v->cancel(); // sets an atomic: safe from the sweep's thread
    });
    QVERIFY(runAndWait(v));
    v->setProgressHook({});
    const PatchResult *got = v->result();
    QVERIFY(got);
    QCOMPARE(got->done, 5);
    QVERIFY2(v->message().startsWith(QStringLiteral("Cancelled after 5 of %1 cells").arg(got->rows * got->cols)), qPrintable(v->message()));
    // the cells done are the core's; the rest NaN
    PatchRequest r;
    r.sweep = PatchSweep::HeadsByPosition;
    r.clean = kClean.toStdString();
    r.corrupted = kCorrupted.toStdString();
    r.answer = answer;
    r.wrong = wrong;
    PatchResult want;
    QVERIFY(patchSweep<float>(*m, r, want).ok());
    for (int i = 0; i < got->rows * got->cols; ++i) {
        if (i < 5)
            QCOMPARE(got->metric[size_t(i)], want.metric[size_t(i)]);
        else
            QVERIFY(std::isnan(got->metric[size_t(i)]));
    }
    QCOMPARE(v->progressBar()->value(), 5);
    QVERIFY(v->cellText(0, 6).contains(QStringLiteral("not computed")));
    // a cancelled sweep is not cached: Run computes it whole (the cancelled result, `got`, is then gone)
    const int cells = got->rows * got->cols;
    QVERIFY(runAndWait(v));
    QCOMPARE(v->result()->done, cells);
    QVERIFY(v->message().startsWith(QStringLiteral("Done: ")));
}

void TestPatchingView::clickAppliesThePatch()
{
    std::unique_ptr<Model> m = fixture();
    QVERIFY(m);
    int answer = -1, wrong = -1;
    answers(*m, answer, wrong);
    Window win;
    PatchingView *v = openTab(win, QString::fromStdString(tokenOf(*m, answer).token), QString::fromStdString(tokenOf(*m, wrong).token));
    QVERIFY(v);
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::ResidPre));
    QVERIFY(runAndWait(v));
    const SnapshotPtr before = win.w.session()->snapshot();
    QVERIFY(before && !before->trace->edited());

    // the core's clean trace and the cell's edit
    TraceRequest cr;
    cr.text = kClean.toStdString();
    Trace<float> clean;
    QVERIFY(m->trace(cr, clean).ok());
    const int row = 1, col = 1; // resid_pre of layer 1 at the position where the prompts differ
    Intervention want;
    QVERIFY(patchFor(PatchSweep::ResidPre, clean, row, col, want).ok());

    // a click on the cell's centre
    QCustomPlot *plot = v->plot();
    plot->replot();
    const QPoint at(int(plot->xAxis->coordToPixel(col)), int(plot->yAxis->coordToPixel(row)));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(win.w.session()->edits().size(), size_t(1));
    QVERIFY(win.w.session()->edits().front() == want);
    QVERIFY(v->patchApplied());
    QCOMPARE(win.w.session()->sentence(), kCorrupted);
    QCOMPARE(v->cleanPrompt(), kClean); // the tab keeps the clean prompt while the window shows the corrupted one
    QVERIFY(v->clearButton()->isEnabled());

    // the window shows the patched corrupted run: the core's own forward with that edit
    const SnapshotPtr patched = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(patched);
    QCOMPARE(patched->sentence, kCorrupted);
    TraceRequest pr;
    pr.text = kCorrupted.toStdString();
    pr.edits = {want};
    Trace<float> core, corrupted;
    QVERIFY(m->trace(pr, core).ok());
    pr.edits.clear();
    QVERIFY(m->trace(pr, corrupted).ok());
    const auto &lastGot = patched->trace->layers.back().output;
    const auto &lastCore = core.layers.back().output;
    QCOMPARE(lastGot.rows(), lastCore.rows());
    QVERIFY((lastGot - lastCore).cwiseAbs().maxCoeff() < 1e-5f);
    QVERIFY((lastGot - corrupted.layers.back().output).cwiseAbs().maxCoeff() > 1e-3f); // the patch changed the trace
    double dPatched = 0, dCorrupted = 0;
    QVERIFY(logitDifference(*m, core, answer, wrong, dPatched).ok());
    QVERIFY(logitDifference(*m, corrupted, answer, wrong, dCorrupted).ok());
    QVERIFY(std::abs(dPatched - dCorrupted) > 1e-4);

    // Clear patch: the clean prompt back, no edit; undo puts the patch back, undo again takes it out
    v->clearButton()->click();
    QVERIFY(win.w.session()->edits().empty());
    QCOMPARE(win.w.session()->sentence(), kClean);
    QVERIFY(!v->patchApplied());
    win.w.undoStack()->undo();
    QVERIFY(win.w.session()->edits().size() == 1 && win.w.session()->edits().front() == want);
    QCOMPARE(win.w.session()->sentence(), kCorrupted);
    win.w.undoStack()->undo();
    QVERIFY(win.w.session()->edits().empty());
    QCOMPARE(win.w.session()->sentence(), kClean);
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited() && s.sentence == kClean; }));

    // an ablation beside a patch: Restore all heads leaves the patch
    win.w.undoStack()->redo();
    QVERIFY(v->patchApplied());
    win.w.ablations()->ablate(0, 1, false);
    QCOMPARE(win.w.session()->edits().size(), size_t(2));
    QVERIFY(!win.w.ablations()->ablated(1, 0) && win.w.ablations()->ablated(0, 1));
    win.w.ablations()->restore(-1, -1);
    QVERIFY(win.w.session()->edits().size() == 1 && win.w.session()->edits().front() == want);

    // a head's patch (attn.hook_z of one head, every position) is named as a patch, not drawn as an ablation
    v->clearPatch();
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::HeadsAllPositions));
    QVERIFY(runAndWait(v));
    QVERIFY(v->applyCell(1, 2));
    QCOMPARE(win.w.session()->edits().front().kind, EditKind::Value);
    QVERIFY(!win.w.ablations()->ablated(1, 2));
    const SnapshotPtr headPatched = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(headPatched);
    QCOMPARE(ablationOf(*headPatched, 1, 2), QString());
    QCOMPARE(describeAblations(headPatched->edits), QStringLiteral("attn.hook_z L1 H2 patched from the clean prompt"));
}

void TestPatchingView::sessionRoundTrip()
{
    PatchingSettings want;
    want.corrupted = kCorrupted;
    want.answer = QStringLiteral("Ġcat");
    want.wrong = QStringLiteral("Ġdog");
    want.sweep = PatchSweep::MlpOut;
    want.metric = PatchMetric::Prob;
    SessionState saved;
    {
        Window win;
        PatchingView *v = openTab(win, want.answer, want.wrong);
        QVERIFY(v);
        v->sweepCombo()->setCurrentIndex(int(want.sweep));
        v->metricCombo()->setCurrentIndex(int(want.metric));
        QVERIFY(v->settings() == want);
        QVERIFY(runAndWait(v));
        QVERIFY(v->applyCell(0, 1));
        QCOMPARE(win.w.session()->sentence(), kCorrupted);
        saved = win.w.captureSession();
        QCOMPARE(saved.sentence, kClean); // the clean prompt, not the patched corrupted one
        QVERIFY(saved.ablations.empty()); // the patch is not kept
        QVERIFY(saved.patching == want);
    }
    const QJsonObject json = sessionToJson(saved);
    const QJsonObject p = json.value(QStringLiteral("patching")).toObject();
    QCOMPARE(p.value(QStringLiteral("sweep")).toString(), QStringLiteral("mlp_out"));
    QCOMPARE(p.value(QStringLiteral("metric")).toString(), QStringLiteral("prob"));
    QCOMPARE(p.value(QStringLiteral("corrupted")).toString(), kCorrupted);
    SessionState read;
    QStringList problems;
    QVERIFY(sessionFromJson(json, read, &problems));
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QVERIFY(read == saved);
    {
        Window win;
        QStringList applied;
        win.w.applySession(read, &applied);
        QVERIFY(win.w.patchingView()->settings() == want);
        QCOMPARE(win.w.session()->sentence(), kClean);
    }
    // no patching typed: no "patching" key (the sessions written before read the same)
    QVERIFY(!sessionToJson(SessionState()).contains(QStringLiteral("patching")));
    // a bad sweep name: one line, the default kept
    QJsonObject bad = json;
    QJsonObject bp = p;
    bp.insert(QStringLiteral("sweep"), QStringLiteral("attn"));
    bad.insert(QStringLiteral("patching"), bp);
    SessionState badRead;
    problems.clear();
    QVERIFY(sessionFromJson(bad, badRead, &problems));
    QCOMPARE(problems, QStringList{QStringLiteral("patching.sweep: \"attn\" is not a sweep (resid_pre, heads, heads_by_pos, mlp_out, path); resid_pre is used")});
    QCOMPARE(badRead.patching.sweep, PatchSweep::ResidPre);
}

void TestPatchingView::wordVectorsRefuse()
{
    Window win;
    QVERIFY(win.w.showView(QStringLiteral("patching")));
    QVERIFY(win.show(QStringLiteral("the cat sat")));
    PatchingView *v = win.w.patchingView();
    QVERIFY(v->problem().startsWith(QStringLiteral("Patching needs a language model")));
    QVERIFY(!v->run());
    QVERIFY(!v->corruptedEdit()->isVisible());
    // an encoder (no next token to score)
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("the cat sat")));
    QVERIFY2(v->problem().startsWith(QStringLiteral("Patching scores the next token")), qPrintable(v->problem()));
    QVERIFY(!v->run());
}

void TestPatchingView::screenshots()
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_PATCHING_SHOTS");
    if (dir.isEmpty())
        QSKIP("ATTNVIZ_PATCHING_SHOTS names no folder");
    Window win;
    win.w.resize(1400, 900);
    QVERIFY(win.w.openModel(kBundledModelArg, nullptr));
    QVERIFY(win.w.showView(QStringLiteral("patching")));
    const QString clean = QStringLiteral("Lily had a cat. Every day, Lily played with her");
    QVERIFY(win.show(clean));
    PatchingView *v = win.w.patchingView();
    v->corruptedEdit()->setText(QStringLiteral("Lily had a dog. Every day, Lily played with her"));
    v->answerEdit()->setText(QStringLiteral(" cat"));
    v->wrongEdit()->setText(QStringLiteral(" dog"));
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::ResidPre));
    QVERIFY2(v->problem().isEmpty(), qPrintable(v->problem()));
    QVERIFY(runAndWait(v));
    QTest::qWait(300);
    QVERIFY(v->grab().save(dir + QStringLiteral("/patching-resid.png")));
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::HeadsAllPositions));
    QVERIFY(runAndWait(v));
    QTest::qWait(300);
    QVERIFY(v->grab().save(dir + QStringLiteral("/patching-heads.png")));
    // a cell applied: the window shows the corrupted prompt patched
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::ResidPre));
    QVERIFY(runAndWait(v)); // from the cache
    QVERIFY(v->applyCell(2, 15));
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
    QTest::qWait(300);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/patching-applied-window.png")));
    win.w.resize(1280, 720);
    QTest::qWait(300);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/patching-window-1280x720.png")));
    auto *scroll = v->findChild<QScrollArea *>();
    QVERIFY(scroll);
    scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum());
    QTest::qWait(300);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/patching-window-1280x720-scrolled.png")));
    // the path sweep into the induction head's keys, on the repeated sentence
    win.w.resize(1400, 900);
    v->clearPatch();
    QVERIFY(win.show(QStringLiteral("My friend keeps seven green apples in a wooden box. My friend keeps seven green apples in a")));
    v->corruptedEdit()->setText(QStringLiteral("My friend keeps seven green apples in the wooden box. My friend keeps seven green apples in a"));
    v->metricCombo()->setCurrentIndex(int(PatchMetric::Prob));
    v->answerEdit()->setText(QStringLiteral(" wood"));
    v->sweepCombo()->setCurrentIndex(int(PatchSweep::Path));
    v->setReceiver(PathReceiver{1, 3, HeadInput::K});
    QVERIFY2(v->problem().isEmpty(), qPrintable(v->problem()));
    QVERIFY(runAndWait(v));
    QTest::qWait(300);
    QVERIFY(v->grab().save(dir + QStringLiteral("/patching-path.png")));
    // the grid with an ablated head
    win.w.session()->setEdits({});
    Intervention e;
    e.hook = HookPoint::AttnZ;
    e.layer = 1;
    e.head = 3;
    e.kind = EditKind::Zero;
    win.w.session()->setEdits({e});
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
    QTest::qWait(300);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/grid-ablated.png")));
}

QTEST_MAIN(TestPatchingView)
#include "tst_patchingview.moc"
