// SPDX-License-Identifier: GPL-3.0-or-later
// The lines view in the live window (offscreen): the drawn lines against the seed notebook's
// "journey" weights, masks, head colours and chips, hover isolation, threshold, row scaling,
// long inputs, the widget font, and figure export.
#include "controls/controlpanel.h"
#include "files/figureexport.h"
#include "views/linesview.h"
#include "live/livesession.h"
#include "style/legibility.h"
#include "mainwindow.h"
#include "style/plotstyle.h"
#include "teaching/seedtables.h"

#include <qcustomplot.h>

#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QApplication>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <map>

using namespace attnviz;
using namespace attnviz::ui;
using Side = LinesView::Side;

namespace {

// Seed 001, row of "journey" (query 1): softmax of the unscaled dot products with every word.
const double kJourneyRow[6] = {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581};

ComputeSettings journeySettings()
{
    ComputeSettings s;
    s.numHeads = 1;
    s.projection = ProjectionMode::Identity;
    s.scaleRule = ScaleRule::None;
    s.normalization = Normalization::Softmax;
    s.mask = MaskChoice::None;
    return s;
}

// query -> key -> line, for lines of one head
std::map<int, std::map<int, LinesView::Line>> byQuery(const std::vector<LinesView::Line> &lines, int head)
{
    std::map<int, std::map<int, LinesView::Line>> m;
    for (const auto &l : lines)
        if (l.head == head)
            m[l.query][l.key] = l;
    return m;
}

} // namespace

class TestLinesView : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<MainWindow> m_w;

    LinesView *view() const { return m_w->linesView(); }

    // Applies settings (and optionally a sentence) and waits until the views got the result.
    SnapshotPtr apply(const ComputeSettings &settings, const QString &sentence = QString(),
                      const std::function<bool(const ComputeSnapshot &)> &pred = {})
    {
        QSignalSpy spy(m_w.get(), &MainWindow::viewsUpdated);
        const quint64 after = m_w->session()->generation();
        m_w->controls()->setSettings(settings);
        if (!sentence.isNull())
            m_w->setSentence(sentence);
        m_w->session()->requestNow(); // a fresh snapshot even when nothing changed
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 10000) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
            const SnapshotPtr s = m_w->session()->snapshot();
            if (s && s->generation > after && !m_w->session()->busy() && s->settings == m_w->session()->settings()
                && (!pred || pred(*s))) {
                bool seen = false;
                for (const auto &args : spy)
                    seen = seen || args.at(0).toULongLong() == s->generation;
                if (!seen)
                    continue;
                settle();
                return s;
            }
        }
        return {};
    }

    // A click at a point of the view (given in the view's coordinates) reaches the plot under it.
    void click(const QPoint &p)
    {
        QTest::mouseClick(view()->plot(), Qt::LeftButton, {}, view()->plot()->mapFrom(view(), p));
        settle();
    }

    // Runs the queued replots so that the layout (and tokenRect) matches the window.
    void settle()
    {
        QCoreApplication::processEvents();
        view()->plot()->replot(QCustomPlot::rpImmediateRefresh);
        QCoreApplication::processEvents();
    }

