// SPDX-License-Identifier: GPL-3.0-or-later
// The Alignment tab in the real window (offscreen): its word matrix read back against the
// cross-attention of the core's own trace of the same source and target, merged here by words
// (pieces summed over a source word, averaged over a target word), for every layer and head and
// their means; each row's argmax drawn; cells marked by real mouse clicks; the layer sweep on a
// hand-made trace whose answer is known; the figure and the CSV; a session's layer, head and marks
// read back, a bad value one problem; the tab listed only for encoder-decoder models.
#include "testpaths.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "files/figureexport.h"
#include "files/session.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/alignmentview.h"
#include "views/wordalignment.h"
#include "window/modelloader.h"
#include "window/viewrouter.h"

#include "qcustomplot.h"

#include <QAction>
#include <QComboBox>
#include <QJsonArray>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QString fixture(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + name; }

using Window = test::PromptedWindow;

const QString kSource = QStringLiteral("the 3rd of March, 1998"); // within the tiny folders' 20 positions
const QString kTarget = QStringLiteral("der dritte März");

SnapshotPtr settleOn(Window &win, const QString &source, const QString &target)
{
    win.w.inputPanel()->targetEdit()->setPlainText(target);
    const quint64 g = test::shownGeneration(*win.w.session());
    win.w.setSentence(source);
    win.w.session()->requestNow();
    return test::waitForSnapshot(
        *win.w.session(), g, [&](const ComputeSnapshot &s) { return s.sentence == source && s.hasResult() && s.target == target; },
        30000);
}

// The words of a token list as this test reads the rule: a piece spelled with "▁" or "Ġ" first, a
// special token, or the piece after a special one begins a word; others continue it.
std::vector<std::pair<int, int>> wordSpans(const std::vector<TraceToken> &tokens)
{
    std::vector<std::pair<int, int>> spans;
    bool fresh = true;
    for (int i = 0; i < int(tokens.size()); ++i) {
        const std::string &t = tokens[size_t(i)].text;
        const bool marker = t.rfind("\xE2\x96\x81", 0) == 0 || t.rfind("\xC4\xA0", 0) == 0;
        if (tokens[size_t(i)].special || marker || fresh)
            spans.push_back({i, i + 1});
        else
            spans.back().second = i + 1;
        fresh = tokens[size_t(i)].special;
    }
    return spans;
}

// The merged cross-attention straight from the trace: layer/head -1 the mean, in float64.
Mat<double> merged(const Trace<float> &t, int layer, int head)
{
    const auto rows = wordSpans(t.tokens), cols = wordSpans(t.seq2seq.sourceTokens);
    Mat<double> out = Mat<double>::Zero(Eigen::Index(rows.size()), Eigen::Index(cols.size()));
    int n = 0;
    for (int l = 0; l < int(t.seq2seq.cross.size()); ++l) {
        if (layer >= 0 && l != layer)
            continue;
        const SequenceResult<float> &s = t.seq2seq.cross[size_t(l)].attention.batch.front();
        for (int h = 0; h < int(s.weights.size()); ++h) {
            if (head >= 0 && h != head)
                continue;
            ++n;
            for (size_t r = 0; r < rows.size(); ++r)
                for (size_t c = 0; c < cols.size(); ++c) {
                    double sum = 0;
                    for (int i = rows[r].first; i < rows[r].second; ++i)
                        for (int j = cols[c].first; j < cols[c].second; ++j)
                            sum += double(s.weights[size_t(h)](i, j));
                    out(Eigen::Index(r), Eigen::Index(c)) += sum / (rows[r].second - rows[r].first);
                }
        }
    }
    return out / double(n);
}

TraceToken piece(const char *text, bool special = false)
{
    TraceToken t;
    t.text = text;
    t.display = text;
    t.special = special;
    return t;
}

