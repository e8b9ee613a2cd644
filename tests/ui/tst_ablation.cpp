// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation in the window (offscreen), on the gpt2-tiny fixture: the Layers × heads grid's menu
// (HeadRolesView, a model's Layers tab)
// ablates a head (the trace's edits, the grid's crosses, Predictions' numbers and deltas against the
// core's own edited and clean forwards); restore gives the clean numbers back bit for bit; the
// Clean model switch; the Edit menu's shortcut actions on the selected head; undo and redo; a
// session keeps the ablations (and refuses ones the model does not have); the word vectors refuse,
// the menu entries disabled with the reason. Speculative ablation: the trace computed while the window
// idled is the one the press computes, bit for bit; a press while it runs waits for it; typing
// discards it; a long text, or a window in which no head was ablated yet, gets none. The pointer
// resting on a head of the grid speculates on that head (moving on replaces it, a click and a press
// take it, bit for bit), a head's menu at once; nothing starts again while nothing changes. The grid
// makes again only the thumbnails whose weights changed and repaints only the cells that changed: the
// window's pixels then equal a whole repaint's.
#include "testpaths.h"
#include "live/livesession.h"
#include "live/speculation.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/headrolesview.h"
#include "views/layergridview.h"
#include "views/predictionsview.h"
#include "window/headablations.h"

#include "../support/modelfolders.h"

#include "bundledmodel.h"

#include "attnviz/interventions.h"

#include <QAction>
#include <QApplication>
#include <QBackingStore>
#include <QCheckBox>
#include <QContextMenuEvent>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMouseEvent>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QtTest>

#include <memory>

using namespace attnviz;
using namespace attnviz::ui;
using attnviz_test::fixtureModel;

namespace {

using Window = test::PromptedWindow;

const QString kText = QStringLiteral("The cat sat on the mat because it was");

Intervention headEdit(int layer, int head, EditKind kind)
{
    Intervention e;
    e.hook = HookPoint::AttnZ;
    e.layer = layer;
    e.head = head;
    e.kind = kind;
    return e;
}

QAction *actionNamed(const QList<QAction *> &actions, const QString &name)
{
    for (QAction *a : actions)
        if (a->objectName() == name)
            return a;
    return nullptr;
}

// The core's own trace of the fixture on kText, with `edits`, keeping `topK` next tokens.
Trace<float> coreTrace(const std::vector<Intervention> &edits, int topK = 10, const QString &text = kText)
{
    std::unique_ptr<Model> m;
    Status st = openModelSource(fixtureModel(QStringLiteral("gpt2-tiny")), m);
    Trace<float> tr;
    if (!st)
        return tr;
    TraceRequest req;
    req.text = text.toStdString();
    req.topK = topK;
    req.edits = edits;
    m->trace(req, tr);
    return tr;
}

// Waits for a snapshot of the current request that satisfies `pred`.
SnapshotPtr waitFor(Window &win, const std::function<bool(const ComputeSnapshot &)> &pred)
{
    const quint64 g = test::shownGeneration(*win.w.session());
    return test::waitForSnapshot(*win.w.session(), g, [&](const ComputeSnapshot &s) { return s.hasResult() && pred(s); }, 30000);
}

// Layer 0's head 0 ablated and restored: a window speculates only once a head has been ablated in
// it (window/headablations.h). The ablated result stays kept (the toggle's), its clean trace with it.
bool ablateOnce(Window &win)
{
    win.w.ablations()->ablate(0, 0, false);
    if (!waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }))
        return false;
    win.w.ablations()->restore(0, 0);
    return bool(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); }));
}

// Lets the window paint what it has been asked to.
void flushPaints()
{
    for (int i = 0; i < 4; ++i) {
        QCoreApplication::processEvents();
        QTest::qWait(20);
    }
}

// The grid's canvas as the window shows it (the part in view): read back from the window's backing
// store, where a repaint of some cells draws only them.
QImage shownCanvas(Window &win)
{
    QWidget *canvas = win.w.headRolesView()->canvas();
    QBackingStore *store = win.w.backingStore();
    if (!store || !store->paintDevice() || store->paintDevice()->devType() != QInternal::Image)
        return QImage();
    const QImage &all = *static_cast<const QImage *>(store->paintDevice());
    const QRect shown = canvas->visibleRegion().boundingRect();
    return all.copy(QRect(canvas->mapTo(&win.w, shown.topLeft()), shown.size())).convertToFormat(QImage::Format_ARGB32);
}

} // namespace

class TestAblation : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void gridMenuAblatesAndRestores();
    void cleanSwitch();
    void shortcutActionsAndUndo();
    void toggleOverTheCleanTrace();
    void speculationIsThePressedTrace();
    void pressWaitsForTheRunningSpeculation();
    void noSpeculationBeforeAnAblation();
    void keystrokeDiscardsSpeculation();
    void noSpeculationForLongTexts();
    void pointerRestingOnAHead();
    void menuSpeculatesAtOnce();
    void gridRepaintsWhatChanged();
    void predictionsKeepTheirWidth_data();
    void predictionsKeepTheirWidth();
    void sessionRoundTrip();
    void refusals();
    void screenshots();
};

