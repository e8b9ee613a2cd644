// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons that open on what they talk about: each preset shows its view, the pipeline
// stage and cell its text names (outlined, explained, scrolled into view), and every number its text
// quotes is in what the open view draws without scrolling — read back from the strings the plots
// paint and the words the explanation shows in its viewport. Presenting on a small screen, the
// lesson's title reads whole or elided with "…", its text up to the last quoted number is in view
// unscrolled, and no heading breaks inside a word.
#include "drawntext.h"

#include "live/livesession.h"
#include "style/appearance.h"
#include "mainwindow.h"
#include "teaching/presets.h"
#include "views/patchingview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "window/lessonfocus.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDockWidget>
#include <QScrollBar>
#include <QStyleOptionComboBox>
#include <QTextBlock>
#include <QSplitter>
#include <QStandardPaths>
#include <QTextBrowser>
#include "views/predictionsview.h"

#include <QRegularExpression>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {
// test::sameNumber, but an axis tick ("0", "1", "0.2") matched every quoted number near it: a drawn
// value has as many decimals as the quote, up to the two the cells draw at the least
bool quotedIs(const QString &quoted, const QString &drawn)
{
    auto decimals = [](const QString &n) {
        const int dot = int(n.trimmed().indexOf(QLatin1Char('.')));
        return dot < 0 ? 0 : int(n.trimmed().size()) - dot - 1;
    };
    return decimals(drawn) >= std::min(2, decimals(quoted)) && test::sameNumber(quoted, drawn);
}

// The lines of a text block that end inside a word (neither at the block's end, nor at a space, nor
// after a hyphen): a heading cut mid-word.
QStringList linesCutInWords(const QTextBlock &b)
{
    QStringList cut;
    const QString text = b.text();
    const QTextLayout *layout = b.layout();
    for (int i = 0; layout && i < layout->lineCount(); ++i) {
        const QTextLine line = layout->lineAt(i);
        const int end = line.textStart() + line.textLength();
        if (end < text.size() && !text.at(end - 1).isSpace() && text.at(end - 1) != QLatin1Char('-') && !text.at(end).isSpace())
            cut << text.mid(line.textStart(), line.textLength());
    }
    return cut;
}

// The screens a run covers: ATTNVIZ_LESSON_SCREENS ("1280x720 800x800"), or every one when unset
// (the second font set's run takes the small screens, where a wider face is what breaks a layout).
bool screenWanted(QSize screen)
{
    const QString wanted = qEnvironmentVariable("ATTNVIZ_LESSON_SCREENS");
    return wanted.isEmpty() ||
           wanted.split(QLatin1Char(' '), Qt::SkipEmptyParts).contains(QStringLiteral("%1x%2").arg(screen.width()).arg(screen.height()));
}
} // namespace

class TestLessonFocus : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void quotedNumbersAreValues();
    void opensOnWhatItTalksAbout_data();
    void opensOnWhatItTalksAbout();
    void lessonReadsOnASmallScreen_data();
    void lessonReadsOnASmallScreen();
    void stagesDrawTheirNumbersPresenting_data();
    void stagesDrawTheirNumbersPresenting();
    void cleanup();

private:
    bool waitForResult(MainWindow &w);
    // Shows `w` (`window` large), applies preset `id` and presents it on a `screen` as `attnviz
    // --preset ID --presentation` starts: before the first result. The offscreen platform's screen
    // is of its own size: the window is given the classroom's (as a window manager would). True
    // once the result is in.
    bool presentPreset(MainWindow &w, const QString &id, QSize window, QSize screen);
};

void TestLessonFocus::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_lessonfocus"));
}

void TestLessonFocus::cleanup()
{
    AppearanceManager::instance()->setAppearance(Appearance()); // presentation mode's text and theme
}

bool TestLessonFocus::waitForResult(MainWindow &w)
{
    for (int i = 0; i < 300; ++i) {
        const SnapshotPtr s = w.session()->snapshot();
        if (s && !w.session()->busy() && s->generation == w.session()->generation())
            return s->hasResult();
        QTest::qWait(20);
    }
    return false;
}