// A hand-made encoder-decoder trace: target "the cats" (▁the ▁cat s), source "die Katzen"
// (▁die ▁Kat zen), two cross-attention layers of two heads with the given rows (per head, per target
// token, per source token).
std::shared_ptr<ComputeSnapshot> handMade(const std::vector<std::vector<std::vector<std::vector<float>>>> &layers)
{
    auto t = std::make_shared<Trace<float>>();
    t->tokens = {piece("\xE2\x96\x81the"), piece("\xE2\x96\x81" "cat"), piece("s")};
    t->seq2seq.sourceTokens = {piece("\xE2\x96\x81" "die"), piece("\xE2\x96\x81Kat"), piece("zen")};
    for (const auto &heads : layers) {
        LayerTrace<float> lt;
        lt.attention.numHeads = int(heads.size());
        lt.attention.batch.resize(1);
        for (const auto &rows : heads) {
            Mat<float> m(3, 3);
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    m(i, j) = rows[size_t(i)][size_t(j)];
            lt.attention.batch.front().weights.push_back(m);
        }
        t->seq2seq.cross.push_back(lt);
    }
    t->layers = t->seq2seq.cross;
    t->seq2seq.encoder = t->seq2seq.cross;
    auto s = std::make_shared<ComputeSnapshot>();
    s->encoderDecoder = true;
    s->queryLabels = {QStringLiteral("the"), QStringLiteral("cat"), QStringLiteral("s")};
    s->keyLabels = s->queryLabels;
    s->trace = t;
    return s;
}

void mouseClick(QCustomPlot *plot, const QPointF &at)
{
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at.toPoint());
    QCoreApplication::processEvents();
}

} // namespace

