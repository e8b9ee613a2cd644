// SPDX-License-Identifier: GPL-3.0-or-later
// The needle probe in the window (offscreen): run from the Layers tab on llama-tiny, the grid's
// retrieval reading equals needleProbe's retrieval matrix, the needle's tokens are the span and the
// probe's text is in the editor; Cancel leaves the window as it was; bad input (an empty needle, a
// model that is not causal) is said in one line and runs nothing.
#include "testpaths.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "controls/sentenceedit.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "style/appearance.h"
#include "window/needledialog.h"
#include "window/needleprobes.h"

#include "attnviz/headroles.h"
#include "attnviz/needleprobe.h"
#include "attnviz/pretrained.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include <memory>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

using Window = test::PromptedWindow;

QString fixture(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + name; }

const char *kHaystack = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

NeedleInput input()
{
    NeedleInput in;
    in.haystack = QString::fromLatin1(kHaystack);
    in.needle = QStringLiteral("The best thing to do in San Francisco is eat a sandwich.");
    in.question = QStringLiteral("What is the best thing to do in San Francisco?");
    in.depth = 0.5;
    in.answerTokens = 5;
    return in;
}

QString statusText(MainWindow &w)
{
    auto *l = w.findChild<QLabel *>(QStringLiteral("statusLabel"));
    return l ? l->text() : QString();
}

} // namespace

class TestNeedleProbeWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void gridEqualsTheProbe();
    void cancelLeavesTheWindow();
    void badInputInOneLine();
    void screenshots();
};