bool TestLessonFocus::presentPreset(MainWindow &w, const QString &id, QSize window, QSize screen)
{
    w.session()->setDebounceMs(0);
    w.resize(window);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w) || !w.applyPreset(id))
        return false;
    w.setPresentationMode(true);
    w.setWindowState(Qt::WindowNoState);
    w.setGeometry(QRect(QPoint(0, 0), screen));
    return waitForResult(w);
}

// The numbers a text quotes are found as written; settings (a dropout rate) are not among them.
void TestLessonFocus::quotedNumbersAreValues()
{
    const Preset *scores = findPreset(QStringLiteral("journey-scores"));
    QVERIFY(scores);
    const QStringList q = quotedNumbers(*scores);
    QCOMPARE(q.size(), 15); // six scores, six weights, a 3-d context vector
    QCOMPARE(q.first(), QStringLiteral("0.9544"));
    QCOMPARE(q.last(), QStringLiteral("0.5683"));
    const Preset *dropout = findPreset(QStringLiteral("dropout"));
    QVERIFY(dropout);
    QVERIFY(!quotedNumbers(*dropout).contains(QStringLiteral("0.5")));
    QVERIFY(quotedNumbers(*dropout).contains(QStringLiteral("0.8966")));
    const Preset *wrapper = findPreset(QStringLiteral("multihead-wrapper"));
    QVERIFY(wrapper);
    QVERIFY(quotedNumbers(*wrapper).contains(QStringLiteral("−0.4519")));
    QVERIFY(test::sameNumber(QStringLiteral("−0.4519"), QStringLiteral("-0.45")));
    QVERIFY(!test::sameNumber(QStringLiteral("1.0"), QStringLiteral("0.95")));
    QVERIFY(!test::sameNumber(QStringLiteral("0.5517"), QStringLiteral("0.5518")));
    QVERIFY(!quotedIs(QStringLiteral("0.5683"), QStringLiteral("1"))); // an axis tick
    QVERIFY(!quotedIs(QStringLiteral("0.1581"), QStringLiteral("0.2")));
    QVERIFY(quotedIs(QStringLiteral("0.1581"), QStringLiteral("0.16"))); // a cell's two decimals
    QVERIFY(quotedIs(QStringLiteral("2.0"), QStringLiteral("2.00")));
}

void TestLessonFocus::opensOnWhatItTalksAbout_data()
{
    QTest::addColumn<QString>("id");
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("presenting");
    if (screenWanted(QSize(1600, 1000)))
        for (const Preset &p : presets())
            QTest::addRow("%s", qPrintable(p.id)) << p.id << QSize(1600, 1000) << false;
    // the classroom's screens, in the window: the focused stage still comes into view, every quoted
    // number is drawn
    for (const QSize screen : {QSize(1920, 1080), QSize(1280, 720)})
        for (const Preset &p : presets())
            if (screenWanted(screen))
                QTest::addRow("%s %dx%d", qPrintable(p.id), screen.width(), screen.height()) << p.id << screen << false;
    // presentation mode on the classroom's screens: the quoted numbers in view without scrolling
    // (the context row at the end of the pipeline's explanation needed scrolling at 1280 × 720)
    for (const QSize screen : {QSize(1920, 1080), QSize(1280, 720)})
        for (const Preset &p : presets())
            if (screenWanted(screen))
                QTest::addRow("%s presenting %dx%d", qPrintable(p.id), screen.width(), screen.height()) << p.id << screen << true;
}

