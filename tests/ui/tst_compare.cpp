// SPDX-License-Identifier: GPL-3.0-or-later
// The Compare tab (offscreen): each one-click comparison of the seed notebooks is started from the
// window, both sides computed, and the numbers read back from the view's plots — A, B and A − B
// (seed 001's printed weights), the shared colour scale, the causal mask, "ship" in two sentences
// (seed 003) and one head vs four. Set ATTNVIZ_SCREENSHOT_DIR to also write the window as PNGs.
#include "style/appearance.h"
#include "views/compareview.h"
#include "teaching/comparison.h"
#include "controls/controlpanel.h"
#include "live/livesession.h"
#include "mainwindow.h"

#include "bundledvectors.h"

#include <qcustomplot.h>

#include <QLineEdit>
#include <QMenuBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>

using namespace attnviz;
using namespace attnviz::ui;

class TestCompare : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<MainWindow> m_w;

    CompareView *view() const { return m_w->compareView(); }

    // Processes events until the view shows both sessions' newest results and `pred` holds.
    bool waitFor(const std::function<bool()> &pred, int ms = 15000)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < ms) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
            if (view()->isCurrent() && pred()) {
                QCoreApplication::processEvents(); // queued replots
                return true;
            }
        }
        return false;
    }

    static bool sideIs(const SnapshotPtr &s, const CompareSide &side)
    {
        return s && s->sentence == side.sentence && s->keySentence == side.keySentence && s->settings == side.settings;
    }

    // Starts a one-click comparison as the menu does; waits for both sides (signals, then the view).
    bool start(const QString &id, ComparisonSpec &spec)
    {
        if (!findSeedComparison(id, spec))
            return false;
        // (the window shows the bundled table, read once per process: where A already shows the
        // comparison's text, settings and table, nothing of A is computed again)
        const bool aShown = sideIs(m_w->session()->snapshot(), spec.a) && m_w->session()->table() == spec.a.table;
        QSignalSpy snapA(m_w->session(), &LiveSession::snapshotChanged);
        QSignalSpy snapB(view()->sessionB(), &LiveSession::snapshotChanged);
        QSignalSpy updated(view(), &CompareView::updated);
        m_w->startComparison(spec);
        const bool ok = waitFor([&] { return sideIs(view()->shownA(), spec.a) && sideIs(view()->shownB(), spec.b); });
        return ok && (aShown || !snapA.isEmpty()) && !snapB.isEmpty() && !updated.isEmpty();
    }

    // Every control of a side is what the spec says.
    void checkSides(const ComparisonSpec &spec)
    {
        QVERIFY(m_w->controls()->settings() == spec.a.settings);
        QVERIFY(m_w->session()->settings() == spec.a.settings);
        QCOMPARE(m_w->session()->sentence(), spec.a.sentence);
        QVERIFY(view()->controlsB()->settings() == spec.b.settings);
        QVERIFY(view()->sessionB()->settings() == spec.b.settings);
        QCOMPARE(view()->sentenceEditB()->text(), spec.b.sentence);
        QCOMPARE(view()->sessionB()->sentence(), spec.b.sentence);
        QVERIFY(m_w->session()->table() == spec.a.table);
        QVERIFY(view()->sessionB()->table() == spec.a.table); // B follows A's table
        QCOMPARE(m_w->tabs()->currentWidget(), static_cast<QWidget *>(view()));
        QCOMPARE(view()->explanation(), spec.explanation);
        if (spec.selectedQuery >= 0)
            QCOMPARE(m_w->session()->selectedQuery(), spec.selectedQuery);
    }

    void requireBundled()
    {
        if (!hasBundledEmbeddings())
            QSKIP("this build has no bundled word vectors");
    }

