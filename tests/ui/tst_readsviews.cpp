// SPDX-License-Identifier: GPL-3.0-or-later
// The views of reads.h on the tiny fixture models, each a standalone widget fed snapshots as the
// window feeds them: the logit lens (the selected column at once, the grid filled off the GUI
// thread, every cell against tests/fixtures/reads/reads-expected.json, hover text, clicks), direct
// logit attribution (the grid against the float64 parts, the three targets, a typed token not in
// the vocabulary said in the view, a click selecting a head) and the generation panel (greedy ids
// equal to the reference's, appended to the text one snapshot at a time; Stop). With
// ATTNVIZ_READS_SHOTS=DIR each view is also written there as PNG (resources/screenshots).
#include "testpaths.h"
#include "controls/tokenchipsview.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "style/legibility.h"
#include "views/dlaview.h"
#include "views/generationpanel.h"
#include "views/logitlensview.h"
#include "views/normweighting.h"
#include "controls/elidedlabel.h"
#include "window/viewrouter.h"

#include "attnviz/pretrained.h"
#include "bundledmodel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QString fixture(const QString &model) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model; }

QJsonObject reference(const QString &model)
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/reads/reads-expected.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("models")).toObject().value(model).toObject();
}

QString caseText(const QString &model)
{
    QFile f(fixture(model) + QStringLiteral("/expected.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases"))[0][QStringLiteral("text")].toString();
}

std::shared_ptr<Model> openModel(const QString &model)
{
    std::unique_ptr<Model> m;
    if (!openPretrained(fixture(model).toStdString(), {}, m))
        return nullptr;
    return std::shared_ptr<Model>(std::move(m));
}

// A snapshot of `model` on `text`, computed by a LiveSession as the window does.
SnapshotPtr traceText(LiveSession &session, const QString &text)
{
    QSignalSpy spy(&session, &LiveSession::snapshotChanged);
    session.setSentence(text);
    session.requestNow();
    for (int i = 0; i < 200 && !(session.snapshot() && session.snapshot()->sentence == text && !session.busy()); ++i)
        spy.wait(100);
    const SnapshotPtr s = session.snapshot();
    return s && s->sentence == text ? s : nullptr;
}

// TEXT traced by the model in FOLDER through a session of its own (the snapshot outlives it).
SnapshotPtr traceOn(const char *folder, const QString &text)
{
    std::unique_ptr<Model> m;
    if (!openPretrained(folder, {}, m))
        return nullptr;
    LiveSession session;
    session.setDebounceMs(0);
    session.setModel(std::shared_ptr<Model>(std::move(m)));
    return traceText(session, text);
}

void shoot(QWidget *w, const QString &name)
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_READS_SHOTS");
    if (dir.isEmpty())
        return;
    QCoreApplication::processEvents();
    if (auto *plot = w->findChild<QCustomPlot *>())
        plot->replot();
    w->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
}

} // namespace