class TestAlignmentView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    // The word rule on SentencePiece and byte-level pieces.
    void words()
    {
        const std::vector<AlignmentWord> sp = alignmentWords(
            {piece("<pad>", true), piece("\xE2\x96\x81" "der"), piece("\xE2\x96\x81M"), piece("\xC3\xA4rz"), piece(","),
             piece("\xE2\x96\x81"), piece("1998"), piece("</s>", true)});
        QStringList labels;
        for (const AlignmentWord &w : sp)
            labels << QString::fromStdString(w.label);
        QCOMPARE(labels, (QStringList{"<pad>", "der", "März,", "1998", "</s>"}));
        QCOMPARE(sp[2].first, 2);
        QCOMPARE(sp[2].last, 5);
        const std::vector<AlignmentWord> bpe = alignmentWords(
            {piece("<s>", true), piece("the"), piece("\xC4\xA0" "cat"), piece("s"), piece("</s>", true)});
        labels.clear();
        for (const AlignmentWord &w : bpe)
            labels << QString::fromStdString(w.label);
        QCOMPARE(labels, (QStringList{"<s>", "the", "cats", "</s>"}));
    }

    void wordMatrixIsTheMergedCrossAttention_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("t5") << QStringLiteral("t5-tiny");
        QTest::newRow("marian") << QStringLiteral("marian-spm-tiny");
        QTest::newRow("bart") << QStringLiteral("bart-tiny");
    }

    // For every layer and head, and their means: the tab's matrix is the core trace's cross-attention
    // merged by words (1e-6), its labels the words, the argmax drawn on each row.
    void wordMatrixIsTheMergedCrossAttention()
    {
        QFETCH(QString, folder);
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(folder), &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        QVERIFY(win.w.showView(QStringLiteral("alignment")));
        AlignmentView *v = win.w.alignmentView();
        QCoreApplication::processEvents();
        QVERIFY2(v->message().isEmpty(), qPrintable(v->message()));

        std::shared_ptr<Model> model;
        QVERIFY(ModelLoader::load(fixture(folder), model, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        req.target = kTarget.toStdString();
        Trace<float> want;
        QVERIFY(model->trace(req, want).ok());
        const auto rows = wordSpans(want.tokens), cols = wordSpans(want.seq2seq.sourceTokens);
        QVERIFY(cols.size() < want.seq2seq.sourceTokens.size() || rows.size() < want.tokens.size()); // some word has pieces
        QCOMPARE(v->rowLabels().size(), int(rows.size()));
        QCOMPARE(v->columnLabels().size(), int(cols.size()));
        // the words as the model decodes their pieces (T5's "1998" ends in the byte-fallback piece <0x38>)
        QCOMPARE(v->columnLabels().mid(v->columnLabels().indexOf(QStringLiteral("3rd")), 4),
                 (QStringList{"3rd", "of", "March,", "1998"}));
        QVERIFY2(v->rowLabels().endsWith(QStringLiteral("März")), qPrintable(v->rowLabels().join(QLatin1Char('|'))));

        const int layers = int(want.seq2seq.cross.size()), heads = want.seq2seq.cross.front().attention.numHeads;
        QCOMPARE(v->layerCombo()->count(), layers + 1);
        QCOMPARE(v->headCombo()->count(), heads + 1);
        for (int l = -1; l < layers; ++l)
            for (int h = -1; h < heads; ++h) {
                v->layerCombo()->setCurrentIndex(v->layerCombo()->findData(l));
                v->headCombo()->setCurrentIndex(v->headCombo()->findData(h));
                QCOMPARE(v->settings().layer, l);
                QCOMPARE(v->settings().head, h);
                const Mat<double> m = merged(want, l, h);
                QCOMPARE(int(v->wordMatrix().rows()), int(m.rows()));
                QCOMPARE(int(v->wordMatrix().cols()), int(m.cols()));
                const double diff = (v->wordMatrix() - m).cwiseAbs().maxCoeff();
                QVERIFY2(diff <= 1e-6, qPrintable(QStringLiteral("layer %1 head %2: %3").arg(l).arg(h).arg(diff)));
                for (Eigen::Index r = 0; r < m.rows(); ++r) {
                    QVERIFY(std::abs(m.row(r).sum() - 1.0) < 1e-4); // a merged row still sums to 1
                    Eigen::Index best = 0;
                    m.row(r).maxCoeff(&best);
                    QCOMPARE(v->argmax()[size_t(r)], int(best));
                }
            }
        // the argmax path as drawn: one marker per row, at its argmax
        QCustomPlot *plot = v->plot();
        QVERIFY(plot);
        QCPGraph *path = plot->graph(0);
        QCOMPARE(path->dataCount(), int(rows.size()));
        for (int r = 0; r < path->dataCount(); ++r) {
            QCOMPARE(int(path->data()->at(r)->value), r);
            QCOMPARE(int(path->data()->at(r)->key), v->argmax()[size_t(r)]);
        }
        QVERIFY(v->selectionText().contains(QStringLiteral("head %1").arg(heads - 1)));
    }

    // Clicking cells with the mouse marks the alignment (one source word per target word, a second
    // click on it takes it off), and the sweep scores each layer against the marks.
    void clicksMarkTheAlignment()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("marian-spm-tiny")), &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        QVERIFY(win.w.showView(QStringLiteral("alignment")));
        AlignmentView *v = win.w.alignmentView();
        QCustomPlot *plot = v->plot();
        QVERIFY(plot);
        QCoreApplication::processEvents();
        QTest::qWait(50);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(plot->isVisible() && plot->axisRect()->width() > 50);
        QVERIFY(v->sweep().empty());
        mouseClick(plot, v->cellCentre(1, 2));
        QCOMPARE(v->marked()[1], 2);
        mouseClick(plot, v->cellCentre(1, 3)); // the same target word: the mark moves
        QCOMPARE(v->marked()[1], 3);
        mouseClick(plot, v->cellCentre(2, 0));
        QCOMPARE(v->marked()[2], 0);
        QCOMPARE(int(v->settings().marks.size()), 2);
        QCPGraph *marks = plot->graph(1);
        QCOMPARE(marks->dataCount(), 2);
        QCOMPARE(int(marks->data()->at(0)->key), 3);
        QCOMPARE(int(marks->data()->at(0)->value), 1);
        // the sweep: one row per cross-attention layer, as layerSweep scores it
        const int layers = int(s->trace->seq2seq.cross.size());
        QCOMPARE(int(v->sweep().size()), layers);
        QCOMPARE(v->sweepTable()->rowCount(), layers);
        const std::vector<int> marked = v->marked();
        for (int l = 0; l < layers; ++l) {
            int right = 0;
            const std::vector<int> argmax = rowArgmax(merged(*s->trace, l, -1));
            right += argmax[1] == 3 ? 1 : 0;
            right += argmax[2] == 0 ? 1 : 0;
            QCOMPARE(v->sweep()[size_t(l)].meanOfHeads, right / 2.0);
        }
        const QTableWidgetItem *best = v->sweepTable()->item(v->bestSweepLayer(), 0);
        QVERIFY(best && best->font().bold());
        mouseClick(plot, v->cellCentre(2, 0)); // again: off
        QCOMPARE(v->marked()[2], -1);
        QCOMPARE(int(v->settings().marks.size()), 1);
        v->clearButton()->click();
        QVERIFY(v->settings().marks.empty());
        QVERIFY(v->sweep().empty());
    }

    // The sweep on a hand-made trace: layer 0's head 0 aligns both words, its head 1 neither, their
    // mean one of two; layer 1 aligns both with either head.
    void sweepOnAKnownCase()
    {
        const std::vector<std::vector<float>> right{{0.8f, 0.1f, 0.1f}, {0.1f, 0.5f, 0.4f}, {0.1f, 0.5f, 0.4f}};
        const std::vector<std::vector<float>> wrong{{0.1f, 0.45f, 0.45f}, {0.8f, 0.1f, 0.1f}, {0.8f, 0.1f, 0.1f}};
        const std::vector<std::vector<float>> soft{{0.6f, 0.2f, 0.2f}, {0.2f, 0.4f, 0.4f}, {0.2f, 0.4f, 0.4f}};
        const auto snap = handMade({{right, wrong}, {right, soft}});
        AlignmentView v;
        v.resize(900, 600);
        v.setSnapshot(snap);
        QCOMPARE(v.rowLabels(), (QStringList{"the", "cats"}));
        QCOMPARE(v.columnLabels(), (QStringList{"die", "Katzen"}));
        // the mean of layers and heads, merged: "cats" averages its two rows, "Katzen" sums its two columns
        QVERIFY(std::abs(v.wordMatrix()(0, 0) - (0.8 + 0.1 + 0.8 + 0.6) / 4) < 1e-6);
        QVERIFY(std::abs(v.wordMatrix()(1, 1) - (0.9 + 0.2 + 0.9 + 0.8) / 4) < 1e-6);
        v.toggleMark(0, 0);
        v.toggleMark(1, 1);
        const std::vector<LayerAlignment> &sweep = v.sweep();
        QCOMPARE(int(sweep.size()), 2);
        QCOMPARE(sweep[0].meanOfHeads, 0.5);
        QCOMPARE(sweep[0].bestHead, 0);
        QCOMPARE(sweep[0].bestHeadAccuracy, 1.0);
        QCOMPARE(sweep[1].meanOfHeads, 1.0);
        QCOMPARE(sweep[1].bestHead, 0);
        QCOMPARE(sweep[1].bestHeadAccuracy, 1.0);
        QCOMPARE(v.bestSweepLayer(), 1);
        QCOMPARE(v.sweepTable()->item(0, 0)->text(), QStringLiteral("50 %"));
        QCOMPARE(v.sweepTable()->item(1, 0)->text(), QStringLiteral("100 %"));
        QCOMPARE(v.sweepTable()->item(0, 1)->text(), QStringLiteral("0 · 100 %"));
        QVERIFY(v.sweepTable()->item(1, 0)->font().bold());
        QVERIFY(!v.sweepTable()->item(0, 0)->font().bold());
        // only "cats" marked, on the wrong word: every layer scores 0
        v.clearMarks();
        v.toggleMark(1, 0);
        QCOMPARE(v.sweep()[0].meanOfHeads, 0.0);
        QCOMPARE(v.sweep()[0].bestHead, 1);
        QCOMPARE(v.sweep()[0].bestHeadAccuracy, 1.0);
        QCOMPARE(v.sweep()[1].meanOfHeads, 0.0);
        // clicking a layer of the table draws it
        v.sweepTable()->cellClicked(1, 0);
        QCOMPARE(v.settings().layer, 1);
        // another model: one line
        auto other = std::make_shared<ComputeSnapshot>(*snap);
        other->encoderDecoder = false;
        v.setSnapshot(other);
        QVERIFY(!v.plot());
        QVERIFY(v.message().startsWith(QStringLiteral("Alignment is for encoder-decoder models")));
    }

    // File ▸ Export current view writes the heatmap; CSV… the word matrix, read back exactly.
    void exportAndCsv()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("t5-tiny")), &error), qPrintable(error));
        QVERIFY(settleOn(win, kSource, kTarget));
        QVERIFY(win.w.showView(QStringLiteral("alignment")));
        AlignmentView *v = win.w.alignmentView();
        v->layerCombo()->setCurrentIndex(v->layerCombo()->findData(1));
        QCoreApplication::processEvents();
        auto *exportAction = win.w.findChild<QAction *>(QStringLiteral("exportCurrentAction"));
        QVERIFY(exportAction && exportAction->isEnabled());
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("alignment.png"));
        QVERIFY2(saveFigure(v->plot(), png, FigureOptions(), &error), qPrintable(error));
        QVERIFY(QImage(png).width() > 100);
        const QString csv = dir.filePath(QStringLiteral("alignment.csv"));
        v->setCsvPrompt([csv] { return csv; });
        v->csvButton()->click();
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
        QCOMPARE(int(lines.size()), int(v->wordMatrix().rows()) + 1);
        QVERIFY(lines.front().startsWith("target\\source,"));
        for (int r = 0; r < v->wordMatrix().rows(); ++r) {
            const QList<QByteArray> cells = lines[r + 1].split(',');
            QCOMPARE(int(cells.size()), int(v->wordMatrix().cols()) + 1);
            for (int c = 0; c < v->wordMatrix().cols(); ++c)
                QCOMPARE(cells[c + 1].toDouble(), v->wordMatrix()(r, c));
        }
        // not for a model of another kind: the tab is not listed, the view says why
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("gpt2-tiny")), &error), qPrintable(error));
        QVERIFY(win.settle());
        QVERIFY(!win.w.showView(QStringLiteral("alignment")));
        QVERIFY(v->message().startsWith(QStringLiteral("Alignment is for encoder-decoder models")));
    }

    // A session keeps the layer, the head and the marks; a bad value is one problem, the rest is read.
    void sessionRoundTrip()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.attnviz"));
        AlignmentSettings want;
        want.layer = 1;
        want.head = 0;
        want.marks = {{1, 3}, {2, 0}};
        {
            Window win;
            QString error;
            QVERIFY2(win.w.openModel(fixture(QStringLiteral("marian-spm-tiny")), &error), qPrintable(error));
            QVERIFY(settleOn(win, kSource, kTarget));
            QVERIFY(win.w.showView(QStringLiteral("alignment")));
            win.w.alignmentView()->setSettings(want);
            const SessionState st = win.w.captureSession();
            QVERIFY(st.alignment == want);
            const QJsonObject a = sessionToJson(st).value(QStringLiteral("alignment")).toObject();
            QCOMPARE(a.value(QStringLiteral("layer")).toInt(), 1);
            QCOMPARE(a.value(QStringLiteral("marks")).toArray().size(), 2);
            QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
        }
        Window win;
        QString report;
        QVERIFY2(win.w.openSession(path, &report), qPrintable(report));
        QVERIFY(win.settle());
        QVERIFY(win.w.alignmentView()->settings() == want);
        QCOMPARE(win.w.alignmentView()->layerCombo()->currentData().toInt(), 1);

        // the defaults are not written; a bad layer is one problem and the marks are still read
        QVERIFY(!sessionToJson(SessionState()).contains(QStringLiteral("alignment")));
        SessionState st;
        st.alignment = want;
        QJsonObject json = sessionToJson(st);
        QJsonObject a = json.value(QStringLiteral("alignment")).toObject();
        a.insert(QStringLiteral("layer"), QStringLiteral("top"));
        a.insert(QStringLiteral("head"), QStringLiteral("mean"));
        json.insert(QStringLiteral("alignment"), a);
        SessionState back;
        QStringList problems;
        QVERIFY(sessionFromJson(json, back, &problems));
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.front().startsWith(QStringLiteral("alignment.layer: \"top\" is not a layer")), qPrintable(problems.front()));
        QCOMPARE(back.alignment.layer, -1);
        QCOMPARE(back.alignment.head, -1);
        QVERIFY(back.alignment.marks == want.marks);
        // bad marks: one problem, nothing marked, the layer read
        a.insert(QStringLiteral("layer"), 1);
        a.insert(QStringLiteral("marks"), QJsonArray{QJsonArray{0, 1}, QJsonArray{0, 2}}); // a target word twice
        json.insert(QStringLiteral("alignment"), a);
        problems.clear();
        back = SessionState();
        QVERIFY(sessionFromJson(json, back, &problems));
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.front().startsWith(QStringLiteral("alignment.marks: ")), qPrintable(problems.front()));
        QCOMPARE(back.alignment.layer, 1);
        QVERIFY(back.alignment.marks.empty());
    }

    // ATTNVIZ_ALIGNMENT_SHOTS=DIR: the window on the Alignment tab at 1280 x 720 and 1920 x 1080, to
    // look at by eye (random weights: the picture is noise).
    void screenshots()
    {
        const QString dir = qEnvironmentVariable("ATTNVIZ_ALIGNMENT_SHOTS");
        if (dir.isEmpty())
            QSKIP("ATTNVIZ_ALIGNMENT_SHOTS not set");
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("marian-spm-tiny")), &error), qPrintable(error));
        QVERIFY(settleOn(win, kSource, kTarget));
        QVERIFY(win.w.showView(QStringLiteral("alignment")));
        AlignmentView *v = win.w.alignmentView();
        v->toggleMark(1, 3);
        v->toggleMark(3, 4);
        for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
            win.w.resize(size);
            QCoreApplication::processEvents();
            QTest::qWait(200);
            QVERIFY(win.w.grab().save(dir + QStringLiteral("/alignment-%1x%2.png").arg(size.width()).arg(size.height())));
        }
    }
};

QTEST_MAIN(TestAlignmentView)
#include "tst_alignmentview.moc"