void TestAblation::gridMenuAblatesAndRestores()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles"))); // a model's Layers tab
    const SnapshotPtr clean = win.show(kText);
    QVERIFY(clean && !clean->trace->edited());
    const auto cleanGroups = win.w.predictionsView()->groups();
    QCOMPARE(cleanGroups.size(), size_t(1));
    for (const PredictionsView::Entry &e : cleanGroups.front().entries)
        QVERIFY(!std::isfinite(e.delta)); // no deltas on the clean model

    HeadRolesView *grid = win.w.headRolesView();
    QCOMPARE(grid->layerCount(), 2);
    QCOMPARE(grid->ablationMarks(), 0);
    QObject owner;
    const QList<QAction *> menu = grid->headActions(1, 2, &owner);
    QAction *zero = actionNamed(menu, QStringLiteral("ablateZeroAction"));
    QAction *restore = actionNamed(menu, QStringLiteral("restoreHeadAction"));
    QVERIFY(zero && restore && actionNamed(menu, QStringLiteral("ablateMeanAction")) && actionNamed(menu, QStringLiteral("restoreAllAction")));
    QCOMPARE(zero->text(), QStringLiteral("Ablate L1 H2 (zero)"));
    QVERIFY(zero->isEnabled());
    QVERIFY(!restore->isEnabled()); // nothing to restore yet
    zero->trigger();

    const std::vector<Intervention> want{headEdit(1, 2, EditKind::Zero)};
    QVERIFY(win.w.session()->edits() == want);
    const SnapshotPtr edited = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(edited);
    QVERIFY(edited->trace->edits == want);
    QCOMPARE(grid->ablationMarks(), 1); // L1 H2 crossed out

    // Predictions: the core's edited forward, and each token's change against the core's clean one
    const Trace<float> core = coreTrace(want);
    const Trace<float> coreClean = coreTrace({}, 50257);
    QVERIFY(core.edited() && !core.predictions.next.empty() && !coreClean.predictions.next.empty());
    std::vector<double> cleanP(50257, 0.0);
    for (const TokenProb &p : coreClean.predictions.next.back())
        cleanP[size_t(p.id)] = p.p;
    const auto groups = win.w.predictionsView()->groups();
    QCOMPARE(groups.size(), size_t(1));
    const std::vector<TokenProb> &top = core.predictions.next.back();
    QCOMPARE(groups.front().entries.size(), top.size());
    bool changed = false;
    for (size_t i = 0; i < top.size(); ++i) {
        const PredictionsView::Entry &e = groups.front().entries[i];
        QCOMPARE(e.id, top[i].id);
        QCOMPARE(e.p, top[i].p);
        QVERIFY(std::abs(e.delta - (top[i].p - cleanP[size_t(e.id)])) < 1e-7);
        changed = changed || e.delta != 0;
    }
    QVERIFY(changed); // ablating the head moved the predictions
    QVERIFY(groups.front().heading.contains(QLatin1String("edited model")));
    QVERIFY(win.w.predictionsView()->html().contains(PredictionsView::deltaText(groups.front().entries.front().delta)));
    QVERIFY(win.w.statusText().contains(QLatin1String("edited: L1 H2 zero")));

    // restore from the menu: the clean numbers again, bit for bit
    const QList<QAction *> again = grid->headActions(1, 2, &owner);
    QAction *restoreNow = actionNamed(again, QStringLiteral("restoreHeadAction"));
    QVERIFY(restoreNow && restoreNow->isEnabled());
    restoreNow->trigger();
    QVERIFY(win.w.session()->edits().empty());
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); }));
    QCOMPARE(grid->ablationMarks(), 0);
    const auto restored = win.w.predictionsView()->groups();
    QCOMPARE(restored.size(), size_t(1));
    QCOMPARE(restored.front().entries.size(), cleanGroups.front().entries.size());
    for (size_t i = 0; i < restored.front().entries.size(); ++i) {
        QCOMPARE(restored.front().entries[i].id, cleanGroups.front().entries[i].id);
        QCOMPARE(restored.front().entries[i].p, cleanGroups.front().entries[i].p);
        QVERIFY(!std::isfinite(restored.front().entries[i].delta));
    }
}

void TestAblation::cleanSwitch()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    const auto cleanGroups = win.w.predictionsView()->groups();
    QAction *clean = win.w.findChild<QAction *>(QStringLiteral("cleanModelAction"));
    QVERIFY(clean && clean->isCheckable());
    QVERIFY(!clean->isEnabled()); // no edits yet
    win.w.ablations()->ablate(0, 1, true);
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
    QVERIFY(clean->isEnabled());
    clean->setChecked(true);
    QVERIFY(win.w.session()->editsShownClean());
    const SnapshotPtr shown = waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); });
    QVERIFY(shown && shown->editsShownClean);
    QVERIFY(shown->edits == std::vector<Intervention>{headEdit(0, 1, EditKind::MeanOverText)}); // kept
    const auto groups = win.w.predictionsView()->groups();
    for (size_t i = 0; i < groups.front().entries.size(); ++i)
        QCOMPARE(groups.front().entries[i].p, cleanGroups.front().entries[i].p);
    QVERIFY(win.w.statusText().contains(QLatin1String("clean model")));
    clean->setChecked(false);
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
    // restoring every head turns the switch off and disables it
    win.w.ablations()->restore(-1, -1);
    QVERIFY(!clean->isEnabled() && !clean->isChecked());
}

void TestAblation::shortcutActionsAndUndo()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    QUndoStack *undo = win.w.undoStack();
    QCOMPARE(undo->count(), 0);
    QAction *zero = win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"));
    QAction *mean = win.w.findChild<QAction *>(QStringLiteral("ablateSelectedMeanAction"));
    QVERIFY(zero && mean);
    QCOMPARE(zero->shortcut(), QKeySequence(QStringLiteral("Ctrl+K")));
    QCOMPARE(mean->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+K")));
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(3);
    QVERIFY(zero->isEnabled());
    zero->trigger();
    QVERIFY(win.w.session()->edits() == std::vector<Intervention>{headEdit(1, 3, EditKind::Zero)});
    QCOMPARE(undo->count(), 1);
    QCOMPARE(undo->undoText(), QStringLiteral("Ablate L1 H3 (zero)"));
    mean->trigger(); // the same head, now to its mean: replaces the zero
    QVERIFY(win.w.session()->edits() == std::vector<Intervention>{headEdit(1, 3, EditKind::MeanOverText)});
    QVERIFY(zero->text().startsWith(QLatin1String("Restore")));
    zero->trigger(); // an ablated head: Ctrl+K restores it
    QVERIFY(win.w.session()->edits().empty());
    QCOMPARE(undo->count(), 3);
    undo->undo();
    QVERIFY(win.w.session()->edits() == std::vector<Intervention>{headEdit(1, 3, EditKind::MeanOverText)});
    undo->undo();
    QVERIFY(win.w.session()->edits() == std::vector<Intervention>{headEdit(1, 3, EditKind::Zero)});
    undo->undo();
    QVERIFY(win.w.session()->edits().empty());
    undo->redo();
    QVERIFY(win.w.session()->edits() == std::vector<Intervention>{headEdit(1, 3, EditKind::Zero)});
    const SnapshotPtr s = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(s && s->trace->edits == std::vector<Intervention>{headEdit(1, 3, EditKind::Zero)});
    // another model clears the ablations
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.session()->edits().empty());
}