void TestLessonFocus::opensOnWhatItTalksAbout()
{
    QFETCH(QString, id);
    QFETCH(QSize, size);
    QFETCH(bool, presenting);
    const Preset *p = findPreset(id);
    QVERIFY(p);
    MainWindow w;
    w.session()->setDebounceMs(0);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.applyPreset(id));
    if (presenting) { // as `attnviz --preset ID --presentation` starts: before the first result
        w.setPresentationMode(true);
        // the offscreen platform's screen is of its own size: the window is given the classroom's
        // (a window manager would do the same)
        w.setWindowState(Qt::WindowNoState);
        w.setGeometry(QRect(QPoint(0, 0), size));
    }
    QVERIFY(waitForResult(w));
    if (p->runPatching) // the lesson's sweep, run once its text has its result: its cells carry the numbers
        QTRY_VERIFY_WITH_TIMEOUT(w.patchingView()->result() && !w.patchingView()->running(), 60000);
    QTest::qWait(100); // the focus scrolls once the layout is done

    // the view
    QCOMPARE(w.currentViewId(), p->view);
    QWidget *view = w.tabs()->currentWidget();
    QStringList seen; // every string drawn in view, and the explanation's words in view
    if (!p->stage.isEmpty()) {
        // the stage and cell: explained, outlined, on screen
        PipelineView *pv = w.pipelineView();
        const int stage = lessonStage(*pv, *p);
        QVERIFY2(stage >= 0, qPrintable(p->stage));
        QCOMPARE(pv->focusedStage(), stage);
        QVERIFY(pv->stageRevealed(stage));
        const int col = std::max(0, p->column);
        const QVector<QRect> outlined = pv->highlights(stage);
        QVERIFY(!outlined.isEmpty());
        QCOMPARE(outlined.first(), QRect(col, p->query, 1, 1)); // the cell
        bool row = false;
        for (const QRect &r : outlined)
            row = row || (r.top() == p->query && r.bottom() == p->query && r.width() > 1);
        QVERIFY2(row, "its row is outlined");
        if (presenting) {
            // the explanation at the least width the pipeline's splitter gives it (as on a screen of
            // this size from the start: `attnviz --preset ID --presentation`): the quoted numbers
            // below, the context row at its end among them, are read from its viewport, unscrolled
            auto *split = qobject_cast<QSplitter *>(pv->explanationBrowser()->parentWidget());
            QVERIFY(split);
            split->setSizes({split->width(), 0});
            QTest::qWait(100);
            QCOMPARE(pv->explanationBrowser()->verticalScrollBar()->value(), 0);
            QVERIFY(pv->explanationBrowser()->width() >= 100);
        }
        QCustomPlot *plot = pv->stagePlot(stage);
        QVERIFY(plot->isVisible());
        // the view keeps the stage in view as its layout settles (a model's 13 stages take longer to
        // lay out than the word vectors' on a loaded machine)
        QTRY_VERIFY2_WITH_TIMEOUT(plot->visibleRegion().contains(pv->cellCenter(stage, p->query, col)),
                                  "the cell is on screen", 5000);
        seen << test::wordsInView(pv->explanationBrowser());
        QVERIFY2(pv->explanation().contains(QStringLiteral("[%1, %2]").arg(p->query).arg(col)),
                 qPrintable(pv->explanation().left(80)));
    } else if (p->view == QLatin1String("weights") || p->view == QLatin1String("embeddings")) {
        // the selected query (outlined by the view) is the one the text is about
        QCOMPARE(w.session()->selectedQuery(), p->query);
    }
    QList<QCustomPlot *> plots = view->findChildren<QCustomPlot *>();
    if (auto *rowDock = w.findChild<QDockWidget *>(QStringLiteral("rowDock")); rowDock && rowDock->isVisible())
        plots << rowDock->findChildren<QCustomPlot *>();
    for (QCustomPlot *plot : plots)
        if (plot->isVisible())
            seen << test::textsInView(plot);
    if (p->view == QLatin1String("headRoles")) // drawn by hand: the role scores ("prev 0.996") of each head
        seen << test::widgetTexts(view);
    // a model lesson's predictions, as the dock shows them while a token is hovered
    if (auto *dock = w.findChild<QDockWidget *>(QStringLiteral("predictionsDock")); dock && dock->isVisible()) {
        // (the lesson on predictions asks for hovering other tokens too: each one's list counts)
        for (int hover = -1; hover < w.session()->snapshot()->tq(); ++hover) {
            w.predictionsView()->setHoveredPosition(hover);
            for (const PredictionsView::Group &g : w.predictionsView()->groups()) {
                seen << g.note; // the actual next token's probability, below the list
                for (const PredictionsView::Entry &e : g.entries)
                    seen << QString::number(100.0 * e.p, 'f', 1) << QString::number(100.0 * e.p, 'f', 2)
                         << QString::number(100.0 * e.p, 'g', 3);
            }
        }
        w.predictionsView()->setHoveredPosition(-1);
    }

    // a number drawn inside a label ("prev 0.996", "actual next “␣wood” 0.31 %") counts as itself
    for (const QString &t : QStringList(seen))
        seen << t.split(QRegularExpression(QStringLiteral("[\\s()%,:;=“”\"]+")), Qt::SkipEmptyParts);
    // every number the text quotes is among them, the trained model's lessons too (their values are
    // read against the model in tst_lessons)
    for (const QString &q : quotedNumbers(*p)) {
        bool found = false;
        for (const QString &s : seen)
            found = found || quotedIs(q, s);
        QVERIFY2(found, qPrintable(QStringLiteral("%1: %2 is not in view").arg(id, q)));
    }
}