class TestReadsViews : public QObject {
    Q_OBJECT
private slots:
    void lens()
    {
        auto model = openModel(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const SnapshotPtr s = traceText(session, caseText(QStringLiteral("gpt2-tiny")));
        QVERIFY(s);
        LogitLensView v;
        v.resize(1100, 600);
        v.show();
        QSignalSpy done(&v, &LogitLensView::gridComplete);
        v.setSelection(0, 0, 3);
        v.setSnapshot(s);
        QCOMPARE(v.selectedPosition(), 3);
        QTRY_VERIFY(v.grid().at(1, 3).computed()); // the selected column first
        QVERIFY(v.filledPositions() < v.positionCount() || done.count() == 1);
        QVERIFY(done.count() == 1 || done.wait(20000));
        QVERIFY(v.complete());
        const QJsonArray want = reference(QStringLiteral("gpt2-tiny")).value(QStringLiteral("lens")).toArray();
        const Mat<double> top = v.topProbabilities();
        QCOMPARE(int(top.rows()), want.size());
        for (int l = 0; l < want.size(); ++l)
            for (int i = 0; i < want[l].toArray().size(); ++i)
                QVERIFY2(std::abs(top(l, i) - want[l][i][QStringLiteral("p")][0].toDouble()) < 2e-5, qPrintable(QStringLiteral("%1 %2").arg(l).arg(i)));
        const QVector<double> actual = v.actualLine();
        QCOMPARE(actual.size(), 2);
        QVERIFY(std::abs(actual[1] - want[1][3][QStringLiteral("actual_p")].toDouble()) < 2e-5);
        QCOMPARE(v.entropyLine().size(), 2);
        QVERIFY(std::abs(v.entropyLine()[0] - want[0][3][QStringLiteral("entropy")].toDouble()) < 1e-4);
        const QString hover = v.cellText(1, 3);
        QVERIFY2(hover.contains(QStringLiteral("Top 5:")) && hover.contains(QStringLiteral("Actual next")) && hover.contains(QStringLiteral("rank")),
                 qPrintable(hover));
        QVERIFY(v.title().contains(QStringLiteral("Logit lens — gpt2-tiny")));
        // a click on a cell selects its position
        QSignalSpy picked(&v, &LogitLensView::querySelected);
        QCPAxisRect *r = v.plot()->axisRect(0);
        const QPoint at(int(r->axis(QCPAxis::atBottom)->coordToPixel(5)), int(r->axis(QCPAxis::atLeft)->coordToPixel(1)));
        QTest::mouseClick(v.plot(), Qt::LeftButton, {}, at);
        QCOMPARE(picked.count(), 1);
        QCOMPARE(picked.at(0).at(0).toInt(), 5);
        // a newer snapshot starts over; the selected column again at once
        const SnapshotPtr s2 = traceText(session, QStringLiteral("a b c d a b c d"));
        QVERIFY(s2);
        v.setSelection(0, 0, -1);
        v.setSnapshot(s2);
        QCOMPARE(v.selectedPosition(), int(s2->tq()) - 1);
        QTRY_VERIFY(v.grid().at(0, v.selectedPosition()).computed());
        QVERIFY(done.wait(20000));
    }

    // The lens at about its size in a 1400 x 900 window: every input token labelled under the grid
    // (upright, one long token set the spacing of all: one label in five at 13 tokens), the
    // actual-next line's title within its panel, and no legend over the lines' points.
    void lensLabelsEveryToken()
    {
        const SnapshotPtr s = traceOn(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny-2"), QStringLiteral("The cat sat on the mat because it was tired."));
        QVERIFY(s);
        QCOMPARE(int(s->tq()), 13);
        LogitLensView v;
        v.resize(740, 400);
        v.show();
        QSignalSpy done(&v, &LogitLensView::gridComplete);
        v.setSelection(0, 0, 0);
        v.setSnapshot(s);
        QVERIFY(done.count() == 1 || done.wait(20000));
        v.plot()->replot();
        QCPAxis *x = v.plot()->axisRect(0)->axis(QCPAxis::atBottom);
        auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(x->ticker());
        QVERIFY(ticker);
        QCOMPARE(ticker->ticks().size(), 13);
        QVERIFY2(!x->label().contains(QStringLiteral("1 in")), qPrintable(x->label()));
        QCPAxisRect *lines = v.plot()->axisRect(1);
        QCOMPARE(lines->insetLayout()->elementCount(), 0);
        QCPAxis *p = lines->axis(QCPAxis::atBottom);
        QVERIFY2(p->label().contains(QStringLiteral("after “<|")), qPrintable(p->label()));
        const QFontMetricsF fm(p->labelFont());
        for (const QString &line : p->label().split(QLatin1Char('\n')))
            QVERIFY2(fm.horizontalAdvance(line) <= lines->outerRect().width(), qPrintable(line));
        QCOMPARE(p->labelColor(), v.plot()->graph(0)->pen().color());
    }

    // A publication figure of the lens (export --publication, 720 x 420): every cell's token written
    // whole, in a font down to the figure's least (6 px) that fits the cells; the window keeps its
    // 10 px and cuts a token to its cell or leaves the cell to hover. Before, the figure kept the
    // window's 10 px: tokens cut ("␣be…") or missing.
    void publicationLensWritesEveryCell()
    {
        const SnapshotPtr s = traceOn(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny-2"), QStringLiteral("The cat sat on the mat because it was tired"));
        QVERIFY(s);
        LogitLensView v;
        v.resize(720, 420);
        v.show();
        QSignalSpy done(&v, &LogitLensView::gridComplete);
        v.setSelection(0, 0, 0);
        v.setSnapshot(s);
        QVERIFY(done.count() == 1 || done.wait(20000));
        QCPAxis *x = v.plot()->axisRect(0)->axis(QCPAxis::atBottom);
        // the cells' texts: how many are cut or missing, and the widest drawn
        const auto cellTexts = [&](int *cut, double *widest) {
            *cut = 0;
            *widest = 0;
            int cells = 0;
            for (int i = 0; i < v.plot()->itemCount(); ++i)
                if (auto *t = qobject_cast<QCPItemText *>(v.plot()->item(i)); t && t->clipAxisRect() == v.plot()->axisRect(0)) {
                    ++cells;
                    *cut += t->text().isEmpty() || t->text().endsWith(QChar(0x2026)) ? 1 : 0;
                    *widest = std::max(*widest, QFontMetricsF(t->font()).horizontalAdvance(t->text()));
                }
            return cells;
        };
        int cut = 0;
        double widest = 0;
        setPublicationFigure(true);
        v.plot()->replot();
        QCOMPARE(cellTexts(&cut, &widest), 4 * int(s->tq()));
        const double cell = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
        setPublicationFigure(false);
        QCOMPARE(cut, 0);
        QVERIFY2(widest <= cell - 4, qPrintable(QStringLiteral("%1 px in a %2 px cell").arg(widest).arg(cell)));
        v.plot()->replot(); // the window again: its 10 px, long tokens cut
        cellTexts(&cut, &widest);
        QVERIFY(cut > 0);
    }

    // An edited model (a head of the bundled model zero-ablated, as the Layers grid's menu does): the
    // lens and the attribution are the edited trace's, as the core computes them from a trace with the
    // same edit (1e-5); beside them the clean model's lines and parts, the core's of the trace
    // without it, and the deltas edited minus clean.
    void editedDeltas()
    {
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny-2"), {}, m));
        std::shared_ptr<Model> model(std::move(m));
        Intervention ablate;
        ablate.hook = HookPoint::AttnZ;
        ablate.layer = 1;
        ablate.head = 0;
        ablate.kind = EditKind::Zero;
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        session.setEdits({ablate});
        const QString text = QStringLiteral("The cat sat on the mat. The cat sat on the");
        const SnapshotPtr s = traceText(session, text);
        QVERIFY(s);
        QVERIFY(s->trace->edited());
        QVERIFY(s->cleanTrace);
        // the core's two runs
        std::unique_ptr<Model> ref;
        QVERIFY(openPretrained(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny-2"), {}, ref));
        TraceRequest req;
        req.text = text.toStdString();
        Trace<float> clean, edited;
        QVERIFY(ref->trace(req, clean).ok());
        req.edits = {ablate};
        QVERIFY(ref->trace(req, edited).ok());
        const int t = int(edited.tokens.size()), pos = t - 4; // the second " cat": " sat" follows
        std::vector<LensCell> lensEdited, lensClean;
        QVERIFY(lensColumn(*ref, edited, pos, 5, lensEdited).ok());
        QVERIFY(lensColumn(*ref, clean, pos, 5, lensClean).ok());

        LogitLensView lens;
        lens.resize(1000, 520);
        lens.show();
        lens.setSelection(0, 0, pos);
        lens.setSnapshot(s);
        QTRY_VERIFY(lens.selectedReady() && lens.hasClean());
        const QVector<double> pe = lens.actualLine(), pc = lens.cleanActualLine(), he = lens.entropyLine(),
                              hc = lens.cleanEntropyLine();
        QCOMPARE(pe.size(), int(lensEdited.size()));
        QCOMPARE(pc.size(), int(lensClean.size()));
        QCOMPARE(hc.size(), int(lensClean.size()));
        bool changed = false;
        for (size_t l = 0; l < lensEdited.size(); ++l) {
            QVERIFY(std::abs(pe[int(l)] - lensEdited[l].actualP) < 1e-5);
            QVERIFY(std::abs(pc[int(l)] - lensClean[l].actualP) < 1e-5);
            QVERIFY(std::abs(he[int(l)] - lensEdited[l].entropy) < 1e-5);
            QVERIFY(std::abs(hc[int(l)] - lensClean[l].entropy) < 1e-5);
            changed = changed || std::abs(pe[int(l)] - pc[int(l)]) > 1e-4;
        }
        QVERIFY(changed); // the ablation moves the last layer's p(actual)
        const size_t last = lensEdited.size() - 1;
        const QString hover = lens.cellText(int(last), pos);
        const double dp = 100.0 * (lensEdited[last].actualP - lensClean[last].actualP);
        QVERIFY2(hover.contains(QStringLiteral("Clean model:")) &&
                     hover.contains(QStringLiteral("edited − clean %1%2 points")
                                        .arg(dp >= 0 ? QStringLiteral("+") : QString())
                                        .arg(dp, 0, 'f', 1)),
                 qPrintable(hover));
        QVERIFY2(lens.title().contains(QStringLiteral("dotted lines are the clean model")), qPrintable(lens.title()));
        shoot(&lens, QStringLiteral("lens-edited"));

        DlaView dla;
        dla.resize(1000, 520);
        dla.show();
        dla.setSnapshot(s);
        dla.setSelection(1, 0, pos);
        dla.setTarget(DlaView::Target::ActualNext);
        QVERIFY2(dla.hasAttribution(), qPrintable(dla.message()));
        QVERIFY(dla.hasClean());
        QVERIFY(dla.deltaBox()->isVisible());
        Attribution ae, ac;
        QVERIFY(attribute(*ref, edited, pos, edited.tokens[size_t(pos) + 1].id, ae).ok());
        QVERIFY(attribute(*ref, clean, pos, clean.tokens[size_t(pos) + 1].id, ac).ok());
        const Mat<double> me = dla.matrix(), d = dla.deltaMatrix();
        QCOMPARE(int(me.rows()), ae.layers);
        QCOMPARE(int(me.cols()), ae.heads + 1);
        for (int l = 0; l < ae.layers; ++l)
            for (int h = 0; h <= ae.heads; ++h) {
                const double we = h == ae.heads ? ae.mlp[size_t(l)] : ae.headAt(l, h);
                const double wc = h == ac.heads ? ac.mlp[size_t(l)] : ac.headAt(l, h);
                QVERIFY(std::abs(me(l, h) - we) < 1e-5);
                QVERIFY(std::abs(d(l, h) - (we - wc)) < 1e-5);
                QCOMPARE(d(l, h), me(l, h) - (h == ae.heads ? dla.cleanAttribution().mlp[size_t(l)]
                                                            : dla.cleanAttribution().headAt(l, h)));
            }
        QCOMPARE(me(1, 0), 0.0); // the ablated head adds nothing
        QVERIFY(std::abs(d(1, 0) + ac.headAt(1, 0)) < 1e-5);
        QVERIFY(std::abs(dla.cleanAttribution().logit - ac.logit) < 1e-5);
        QVERIFY(dla.cellText(1, 0).contains(QStringLiteral("clean model: ")));
        // the switch draws the deltas
        auto *map = qobject_cast<QCPColorMap *>(dla.plot()->plottable(0));
        QVERIFY(map);
        QCOMPARE(map->data()->cell(0, 1), me(1, 0));
        dla.deltaBox()->setChecked(true);
        QVERIFY(dla.showDelta());
        QCOMPARE(map->data()->cell(0, 1), d(1, 0));
        QVERIFY2(dla.title().contains(QStringLiteral("Edited model minus the clean one")), qPrintable(dla.title()));
        QCOMPARE(map->colorScale()->axis()->label(), QStringLiteral("edited − clean"));
        shoot(&dla, QStringLiteral("dla-edited-delta"));
        // typing on with the edits: the next snapshot's clean trace is the other of two (the one on
        // screen is left as it is) and is the core's clean trace of the new text
        const QString more = text + QStringLiteral(" mat");
        const SnapshotPtr s2 = traceText(session, more);
        QVERIFY(s2 && s2->trace->edited() && s2->cleanTrace);
        QVERIFY(s2->cleanTrace != s->cleanTrace);
        QCOMPARE(s->cleanTrace->tokens.size(), clean.tokens.size());
        TraceRequest req2;
        req2.text = more.toStdString();
        Trace<float> clean2;
        QVERIFY(ref->trace(req2, clean2).ok());
        QCOMPARE(s2->cleanTrace->tokens.size(), clean2.tokens.size());
        QVERIFY((s2->cleanTrace->final - clean2.final).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY((s->cleanTrace->final - clean.final).cwiseAbs().maxCoeff() < 1e-5f);
        // the clean switch of the window (the edits kept, not applied): no deltas
        session.setEditsShownClean(true);
        const SnapshotPtr c = traceText(session, text + QStringLiteral(" "));
        QVERIFY(c && !c->trace->edited() && !c->cleanTrace);
        dla.setSnapshot(c);
        QVERIFY(dla.hasAttribution() && !dla.hasClean());
        QVERIFY(!dla.deltaBox()->isVisible());
    }

    // With ATTNVIZ_READS_SHOTS=DIR: the views on the bundled (trained) attnviz-tiny, for looking at
    // and for resources/screenshots.
    void screenshots()
    {
        if (qEnvironmentVariableIsEmpty("ATTNVIZ_READS_SHOTS"))
            QSKIP("ATTNVIZ_READS_SHOTS not set");
        const SnapshotPtr s = traceOn(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny"), QStringLiteral("The whale swam under the boat and the sailors shouted. The whale swam under the"));
        QVERIFY(s);
        LogitLensView lens;
        lens.resize(1400, 700);
        lens.show();
        QSignalSpy done(&lens, &LogitLensView::gridComplete);
        lens.setSelection(0, 0, 14);
        lens.setSnapshot(s);
        QVERIFY(done.wait(20000));
        shoot(&lens, QStringLiteral("view-logit-lens"));
        DlaView dla;
        dla.resize(1000, 700);
        dla.show();
        dla.setSnapshot(s);
        dla.setSelection(1, 0, -1);
        dla.setTarget(DlaView::Target::Predicted);
        QVERIFY(dla.hasAttribution());
        shoot(&dla, QStringLiteral("view-dla"));
    }

    // Presentation mode at 1920 × 1080 and 1280 × 720 on the bundled model: the Lens and DLA views
    // fill the screen and every axis label, tick, title, scale and token in a cell is at least 18 px.
    void presentation_data()
    {
        QTest::addColumn<QString>("view");
        QTest::addColumn<QSize>("screen");
        for (const QSize size : {QSize(1920, 1080), QSize(1280, 720)})
            for (const char *v : {"lens", "dla"})
                QTest::addRow("%s %dx%d", v, size.width(), size.height()) << QString::fromLatin1(v) << size;
    }
    void presentation()
    {
        QFETCH(QString, view);
        QFETCH(QSize, screen);
        MainWindow w;
        w.session()->setDebounceMs(0);
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny"), {}, m));
        w.session()->setModel(std::shared_ptr<Model>(std::move(m)));
        const QString text = QStringLiteral("The whale swam under the boat and the sailors shouted. The whale swam under the");
        w.setSentence(text);
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->fromModel() && !w.session()->busy()
                                     && w.session()->snapshot()->sentence == text,
                                 20000);
        w.session()->setSelectedQuery(w.session()->snapshot()->tq() - 1); // " the": the second copy predicts " whale"
        QVERIFY(w.showView(view));
        w.setPresentationMode(true);
        w.setWindowState(Qt::WindowNoState);
        w.setGeometry(QRect(QPoint(0, 0), screen));
        QWidget *v = w.tabs()->currentWidget();
        if (auto *lens = qobject_cast<LogitLensView *>(v))
            QTRY_VERIFY_WITH_TIMEOUT(lens->complete(), 20000);
        QTest::qWait(100);
        QVERIFY2(v->width() >= 0.6 * screen.width() && v->height() >= 0.75 * screen.height(),
                 qPrintable(QStringLiteral("%1 × %2").arg(v->width()).arg(v->height())));
        const auto small = [](const QFont &f) { return QFontInfo(f).pixelSize() < 18; };
        QStringList tooSmall;
        const QList<QCustomPlot *> plots = v->findChildren<QCustomPlot *>();
        QVERIFY(!plots.isEmpty());
        for (QCustomPlot *p : plots) {
            if (!p->isVisible())
                continue;
            p->replot();
            for (QCPAxisRect *r : p->axisRects())
                for (QCPAxis *a : r->axes()) {
                    if (!a->visible())
                        continue;
                    if (a->tickLabels() && !a->tickVectorLabels().isEmpty() && small(a->tickLabelFont()))
                        tooSmall << QStringLiteral("ticks of “%1”: %2 px").arg(a->label()).arg(QFontInfo(a->tickLabelFont()).pixelSize());
                    if (!a->label().isEmpty() && small(a->labelFont()))
                        tooSmall << QStringLiteral("“%1”: %2 px").arg(a->label()).arg(QFontInfo(a->labelFont()).pixelSize());
                }
            for (QCPLayoutElement *el : p->plotLayout()->elements(true)) {
                if (auto *te = qobject_cast<QCPTextElement *>(el); te && te->visible() && !te->text().isEmpty() && small(te->font()))
                    tooSmall << QStringLiteral("“%1”: %2 px").arg(te->text().left(30)).arg(QFontInfo(te->font()).pixelSize());
                if (auto *cs = qobject_cast<QCPColorScale *>(el); cs && cs->visible() && small(cs->axis()->tickLabelFont()))
                    tooSmall << QStringLiteral("colour scale: %1 px").arg(QFontInfo(cs->axis()->tickLabelFont()).pixelSize());
                if (auto *lg = qobject_cast<QCPLegend *>(el); lg && lg->visible() && small(lg->font()))
                    tooSmall << QStringLiteral("legend: %1 px").arg(QFontInfo(lg->font()).pixelSize());
            }
            for (int i = 0; i < p->itemCount(); ++i)
                if (auto *t = qobject_cast<QCPItemText *>(p->item(i)); t && t->visible() && !t->text().isEmpty() && small(t->font()))
                    tooSmall << QStringLiteral("cell “%1”: %2 px").arg(t->text()).arg(QFontInfo(t->font()).pixelSize());
        }
        if (const QString dir = qEnvironmentVariable("ATTNVIZ_READS_SHOTS"); !dir.isEmpty() && screen.width() == 1280)
            w.grab().save(dir + QStringLiteral("/presentation-1280x720-%1.png").arg(view == QLatin1String("lens") ? QStringLiteral("logit-lens") : view));
        tooSmall.removeDuplicates();
        QVERIFY2(tooSmall.isEmpty(), qPrintable(tooSmall.join(QStringLiteral("; "))));
        // the status line beside the Generate controls: ended with "…" where it does not fit, the
        // whole text on hover (it was cut mid-word at 1280 px)
        auto *status = w.findChild<ElidedLabel *>(QStringLiteral("statusLabel"));
        QVERIFY(status);
        status->repaint();
        if (screen.width() == 1280)
            QVERIFY2(status->elided(), qPrintable(status->text()));
        if (status->elided())
            QCOMPARE(status->toolTip(), status->text());
        w.setPresentationMode(false);
    }

    // In the window: the two tabs are listed for a causal model, the lens fills, Generate appends
    // tokens to the text (the chips mark them), a head clicked in Attribution opens on the weights.
    void window()
    {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.session()->setModel(openModel(QStringLiteral("gpt2-tiny")));
        const QString text = QStringLiteral("a b c d a b c d");
        w.setSentence(text);
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->causalLm() && !w.session()->busy() &&
                                     w.session()->snapshot()->sentence == text,
                                 20000);
        QVERIFY(w.showView(QStringLiteral("lens")));
        auto *lens = w.views()->view<LogitLensView>(QStringLiteral("lens"));
        QTRY_VERIFY_WITH_TIMEOUT(lens->complete(), 20000);
        QCOMPARE(lens->positionCount(), 8);
        shoot(&w, QStringLiteral("window-logit-lens"));
        QVERIFY(w.showView(QStringLiteral("dla")));
        auto *dla = w.views()->view<DlaView>(QStringLiteral("dla"));
        QTRY_VERIFY(dla->hasAttribution());
        GenerationPanel *gen = w.generationPanel();
        QVERIFY(gen->isVisible());
        gen->setTokens(3);
        QTest::keyClick(&w, Qt::Key_Return, Qt::ControlModifier);
        QTRY_VERIFY_WITH_TIMEOUT(!gen->running() && gen->generatedCount() == 3, 20000);
        QTRY_VERIFY_WITH_TIMEOUT(!w.session()->busy() && w.session()->snapshot()->sentence.size() > text.size(), 20000);
        QVERIFY(w.session()->snapshot()->sentence.startsWith(text));
        QTRY_COMPARE(w.queryChips()->generatedFrom(), 8);
        QVERIFY(w.queryChips()->chipCount() >= 9);
        shoot(&w, QStringLiteral("window-generate"));
    }

    void lensWithoutHead()
    {
        LogitLensView v;
        v.resize(800, 500);
        v.show();
        v.setSnapshot(nullptr);
        QVERIFY(v.title().contains(QStringLiteral("Computing")));
        QCOMPARE(v.positionCount(), 0);
    }

    // A causal model whose lens cannot be read (no readout: its unembedding is not reachable) is
    // said in the title once its column fails, not left "computing".
    void lensSaysWhyItCannot()
    {
        struct NoReadout final : Model {
            std::shared_ptr<Model> m;
            ModelInfo info() const override { return m->info(); }
            Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override { return m->tokenize(text, out); }
            using Model::trace;
            Status trace(const TraceRequest &request, Trace<float> &out) override { return m->trace(request, out); }
        };
        auto model = std::make_shared<NoReadout>();
        model->m = openModel(QStringLiteral("gpt2-tiny"));
        QVERIFY(model->m);
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const SnapshotPtr s = traceText(session, caseText(QStringLiteral("gpt2-tiny")));
        QVERIFY(s && s->causalLm());
        LogitLensView v;
        v.resize(800, 500);
        v.show();
        v.setSnapshot(s);
        QTRY_VERIFY(v.title().contains(QStringLiteral("no unembedding to read through")));
        QCOMPARE(v.filledPositions(), 0);
    }

    void dla()
    {
        auto model = openModel(QStringLiteral("gpt2-tiny"));
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const SnapshotPtr s = traceText(session, caseText(QStringLiteral("gpt2-tiny")));
        QVERIFY(s);
        const QJsonObject ref = reference(QStringLiteral("gpt2-tiny"));
        const QJsonObject want = ref.value(QStringLiteral("dla"))[0].toObject(); // actual next at t - 3
        DlaView v;
        v.resize(900, 600);
        v.show();
        v.setSnapshot(s);
        v.setSelection(1, 2, want.value(QStringLiteral("position")).toInt());
        v.setTarget(DlaView::Target::ActualNext);
        QVERIFY2(v.hasAttribution(), qPrintable(v.message()));
        QCOMPARE(v.attribution().target, want.value(QStringLiteral("target")).toInt());
        const Mat<double> m = v.matrix();
        QCOMPARE(int(m.cols()), 5);
        for (int l = 0; l < 2; ++l) {
            for (int h = 0; h < 4; ++h)
                QVERIFY(std::abs(m(l, h) - want.value(QStringLiteral("head"))[l][h].toDouble()) < 1e-4);
            QVERIFY(std::abs(m(l, 4) - want.value(QStringLiteral("mlp"))[l].toDouble()) < 1e-4);
        }
        QVERIFY(std::abs(v.attribution().sum() - v.attribution().logit) < 1e-5);
        QVERIFY2(v.title().contains(QStringLiteral("logit")), qPrintable(v.title()));
        QVERIFY(v.cellText(0, 4).startsWith(QStringLiteral("MLP of layer 0 adds")));
        // click a head: selects it
        QSignalSpy picked(&v, &DlaView::headOpened);
        QTest::mouseClick(v.plot(), Qt::LeftButton, {}, v.plot()->mapFrom(&v, v.cellCenter(1, 3)));
        QCOMPARE(picked.count(), 1);
        QCOMPARE(picked.at(0).at(0).toInt(), 1);
        QCOMPARE(picked.at(0).at(1).toInt(), 3);
        // predicted: the model's top token at the last position
        v.setSelection(0, 0, -1);
        v.setTarget(DlaView::Target::Predicted);
        QVERIFY(v.hasAttribution());
        QCOMPARE(v.attribution().target, ref.value(QStringLiteral("dla"))[1][QStringLiteral("target")].toInt());
        // actual next after the last token: nothing, said
        v.setTarget(DlaView::Target::ActualNext);
        QVERIFY(!v.hasAttribution());
        QVERIFY(v.message().contains(QStringLiteral("Nothing follows the last token")));
        // typed: in the vocabulary, and not
        v.setTarget(DlaView::Target::Typed);
        v.setTypedToken(QStringLiteral(" cat"));
        QVERIFY(v.hasAttribution());
        QCOMPARE(v.attribution().target, 3797);
        v.setTypedToken(QStringLiteral(" catapultingly"));
        QVERIFY(!v.hasAttribution());
        QVERIFY2(v.message().contains(QStringLiteral("is not in the vocabulary of gpt2-tiny")), qPrintable(v.message()));
        QVERIFY(v.title().contains(v.message()));
    }

    // The DLA grid of the bundled model (8 heads, 4 layers): every head labelled where its column has
    // room for the number (QCustomPlot's five ticks labelled heads 0, 2, 4, 6), and a cell's number
    // drawn only in a font that fits the cell (at 400 × 320 the 11 px numbers ran into each other:
    // "-0.05 0.60-0.16"). Both as shown and as exported.
    void dlaLabelsEveryHeadAndNumbersFit_data()
    {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<int>("headTicks");
        QTest::addRow("900 x 600") << QSize(900, 600) << 8;
        QTest::addRow("400 x 320") << QSize(400, 320) << 8;
        QTest::addRow("260 x 260") << QSize(260, 260) << 4;
    }

    void dlaLabelsEveryHeadAndNumbersFit()
    {
        QFETCH(QSize, size);
        QFETCH(int, headTicks);
        std::unique_ptr<Model> m;
        QVERIFY(openModelSource(kBundledModelArg, m).ok());
        auto model = std::shared_ptr<Model>(std::move(m));
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const SnapshotPtr s = traceText(session, QStringLiteral("The cat sat on the mat because it was tired"));
        QVERIFY(s);
        DlaView v;
        v.resize(size);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setSnapshot(s);
        v.setSelection(0, 0, -1);
        v.setTarget(DlaView::Target::Predicted);
        QVERIFY2(v.hasAttribution(), qPrintable(v.message()));
        QCOMPARE(v.attribution().heads, 8);
        v.plot()->replot();
        QCoreApplication::processEvents();
        auto *heads = v.plot()->axisRect(0)->axis(QCPAxis::atBottom);
        QCOMPARE(heads->label(), QStringLiteral("head"));
        QCOMPARE(int(heads->tickVector().size()), headTicks);
        const double cellW = std::abs(heads->coordToPixel(1) - heads->coordToPixel(0));
        const QFontMetricsF tickFm(heads->tickLabelFont());
        QVERIFY2(tickFm.horizontalAdvance(QStringLiteral("7")) + 4 <= cellW * 8 / headTicks, "labels apart");
        auto *layers = v.plot()->axisRect(0)->axis(QCPAxis::atLeft);
        const double cellH = std::abs(layers->coordToPixel(1) - layers->coordToPixel(0));
        int shown = 0;
        for (int i = 0; i < v.plot()->itemCount(); ++i) {
            auto *t = qobject_cast<QCPItemText *>(v.plot()->item(i));
            if (!t || !t->visible() || t->text().isEmpty())
                continue;
            ++shown;
            const QFontMetricsF fm(t->font());
            QVERIFY2(fm.horizontalAdvance(t->text()) <= cellW - 2 && fm.height() <= cellH,
                     qPrintable(QStringLiteral("“%1” %2 px wide in a %3 px cell").arg(t->text()).arg(fm.horizontalAdvance(t->text())).arg(cellW)));
        }
        if (size.width() >= 900)
            QCOMPARE(shown, 4 * 9); // room for every number at the window's size
    }

    // The norm-weighted snapshot: every head's weights are a_ij ||v_j W_O^h|| (the reference's), the
    // average their mean; the value norm on hover.
    void normWeighted()
    {
        auto model = openModel(QStringLiteral("qwen2-tiny")); // grouped-query heads
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const SnapshotPtr s = traceText(session, caseText(QStringLiteral("qwen2-tiny")));
        QVERIFY(s);
        const SnapshotPtr n = normWeightedSnapshot(s);
        QVERIFY(n);
        QCOMPARE(n->sentence, s->sentence);
        const QJsonArray want = reference(QStringLiteral("qwen2-tiny")).value(QStringLiteral("norm_weighted")).toArray();
        for (int l = 0; l < 2; ++l) {
            Mat<float> mean = Mat<float>::Zero(n->tq(), n->tq());
            for (int h = 0; h < 4; ++h) {
                const Mat<float> &w = n->weights(l, h);
                for (int i = 0; i < n->tq(); ++i)
                    for (int j = 0; j < n->tq(); ++j)
                        QVERIFY(std::abs(w(i, j) - want[l][h][i][j].toDouble()) < 1e-4 * std::max(1.0, std::abs(want[l][h][i][j].toDouble())));
                mean += w;
            }
            QVERIFY((n->weights(l, -1).toDense() - mean / 4).cwiseAbs().maxCoeff() < 1e-5);
        }
        QVERIFY(valueNormText(*s, 1, 2, 0).startsWith(QStringLiteral("‖v·W_O‖ of")));
        QVERIFY(!normWeightingExplanation().isEmpty());
        QVERIFY(!normWeightedSnapshot(nullptr));
    }

    void generation()
    {
        auto model = openModel(QStringLiteral("gpt2-tiny"));
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const QString text = caseText(QStringLiteral("gpt2-tiny"));
        SnapshotPtr s = traceText(session, text);
        QVERIFY(s);
        GenerationPanel panel;
        panel.setTokens(4);
        panel.setSnapshot(s);
        QString current = text;
        connect(&panel, &GenerationPanel::appendText, &session, [&](const QString &piece) {
            current += piece;
            session.setSentence(current);
            session.requestNow();
        });
        connect(&session, &LiveSession::snapshotChanged, &panel, [&] { panel.setSnapshot(session.snapshot()); });
        QVERIFY(panel.generateButton()->isEnabled());
        panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(!panel.running(), 20000);
        QCOMPARE(panel.generatedCount(), 4);
        QCOMPARE(panel.generatedFrom(), int(text.size()));
        QCOMPARE(panel.status(), QStringLiteral("Generated 4 tokens."));
        // the greedy continuation: the reference's ids, as the text's tokens after the prompt
        const QJsonArray greedy = reference(QStringLiteral("gpt2-tiny")).value(QStringLiteral("greedy")).toArray();
        const SnapshotPtr last = session.snapshot();
        QCOMPARE(last->sentence, current);
        const int prompt = 13;
        QVERIFY(last->tq() >= prompt + 1);
        QCOMPARE(last->trace->tokens[size_t(prompt)].id, greedy[0].toInt());
        // Stop at once: nothing more appended
        panel.setTokens(10);
        panel.start();
        panel.stop();
        QVERIFY(!panel.running());
        QVERIFY(panel.status().startsWith(QStringLiteral("Stopped after 1 token")));
    }

    // Step: one token at a time, each continuing the same run (its marks, the greedy ids); the views
    // follow the newest token; a pace holds the next token back; replay selects the row that
    // predicted a generated token.
    void generationStepsAndReplays()
    {
        auto model = openModel(QStringLiteral("gpt2-tiny"));
        LiveSession session;
        session.setDebounceMs(0);
        session.setModel(model);
        const QString text = caseText(QStringLiteral("gpt2-tiny"));
        SnapshotPtr s = traceText(session, text);
        QVERIFY(s);
        const int prompt = 13;
        QCOMPARE(s->tq(), prompt);
        GenerationPanel panel;
        panel.setPace(0);
        panel.setSnapshot(s);
        QString current = text;
        int appended = 0;
        connect(&panel, &GenerationPanel::appendText, &session, [&](const QString &piece) {
            ++appended;
            current += piece;
            session.setSentence(current);
            session.requestNow();
        });
        connect(&session, &LiveSession::snapshotChanged, &panel, [&] { panel.setSnapshot(session.snapshot()); });
        QSignalSpy rows(&panel, &GenerationPanel::showRow);
        const QJsonArray greedy = reference(QStringLiteral("gpt2-tiny")).value(QStringLiteral("greedy")).toArray();
        for (int k = 1; k <= 3; ++k) {
            QVERIFY(panel.stepButton()->isEnabled());
            panel.stepOnce();
            QTRY_VERIFY_WITH_TIMEOUT(!panel.running() && session.snapshot()->sentence == current && !session.busy(), 20000);
            QCOMPARE(appended, k);
            QCOMPARE(panel.generatedCount(), k);
            QCOMPARE(panel.generatedFrom(), int(text.size())); // one run: the marks begin at the prompt's end
            const SnapshotPtr last = session.snapshot();
            QCOMPARE(last->tq(), prompt + k);
            QCOMPARE(last->trace->tokens[size_t(prompt + k - 1)].id, greedy[k - 1].toInt());
            QCOMPARE(rows.last().at(0).toInt(), prompt + k - 1); // the newest token's row
        }
        // replay step 2: the row that predicted the second generated token
        rows.clear();
        panel.replay(2);
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows.last().at(0).toInt(), prompt);
        QVERIFY2(panel.status().startsWith(QStringLiteral("Step 2 of 3: ")), qPrintable(panel.status()));
        // an edited text begins a new run: its marks at the new end, one token
        current += QStringLiteral(" x");
        session.setSentence(current);
        session.requestNow();
        QTRY_VERIFY_WITH_TIMEOUT(session.snapshot()->sentence == current && !session.busy(), 20000);
        const int editedEnd = int(current.size());
        panel.stepOnce();
        QTRY_VERIFY_WITH_TIMEOUT(!panel.running(), 20000);
        QCOMPARE(panel.generatedCount(), 1);
        QCOMPARE(panel.generatedFrom(), editedEnd);
        // a pace holds the next token back: one token in, the run still going
        panel.setPace(5.0);
        panel.setTokens(3);
        appended = 0;
        panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(appended == 1 && session.snapshot()->sentence == current && !session.busy(), 20000);
        QTest::qWait(200);
        QCOMPARE(appended, 1);
        QVERIFY(panel.running());
        panel.stop();
        QVERIFY(!panel.running());
    }
};

QTEST_MAIN(TestReadsViews)
#include "tst_readsviews.moc"