// Ctrl+K on the clean trace on screen: the edited trace reuses its layers before the ablated one
// (TraceRequest::unedited) and every layer still equals the core's whole edited forward; pressed again,
// the clean trace comes back bit for bit.
void TestAblation::toggleOverTheCleanTrace()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText + QStringLiteral(" not"))); // two traces held: the toggle computes into the older
    SnapshotPtr clean = win.show(kText);
    QVERIFY(clean && !clean->trace->edited());
    // what the views read of the clean trace, kept apart so that no snapshot of it is held here
    const Trace<float> cleanCopy = *clean->trace;
    clean.reset();
    QAction *zero = win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"));
    QVERIFY(zero);
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(2);
    QVERIFY(zero->isEnabled());
    zero->trigger();
    const std::vector<Intervention> want{headEdit(1, 2, EditKind::Zero)};
    SnapshotPtr edited = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(edited && edited->trace->edits == want);
    const Trace<float> core = coreTrace(want);
    const Trace<float> &shown = *edited->trace;
    QCOMPARE(shown.numLayers(), core.numLayers());
    auto near = [](const auto &a, const auto &b) {
        return a.rows() == b.rows() && a.cols() == b.cols() && (a.template cast<double>() - b.template cast<double>()).cwiseAbs().maxCoeff() <= 1e-5;
    };
    for (int l = 0; l < core.numLayers(); ++l) {
        const LayerTrace<float> &a = shown.layers[size_t(l)], &b = core.layers[size_t(l)];
        QVERIFY2(near(a.output, b.output), qPrintable(QStringLiteral("layer %1 output").arg(l)));
        for (int h = 0; h < core.numHeads(); ++h)
            QVERIFY2(near(shown.weights(l, h).toDense(), core.weights(l, h).toDense()),
                     qPrintable(QStringLiteral("layer %1 head %2 weights").arg(l).arg(h)));
    }
    QVERIFY(near(shown.final, core.final));
    const auto groups = win.w.predictionsView()->groups();
    const std::vector<TokenProb> &top = core.predictions.next.back();
    QCOMPARE(groups.front().entries.size(), top.size());
    for (size_t i = 0; i < top.size(); ++i) {
        QCOMPARE(groups.front().entries[i].id, top[i].id);
        QVERIFY(std::abs(groups.front().entries[i].p - top[i].p) <= 1e-5);
    }
    edited.reset();
    zero->trigger(); // restore
    QVERIFY(win.w.session()->edits().empty());
    const SnapshotPtr back = waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); });
    QVERIFY(back);
    const Trace<float> &r = *back->trace;
    QCOMPARE(r.numLayers(), cleanCopy.numLayers());
    QVERIFY(r.final == cleanCopy.final);
    for (int l = 0; l < r.numLayers(); ++l) {
        QVERIFY(r.layers[size_t(l)].output == cleanCopy.layers[size_t(l)].output);
        for (int h = 0; h < r.numHeads(); ++h)
            QVERIFY(r.weights(l, h).toDense() == cleanCopy.weights(l, h).toDense());
    }
    QCOMPARE(r.predictions.next.back().size(), cleanCopy.predictions.next.back().size());
    for (size_t i = 0; i < r.predictions.next.back().size(); ++i) {
        QCOMPARE(r.predictions.next.back()[i].id, cleanCopy.predictions.next.back()[i].id);
        QVERIFY(r.predictions.next.back()[i].p == cleanCopy.predictions.next.back()[i].p);
    }
}

namespace {

// Whether two snapshots of the same request hold the same numbers, bit for bit: every layer's
// input, output and head weights, the final stream, the next tokens, and the clean model's beside them.
bool sameBits(const ComputeSnapshot &a, const ComputeSnapshot &b, QString &why)
{
    const Trace<float> &x = *a.trace, &y = *b.trace;
    if (x.numLayers() != y.numLayers() || x.tokens.size() != y.tokens.size() || x.edits != y.edits) {
        why = QStringLiteral("shape or edits");
        return false;
    }
    for (int l = 0; l < x.numLayers(); ++l) {
        const LayerTrace<float> &p = x.layers[size_t(l)], &q = y.layers[size_t(l)];
        if (!(p.residualIn == q.residualIn) || !(p.output == q.output)) {
            why = QStringLiteral("layer %1 stream").arg(l);
            return false;
        }
        for (int h = 0; h < x.numHeads(); ++h)
            if (!(x.weights(l, h).toDense() == y.weights(l, h).toDense())) {
                why = QStringLiteral("layer %1 head %2 weights").arg(l).arg(h);
                return false;
            }
    }
    if (!(x.final == y.final)) {
        why = QStringLiteral("final");
        return false;
    }
    const auto &n = x.predictions.next, &m = y.predictions.next;
    if (n.size() != m.size() || n.empty() || n.back().size() != m.back().size()) {
        why = QStringLiteral("predictions");
        return false;
    }
    for (size_t i = 0; i < n.back().size(); ++i)
        if (n.back()[i].id != m.back()[i].id || n.back()[i].p != m.back()[i].p) {
            why = QStringLiteral("prediction %1").arg(i);
            return false;
        }
    if (a.cleanNext != b.cleanNext || !a.cleanTrace != !b.cleanTrace ||
        (a.cleanTrace && !(a.cleanTrace->final == b.cleanTrace->final))) {
        why = QStringLiteral("the clean model beside it");
        return false;
    }
    if (a.cleanTrace) // every layer of it (its rows copied from another clean trace, or computed)
        for (int l = 0; l < a.cleanTrace->numLayers(); ++l)
            if (!(a.cleanTrace->layers[size_t(l)].residualIn == b.cleanTrace->layers[size_t(l)].residualIn) ||
                !(a.cleanTrace->layers[size_t(l)].output == b.cleanTrace->layers[size_t(l)].output)) {
                why = QStringLiteral("the clean model's layer %1").arg(l);
                return false;
            }
    return true;
}

} // namespace