// Presentation mode on small screens (1280 × 720, and the offscreen platform's 800 × 800): the
// lesson's combo cut its title mid-word ("tiny · Induction:"), the paragraph scrolled in its narrow
// column and the Predictions dock's heading took three lines. Now the combo draws its title whole or
// elided with "…" (the whole title in its tooltip), every number the lesson quotes is in its
// viewport unscrolled, the column leaves the view most of the screen, and headings (the lesson's
// title, the predictions') break between words, in at most two lines.
void TestLessonFocus::lessonReadsOnASmallScreen_data()
{
    QTest::addColumn<QString>("id");
    QTest::addColumn<QSize>("screen");
    for (const QSize screen : {QSize(1920, 1080), QSize(1280, 720), QSize(800, 800)})
        for (const Preset &p : presets())
            if (screenWanted(screen))
                QTest::addRow("%s %dx%d", qPrintable(p.id), screen.width(), screen.height()) << p.id << screen;
}

void TestLessonFocus::lessonReadsOnASmallScreen()
{
    QFETCH(QString, id);
    QFETCH(QSize, screen);
    const Preset *p = findPreset(id);
    QVERIFY(p);
    MainWindow w;
    QVERIFY(presentPreset(w, id, QSize(1400, 900), screen));
    QTest::qWait(150);

    auto *dock = w.findChild<QDockWidget *>(QStringLiteral("lessonDock"));
    QVERIFY(dock && dock->isVisible());
    // the view keeps most of the screen
    QWidget *view = w.tabs()->currentWidget();
    QVERIFY2(view->width() >= 0.6 * screen.width(),
             qPrintable(QStringLiteral("view %1 px, lesson %2 px on %3 px").arg(view->width()).arg(dock->width()).arg(screen.width())));

    // the title in the combo: whole, or elided with "…" and whole in the tooltip; never cut
    auto *combo = dock->findChild<QComboBox *>(QStringLiteral("presetCombo"));
    QVERIFY(combo);
    const QString title = combo->currentText();
    QVERIFY(title.contains(p->title));
    QString drawn;
    for (const QString &t : test::widgetTexts(combo))
        if (!t.trimmed().isEmpty() && (title.startsWith(t) || t.endsWith(QChar(0x2026))))
            drawn = t;
    QVERIFY2(!drawn.isEmpty(), qPrintable(test::widgetTexts(combo).join(QLatin1Char('|'))));
    if (drawn != title) {
        QVERIFY2(drawn.endsWith(QChar(0x2026)) && title.startsWith(drawn.chopped(1)), qPrintable(drawn));
        QCOMPARE(combo->toolTip(), title);
    }
    QStyleOptionComboBox opt;
    opt.initFrom(combo);
    opt.editable = combo->isEditable();
    const QRect field = combo->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, combo);
    QVERIFY2(combo->fontMetrics().horizontalAdvance(drawn) <= field.width(),
             qPrintable(QStringLiteral("“%1” is %2 px in a %3 px field").arg(drawn).arg(combo->fontMetrics().horizontalAdvance(drawn)).arg(field.width())));

    // every number the lesson quotes is in its viewport without scrolling
    auto *text = dock->findChild<QTextBrowser *>(QStringLiteral("lessonText"));
    QVERIFY(text);
    QCOMPARE(text->verticalScrollBar()->value(), 0);
    const QString plain = text->toPlainText();
    for (const QString &q : quotedNumbers(*p)) {
        const qsizetype at = plain.indexOf(q);
        QVERIFY2(at >= 0, qPrintable(q));
        QTextCursor c(text->document());
        c.setPosition(int(at));
        const QRect from = text->cursorRect(c);
        c.setPosition(int(at + q.size()));
        const QRect to = text->cursorRect(c);
        QVERIFY2(text->viewport()->rect().contains(from) && text->viewport()->rect().contains(to),
                 qPrintable(QStringLiteral("%1 at y %2 in a %3 px high viewport, %4 px wide").arg(q).arg(to.bottom())
                                .arg(text->viewport()->height()).arg(text->viewport()->width())));
    }
    // the lesson's title (its first block) breaks between words
    QVERIFY2(linesCutInWords(text->document()->firstBlock()).isEmpty(),
             qPrintable(linesCutInWords(text->document()->firstBlock()).join(QLatin1Char('|'))));

    // the Predictions dock beside it (the model's lessons): its headings in at most two lines, never cut
    if (auto *pd = w.findChild<QDockWidget *>(QStringLiteral("predictionsDock")); pd && pd->isVisible()) {
        auto *pt = pd->findChild<QTextBrowser *>(QStringLiteral("predictionsText"));
        QVERIFY(pt);
        int headings = 0;
        for (const PredictionsView::Group &g : w.predictionsView()->groups())
            for (QTextBlock b = pt->document()->begin(); b.isValid(); b = b.next()) {
                if (b.text() != g.heading)
                    continue;
                ++headings;
                QVERIFY2(b.layout()->lineCount() <= 2, qPrintable(QStringLiteral("“%1”: %2 lines in %3 px").arg(b.text()).arg(b.layout()->lineCount()).arg(pt->viewport()->width())));
                QVERIFY2(linesCutInWords(b).isEmpty(), qPrintable(linesCutInWords(b).join(QLatin1Char('|'))));
            }
        QVERIFY(headings >= 1);
    }
}