private slots:
    void init()
    {
        m_w = std::make_unique<MainWindow>();
        m_w->resize(1400, 900);
        m_w->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_w.get()));
        QTRY_VERIFY_WITH_TIMEOUT(m_w->session()->snapshot() && !m_w->session()->busy(), 15000);
    }

    void cleanup() { m_w.reset(); }

    void specs()
    {
        const auto all = seedComparisons();
        QStringList ids;
        for (const ComparisonSpec &c : all) {
            ids << c.id;
            QVERIFY2(c.explanation.size() > 200, qPrintable(c.id));
            QVERIFY(!c.a.title.isEmpty() && !c.b.title.isEmpty());
            QVERIFY(c.a.table);
        }
        QStringList want{QStringLiteral("scaled-unscaled"), QStringLiteral("softmax-sum"),
                         QStringLiteral("causal-none")};
        if (hasBundledEmbeddings())
            want << QStringLiteral("ship") << QStringLiteral("heads-1-4");
        for (const QString &id : want)
            QVERIFY2(ids.contains(id), qPrintable(id));
        QCOMPARE(ids.size(), want.size());
        // the menu lists the same comparisons
        QMenu *menu = nullptr;
        for (QAction *a : m_w->menuBar()->actions())
            if (a->text().remove(QLatin1Char('&')) == QLatin1String("Compare"))
                menu = a->menu();
        QVERIFY(menu);
        QStringList titles;
        for (QAction *a : menu->actions())
            titles << a->text();
        for (const ComparisonSpec &c : all)
            QVERIFY2(titles.contains(c.title), qPrintable(c.title));
    }

    void menuStartsComparison()
    {
        QMenu *menu = nullptr;
        for (QAction *a : m_w->menuBar()->actions())
            if (a->text().remove(QLatin1Char('&')) == QLatin1String("Compare"))
                menu = a->menu();
        QVERIFY(menu);
        ComparisonSpec spec;
        QVERIFY(findSeedComparison(QStringLiteral("softmax-sum"), spec));
        QAction *action = nullptr;
        for (QAction *a : menu->actions())
            if (a->text() == spec.title)
                action = a;
        QVERIFY(action);
        action->trigger();
        QVERIFY(waitFor([&] { return sideIs(view()->shownA(), spec.a) && sideIs(view()->shownB(), spec.b); }));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
    }

    void softmaxVsSum()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("softmax-sum"), spec));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(spec.a.settings.normalization, Normalization::Softmax);
        QCOMPARE(spec.b.settings.normalization, Normalization::Sum);
        QCOMPARE(view()->shownA()->tq(), 6);
        QCOMPARE(view()->shownB()->tq(), 6);
        QVERIFY(view()->showsDifference());
        // seed 001, query "journey" (row 1)
        const double softmax[] = {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581};
        const double sum[] = {0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656};
        for (int j = 0; j < 6; ++j) {
            QVERIFY2(std::abs(view()->cellA(1, j) - softmax[j]) < 5e-4,
                     qPrintable(QString::number(view()->cellA(1, j))));
            QVERIFY2(std::abs(view()->cellB(1, j) - sum[j]) < 5e-4, qPrintable(QString::number(view()->cellB(1, j))));
            QVERIFY(std::abs(view()->cellDifference(1, j) - (softmax[j] - sum[j])) < 5e-4);
        }
        QVERIFY2(std::abs(view()->cellDifference(1, 0) - (-0.0070)) < 5e-4,
                 qPrintable(QString::number(view()->cellDifference(1, 0))));
        // the difference scale is symmetric and titled with max |A−B|; a seed comparison is a lesson:
        // weights on the fixed 0–1 scale, differences on ±1 (View menu)
        const QCPRange r = view()->differenceRange();
        QCOMPARE(r.lower, -r.upper);
        QVERIFY(AppearanceManager::instance()->appearance().fixedWeights);
        QCOMPARE(r.upper, 1.0);
        QVERIFY(view()->differenceTitle().contains(QString::number(view()->maxAbsDifference(), 'f', 4)));
        QVERIFY(view()->titleA().contains(QStringLiteral("softmax")));
        QVERIFY(view()->titleB().contains(QStringLiteral("sum")));
        // one sentence on both sides: said once, above them, with what the sides share
        QCOMPARE(spec.a.sentence, spec.b.sentence);
        QVERIFY(view()->sharedCaption().contains(spec.a.sentence));
        QVERIFY(!view()->titleA().contains(spec.a.sentence));
        QVERIFY(view()->sharedCaption().contains(QStringLiteral("no scaling")));
        QVERIFY(!view()->titleA().contains(QStringLiteral("no scaling")));
        QVERIFY(!view()->sharedCaption().contains(QStringLiteral("softmax")));
    }

    void scaledVsUnscaled()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("scaled-unscaled"), spec));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(spec.a.settings.scaleRule, ScaleRule::InvSqrtDHead);
        QCOMPARE(spec.b.settings.scaleRule, ScaleRule::None);
        QVERIFY(view()->maxAbsDifference() > 1e-3);
        double maxA = 0, maxB = 0, maxDiff = 0;
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j) {
                maxA = std::max(maxA, view()->cellA(i, j));
                maxB = std::max(maxB, view()->cellB(i, j));
                maxDiff = std::max(maxDiff, std::abs(view()->cellDifference(i, j)));
            }
        QVERIFY(maxDiff > 1e-3);
        QVERIFY(std::abs(maxA - maxB) > 1e-3); // separate scales would differ...
        const QCPRange a = view()->rangeA(), b = view()->rangeB();
        QCOMPARE(a.lower, b.lower); // ...the shared one does not
        QCOMPARE(a.upper, b.upper);
        QCOMPARE(a.lower, 0.0);
        QCOMPARE(a.upper, 1.0); // a seed comparison: the fixed 0–1 scale
        // scaling flattens: the unscaled diagonal of "journey" is higher
        QVERIFY(view()->cellDifference(1, 1) < 0);
    }

    void causalVsNone()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("causal-none"), spec));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(spec.a.settings.mask, MaskChoice::Causal);
        QCOMPARE(spec.b.settings.mask, MaskChoice::None);
        QCOMPARE(view()->cellA(0, 1), 0.0); // masked
        QVERIFY(view()->cellB(0, 1) > 0.1);
        QVERIFY(std::abs(view()->cellA(0, 0) - 1.0) < 1e-6);
        QVERIFY(view()->cellDifference(0, 1) < -0.1);
        for (int j = 0; j < 6; ++j) // the last query sees every key on both sides
            QVERIFY(std::abs(view()->cellDifference(5, j)) < 1e-6);
        QCOMPARE(view()->shownA()->seq(0).mask(0, 1), uint8_t(1));
    }

    void ship()
    {
        requireBundled();
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("ship"), spec));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(view()->shownA()->tq(), 11);
        QCOMPARE(view()->shownB()->tq(), 6);
        QVERIFY(!view()->showsDifference());
        QVERIFY(view()->noDifferenceReason().contains(QStringLiteral("No cell-by-cell difference")));
        QVERIFY(std::isnan(view()->cellDifference(0, 0)));
        QCOMPARE(view()->focusIndexA(), 6);
        QCOMPARE(view()->focusIndexB(), 3);
        const QVector<double> rowA = view()->focusRowA(), rowB = view()->focusRowB();
        QCOMPARE(rowA.size(), 11);
        QCOMPARE(rowB.size(), 6);
        QCOMPARE(int(std::max_element(rowA.begin(), rowA.end()) - rowA.begin()), 6);
        QCOMPARE(int(std::max_element(rowB.begin(), rowB.end()) - rowB.begin()), 3);
        // the bars are the heatmaps' rows
        for (int j = 0; j < 11; ++j)
            QVERIFY(std::abs(rowA[j] - view()->cellA(6, j)) < 1e-6);
        for (int j = 0; j < 6; ++j)
            QVERIFY(std::abs(rowB[j] - view()->cellB(3, j)) < 1e-6);
        const double cos = view()->focusCosine();
        QVERIFY(std::isfinite(cos));
        QVERIFY2(cos < 0.9999 && cos > 0.0, qPrintable(QString::number(cos)));
        QVERIFY(view()->focusTitle().contains(QString::number(cos, 'f', 3)));
        // the embedding bars are the attention outputs of "ship"
        const QVector<double> ea = view()->focusEmbeddingA(), eb = view()->focusEmbeddingB();
        QCOMPARE(ea.size(), 50);
        QCOMPARE(eb.size(), 50);
        for (int j = 0; j < 50; ++j) {
            QVERIFY(std::abs(ea[j] - view()->shownA()->seq(0).output(6, j)) < 1e-6);
            QVERIFY(std::abs(eb[j] - view()->shownB()->seq(0).output(3, j)) < 1e-6);
        }
        double dot = 0, na = 0, nb = 0;
        for (int j = 0; j < 50; ++j) {
            dot += ea[j] * eb[j];
            na += ea[j] * ea[j];
            nb += eb[j] * eb[j];
        }
        QVERIFY(std::abs(cos - dot / std::sqrt(na * nb)) < 1e-9);
    }

    void oneHeadVsFour()
    {
        requireBundled();
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("heads-1-4"), spec));
        checkSides(spec);
        if (QTest::currentTestFailed())
            return;
        const SnapshotPtr a = view()->shownA(), b = view()->shownB();
        QCOMPARE(a->attention(0).numHeads, 1);
        QCOMPARE(b->attention(0).numHeads, 4);
        QCOMPARE(a->attention(0).dHead, 48);
        QCOMPARE(b->attention(0).dHead, 12);
        QCOMPARE(a->attention(0).dModel, 50);
        QCOMPARE(a->attention(0).numHeads * a->attention(0).dHead, b->attention(0).numHeads * b->attention(0).dHead);
        QVERIFY(spec.explanation.contains(QStringLiteral("48")));
        QCOMPARE(view()->comparedHead(), -1);
        QVERIFY(view()->titleA().contains(QStringLiteral("head average")));
        QVERIFY(view()->titleB().contains(QStringLiteral("head average")));
        QVERIFY(view()->showsDifference());
        QVERIFY(view()->maxAbsDifference() > 1e-3);
        // B is the average of its four heads, A its only head
        for (int j = 0; j < 11; ++j) {
            QVERIFY(std::abs(view()->cellB(6, j) - b->seq(0).weightsAvg(6, j)) < 1e-6);
            QVERIFY(std::abs(view()->cellA(6, j) - a->seq(0).weights[0](6, j)) < 1e-6);
        }
        // the explanation's claim: same seed, same 48 x 50 matrices, so B's four heads are A's single
        // head cut into four slices of 12: the projected q, k, v are the same on both sides
        const SequenceResult<float> &qa = a->seq(0), &qb = b->seq(0);
        QCOMPARE(int(qa.q.cols()), 48);
        QCOMPARE(int(qb.q.cols()), 48);
        QVERIFY(qa.q.isApprox(qb.q, 1e-5f));
        QVERIFY(qa.k.isApprox(qb.k, 1e-5f));
        QVERIFY(qa.v.isApprox(qb.v, 1e-5f));
    }

    void editingBRecomputesBOnly()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("softmax-sum"), spec));
        const quint64 genA = m_w->session()->generation();
        const SnapshotPtr shownA = view()->shownA();
        const SnapshotPtr shownB = view()->shownB();
        QSignalSpy snapA(m_w->session(), &LiveSession::snapshotChanged);
        QSignalSpy snapB(view()->sessionB(), &LiveSession::snapshotChanged);
        view()->sentenceEditB()->setText(QStringLiteral("Your journey starts with step"));
        QVERIFY(waitFor([&] { return view()->shownB() != shownB && view()->shownB()->tq() == 5; }));
        QVERIFY(!snapB.isEmpty());
        QVERIFY(snapA.isEmpty());
        QCOMPARE(m_w->session()->generation(), genA);
        QCOMPARE(view()->shownA(), shownA);
        QCOMPARE(view()->shownA()->tq(), 6);
        // 6 x 6 against 5 x 5: no cell-by-cell difference; "journey" is followed in both
        QVERIFY(!view()->showsDifference());
        QVERIFY(!view()->noDifferenceReason().isEmpty());
        QCOMPARE(view()->focusIndexA(), 1);
        QCOMPARE(view()->focusIndexB(), 1);
        // B's controls recompute B only, too
        snapA.clear();
        ComputeSettings s = view()->controlsB()->settings();
        s.normalization = Normalization::Softmax;
        view()->controlsB()->setSettings(s);
        QVERIFY(waitFor([&] { return view()->shownB()->settings.normalization == Normalization::Softmax; }));
        QVERIFY(snapA.isEmpty());
        QCOMPARE(m_w->session()->generation(), genA);
        Q_UNUSED(spec);
    }

    // B's query labels are hidden while its rows are A's words and shown again for its own: shown
    // after the layout that made the ticks, QCPAxis::draw read labels past the end of the emptied
    // list (SIGSEGV). Every plot of the tab, after the view's own after-layout handlers, draws only
    // labels it has one for each tick.
    void shownTickLabelsMatchTheirTicks()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("softmax-sum"), spec));
        QStringList bad;
        const QStringList names{QStringLiteral("pair"), QStringLiteral("difference"), QStringLiteral("focus")};
        const QList<QCustomPlot *> plots{view()->pairPlot(), view()->differencePlot(), view()->focusPlot()};
        for (int i = 0; i < plots.size(); ++i)
            connect(plots[i], &QCustomPlot::afterLayout, this, [p = plots[i], name = names[i], &bad] {
                for (QCPAxisRect *r : p->axisRects())
                    for (QCPAxis *a : r->axes())
                        if (a->visible() && a->tickLabels() && a->tickVectorLabels().size() != a->tickVector().size())
                            bad << QStringLiteral("%1: %2 labels for %3 ticks")
                                       .arg(name)
                                       .arg(a->tickVectorLabels().size())
                                       .arg(a->tickVector().size());
            });
        QCPAxis *leftB = view()->pairPlot()->axisRects().value(1)->axis(QCPAxis::atLeft);
        QVERIFY(!leftB->tickLabels()); // A's rows name B's
        const QStringList sentences{QStringLiteral("Your journey starts with step"), spec.b.sentence,
                                    QStringLiteral("A different sentence of seven words here")};
        for (const QString &b : sentences) {
            const SnapshotPtr before = view()->shownB();
            view()->sentenceEditB()->setText(b);
            QVERIFY(waitFor([&] { return view()->shownB() != before && view()->shownB()->sentence == b; }));
            QTest::qWait(50); // the settling replots
            QCOMPARE(leftB->tickLabels(), b != spec.a.sentence);
        }
        QVERIFY2(bad.isEmpty(), qPrintable(bad.join(QLatin1String("; "))));
        QCOMPARE(leftB->tickVectorLabels().size(), leftB->tickVector().size());
        QVERIFY(!leftB->tickVectorLabels().isEmpty());
    }

    void badInputOnOneSide()
    {
        requireBundled();
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("ship"), spec));
        // B: projections from a file, with no file loaded
        ComputeSettings s = view()->controlsB()->settings();
        s.projection = ProjectionMode::File;
        view()->controlsB()->setSettings(s);
        QVERIFY(waitFor([&] { return view()->shownB()->settings.projection == ProjectionMode::File; }));
        QVERIFY(!view()->shownB()->hasResult());
        QVERIFY(!view()->messageB().isEmpty());
        QVERIFY(view()->messageA().isEmpty());
        QVERIFY(std::isfinite(view()->cellA(6, 6)));
        QVERIFY(std::isnan(view()->cellB(0, 0)));
        QVERIFY(view()->showsDifference()); // the difference panel says why there is none
        QVERIFY(std::isnan(view()->cellDifference(0, 0)));
        // and the other way round: A bad, B good
        s.projection = ProjectionMode::Identity;
        view()->controlsB()->setSettings(s);
        ComputeSettings sa = m_w->controls()->settings();
        sa.projection = ProjectionMode::File;
        m_w->controls()->setSettings(sa);
        QVERIFY(waitFor([&] {
            return view()->shownA()->settings.projection == ProjectionMode::File
                && view()->shownB()->settings.projection == ProjectionMode::Identity;
        }));
        QVERIFY(!view()->messageA().isEmpty());
        QVERIFY(view()->messageB().isEmpty());
        QVERIFY(std::isfinite(view()->cellB(3, 3)));
    }

    void swapAndCopy()
    {
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("softmax-sum"), spec));
        QSignalSpy snapA(m_w->session(), &LiveSession::snapshotChanged);
        view()->swapSides();
        QVERIFY(waitFor([&] { return sideIs(view()->shownA(), spec.b) && sideIs(view()->shownB(), spec.a); }));
        QCOMPARE(m_w->controls()->settings().normalization, Normalization::Sum);
        QCOMPARE(view()->controlsB()->settings().normalization, Normalization::Softmax);
        QVERIFY(std::abs(view()->cellDifference(1, 0) - 0.0070) < 5e-4);
        QVERIFY(view()->titleA().startsWith(spec.b.title)); // the titles travel with the sides
        view()->copyAToB();
        QVERIFY(waitFor([&] { return view()->shownB()->settings == view()->shownA()->settings; }));
        QCOMPARE(view()->maxAbsDifference(), 0.0);
        QVERIFY2(view()->differenceTitle().contains(QStringLiteral("agree up to float rounding")), qPrintable(view()->differenceTitle()));
        // on the automatic scale a zero (or float-rounding) difference stays white: the scale keeps ±0.001
        Appearance ap = AppearanceManager::instance()->appearance();
        ap.fixedWeights = false;
        AppearanceManager::instance()->setAppearance(ap);
        QVERIFY(waitFor([&] { return view()->differenceRange().upper == 1e-3; }));
        QCOMPARE(view()->differenceRange().lower, -1e-3);
    }

    void headFollowsA()
    {
        // same head counts: the compared head is A's selection
        ComparisonSpec spec;
        QVERIFY(start(QStringLiteral("softmax-sum"), spec));
        ComputeSettings s = spec.a.settings;
        s.numHeads = 3;
        m_w->controls()->setSettings(s);
        ComputeSettings sb = spec.b.settings;
        sb.numHeads = 3;
        view()->controlsB()->setSettings(sb);
        QVERIFY(waitFor(
            [&] { return view()->shownA()->settings.numHeads == 3 && view()->shownB()->settings.numHeads == 3; }));
        m_w->session()->setSelectedHead(2);
        QVERIFY(waitFor([&] { return view()->comparedHead() == 2; }));
        QVERIFY(std::abs(view()->cellA(1, 0) - view()->shownA()->seq(0).weights[2](1, 0)) < 1e-6);
        QVERIFY(view()->titleA().contains(QStringLiteral("head 2 of 3")));
        m_w->session()->setHeadDisplay(HeadDisplay::Average);
        QVERIFY(waitFor([&] { return view()->comparedHead() == -1; }));
        QVERIFY(std::abs(view()->cellB(1, 0) - view()->shownB()->seq(0).weightsAvg(1, 0)) < 1e-6);
    }

    void screenshots()
    {
        const QString dir = qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set ATTNVIZ_SCREENSHOT_DIR to write the screenshots");
        for (const QString &id : {QStringLiteral("softmax-sum"), QStringLiteral("ship")}) {
            if (id == QLatin1String("ship") && !hasBundledEmbeddings())
                continue;
            ComparisonSpec spec;
            QVERIFY(start(id, spec));
            QTest::qWait(300);
            const QString name = id == QLatin1String("ship") ? QStringLiteral("compare-ship.png")
                                                             : QStringLiteral("compare-softmax-sum.png");
            QVERIFY(m_w->grab().save(dir + QLatin1Char('/') + name, "PNG"));
        }
    }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