// Ctrl+K pressed after the window idled with the head selected: the trace speculated in the
// background is shown, without the compute thread (held for seconds here), and it is the very trace
// a press without speculation computes (its clean model too, whose rows the speculation copied from
// the clean trace of the ablation before).
void TestAblation::speculationIsThePressedTrace()
{
    const std::vector<Intervention> want{headEdit(1, 2, EditKind::Zero)};
    SnapshotPtr pressed;
    {
        Window win;
        win.w.session()->setSpeculationDelayMs(-1); // never
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
        QVERIFY(win.show(kText + QStringLiteral(" not")));
        QVERIFY(win.show(kText));
        win.w.session()->setSelectedLayer(1);
        win.w.session()->setSelectedHead(2);
        QVERIFY(win.w.session()->speculativeEdits().empty()); // no head ablated in this window yet
        QTest::qWait(100);
        QVERIFY(!win.w.session()->speculation()->running() && !win.w.session()->speculation()->ready());
        win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
        pressed = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
        QVERIFY(pressed && pressed->trace->edits == want);
    }
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles"))); // the grid marks the ablated head
    QVERIFY(win.show(kText + QStringLiteral(" not")));
    QVERIFY(win.show(kText));
    QVERIFY(ablateOnce(win));
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(2);
    Speculation *spec = win.w.session()->speculation();
    QVERIFY(spec->running()); // begun as the head was selected
    QVERIFY(spec->waitForTests(30000));
    // left alone, nothing starts again: the speculation is kept, nothing computes
    QTest::qWait(400);
    QVERIFY(spec->ready() && !spec->running() && !win.w.session()->busy());
    win.w.session()->holdComputeForTests(20000); // a request to the compute thread would wait 20 s
    const SnapshotPtr cleanShown = win.w.session()->snapshot();
    const quint64 g = test::shownGeneration(*win.w.session());
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(win.w.session()->edits() == want);
    QVERIFY(!spec->ready()); // taken
    const SnapshotPtr swapped = test::waitForSnapshot(*win.w.session(), g, {}, 3000);
    QVERIFY(swapped);
    QVERIFY(swapped->trace->edited() && swapped->generation == win.w.session()->generation());
    QString why;
    QVERIFY2(sameBits(*swapped, *pressed, why), qPrintable(why));
    QCOMPARE(win.w.headRolesView()->ablationMarks(), 1);
    if (const QString dir = qEnvironmentVariable("ATTNVIZ_ABLATION_SHOTS"); !dir.isEmpty()) // to look at
        QVERIFY(win.w.grab().save(dir + QStringLiteral("/ablation-speculated-window.png")));
    // the head is ablated now: Ctrl+K restores it, nothing to speculate on; the restore shows the
    // clean result the window had again, without the compute thread either
    QVERIFY(win.w.session()->speculativeEdits().empty());
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(win.w.session()->edits().empty());
    const SnapshotPtr back = test::waitForSnapshot(*win.w.session(), swapped->generation, {}, 3000);
    QVERIFY(back && !back->trace->edited() && back->trace == cleanShown->trace);
    QCOMPARE(win.w.headRolesView()->ablationMarks(), 0);
    win.w.session()->holdComputeForTests(0);
}

// Ctrl+K pressed while the speculation on the head just selected runs: only begun, it is discarded
// and the press computes; half done or more (here: its snapshot computed, held back), the press
// waits for it (the compute thread, held for seconds, computes nothing) and shows it, the core's
// edited forward. Stopped (Esc) while it waits, the views keep the clean result.
void TestAblation::pressWaitsForTheRunningSpeculation()
{
    const std::vector<Intervention> want{headEdit(1, 2, EditKind::Zero)};
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    QVERIFY(ablateOnce(win));
    LiveSession *session = win.w.session();
    Speculation *spec = session->speculation();
    QAction *zero = win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"));
    const auto edited = [](const ComputeSnapshot &s) { return s.trace->edited(); };
    const auto clean = [](const ComputeSnapshot &s) { return !s.trace->edited(); };

    spec->setHoldForTests(20000, 0); // begun, not computing
    session->setSelectedLayer(1);
    session->setSelectedHead(3);
    QVERIFY(spec->running() && !spec->halfway());
    zero->trigger();
    QVERIFY(!session->awaitingSpeculation() && !spec->running() && session->busy());
    QVERIFY(waitFor(win, edited));
    zero->trigger(); // restored: the clean result shown again
    QVERIFY(waitFor(win, clean));

    spec->setHoldForTests(0, 20000);     // computed, held back
    session->holdComputeForTests(20000); // a request to the compute thread would wait 20 s
    session->setSelectedHead(2);
    QTRY_VERIFY_WITH_TIMEOUT(spec->halfway(), 10000);
    const SnapshotPtr cleanShown = session->snapshot();
    zero->trigger();
    QVERIFY(session->awaitingSpeculation() && session->busy());
    session->cancelCompute();
    QVERIFY(!session->awaitingSpeculation() && !session->busy() && !spec->running());
    QTest::qWait(200);
    QVERIFY(session->snapshot() == cleanShown);
    session->holdComputeForTests(0);
    spec->setHoldForTests(0, 300);
    zero->trigger(); // restores the head the stopped press ablated (computed: nothing was shown of it)
    QVERIFY(session->edits().empty());
    QVERIFY(waitFor(win, clean));
    session->holdComputeForTests(20000);
    QTRY_VERIFY_WITH_TIMEOUT(spec->halfway(), 10000); // speculated again on the selected head
    const quint64 g = test::shownGeneration(*session);
    zero->trigger();
    QVERIFY(session->awaitingSpeculation() && session->busy());
    QVERIFY(session->edits() == want);
    const SnapshotPtr shown = test::waitForSnapshot(*session, g, {}, 10000);
    QVERIFY(shown && shown->trace->edits == want && shown->generation == session->generation());
    QVERIFY(!session->busy() && !session->awaitingSpeculation() && !spec->ready());
    QVERIFY(!shown->cleanNext.empty() && shown->cleanTrace);
    const Trace<float> core = coreTrace(want);
    QCOMPARE(shown->trace->tokens.size(), core.tokens.size());
    for (int l = 0; l < core.numLayers(); ++l)
        QVERIFY((shown->trace->layers[size_t(l)].output - core.layers[size_t(l)].output).cwiseAbs().maxCoeff() <=
                1e-5f);
    QVERIFY((shown->trace->final - core.final).cwiseAbs().maxCoeff() <= 1e-5f);
    QCOMPARE(shown->trace->predictions.next.back().front().id, core.predictions.next.back().front().id);
    spec->setHoldForTests(0, 0);
    session->holdComputeForTests(0);
}

// A window in which no head has been ablated speculates on none (a speculation costs a forward
// from the selected layer on and more at every pause, for a press that may never come).
void TestAblation::noSpeculationBeforeAnAblation()
{
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(2);
    QVERIFY(win.w.session()->speculativeEdits().empty());
    QVERIFY(win.show(kText + QStringLiteral(" not")));
    QTest::qWait(100);
    QVERIFY(!win.w.session()->speculation()->running() && !win.w.session()->speculation()->ready());
    QVERIFY(ablateOnce(win));
    QVERIFY(win.w.session()->speculativeEdits() == std::vector<Intervention>{headEdit(1, 2, EditKind::Zero)});
}