void TestNeedleProbeWindow::gridEqualsTheProbe()
{
    Window win;
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    QVERIFY(win.show(QString::fromLatin1(kHaystack)));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    // the reference: the core's probe on a model of its own
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(fixture(QStringLiteral("llama-tiny")).toStdString(), {}, m).ok());
    NeedleRequest req;
    req.haystack = kHaystack;
    req.needle = input().needle.toStdString();
    req.question = input().question.toStdString();
    req.depth = 0.5;
    req.answerTokens = 5;
    NeedleProbe want;
    QVERIFY(needleProbe(*m, req, want).ok());

    // from the Layers tab's button, the dialog answered by the test
    win.w.needleProbes()->setInputPrompt([](NeedleInput &in) {
        const QString editor = in.haystack;
        in = input();
        in.haystack = editor; // the text in the editor
        return true;
    });
    QVector<QPair<int, int>> steps;
    QObject context;
    connect(win.w.needleProbes(), &NeedleProbes::progress, &context, [&](int done, int total) { steps.push_back({done, total}); });
    QSignalSpy finished(win.w.needleProbes(), &NeedleProbes::finished);
    auto *button = view->findChild<QPushButton *>(QStringLiteral("headRolesNeedle"));
    QVERIFY(button);
    button->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    // progress: the prompt's layers, then the answer's tokens
    const int layers = m->info().layers;
    QVERIFY(!steps.isEmpty());
    QCOMPARE(steps.last(), qMakePair(layers + 5, layers + 5));
    // the probe's text in the editor, its trace in the views, the needle as the span
    const QString text = QString::fromStdString(want.text);
    QTRY_VERIFY_WITH_TIMEOUT(win.w.session()->snapshot() && win.w.session()->snapshot()->sentence == text &&
                                 win.w.session()->snapshot()->hasResult(),
                             30000);
    QCOMPARE(win.w.sentenceEdit()->toPlainText(), text);
    const SnapshotPtr s = win.w.session()->snapshot();
    QCOMPARE(s->tq(), want.promptTokens);
    for (int i = 0; i < want.promptTokens; ++i)
        QCOMPARE(s->trace->tokens[size_t(i)].id, want.ids[size_t(i)]);
    QTRY_VERIFY(!view->computing() && view->layerCount() == layers);
    QCOMPARE(view->shownReading(), HeadRolesView::kRetrieval);
    QCOMPARE(view->span(), qMakePair(want.needleBegin, want.needleEnd));
    QVERIFY(view->retrieval());
    // the needle's key columns outlined on the Weights map, named in its title
    HeatmapView *hv = win.w.heatmapView();
    QCOMPARE(hv->markedKeys(), qMakePair(want.needleBegin, want.needleEnd));
    QCOMPARE(hv->markedBand(), QRectF(QPointF(want.needleBegin - 0.5, -0.5), QPointF(want.needleEnd - 0.5, s->tq() - 0.5)));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    QVERIFY2(hv->title().contains(QStringLiteral("keys %1–%2, the needle.").arg(want.needleBegin).arg(want.needleEnd - 1)),
             qPrintable(hv->title()));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QCOMPARE(view->retrieval()->answer, want.answer);
    // every head's number is the core's
    QCOMPARE(int(want.retrieval.rows()), layers);
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < int(want.retrieval.cols()); ++h)
            QCOMPARE(view->readingValue(l, h), want.retrieval(l, h));
    QVERIFY2(view->note().contains(QStringLiteral("Wu et al. 2024")), qPrintable(view->note()));
    QVERIFY2(view->note().contains(QString::fromStdString(want.answerText).simplified()), qPrintable(view->note()));
    auto *chooser = view->findChild<QComboBox *>(QStringLiteral("headRolesReading"));
    QCOMPARE(chooser->currentData().toInt(), HeadRolesView::kRetrieval);
    // another reading and back: the probe's numbers stay
    view->setReading(int(HeadReading::SinkMass));
    QTRY_VERIFY(!view->computing());
    view->setReading(HeadRolesView::kRetrieval);
    QTRY_VERIFY(!view->computing());
    QCOMPARE(view->readingValue(0, 0), want.retrieval(0, 0));
    // a model other than the probe's drops them
    QVERIFY(win.w.openModel(fixture(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.settle());
    QTRY_VERIFY(!view->retrieval());
    QVERIFY(view->shownReading() != HeadRolesView::kRetrieval);
}

void TestNeedleProbeWindow::cancelLeavesTheWindow()
{
    Window win;
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    const QString before = QString::fromLatin1(kHaystack);
    QVERIFY(win.show(before));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *view = win.w.headRolesView();
    const int reading = view->shownReading();
    const SnapshotPtr shown = win.w.session()->snapshot();
    QSignalSpy finished(win.w.needleProbes(), &NeedleProbes::finished);
    QString error;
    NeedleInput in = input();
    in.answerTokens = 40;
    QVERIFY2(win.w.needleProbes()->start(in, &error), qPrintable(error));
    auto *cancel = win.w.findChild<QPushButton *>(QStringLiteral("cancelComputeButton"));
    auto *progress = win.w.findChild<QProgressBar *>(QStringLiteral("computeProgress"));
    QVERIFY(cancel && progress);
    QVERIFY(cancel->isVisible() && progress->isVisible());
    cancel->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY(!finished.at(0).at(0).toBool());
    QVERIFY2(statusText(win.w).contains(QStringLiteral("cancelled")), qPrintable(statusText(win.w)));
    QVERIFY(!cancel->isVisible() && !progress->isVisible());
    // as it was: the text, the snapshot, the grid's reading, no probe
    QCoreApplication::processEvents();
    QCOMPARE(win.w.sentenceEdit()->toPlainText(), before);
    QCOMPARE(win.w.session()->snapshot(), shown);
    QCOMPARE(view->shownReading(), reading);
    QVERIFY(!view->retrieval());
    QVERIFY(!win.w.needleProbes()->last());
}

void TestNeedleProbeWindow::badInputInOneLine()
{
    Window win;
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    QVERIFY(win.show(QString::fromLatin1(kHaystack)));
    QSignalSpy finished(win.w.needleProbes(), &NeedleProbes::finished);
    NeedleInput bad = input();
    bad.needle = QStringLiteral("   ");
    win.w.needleProbes()->setInputPrompt([&](NeedleInput &in) {
        in = bad;
        return true;
    });
    win.w.needleProbes()->ask(win.w.sentenceEdit()->toPlainText());
    QCOMPARE(finished.count(), 1);
    QVERIFY(!win.w.needleProbes()->running());
    const QString said = statusText(win.w);
    QCOMPARE(said, QStringLiteral("Needle probe: the needle sentence is empty"));
    // the same from the Edit menu
    auto *action = win.w.findChild<QAction *>(QStringLiteral("needleProbeAction"));
    QVERIFY(action);
    action->trigger();
    QCOMPARE(finished.count(), 2);
    QCOMPARE(statusText(win.w), QStringLiteral("Needle probe: the needle sentence is empty"));
    // a file that is not there
    bad = input();
    bad.haystackFile = QStringLiteral("/nonexistent/haystack.txt");
    win.w.needleProbes()->ask(QString());
    QCOMPARE(statusText(win.w), QStringLiteral("Needle probe: /nonexistent/haystack.txt: no such file"));
    // a file that is not text (the CLI's `heads --haystack` reads it the same way: readHaystackFile)
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString binary = dir.filePath(QStringLiteral("haystack.bin"));
    {
        QFile f(binary);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("some words\0more", 15));
    }
    bad = input();
    bad.haystackFile = binary;
    win.w.needleProbes()->ask(QString());
    QCOMPARE(statusText(win.w), QStringLiteral("Needle probe: %1: a NUL byte at offset 10: not a text file").arg(binary));
    // a model that is not causal
    QVERIFY(win.w.openModel(fixture(QStringLiteral("bert-tiny")), nullptr));
    QVERIFY(win.settle());
    bad = input();
    win.w.needleProbes()->ask(QString());
    QVERIFY(!win.w.needleProbes()->running());
    QVERIFY2(statusText(win.w).startsWith(QStringLiteral("Needle probe: ")) &&
                 statusText(win.w).contains(QStringLiteral("not a causal language model")) &&
                 !statusText(win.w).contains(QLatin1Char('\n')),
             qPrintable(statusText(win.w)));
    QVERIFY(!win.w.headRolesView()->retrieval());
}