// Presenting at 1920 × 1080, the stage a lesson opens on draws its numbers at 18 px: the weights
// (six columns) drew none beside scores that did (room was kept for a minus sign no weight has), and
// the two-head preset's Output (four columns) drew none once the explanation was squeezed (cards
// sized by the text alone, not by the cells' numbers).
void TestLessonFocus::stagesDrawTheirNumbersPresenting_data()
{
    QTest::addColumn<QString>("id");
    QTest::addColumn<QString>("drawn"); // the lesson's cell, as the stage draws it
    QTest::addRow("journey-scores weights") << QStringLiteral("journey-scores") << QStringLiteral("0.24");
    QTest::addRow("multihead-wrapper output") << QStringLiteral("multihead-wrapper") << QStringLiteral("-0.4519");
}

void TestLessonFocus::stagesDrawTheirNumbersPresenting()
{
    QFETCH(QString, id);
    QFETCH(QString, drawn);
    const Preset *p = findPreset(id);
    QVERIFY(p);
    MainWindow w;
    QVERIFY(presentPreset(w, id, QSize(1600, 1000), QSize(1920, 1080)));
    QTest::qWait(100);
    PipelineView *pv = w.pipelineView();
    auto *split = qobject_cast<QSplitter *>(pv->explanationBrowser()->parentWidget());
    QVERIFY(split);
    split->setSizes({split->width(), 0}); // the explanation at its least width
    QTest::qWait(100);
    const int stage = lessonStage(*pv, *p);
    QVERIFY(stage >= 0);
    QCustomPlot *plot = pv->stagePlot(stage);
    const QStringList texts = test::textsInView(plot);
    QVERIFY2(plot->property("attnvizCellNumberPx").toInt() >= 18, qPrintable(texts.join(QLatin1Char(' '))));
    bool found = false;
    for (const QString &t : texts)
        found = found || quotedIs(drawn, t);
    QVERIFY2(found, qPrintable(texts.join(QLatin1Char(' '))));
}

QTEST_MAIN(TestLessonFocus)
#include "tst_lessonfocus.moc"