// A keystroke while the speculation runs discards it (its result, when it comes, is dropped); the
// new text's speculation is the core's edited forward of that text, and typing on over it too.
void TestAblation::keystrokeDiscardsSpeculation()
{
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    const QString first = QStringLiteral("The dog ran to the park and then it");
    QVERIFY(win.show(first));
    QVERIFY(ablateOnce(win));
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(2);
    Speculation *spec = win.w.session()->speculation();
    QTRY_VERIFY_WITH_TIMEOUT(spec->running() || spec->ready(), 5000);
    // typed before the speculation's result reaches the window (it is posted to this thread)
    win.w.setSentence(kText);
    QVERIFY(!spec->running() && !spec->ready());
    QVERIFY(win.show(kText) || win.w.session()->snapshot()->sentence == kText);
    // the new text's speculation (the discarded one's result, if it was on its way, is dropped)
    QTRY_VERIFY_WITH_TIMEOUT(spec->running() || spec->ready(), 5000);
    QVERIFY(spec->waitForTests(30000));
    const std::vector<Intervention> want{headEdit(1, 2, EditKind::Zero)};
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(!spec->ready()); // taken: the press shows it
    const SnapshotPtr edited = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
    QVERIFY(edited && edited->sentence == kText && edited->trace->edits == want);
    const Trace<float> core = coreTrace(want);
    const Trace<float> &shown = *edited->trace;
    QCOMPARE(shown.tokens.size(), core.tokens.size());
    QVERIFY((shown.final - core.final).cwiseAbs().maxCoeff() <= 1e-5f);
    QCOMPARE(edited->trace->predictions.next.back().front().id, core.predictions.next.back().front().id);
    // typing on over the speculated trace (the compute thread continues it): the edited forward of
    // the longer text
    const QString longer = kText + QStringLiteral(" not");
    const SnapshotPtr typed = win.show(longer);
    QVERIFY(typed && typed->trace->edits == want);
    const Trace<float> coreLonger = coreTrace(want, 10, longer);
    QCOMPARE(typed->trace->tokens.size(), coreLonger.tokens.size());
    for (int l = 0; l < coreLonger.numLayers(); ++l)
        QVERIFY((typed->trace->layers[size_t(l)].output - coreLonger.layers[size_t(l)].output).cwiseAbs().maxCoeff() <= 1e-5f);
    QVERIFY((typed->trace->final - coreLonger.final).cwiseAbs().maxCoeff() <= 1e-5f);
}

namespace {

// The pointer moved onto the grid's thumbnail of (layer, head), as the window system sends it.
void pointAt(HeadRolesView *grid, int layer, int head)
{
    QWidget *canvas = grid->canvas();
    const QPoint at = grid->thumbnailRect(layer, head).center();
    QMouseEvent move(QEvent::MouseMove, at, canvas->mapToGlobal(at), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(canvas, &move);
}

// A left click on the thumbnail of (layer, head): it is selected (and the Weights tab shown).
void clickAt(HeadRolesView *grid, int layer, int head)
{
    QWidget *canvas = grid->canvas();
    const QPoint at = grid->thumbnailRect(layer, head).center();
    QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier, at);
}

} // namespace

// The pointer resting on a head of the Layers × heads grid (HeadAblations::kDwellMs) speculates on
// its ablation in place of the selected head's, pointed (normal priority); passing over a head starts
// nothing; moving on to another head replaces it; a click and Ctrl+K at once take it, the trace a
// press without speculation computes, bit for bit; pressed while it runs, however little it has done,
// the press waits for it. Left alone, nothing starts again.
void TestAblation::pointerRestingOnAHead()
{
    const std::vector<Intervention> want{headEdit(1, 3, EditKind::Zero)};
    SnapshotPtr pressed;
    {
        Window win;
        win.w.session()->setSpeculationDelayMs(-1); // never
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
        QVERIFY(win.show(kText + QStringLiteral(" not")));
        QVERIFY(win.show(kText));
        win.w.session()->setSelectedLayer(1);
        win.w.session()->setSelectedHead(3);
        win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
        pressed = waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); });
        QVERIFY(pressed && pressed->trace->edits == want);
    }
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(win.show(kText + QStringLiteral(" not")));
    QVERIFY(win.show(kText));
    QVERIFY(ablateOnce(win));
    LiveSession *session = win.w.session();
    HeadAblations *ablations = win.w.ablations();
    HeadRolesView *grid = win.w.headRolesView();
    Speculation *spec = session->speculation();
    QVERIFY(spec->waitForTests(30000)); // the selected head's (L0 H0), at idle priority
    QVERIFY(session->speculativeEdits() == std::vector<Intervention>{headEdit(0, 0, EditKind::Zero)});
    QVERIFY(!grid->thumbnailRect(1, 2).isEmpty() && !grid->thumbnailRect(1, 3).isEmpty());

    // passed over: nothing
    int starts = spec->startCount();
    pointAt(grid, 1, 1);
    pointAt(grid, 1, 2);
    // (no event loop has run: the dwell's timer has not fired, however loaded the machine)
    QCOMPARE(ablations->pointedHead(), qMakePair(-1, -1));
    QCOMPARE(spec->startCount(), starts);
    QVERIFY(spec->ready());
    // resting on L1 H2: its ablation, pointed (held before computing, to be seen running)
    spec->setHoldForTests(20000, 0);
    QTRY_COMPARE_WITH_TIMEOUT(ablations->pointedHead(), qMakePair(1, 2), 5000);
    QVERIFY(session->speculativeEdits() == std::vector<Intervention>{headEdit(1, 2, EditKind::Zero)});
    QCOMPARE(spec->startCount(), starts + 1);
    QVERIFY(spec->running() && spec->pointed() && spec->joinable() && !spec->halfway());
    QVERIFY(!spec->hurried()); // on its own thread: a letter typed now keeps the core's pool
    QCOMPARE(session->selectedHead(), 0); // the selection stays where it was
    // moved on to L1 H3: replaces it (the one held stops at once)
    spec->setHoldForTests(0, 0);
    pointAt(grid, 1, 3);
    QTRY_COMPARE_WITH_TIMEOUT(ablations->pointedHead(), qMakePair(1, 3), 5000);
    QVERIFY(session->speculativeEdits() == want);
    QCOMPARE(spec->startCount(), starts + 2);
    QVERIFY(spec->waitForTests(30000));
    // left alone, nothing starts again
    QTest::qWait(400);
    QVERIFY(spec->ready() && !spec->running() && !session->busy());
    QCOMPARE(spec->startCount(), starts + 2);
    // clicked (selected: nothing new to compute) and pressed at once: the speculated trace, without
    // the compute thread (held for seconds), bit for bit the pressed one
    clickAt(grid, 1, 3);
    QCOMPARE(session->selectedLayer(), 1);
    QCOMPARE(session->selectedHead(), 3);
    QVERIFY(spec->ready());
    QCOMPARE(spec->startCount(), starts + 2);
    session->holdComputeForTests(20000);
    const quint64 g = test::shownGeneration(*session);
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(session->edits() == want);
    QVERIFY(!spec->ready()); // taken
    const SnapshotPtr swapped = test::waitForSnapshot(*session, g, {}, 3000);
    QVERIFY(swapped && swapped->trace->edited() && swapped->generation == session->generation());
    QString why;
    QVERIFY2(sameBits(*swapped, *pressed, why), qPrintable(why));
    session->holdComputeForTests(0);

    // restored; resting on L0 H1 with the speculation held before computing: a click and a press at
    // once wait for it (pointed: joined however little it has done), and show the core's edited forward
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); }));
    QVERIFY(spec->waitForTests(30000)); // L1 H3's again, pointed at still
    // back to the grid (the click showed the weights)
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QTRY_VERIFY_WITH_TIMEOUT(!session->busy(), 30000);
    spec->setHoldForTests(300, 0);
    pointAt(grid, 0, 1);
    QTRY_COMPARE_WITH_TIMEOUT(ablations->pointedHead(), qMakePair(0, 1), 5000);
    QVERIFY(spec->running() && spec->pointed());
    starts = spec->startCount();
    clickAt(grid, 0, 1);
    QCOMPARE(spec->startCount(), starts); // the selection is the pointed head: nothing restarts
    const std::vector<Intervention> want01{headEdit(0, 1, EditKind::Zero)};
    session->holdComputeForTests(20000);
    const quint64 g2 = test::shownGeneration(*session);
    win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"))->trigger();
    QVERIFY(session->awaitingSpeculation() && session->busy());
    const SnapshotPtr joined = test::waitForSnapshot(*session, g2, {}, 10000);
    QVERIFY(joined && joined->trace->edits == want01 && !session->busy());
    const Trace<float> core = coreTrace(want01);
    QCOMPARE(joined->trace->tokens.size(), core.tokens.size());
    for (int l = 0; l < core.numLayers(); ++l)
        QVERIFY((joined->trace->layers[size_t(l)].output - core.layers[size_t(l)].output).cwiseAbs().maxCoeff() <=
                1e-5f);
    QCOMPARE(joined->trace->predictions.next.back().front().id, core.predictions.next.back().front().id);
    spec->setHoldForTests(0, 0);
    session->holdComputeForTests(0);
    // the arrow keys' selection takes over from the pointed head
    session->setSelectedHead(2);
    QTRY_COMPARE_WITH_TIMEOUT(ablations->pointedHead(), qMakePair(-1, -1), 5000);
    QVERIFY(session->speculativeEdits() ==
            (std::vector<Intervention>{headEdit(0, 1, EditKind::Zero), headEdit(0, 2, EditKind::Zero)}));
}