// The probe on a text of about 32k tokens (the README said again and again) on llama-tiny, whose
// rotary positions reach 131,072: the Weights map of the head that retrieved most, whole and zoomed to
// the needle's columns under the question's rows, and the Layers grid's retrieval scores.
void TestNeedleProbeWindow::screenshots()
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_NEEDLE_SHOTS");
    if (dir.isEmpty())
        QSKIP("set ATTNVIZ_NEEDLE_SHOTS=DIR to write the screenshots");
    QDir().mkpath(dir);
    {
        NeedleDialog dialog(QStringLiteral("The text in the editor."));
        dialog.show();
        QCoreApplication::processEvents();
        QVERIFY(dialog.grab().save(dir + QStringLiteral("/needle-dialog.png")));
        QCOMPARE(dialog.input().haystack, QStringLiteral("The text in the editor."));
        QVERIFY(dialog.input().haystackFile.isEmpty());
    }
    QFile readme(QString::fromUtf8(ATTNVIZ_SOURCE_DIR) + QStringLiteral("/README.md"));
    QVERIFY(readme.open(QIODevice::ReadOnly));
    const QString once = QString::fromUtf8(readme.readAll());
    std::unique_ptr<Model> llama;
    QVERIFY(openPretrained(fixture(QStringLiteral("llama-tiny")).toStdString(), {}, llama).ok());
    QString text;
    std::vector<TraceToken> pieces;
    while (pieces.size() < 32000) {
        text += once + QLatin1Char('\n');
        pieces.clear();
        QVERIFY(llama->tokenize(text.toStdString(), pieces).ok());
    }
    // cut after about 32,700 tokens: with the needle and the question, about 32k (the text is ASCII)
    text = QString::fromStdString(text.toStdString().substr(0, pieces[32700].begin));
    Window win;
    win.w.resize(1600, 1100);
    QVERIFY(win.w.openModel(fixture(QStringLiteral("llama-tiny")), nullptr));
    auto shoot = [&](const QString &name) {
        for (int i = 0; i < 10; ++i) {
            QCoreApplication::processEvents();
            QTest::qWait(50);
        }
        if (win.w.heatmapView()->isVisible())
            win.w.heatmapView()->refreshMap();
        QCoreApplication::processEvents();
        QVERIFY(win.w.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
    };
    NeedleInput in = input();
    in.haystack = text;
    in.answerTokens = 3;
    QSignalSpy finished(win.w.needleProbes(), &NeedleProbes::finished);
    QElapsedTimer timer;
    timer.start();
    QString error;
    QVERIFY2(win.w.needleProbes()->start(in, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 1200000);
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    const NeedleProbe &p = *win.w.needleProbes()->last();
    qInfo("probe: %d prompt tokens, needle %d-%d, answer \"%s\", %lld ms", p.promptTokens, p.needleBegin, p.needleEnd - 1,
          p.answerText.c_str(), timer.elapsed());
    timer.restart();
    QTRY_VERIFY_WITH_TIMEOUT(win.w.session()->snapshot() && win.w.session()->snapshot()->hasResult() &&
                                 win.w.session()->snapshot()->sentence == QString::fromStdString(p.text),
                             600000);
    const SnapshotPtr s = win.w.session()->snapshot();
    QVERIFY(s->longText);
    QCOMPARE(s->tq(), p.promptTokens);
    qInfo("the window's trace of the probe's text: %lld ms", timer.elapsed());
    // the head that copied most from the needle, else (a tiny random model copies nothing) the one
    // that reads the needle most (span mass), the first on a tie
    const Mat<double> mass = spanMassScores(*s->trace, p.needleBegin, p.needleEnd);
    int bestL = 0, bestH = 0;
    const bool copied = p.retrieval.maxCoeff() > 0;
    const Mat<double> &by = copied ? p.retrieval : mass;
    for (int l = 0; l < int(by.rows()); ++l)
        for (int h = 0; h < int(by.cols()); ++h)
            if (by(l, h) > by(bestL, bestH)) {
                bestL = l;
                bestH = h;
            }
    qInfo("head shown: L%d H%d (retrieval %.3f, span mass on the needle %.4f)", bestL, bestH, p.retrieval(bestL, bestH),
          mass(bestL, bestH));
    // the Layers grid's retrieval scores
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    QTRY_VERIFY_WITH_TIMEOUT(!win.w.headRolesView()->computing() && win.w.headRolesView()->layerCount() > 0, 600000);
    QCOMPARE(win.w.headRolesView()->shownReading(), HeadRolesView::kRetrieval);
    shoot(QStringLiteral("needle32k-layers-retrieval"));
    // the Weights map of that head, whole, then the question's rows over the needle's columns
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    win.w.session()->setSelectedLayer(bestL);
    win.w.session()->setHeadDisplay(HeadDisplay::One);
    win.w.session()->setSelectedHead(bestH);
    QCoreApplication::processEvents();
    timer.restart();
    shoot(QStringLiteral("needle32k-map"));
    qInfo("the whole map: %lld ms", timer.elapsed());
    const int needle = p.needleEnd - p.needleBegin;
    win.w.heatmapView()->zoomToCells(QRect(p.needleBegin - 200, p.promptTokens - 400, needle + 400, 400));
    shoot(QStringLiteral("needle32k-zoom-needle"));
    QVERIFY(win.w.heatmapView()->title().contains(QStringLiteral("the needle")));
    const Appearance before = AppearanceManager::instance()->appearance();
    for (Theme theme : {Theme::Dark, Theme::HighContrast}) {
        Appearance a = before;
        a.theme = theme;
        AppearanceManager::instance()->setAppearance(a);
        shoot(QStringLiteral("needle32k-zoom-needle-") + themeId(theme));
    }
    AppearanceManager::instance()->setAppearance(before);
    win.w.setPresentationMode(true);
    shoot(QStringLiteral("needle32k-zoom-needle-presenting"));
    win.w.setPresentationMode(false);
    win.w.session()->setSelectedQuery(p.promptTokens - 1);
    win.w.heatmapView()->setShowNumbers(true);
    win.w.heatmapView()->zoomToCells(QRect(p.needleBegin - 2, p.promptTokens - 10, needle + 4, 10));
    shoot(QStringLiteral("needle32k-cells"));
    // the Lines view: the last prompt token's row, its strongest keys
    QVERIFY(win.w.showView(QStringLiteral("lines")));
    shoot(QStringLiteral("needle32k-lines"));

    // the bundled model (trained; 512 positions): the probe on about 400 tokens of the README
    Window small;
    small.w.resize(1600, 1100);
    QVERIFY(small.w.openModel(QStringLiteral("bundled"), nullptr));
    QVERIFY(small.settle());
    pieces.clear();
    QVERIFY(small.w.session()->model()->tokenize(once.toStdString(), pieces).ok());
    NeedleInput b = input();
    b.haystack = QString::fromStdString(once.toStdString().substr(0, pieces[400].begin));
    b.needle = QStringLiteral("The secret word is pineapple.");
    b.question = QStringLiteral("The secret word is");
    b.answerTokens = 0;
    QSignalSpy done(small.w.needleProbes(), &NeedleProbes::finished);
    QVERIFY2(small.w.needleProbes()->start(b, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 120000);
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    const NeedleProbe &q = *small.w.needleProbes()->last();
    qInfo("bundled: %d prompt tokens, needle %d-%d, answer \"%s\", best retrieval %.3f", q.promptTokens, q.needleBegin,
          q.needleEnd - 1, q.answerText.c_str(), q.retrieval.maxCoeff());
    QTRY_VERIFY_WITH_TIMEOUT(small.w.session()->snapshot()->sentence == QString::fromStdString(q.text) &&
                                 small.w.session()->snapshot()->hasResult(),
                             60000);
    QVERIFY(small.w.showView(QStringLiteral("headRoles")));
    QTRY_VERIFY_WITH_TIMEOUT(!small.w.headRolesView()->computing(), 60000);
    QCOMPARE(small.w.headRolesView()->shownReading(), HeadRolesView::kRetrieval);
    for (int i = 0; i < 10; ++i) {
        QCoreApplication::processEvents();
        QTest::qWait(50);
    }
    QVERIFY(small.w.grab().save(dir + QStringLiteral("/needle-bundled-layers-retrieval.png")));
}

QTEST_MAIN(TestNeedleProbeWindow)
#include "tst_needleprobewindow.moc"