private slots:
    void initTestCase()
    {
        m_w = std::make_unique<MainWindow>();
        m_w->setEmbeddingTable(journeyTable(), QStringLiteral("journey"));
        m_w->tabs()->setCurrentWidget(view());
        m_w->resize(1300, 950);
        m_w->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_w.get()));
        QVERIFY(apply(journeySettings(), journeySentence(), [](const ComputeSnapshot &s) { return s.tq() == 6; }));
        QCOMPARE(m_w->currentView(), ExportView::Lines);
        QCOMPARE(m_w->plotFor(ExportView::Lines), view()->plot());
    }

    void init()
    {
        m_w->session()->setHeadDisplay(HeadDisplay::One);
        m_w->session()->setSelectedHead(0);
        m_w->session()->setSelectedQuery(0);
        view()->setThreshold(0.01);
        view()->setScaleRows(false);
        view()->clearHover();
        QVERIFY(apply(journeySettings()));
    }

    void journeyWeights()
    {
        const auto lines = view()->lines();
        const auto q = byQuery(lines, 0);
        QCOMPARE(int(lines.size()), 36); // 6 x 6, every weight above the threshold
        QVERIFY(q.count(1));
        const auto &row = q.at(1);
        QCOMPARE(int(row.size()), 6);
        for (int k = 0; k < 6; ++k) {
            QVERIFY2(std::abs(row.at(k).alpha - kJourneyRow[k]) < 5e-4,
                     qPrintable(QStringLiteral("key %1: alpha %2, expected %3").arg(k).arg(row.at(k).alpha).arg(kJourneyRow[k])));
            QVERIFY(std::abs(row.at(k).weight - kJourneyRow[k]) < 5e-4);
            QCOMPARE(row.at(k).color, headColor(0));
        }
        QCOMPARE(view()->shownQueries(), 6);
        QCOMPARE(view()->shownKeys(), 6);
    }

    void scaleRows()
    {
        view()->setScaleRows(true);
        const auto row = byQuery(view()->lines(), 0).at(1);
        for (int k = 0; k < 6; ++k)
            QVERIFY(std::abs(row.at(k).alpha - kJourneyRow[k] / kJourneyRow[1]) < 2e-3);
        QVERIFY(std::abs(row.at(1).alpha - 1.0) < 1e-9);
        QVERIFY(view()->title().contains(QStringLiteral("row maximum")));
    }

    void threshold()
    {
        view()->setThreshold(0.15);
        const auto row = byQuery(view()->lines(), 0).at(1);
        QCOMPARE(int(row.size()), 3);
        QVERIFY(row.count(1) && row.count(2) && row.count(5));
        for (const auto &l : view()->lines())
            QVERIFY(l.weight >= 0.15);
    }

    void causalMask()
    {
        ComputeSettings s = journeySettings();
        s.mask = MaskChoice::Causal;
        QVERIFY(apply(s));
        const auto q = byQuery(view()->lines(), 0);
        QCOMPARE(int(q.at(0).size()), 1); // query 0 sees only key 0 ...
        QVERIFY(q.at(0).count(0));
        QVERIFY(std::abs(q.at(0).at(0).alpha - 1.0) < 1e-6);
        for (int i = 0; i < 6; ++i)
            for (const auto &[k, l] : q.at(i))
                QVERIFY2(k <= i, qPrintable(QStringLiteral("line %1 -> %2 under a causal mask").arg(i).arg(k)));
        QCOMPARE(int(q.at(5).size()), 6);
    }

    void fullyMaskedRow()
    {
        ComputeSettings s = journeySettings();
        s.mask = MaskChoice::Custom;
        QVERIFY(apply(s));
        for (int k = 0; k < 6; ++k)
            m_w->session()->toggleCustomCell(2, k);
        QVERIFY(apply(s, QString(), [](const ComputeSnapshot &s) { return !s.seq(0).fullyMaskedRows.empty(); }));
        for (const auto &l : view()->lines())
            QVERIFY(l.query != 2);
        QVERIFY(view()->title().contains(QStringLiteral("every key masked")));
        m_w->session()->clearCustomMask();
        QVERIFY(apply(journeySettings()));
    }

    void headsInColours()
    {
        ComputeSettings s = journeySettings();
        s.numHeads = 2;
        s.projection = ProjectionMode::Random;
        s.projectionSeed = 1;
        s.dHead = 3; // d_model 3 does not split into 2 heads; random projections take any d_head
        const SnapshotPtr snap = apply(s);
        QVERIFY(snap);
        QVERIFY2(snap->hasResult(), qPrintable(snap->message));
        QCOMPARE(snap->attention(0).numHeads, 2);
        m_w->session()->setHeadDisplay(HeadDisplay::All);
        settle();
        QCOMPARE(m_w->tabs()->currentWidget(), view()); // All does not leave the lines tab
        const auto lines = view()->lines();
        std::set<QRgb> colours;
        for (const auto &l : lines) {
            QVERIFY(l.head == 0 || l.head == 1);
            // the head's colour, at 4.5 : 1 on the background
            QCOMPARE(l.color, readableOn(headColor(l.head), QApplication::palette().color(QPalette::Base), 4.5));
            QVERIFY(std::abs(l.weight - snap->weights(0, l.head)(l.query, l.key)) < 1e-6);
            colours.insert(l.color.rgb());
        }
        QCOMPARE(int(colours.size()), 2);
        QVERIFY(headColor(0) != headColor(1));

        // the chip of head 1 switches its lines off, and on again
        const QRect chip = view()->headChipRect(1);
        QVERIFY(!chip.isEmpty());
        click(chip.center());
        QVERIFY(!view()->headEnabled(1));
        for (const auto &l : view()->lines())
            QCOMPARE(l.head, 0);
        QTest::qWait(QApplication::doubleClickInterval() + 50); // two clicks, not a double click
        click(view()->headChipRect(1).center());
        QVERIFY(view()->headEnabled(1));

        // the "average" chip, then a head chip, drive the session (and so the other views)
        click(view()->headChipRect(-1).center());
        QCOMPARE(m_w->session()->headDisplay(), HeadDisplay::Average);
        settle();
        for (const auto &l : view()->lines()) {
            QCOMPARE(l.head, -1);
            QCOMPARE(l.color, headAverageColor());
        }
        click(view()->headChipRect(1).center());
        QCOMPARE(m_w->session()->headDisplay(), HeadDisplay::One);
        QCOMPARE(m_w->session()->selectedHead(), 1);
        settle();
        for (const auto &l : view()->lines())
            QCOMPARE(l.head, 1);
    }

    void hoverIsolates_data()
    {
        QTest::addColumn<int>("side");
        QTest::addColumn<int>("index");
        QTest::addRow("query 2") << int(Side::Query) << 2;
        QTest::addRow("key 4") << int(Side::Key) << 4;
    }

    void hoverIsolates()
    {
        QFETCH(int, side);
        QFETCH(int, index);
        const Side sd = Side(side);
        const QRect r = view()->tokenRect(sd, index);
        QVERIFY(!r.isEmpty());
        QTest::mouseMove(view(), r.center());
        QTRY_VERIFY(!view()->lines().empty());
        int mine = 0;
        for (const auto &l : view()->lines()) {
            const bool own = (sd == Side::Query ? l.query : l.key) == index;
            if (own) {
                ++mine;
                QVERIFY(std::abs(l.alpha - l.weight) < 1e-9); // full opacity
            } else {
                QVERIFY(l.alpha <= LinesView::kFade * l.weight + 1e-12);
            }
        }
        QCOMPARE(mine, 6);
        // leaving the token restores every line
        QTest::mouseMove(view(), QPoint(view()->tokenRect(Side::Query, 0).left() - 40, r.center().y()));
        for (const auto &l : view()->lines())
            QVERIFY(std::abs(l.alpha - l.weight) < 1e-9);
    }

    void clickSelectsQuery()
    {
        QCOMPARE(m_w->session()->selectedQuery(), 0);
        click(view()->tokenRect(Side::Query, 4).center());
        QCOMPARE(m_w->session()->selectedQuery(), 4);
    }

    void fontFollowsWidget()
    {
        const QRect before = view()->tokenRect(Side::Query, 1);
        const QFont original = view()->font();
        QFont f = original;
        f.setPointSizeF(f.pointSizeF() * 2);
        view()->setFont(f);
        settle();
        // labels twice as wide, rows at least a line of the larger text (the plot grows and scrolls)
        QTRY_VERIFY2(view()->tokenRect(Side::Query, 1).width() > before.width() * 1.6,
                     qPrintable(QStringLiteral("%1 -> %2").arg(before.width()).arg(view()->tokenRect(Side::Query, 1).width())));
        QVERIFY(view()->tokenRect(Side::Query, 1).height() >= QFontMetrics(f).height());
        view()->setFont(original);
        settle();
        QTRY_COMPARE(view()->tokenRect(Side::Query, 1).width(), before.width());
    }

    void longInput()
    {
        QStringList words;
        for (int i = 0; i < 200; ++i)
            words << QStringLiteral("w%1").arg(i);
        QVERIFY(apply(journeySettings(), words.join(QLatin1Char(' ')), [](const ComputeSnapshot &s) { return s.tq() == 200; }));
        QCOMPARE(view()->shownQueries(), LinesView::kMaxTokensPerSide);
        QCOMPARE(view()->firstQuery(), 0);
        QVERIFY2(view()->title().contains(QStringLiteral("the first 150 queries")), qPrintable(view()->title()));
        for (const auto &l : view()->lines())
            QVERIFY(l.query < 150 && l.key < 150);
        m_w->session()->setSelectedQuery(180);
        settle();
        QVERIFY(view()->firstQuery() > 0 && view()->firstQuery() <= 180);
        QVERIFY(view()->firstQuery() + view()->shownQueries() > 180);
        QVERIFY(view()->title().contains(QStringLiteral("around the selected query")));
        QVERIFY(!view()->tokenRect(Side::Query, 180).isEmpty());
        QVERIFY(view()->tokenRect(Side::Query, 0).isEmpty());
        QVERIFY(apply(journeySettings(), journeySentence(), [](const ComputeSnapshot &s) { return s.tq() == 6; }));
    }

    void exportFigure_data()
    {
        QTest::addColumn<QString>("suffix");
        QTest::addRow("png") << QStringLiteral("png");
        QTest::addRow("svg") << QStringLiteral("svg");
        QTest::addRow("pdf") << QStringLiteral("pdf");
    }

    void exportFigure()
    {
        QFETCH(QString, suffix);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("lines.") + suffix);
        QString error;
        QVERIFY2(saveFigure(m_w->plotFor(ExportView::Lines), path, {900, 700, 96}, &error), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QVERIFY(bytes.size() > 1000);
        if (suffix == QLatin1String("svg")) {
            QVERIFY(bytes.contains("journey"));
            QVERIFY(bytes.contains("queries"));
        } else if (suffix == QLatin1String("png")) {
            QImage img;
            QVERIFY(img.loadFromData(bytes, "PNG"));
            QCOMPARE(img.size(), QSize(900, 700));
            // the lines: coloured pixels (head 0 blue) between the two columns
            int blue = 0;
            for (int y = 0; y < img.height(); ++y)
                for (int x = img.width() / 3; x < 2 * img.width() / 3; ++x) {
                    const QColor c = img.pixelColor(x, y);
                    blue += c.blue() > c.red() + 40;
                }
            QVERIFY2(blue > 500, qPrintable(QString::number(blue)));
        }
    }

    void cleanupTestCase() { m_w.reset(); }
};

QTEST_MAIN(TestLinesView)
#include "tst_linesview.moc"