// A head's right-click menu speculates on its ablation at once, in a window where none was ablated
// yet (its entries are the ablations); the pointer merely resting on a head there starts nothing.
void TestAblation::menuSpeculatesAtOnce()
{
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(win.show(kText));
    HeadRolesView *grid = win.w.headRolesView();
    Speculation *spec = win.w.session()->speculation();
    pointAt(grid, 1, 2);
    QTRY_COMPARE_WITH_TIMEOUT(win.w.ablations()->pointedHead(), qMakePair(1, 2), 5000);
    QVERIFY(win.w.session()->speculativeEdits().empty());
    QVERIFY(!spec->running() && !spec->ready());
    spec->setHoldForTests(20000, 0);
    bool running = false, pointed = false, hurried = false;
    std::vector<Intervention> named;
    QTimer::singleShot(50, [&] { // while the menu is open
        running = spec->running();
        pointed = spec->pointed();
        hurried = spec->hurried(); // the menu holds the keyboard: it computes on the core's pool
        named = win.w.session()->speculativeEdits();
        if (QWidget *menu = QApplication::activePopupWidget())
            menu->close();
    });
    QWidget *canvas = grid->canvas();
    const QPoint at = grid->thumbnailRect(1, 3).center();
    QContextMenuEvent menu(QContextMenuEvent::Mouse, at, canvas->mapToGlobal(at));
    QApplication::sendEvent(canvas, &menu);
    QVERIFY(running && pointed && hurried);
    QVERIFY(named == std::vector<Intervention>{headEdit(1, 3, EditKind::Zero)});
    QCOMPARE(win.w.ablations()->pointedHead(), qMakePair(1, 3));
    spec->setHoldForTests(0, 0);
    spec->discard();
}

// A long text (traced without its weights: ComputeSnapshot::longText) is not speculated on.
void TestAblation::noSpeculationForLongTexts()
{
    Window win;
    win.w.session()->setSpeculationDelayMs(0);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    QVERIFY(ablateOnce(win));
    qputenv("ATTNVIZ_TRACE_BUDGET_KB", "16");
    const SnapshotPtr s = win.show(kText + QLatin1Char(' ') + kText + QLatin1Char(' ') + kText);
    qunsetenv("ATTNVIZ_TRACE_BUDGET_KB");
    QVERIFY(s && s->longText);
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(2);
    QVERIFY(!win.w.session()->speculativeEdits().empty()); // asked for, and refused
    QTest::qWait(400);
    QVERIFY(!win.w.session()->speculation()->running() && !win.w.session()->speculation()->ready());
}

void TestAblation::gridRepaintsWhatChanged()
{
    Window win;
    win.w.resize(1400, 1000); // the note above the grid and every cell in view
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(win.show(kText));
    HeadRolesView *grid = win.w.headRolesView();
    QCOMPARE(grid->layerCount(), 2);
    const int heads = grid->headCount();
    QVERIFY(heads > 1);
    // the ablations below done once before: Predictions' deltas widen its dock (or the window), and the
    // window then lays out and repaints every view; the grid's own repaint is what is asserted here
    for (const auto &[l, h] : {std::pair(1, 1), std::pair(0, 1)}) {
        win.w.ablations()->ablate(l, h, false);
        QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
        win.w.ablations()->restore(l, h);
        QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); }));
    }
    flushPaints();
    const QImage clean = shownCanvas(win);
    if (clean.isNull())
        QSKIP("the platform's backing store is no image to read the window's pixels from (offscreen's is)");
    QCOMPARE(clean.size(), grid->canvas()->size()); // the whole grid in view
    // what the window shows now equals the canvas painted whole from the present state
    const auto equalsFullRepaint = [&](const QImage &shown) {
        grid->canvas()->update();
        flushPaints();
        return grid->cellsPainted() == 2 * heads && shownCanvas(win) == shown;
    };

    // an ablation changes the weights of the layers after its own only (it edits the head's output,
    // after its weights): at the last layer, no thumbnail is made again and only the head's cell is
    // painted (its mark)
    const auto edited = [](const ComputeSnapshot &s) { return s.trace->edited(); };
    const auto unedited = [](const ComputeSnapshot &s) { return !s.trace->edited(); };
    int rendered = grid->thumbnailsRendered();
    win.w.ablations()->ablate(1, 1, false);
    QVERIFY(waitFor(win, edited));
    QCOMPARE(grid->thumbnailsRendered() - rendered, 0);
    flushPaints();
    QCOMPARE(grid->cellsPainted(), 1);
    QCOMPARE(grid->ablationMarks(), 1);
    const QImage marked = shownCanvas(win);
    QVERIFY(marked != clean);
    QVERIFY(equalsFullRepaint(marked));
    rendered = grid->thumbnailsRendered();
    win.w.ablations()->restore(1, 1);
    QVERIFY(waitFor(win, unedited));
    QCOMPARE(grid->thumbnailsRendered() - rendered, 0);
    flushPaints();
    QCOMPARE(grid->cellsPainted(), 1);
    QCOMPARE(shownCanvas(win), clean);

    // at layer 0: layer 0's weights are bit for bit the clean ones, so its thumbnails are kept and
    // only the ablated head's cell of it painted again; layer 1's are made again
    rendered = grid->thumbnailsRendered();
    win.w.ablations()->ablate(0, 1, false);
    QVERIFY(waitFor(win, edited));
    QCOMPARE(grid->thumbnailsRendered() - rendered, heads);
    flushPaints();
    QCOMPARE(grid->cellsPainted(), heads + 1);
    const QImage ablated = shownCanvas(win);
    QVERIFY(ablated != clean && ablated != marked);
    QVERIFY(equalsFullRepaint(ablated));
    if (const QString dir = qEnvironmentVariable("ATTNVIZ_ABLATION_SHOTS"); !dir.isEmpty()) // as the window showed them
        QVERIFY(marked.save(dir + QStringLiteral("/ablation-grid-repainted-L1H1.png")) &&
                ablated.save(dir + QStringLiteral("/ablation-grid-repainted-L0H1.png")));

    // the Clean model switch: the clean weights again under a dashed "zero (off)" mark, and back
    QAction *cleanModel = win.w.findChild<QAction *>(QStringLiteral("cleanModelAction"));
    QVERIFY(cleanModel && cleanModel->isEnabled());
    for (const bool on : {true, false}) {
        rendered = grid->thumbnailsRendered();
        cleanModel->setChecked(on);
        QVERIFY(waitFor(win, [on](const ComputeSnapshot &s) { return s.trace->edited() != on && s.editsShownClean == on; }));
        QCOMPARE(grid->thumbnailsRendered() - rendered, heads);
        flushPaints();
        QCOMPARE(grid->cellsPainted(), heads + 1);
        const QImage shown = shownCanvas(win);
        QVERIFY(on ? shown != clean && shown != ablated : shown == ablated);
        QVERIFY(equalsFullRepaint(shown));
    }

    // restored: the clean trace again, the same cells repainted, the clean pixels
    rendered = grid->thumbnailsRendered();
    win.w.ablations()->restore(0, 1);
    QVERIFY(waitFor(win, unedited));
    QCOMPARE(grid->thumbnailsRendered() - rendered, heads);
    flushPaints();
    QCOMPARE(grid->cellsPainted(), heads + 1);
    QCOMPARE(shownCanvas(win), clean);
    QVERIFY(equalsFullRepaint(clean));

    // another head selected: its cell and the one it leaves
    win.w.session()->setSelectedHead(2);
    flushPaints();
    QCOMPARE(grid->cellsPainted(), 2);
    QVERIFY(equalsFullRepaint(shownCanvas(win)));
}

// Predictions' changes against the clean model (Δ) come in a column of their own when a head is
// ablated, and the edited model's tokens are others: the dock keeps its width, with them and
// without, and for every position hovered (the first ablation widened it, 288 -> 344 px at
// 1280 x 720, and the window laid out every view again). ATTNVIZ_ABLATION_SHOTS=DIR saves the
// window clean and with a head ablated.
void TestAblation::predictionsKeepTheirWidth_data()
{
    QTest::addColumn<QSize>("size");
    for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)})
        QTest::addRow("%dx%d", size.width(), size.height()) << size;
}

void TestAblation::predictionsKeepTheirWidth()
{
    QFETCH(QSize, size);
    Window win;
    win.w.resize(size);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(kText));
    const QString shots = qEnvironmentVariable("ATTNVIZ_ABLATION_SHOTS");
    const auto shot = [&](const char *what) {
        if (!shots.isEmpty())
            QVERIFY(win.w.grab().save(QStringLiteral("%1/predictions-width-%2-%3.png").arg(shots).arg(size.width()).arg(what)));
    };
    auto *dock = win.w.findChild<QDockWidget *>(QStringLiteral("predictionsDock"));
    QVERIFY(dock);
    QTRY_VERIFY(dock->isVisible());
    flushPaints();
    shot("clean");
    const QRect clean = dock->geometry();
    const QRect window = win.w.geometry();
    PredictionsView *view = win.w.predictionsView();
    QVERIFY(!view->html().contains(QStringLiteral("Δ")));
    for (const auto &[l, h] : {std::pair(1, 1), std::pair(0, 1)}) {
        win.w.ablations()->ablate(l, h, false);
        QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
        flushPaints();
        QVERIFY(!view->groups().empty() && std::isfinite(view->groups().front().entries.front().delta));
        QVERIFY(view->html().contains(PredictionsView::deltaText(view->groups().front().entries.front().delta)));
        QCOMPARE(dock->geometry(), clean);
        QCOMPARE(win.w.geometry(), window);
        if (l == 1)
            shot("ablated");
        win.w.ablations()->restore(l, h);
        QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return !s.trace->edited(); }));
        flushPaints();
        QCOMPARE(dock->geometry(), clean);
    }
    // nor another position's list, hovered
    const int tokens = win.w.session()->snapshot()->tq();
    for (int i = 0; i < tokens; ++i) {
        view->setHoveredPosition(i);
        QCOMPARE(view->groups().front().position, i);
        flushPaints();
        QCOMPARE(dock->geometry(), clean);
    }
    QCOMPARE(win.w.geometry(), window);
}

void TestAblation::sessionRoundTrip()
{
    QTemporaryDir tmp;
    const QString path = tmp.filePath(QStringLiteral("ablated.attnviz"));
    const std::vector<Intervention> want{headEdit(1, 0, EditKind::MeanOverText), headEdit(0, 3, EditKind::Zero)};
    {
        Window win;
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
        QVERIFY(win.show(kText));
        win.w.ablations()->ablate(1, 0, true);
        win.w.ablations()->ablate(0, 3, false);
        win.w.session()->setEditsShownClean(true);
        QString error;
        QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
    }
    const QJsonObject json = test::readJson(path);
    const QJsonArray heads = json.value(QStringLiteral("ablations")).toObject().value(QStringLiteral("heads")).toArray();
    QCOMPARE(heads.size(), 2);
    QCOMPARE(heads[0].toObject().value(QStringLiteral("kind")).toString(), QStringLiteral("mean"));
    QCOMPARE(json.value(QStringLiteral("ablations")).toObject().value(QStringLiteral("shownClean")).toBool(), true);
    {
        Window win;
        QString report;
        QVERIFY2(win.w.openSession(path, &report), qPrintable(report));
        QVERIFY2(!report.contains(QLatin1String("ablations")), qPrintable(report));
        QVERIFY(win.w.session()->edits() == want);
        QVERIFY(win.w.session()->editsShownClean());
        QCOMPARE(win.w.undoStack()->count(), 0); // a session opened is a start, not a change
        QVERIFY(win.w.findChild<QAction *>(QStringLiteral("cleanModelAction"))->isChecked());
        const SnapshotPtr s = win.settle();
        QVERIFY(s && s->edits == want && s->editsShownClean);
    }
    // a session without ablations writes none (earlier sessions read the same)
    {
        Window win;
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
        QVERIFY(win.w.saveSession(path, nullptr));
        QVERIFY(!test::readJson(path).contains(QStringLiteral("ablations")));
    }
    // a head the model does not have: said, and none applied
    {
        QJsonObject bad = json;
        bad.insert(QStringLiteral("ablations"),
                   QJsonObject{{QStringLiteral("heads"), QJsonArray{QJsonObject{{QStringLiteral("layer"), 1}, {QStringLiteral("head"), 9}}}}});
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QJsonDocument(bad).toJson());
        f.close();
        Window win;
        QString report;
        QVERIFY(win.w.openSession(path, &report));
        QVERIFY2(report.contains(QLatin1String("ablations:")) && report.contains(QLatin1String("head 9")), qPrintable(report));
        QVERIFY(win.w.session()->edits().empty());
    }
}

void TestAblation::refusals()
{
    Window win; // the word vectors
    QVERIFY(win.show(QStringLiteral("I must go back to my ship")));
    QObject owner;
    const QList<QAction *> menu = win.w.layerGridView()->headActions(0, 0, &owner);
    QAction *zero = actionNamed(menu, QStringLiteral("ablateZeroAction"));
    QVERIFY(zero && !zero->isEnabled());
    QVERIFY2(zero->toolTip().contains(QLatin1String("word-vector")), qPrintable(zero->toolTip()));
    QAction *selected = win.w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction"));
    QVERIFY(selected && !selected->isEnabled());
    win.w.ablations()->ablate(0, 0, false);
    QVERIFY(win.w.session()->edits().empty());

    // an encoder-decoder model opens in the window, but its heads cannot be ablated yet: the menu says why
    ModelInfo t5;
    t5.family = "t5";
    t5.architecture.layers = 2;
    t5.architecture.encoderDecoder = true;
    QVERIFY(editsRefusal(t5, true).contains(QLatin1String("encoder-decoder models (t5)")));
    ModelInfo gpt2;
    gpt2.architecture.layers = 2;
    QVERIFY(editsRefusal(gpt2, true).isEmpty());
    QVERIFY(!editsRefusal(gpt2, false).isEmpty());
}

// With ATTNVIZ_ABLATION_SHOTS=DIR: the Layers grid with two ablated heads, Predictions with its
// deltas, the Logit lens and Direct logit attribution (edited minus clean), on the bundled model, as
// PNGs to look at (skipped otherwise).
void TestAblation::screenshots()
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_ABLATION_SHOTS");
    if (dir.isEmpty())
        QSKIP("ATTNVIZ_ABLATION_SHOTS names no folder");
    Window win;
    win.w.resize(1400, 900);
    QVERIFY(win.w.openModel(kBundledModelArg, nullptr));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QVERIFY(win.show(QStringLiteral("Once upon a time there was a little girl who")));
    win.w.session()->setSelectedLayer(1);
    win.w.session()->setSelectedHead(1);
    win.w.ablations()->ablate(0, 2, false);
    win.w.ablations()->ablate(1, 1, true);
    QVERIFY(waitFor(win, [](const ComputeSnapshot &s) { return s.trace->edited(); }));
    QTest::qWait(300);
    QCOMPARE(win.w.headRolesView()->ablationMarks(), 2);
    QVERIFY(win.w.headRolesView()->grab().save(dir + QStringLiteral("/ablation-grid.png")));
    QVERIFY(win.w.predictionsView()->grab().save(dir + QStringLiteral("/ablation-predictions.png")));
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/ablation-window.png")));
    // the Logit lens and Direct logit attribution of the edited model at 1280 x 720: the clean
    // model's lines dotted beside the lens's, attribution's parts as edited minus clean
    win.w.resize(1280, 720);
    win.w.session()->setSelectedQuery(win.w.session()->snapshot()->tq() - 1); // "who": what follows is predicted
    QVERIFY(win.w.showView(QStringLiteral("lens")));
    QTest::qWait(1500);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/ablation-lens-1280x720.png")));
    QVERIFY(win.w.showView(QStringLiteral("dla")));
    QTest::qWait(300);
    if (auto *delta = win.w.findChild<QCheckBox *>(QStringLiteral("dlaDelta")))
        delta->setChecked(true);
    QTest::qWait(300);
    QVERIFY(win.w.grab().save(dir + QStringLiteral("/ablation-dla-delta-1280x720.png")));
}

QTEST_MAIN(TestAblation)
#include "tst_ablation.moc"
