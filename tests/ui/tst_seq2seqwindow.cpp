// SPDX-License-Identifier: GPL-3.0-or-later
// Encoder-decoder models in the real window (offscreen): the tiny T5, BART and Marian fixture
// folders and the T5 GGUF files opened, the Target field and the Attention selector shown only for them, the heatmap's
// matrix and axis labels for Encoder, Decoder and Cross read back against the core's own trace of
// the same source and target (exact), Lines with the target on one side and the source on the
// other, the Pipeline's stages of the selected attention (T5's position bias among them) against the
// core's float32 and float64 traces, an empty target generated as the core's greedy generate() does, the views that cannot show
// such a trace yet saying so in one line, norm-weighted attention of the selected attention, and a
// session's target and selector read back; the beams beside Generate (the kept beam's target and
// cross-attention, as generateTarget gives them) and a session's beams; llama.cpp's t5encoder file as
// an encoder-only model.
#include "testpaths.h"
#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "controls/tokenchipsview.h"
#include "files/figureexport.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/dlaview.h"
#include "views/heatmapview.h"
#include "views/linesview.h"
#include "views/logitlensview.h"
#include "views/pipelineview.h"
#include "views/pipelinestages.h"
#include "views/predictionsview.h"
#include "window/modelloader.h"
#include "window/viewrouter.h"

#include "attnviz/encoderdecoder.h"
#include "attnviz/reads.h"
#include "attnviz/seq2seqreads.h"
#include "bundledmodel.h"
#include "qcustomplot.h"

#include <QAction>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QString fixture(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + name; }

using Window = test::PromptedWindow;

const QString kSource = QStringLiteral("the 3rd of March, 1998");
const QString kTarget = QStringLiteral("1998-03-03");

QStringList displays(const std::vector<TraceToken> &tokens)
{
    QStringList out;
    for (const TraceToken &t : tokens)
        out << QString::fromStdString(t.display);
    return out;
}

QStringList chipTexts(const TokenChipsView *chips)
{
    QStringList out;
    for (int i = 0; i < chips->chipCount(); ++i)
        out << chips->chipText(i);
    return out;
}

// Every text a widget shows: its labels', its plots' titles, texts and axis labels.
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
        for (QCPAxisRect *r : p->axisRects())
            for (QCPAxis *a : r->axes())
                out << a->label();
    }
    return out.join(QLatin1Char('\n'));
}

// Waits until the window shows a result for this source and target.
SnapshotPtr settleOn(Window &win, const QString &source, const QString &target)
{
    win.w.inputPanel()->targetEdit()->setPlainText(target);
    const quint64 g = test::shownGeneration(*win.w.session());
    win.w.setSentence(source);
    win.w.session()->requestNow();
    return test::waitForSnapshot(
        *win.w.session(), g,
        [&](const ComputeSnapshot &s) { return s.sentence == source && s.hasResult() && (target.isEmpty() ? s.targetGenerated : s.target == target); },
        30000);
}

// ATTNVIZ_SEQ2SEQ_SHOTS=DIR: the window as it is, grabbed to DIR/name.png (to look at by eye).
void shoot(Window &win, const QString &name)
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_SEQ2SEQ_SHOTS");
    if (dir.isEmpty())
        return;
    QCoreApplication::processEvents();
    QTest::qWait(100);
    win.w.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
}

} // namespace

class TestSeq2SeqWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    void eachAttentionOnTheHeatmap_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("t5") << QStringLiteral("t5-tiny");
        QTest::newRow("t5 v1.1") << QStringLiteral("t5-v1_1-tiny");
        QTest::newRow("bart") << QStringLiteral("bart-tiny");
        QTest::newRow("marian") << QStringLiteral("marian-spm-tiny");
        // llama.cpp's T5 files (tests/fixtures/gguf/make_gguf_t5.py), opened as File > Open model opens them
        QTest::newRow("t5 gguf") << QStringLiteral("../gguf/t5.gguf");
        QTest::newRow("t5 v1.1 gguf") << QStringLiteral("../gguf/t5-v1_1.gguf");
    }

    // The heatmap draws the core trace's encoder, decoder and cross weights of the chosen layer and
    // head, exactly, with the source's or the target's tokens on each axis.
    void eachAttentionOnTheHeatmap()
    {
        QFETCH(QString, folder);
        Window win;
        auto *combo = win.w.controls()->findChild<QComboBox *>(QStringLiteral("attentionKindCombo"));
        QVERIFY(combo);
        QVERIFY(!combo->isVisibleTo(&win.w)); // the word vectors: no selector, no Target
        QVERIFY(!win.w.inputPanel()->targetEdit()->isVisibleTo(&win.w));
        QString error;
        QVERIFY2(win.w.openModel(fixture(folder), &error), qPrintable(error));
        QVERIFY(win.messages.isEmpty());
        QVERIFY(combo->isVisibleTo(&win.w));
        QVERIFY(win.w.inputPanel()->targetEdit()->isVisibleTo(&win.w));
        QVERIFY(!win.w.keySentenceEdit()->isVisibleTo(&win.w));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        QVERIFY(s->encoderDecoder && !s->targetGenerated);

        std::shared_ptr<Model> model;
        QVERIFY(ModelLoader::load(fixture(folder), model, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        req.target = kTarget.toStdString();
        Trace<float> want;
        QVERIFY(model->trace(req, want).ok());
        // the chips: the source under the sentence, the decoder's tokens under the target
        QCOMPARE(chipTexts(win.w.queryChips()), displays(want.seq2seq.sourceTokens));
        QCOMPARE(chipTexts(win.w.inputPanel()->targetChips()), displays(want.tokens));

        win.w.showView(QStringLiteral("weights"));
        for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Self, AttentionKind::Cross}) {
            combo->setCurrentIndex(combo->findData(int(kind)));
            QCOMPARE(win.w.session()->attentionKind(), kind);
            const auto &layers = want.attentions(kind);
            const QStringList rows = displays(want.queriesOf(kind)), cols = displays(want.keysOf(kind));
            for (int l = 0; l < int(layers.size()); ++l)
                for (int h = 0; h < layers[size_t(l)].attention.numHeads; ++h) {
                    win.w.session()->setSelectedLayer(l);
                    win.w.session()->setSelectedHead(h);
                    QCoreApplication::processEvents();
                    QCOMPARE(win.w.heatmapView()->queryLabels(), rows);
                    QCOMPARE(win.w.heatmapView()->keyLabels(), cols);
                    const WeightMatrix<float> &m = layers[size_t(l)].attention.batch.front().weights[size_t(h)];
                    QCOMPARE(int(m.rows()), int(rows.size()));
                    QCOMPARE(int(m.cols()), int(cols.size()));
                    for (int i = 0; i < m.rows(); ++i)
                        for (int j = 0; j < m.cols(); ++j)
                            if (win.w.heatmapView()->cellValue(i, j) != double(m(i, j)))
                                QFAIL(qPrintable(QStringLiteral("%1 layer %2 head %3 (%4, %5): %6, the core's %7")
                                                     .arg(attentionKindName(kind))
                                                     .arg(l)
                                                     .arg(h)
                                                     .arg(i)
                                                     .arg(j)
                                                     .arg(win.w.heatmapView()->cellValue(i, j))
                                                     .arg(double(m(i, j)))));
                }
            QVERIFY2(win.w.statusText().contains(attentionKindDescription(kind)), qPrintable(win.w.statusText()));
            shoot(win, QFileInfo(folder).fileName() + QLatin1Char('-') + attentionKindName(kind).toLower());
        }
        // Lines: cross-attention joins the target's tokens (one side) to the source's (the other)
        combo->setCurrentIndex(combo->findData(int(AttentionKind::Cross)));
        win.w.session()->setSelectedLayer(0);
        win.w.session()->setSelectedHead(1);
        QVERIFY(win.w.showView(QStringLiteral("lines")));
        QCoreApplication::processEvents();
        const std::vector<const WeightMatrix<float> *> shown = win.w.linesView()->shownMatrices();
        QCOMPARE(int(shown.size()), 1);
        QCOMPARE(shown.front(), &s->crossView->trace->layers[0].attention.batch.front().weights[1]);
        QCOMPARE(int(shown.front()->rows()), int(want.tokens.size()));
        QCOMPARE(int(shown.front()->cols()), int(want.seq2seq.sourceTokens.size()));
        QVERIFY(!win.w.linesView()->tokenRect(LinesView::Side::Key, int(want.seq2seq.sourceTokens.size()) - 1).isEmpty());
        QVERIFY(win.w.linesView()->tokenRect(LinesView::Side::Query, int(want.tokens.size())).isEmpty());
        shoot(win, QFileInfo(folder).fileName() + QStringLiteral("-lines-cross"));
    }

    // An empty target: generated greedily from the source with the folder's settings, shown under the
    // Target field, and traced; Generate empties a typed target.
    void emptyTargetGenerates()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("t5-tiny")), &error), qPrintable(error));
        SnapshotPtr s = settleOn(win, kSource, QString());
        QVERIFY(s && s->targetGenerated);
        std::shared_ptr<Model> model;
        QVERIFY(ModelLoader::load(fixture(QStringLiteral("t5-tiny")), model, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        Seq2SeqGenerateOptions opt;
        opt.beams = 1;
        Seq2SeqGeneration g;
        QVERIFY(generateTarget(*model, req, opt, g).ok());
        QVERIFY(!g.ids.empty());
        std::vector<int> traced;
        for (size_t i = 1; i < s->trace->tokens.size(); ++i) // after the decoder's start token
            traced.push_back(s->trace->tokens[i].id);
        QCOMPARE(traced, g.ids);
        QCOMPARE(s->target, QString::fromStdString(g.text));
        QCOMPARE(win.w.inputPanel()->generatedTarget(), QString::fromStdString(g.text));
        auto *note = win.w.inputPanel()->findChild<QLabel *>(QStringLiteral("targetNote"));
        QVERIFY(note && note->isVisibleTo(&win.w));
        QVERIFY(note->text().contains(QStringLiteral("Generated (greedy)")));
        shoot(win, QStringLiteral("t5-tiny-generated"));
        // the predictions dock: the decoder's next tokens at its last position, as the core computed
        std::vector<int> top;
        for (const TokenProb &p : s->trace->predictions.next.back())
            top.push_back(p.id);
        QVERIFY(!top.empty());
        QCoreApplication::processEvents();
        PredictionsView *pv = win.w.predictionsView();
        QVERIFY2(pv->message().isEmpty(), qPrintable(pv->message()));
        QCOMPARE(int(pv->groups().size()), 1);
        std::vector<int> shownTop;
        for (const PredictionsView::Entry &e : pv->groups().front().entries)
            shownTop.push_back(e.id);
        QCOMPARE(shownTop, top);
        QCOMPARE(pv->groups().front().position, int(s->trace->tokens.size()) - 1);
        // a position before the last: the decoder's next tokens there, as the core computed them
        pv->setHoveredPosition(1);
        QCOMPARE(pv->groups().front().position, 1);
        QCOMPARE(pv->groups().front().entries.front().id, s->trace->predictions.next[1].front().id);

        // typed, then Generate: generated again
        s = settleOn(win, kSource, kTarget);
        QVERIFY(s && !s->targetGenerated);
        QVERIFY(!note->isVisibleTo(&win.w));
        const quint64 gen = test::shownGeneration(*win.w.session());
        win.w.inputPanel()->generateButton()->click();
        QVERIFY(win.w.inputPanel()->targetEdit()->toPlainText().isEmpty());
        s = test::waitForSnapshot(*win.w.session(), gen, [](const ComputeSnapshot &x) { return x.hasResult() && x.targetGenerated; }, 30000);
        QVERIFY(s);
        QCOMPARE(s->target, QString::fromStdString(g.text));
    }

    // The beams beside Generate: the folder's num_beams when the model opens, then an empty target
    // generated with the beams chosen is generateTarget's kept beam with that many beams, its
    // cross-attention rows (the Cross selection's) those of the beam's own steps; a session keeps it.
    void beamsGenerate_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("beams");
        for (const char *m : {"t5-tiny", "bart-tiny", "marian-spm-tiny"}) // tiny folders with a tokenizer
            for (int b : {2, 3, 4})
                QTest::addRow("%s %d beams", m, b) << QString::fromLatin1(m) << b;
    }

    void beamsGenerate()
    {
        QFETCH(QString, model);
        QFETCH(int, beams);
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(model), &error), qPrintable(error));
        std::shared_ptr<Model> m;
        QVERIFY(ModelLoader::load(fixture(model), m, &error));
        Seq2SeqGenerationSettings folder;
        QVERIFY(generationSettings(*m, folder).ok());
        auto *spin = win.w.inputPanel()->findChild<QSpinBox *>(QStringLiteral("beamsSpin"));
        QVERIFY(spin && spin->isVisibleTo(&win.w));
        QCOMPARE(spin->value(), std::clamp(folder.numBeams, 1, 4));
        spin->setValue(beams);
        QCOMPARE(win.w.session()->beams(), beams);
        win.w.inputPanel()->targetEdit()->clear();
        const quint64 gen = test::shownGeneration(*win.w.session());
        win.w.setSentence(kSource);
        win.w.session()->requestNow();
        SnapshotPtr s = test::waitForSnapshot(
            *win.w.session(), gen,
            [&](const ComputeSnapshot &x) { return x.sentence == kSource && x.hasResult() && x.targetGenerated && x.targetBeams == beams; },
            30000);
        QVERIFY(s);
        TraceRequest req;
        req.text = kSource.toStdString();
        Seq2SeqGenerateOptions opt;
        opt.beams = beams;
        Seq2SeqGeneration g;
        const Status st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY(!g.ids.empty());
        std::vector<int> traced;
        for (size_t i = 1; i < s->trace->tokens.size(); ++i) // after the decoder's start token
            traced.push_back(s->trace->tokens[i].id);
        QCOMPARE(traced, g.ids);
        QCOMPARE(s->target, QString::fromStdString(g.text));
        auto *note = win.w.inputPanel()->findChild<QLabel *>(QStringLiteral("targetNote"));
        QVERIFY(note && note->isVisibleTo(&win.w));
        QVERIFY2(note->text().contains(QStringLiteral("the kept beam of %1").arg(beams)), qPrintable(note->text()));
        // the cross-attention the window shows at each generated position: the kept beam's row of that step
        const int H = m->info().heads;
        double worst = 0;
        for (size_t step = 0; step < g.ids.size(); ++step)
            for (int l = 0; l < m->info().layers; ++l)
                for (int h = 0; h < H; ++h)
                    worst = std::max(worst, (g.cross[step].row(l * H + h) - s->trace->seq2seq.cross[size_t(l)]
                                                                              .attention.batch[0]
                                                                              .weights[size_t(h)]
                                                                              .row(Eigen::Index(step))
                                                                              .cast<double>())
                                                .cwiseAbs()
                                                .maxCoeff());
        QVERIFY2(worst <= 1e-5, qPrintable(QString::number(worst)));
        if (model == QLatin1String("bart-tiny") && beams == 3)
            shoot(win, QStringLiteral("bart-tiny-3-beams"));
        // a session keeps the beams, the folder's default read back over when it opens the model
        const SessionState state = win.w.captureSession();
        QCOMPARE(state.beams, beams);
        QCOMPARE(sessionToJson(state).value(QStringLiteral("input")).toObject().value(QStringLiteral("beams")).toInt(), beams);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("beams.attnviz"));
        QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
        Window again;
        QString report;
        QVERIFY2(again.w.openSession(path, &report), qPrintable(report));
        QCOMPARE(again.w.inputPanel()->beamsSpin()->value(), beams);
        QCOMPARE(again.w.session()->beams(), beams);
    }

    // The views that cannot show an encoder-decoder trace yet: one line saying so, never a blank.
    void pipelineOfEachAttention_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("t5") << QStringLiteral("t5-tiny");
        QTest::newRow("t5 v1.1") << QStringLiteral("t5-v1_1-tiny");
        QTest::newRow("bart") << QStringLiteral("bart-tiny");
        QTest::newRow("dates") << bundledModelDir(kBundledDatesArg);
    }
    // The Pipeline follows the selector: Encoder, Decoder and Cross, each layer and head. Q, K, V and
    // the weights are the core trace's own (exact; cross-attention's K and V from the encoder's
    // output); the scores the softmax reads (scaled q·k, plus T5's position bias, masked) give those
    // weights again (1e-5), and equal the float64 trace's scores (1e-5) where T5 keeps them, the
    // bias stage their difference from the scaled q·k of float64; T5 scales by nothing.
    void pipelineOfEachAttention()
    {
        QFETCH(QString, folder);
        const QString path = folder.startsWith(QLatin1Char('/')) ? folder : fixture(folder);
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(path, &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        std::shared_ptr<Model> model;
        QVERIFY(ModelLoader::load(path, model, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        req.target = kTarget.toStdString();
        req.keepScores = true;
        Trace<float> want;
        Trace<double> ref;
        QVERIFY(model->trace(req, want).ok());
        QVERIFY(model->trace(req, ref).ok());
        const Architecture &arch = model->info().architecture;
        const bool t5 = arch.positions == PositionKind::RelativeBuckets;
        QCOMPARE(t5, !folder.startsWith(QStringLiteral("bart")));

        auto *combo = win.w.controls()->findChild<QComboBox *>(QStringLiteral("attentionKindCombo"));
        QVERIFY(combo);
        QVERIFY(win.w.showView(QStringLiteral("pipeline")));
        PipelineView *view = win.w.pipelineView();
        using Kind = PipelineView::StageKind;
        auto plotted = [&](Kind k, int row, int col) {
            auto *map = qobject_cast<QCPColorMap *>(view->stagePlot(view->indexOf(k))->plottable(0));
            return double(map->data()->cell(col, row));
        };
        for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Self, AttentionKind::Cross}) {
            combo->setCurrentIndex(combo->findData(int(kind)));
            const auto &layers = want.attentions(kind);
            const auto &refLayers = ref.attentions(kind);
            const int tq = int(want.queriesOf(kind).size()), tk = int(want.keysOf(kind).size());
            for (int l = 0; l < int(layers.size()); ++l)
                for (int h = 0; h < layers[size_t(l)].attention.numHeads; ++h) {
                    win.w.session()->setSelectedLayer(l);
                    win.w.session()->setSelectedHead(h);
                    QCoreApplication::processEvents();
                    const QString where = QStringLiteral("%1 layer %2 head %3").arg(attentionKindName(kind)).arg(l).arg(h);
                    QCOMPARE(view->shownHead(), h);
                    QCOMPARE(view->indexOf(Kind::KeyInput) >= 0, kind == AttentionKind::Cross);
                    QCOMPARE(view->indexOf(Kind::PositionBias) >= 0, t5 && kind != AttentionKind::Cross);
                    QCOMPARE(view->indexOf(Kind::MlpGate), -1);
                    const SequenceResult<float> &r = layers[size_t(l)].attention.batch.front();
                    const SequenceResult<double> &rr = refLayers[size_t(l)].attention.batch.front();
                    const int dh = layers[size_t(l)].attention.dHead;
                    const double scale = layers[size_t(l)].attention.scale;
                    QCOMPARE(scale, t5 ? 1.0 : 1.0 / std::sqrt(double(dh)));
                    // Q, K, V: the trace's own head columns (K and V of cross-attention: the encoder's output projected)
                    for (int c = 0; c < std::min(dh, PipelineView::kMaxShownDims); ++c) {
                        QCOMPARE(plotted(Kind::Q, tq - 1, c), double(r.q(tq - 1, h * dh + c)));
                        QCOMPARE(plotted(Kind::K, tk - 1, c), double(r.k(tk - 1, h * dh + c)));
                        QCOMPARE(plotted(Kind::V, 0, c), double(r.v(0, h * dh + c)));
                    }
                    if (kind == AttentionKind::Cross)
                        QCOMPARE(plotted(Kind::KeyInput, tk - 1, 0), double(want.seq2seq.encoderFinal(tk - 1, 0)));
                    const WeightMatrix<float> &w = r.weights[size_t(h)];
                    for (int i = 0; i < tq; ++i) {
                        double mx = -std::numeric_limits<double>::infinity(), z = 0;
                        std::vector<double> m(size_t(tk), -std::numeric_limits<double>::infinity());
                        for (int j = 0; j < tk; ++j) {
                            QCOMPARE(plotted(Kind::Weights, i, j), double(w(i, j)));
                            const double scaled = plotted(Kind::Scaled, i, j);
                            double q64 = 0;
                            for (int c = 0; c < dh; ++c)
                                q64 += rr.q(i, h * dh + c) * rr.k(j, h * dh + c);
                            const double want64 = rr.scores[size_t(h)](i, j); // scaled q·k (+ T5's bias), before the mask
                            if (std::abs(scaled - q64 * scale) > 1e-5 * std::max(1.0, std::abs(q64 * scale)))
                                QFAIL(qPrintable(where + QStringLiteral(" scaled (%1, %2): %3, float64 %4").arg(i).arg(j).arg(scaled).arg(q64 * scale)));
                            if (t5 && kind != AttentionKind::Cross) {
                                const double b = plotted(Kind::PositionBias, i, j);
                                if (std::abs(b - (want64 - q64 * scale)) > 1e-5 * std::max(1.0, std::abs(want64)))
                                    QFAIL(qPrintable(where + QStringLiteral(" bias (%1, %2): %3, float64 %4").arg(i).arg(j).arg(b).arg(want64 - q64 * scale)));
                            }
                            const bool masked = kind == AttentionKind::Self && j > i;
                            const double sm = plotted(Kind::Masked, i, j);
                            if (masked) { // −∞, hatched and left out of the colour range
                                QVERIFY2(!std::isfinite(sm), qPrintable(where));
                                QVERIFY(r.mask.size() && r.mask(i, j));
                                continue;
                            }
                            if (std::abs(sm - want64) > 1e-5 * std::max(1.0, std::abs(want64)))
                                QFAIL(qPrintable(where + QStringLiteral(" masked (%1, %2): %3, float64 %4").arg(i).arg(j).arg(sm).arg(want64)));
                            m[size_t(j)] = sm;
                            mx = std::max(mx, sm);
                        }
                        for (double &e : m)
                            z += (e = std::exp(e - mx));
                        for (int j = 0; j < tk; ++j)
                            if (std::abs(m[size_t(j)] / z - double(w(i, j))) > 1e-5)
                                QFAIL(qPrintable(where + QStringLiteral(" softmax (%1, %2): %3, the trace's %4").arg(i).arg(j).arg(m[size_t(j)] / z).arg(double(w(i, j)))));
                    }
                }
            // a click on a score explains it with the bias (T5) and the weight it becomes
            win.w.session()->setSelectedLayer(0);
            win.w.session()->setSelectedHead(0);
            QCoreApplication::processEvents();
            QVERIFY(view->explainCell(view->indexOf(Kind::Masked), tq - 1, 0));
            QCOMPARE(view->explanation().contains(QStringLiteral("Position bias")), t5 && kind != AttentionKind::Cross);
            QVERIFY(view->explainCell(view->indexOf(Kind::Weights), tq - 1, 0));
            QVERIFY(view->explanation().contains(stageNumber(layers[0].attention.batch.front().weights[0](tq - 1, 0))));
            const QString dir = qEnvironmentVariable("ATTNVIZ_SEQ2SEQ_SHOTS");
            if (!folder.startsWith(QLatin1Char('/')) || dir.isEmpty())
                continue;
            // the score stages in view, a score clicked (the bias stage where there is one)
            win.w.resize(1800, 1200);
            const Kind focus = view->indexOf(Kind::PositionBias) >= 0 ? Kind::PositionBias : Kind::Masked;
            QVERIFY(view->focusCell(view->indexOf(focus), tq - 1, 0));
            QCoreApplication::processEvents();
            QTest::qWait(100);
            view->grab().save(dir + QStringLiteral("/p-dates-pipeline-") + attentionKindName(kind).toLower() + QStringLiteral(".png"));
            shoot(win, QStringLiteral("p-dates-window-") + attentionKindName(kind).toLower());
        }
    }

    // llama.cpp's t5encoder file (t5-tiny's encoder alone) in the window: an encoder-only model, no
    // Attention selector nor Target; the heatmap's every layer and head t5.gguf's encoder weights on
    // the same text (exact); the Pipeline's position bias stage and its scores giving those weights;
    // the Predictions dock saying why there are none.
    void t5EncoderAlone()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("../gguf/t5encoder.gguf")), &error), qPrintable(error));
        auto *combo = win.w.controls()->findChild<QComboBox *>(QStringLiteral("attentionKindCombo"));
        QVERIFY(combo && !combo->isVisibleTo(&win.w));
        QVERIFY(!win.w.inputPanel()->targetEdit()->isVisibleTo(&win.w));
        const quint64 g = test::shownGeneration(*win.w.session());
        win.w.setSentence(kSource);
        win.w.session()->requestNow();
        const SnapshotPtr s = test::waitForSnapshot(
            *win.w.session(), g, [&](const ComputeSnapshot &x) { return x.sentence == kSource && x.hasResult(); }, 30000);
        QVERIFY(s);
        QVERIFY(!s->encoderDecoder);
        QCOMPARE(s->modelInfo.family, std::string("t5encoder"));
        QCOMPARE(s->settings.scaleRule, ScaleRule::None); // the titles say "no scaling", as T5 computes
        std::shared_ptr<Model> full;
        QVERIFY(ModelLoader::load(fixture(QStringLiteral("../gguf/t5.gguf")), full, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        req.target = kTarget.toStdString();
        Trace<float> want;
        QVERIFY(full->trace(req, want).ok());
        const auto &layers = want.seq2seq.encoder;
        QCOMPARE(s->numLayers(), int(layers.size()));
        QCOMPARE(s->queryLabels, displays(want.seq2seq.sourceTokens));
        win.w.showView(QStringLiteral("weights"));
        for (int l = 0; l < int(layers.size()); ++l)
            for (int h = 0; h < layers[size_t(l)].attention.numHeads; ++h) {
                win.w.session()->setSelectedLayer(l);
                win.w.session()->setSelectedHead(h);
                QCoreApplication::processEvents();
                const WeightMatrix<float> &m = layers[size_t(l)].attention.batch.front().weights[size_t(h)];
                for (int i = 0; i < m.rows(); ++i)
                    for (int j = 0; j < m.cols(); ++j)
                        QCOMPARE(win.w.heatmapView()->cellValue(i, j), double(m(i, j)));
            }
        // the pipeline: the bias stage, the masked scores (scaled q·k + B) softmaxed to the weights
        win.w.session()->setSelectedLayer(1);
        win.w.session()->setSelectedHead(2);
        QVERIFY(win.w.showView(QStringLiteral("pipeline")));
        QCoreApplication::processEvents();
        PipelineView *view = win.w.pipelineView();
        using Kind = PipelineView::StageKind;
        QVERIFY(view->indexOf(Kind::PositionBias) >= 0);
        auto plotted = [&](Kind k, int row, int col) {
            auto *map = qobject_cast<QCPColorMap *>(view->stagePlot(view->indexOf(k))->plottable(0));
            return double(map->data()->cell(col, row));
        };
        const WeightMatrix<float> &w = layers[1].attention.batch.front().weights[2];
        for (int i = 0; i < w.rows(); ++i) {
            double mx = -std::numeric_limits<double>::infinity(), z = 0;
            std::vector<double> e(size_t(w.cols()));
            for (int j = 0; j < w.cols(); ++j) {
                QVERIFY(std::abs(plotted(Kind::Scaled, i, j) + plotted(Kind::PositionBias, i, j) - plotted(Kind::Masked, i, j)) < 1e-6);
                QVERIFY(plotted(Kind::PositionBias, i, j) != 0.0);
                mx = std::max(mx, e[size_t(j)] = plotted(Kind::Masked, i, j));
            }
            for (double &v : e)
                z += (v = std::exp(v - mx));
            for (int j = 0; j < w.cols(); ++j)
                QVERIFY(std::abs(e[size_t(j)] / z - double(w(i, j))) < 1e-5);
        }
        QVERIFY(view->stageTitle(view->indexOf(Kind::Scaled)).contains(QStringLiteral("no scaling")));
        const QString dir = qEnvironmentVariable("ATTNVIZ_SEQ2SEQ_SHOTS");
        if (!dir.isEmpty()) {
            win.w.resize(1800, 1200);
            QVERIFY(view->focusCell(view->indexOf(Kind::PositionBias), 3, 0));
            QCoreApplication::processEvents();
            QTest::qWait(100);
            view->grab().save(dir + QStringLiteral("/p-t5encoder-pipeline.png"));
        }
        // no predictions, and why
        PredictionsView *pred = win.w.predictionsView();
        QVERIFY(pred);
        QTRY_VERIFY2(pred->message().startsWith(QStringLiteral("A T5 encoder alone (t5encoder.gguf) has no decoder and no LM head")),
                     qPrintable(pred->message()));
        shoot(win, QStringLiteral("p-t5encoder-window"));
        // every tab draws it, or says in its place why not, without a crash
        for (QTabWidget *tabs : win.w.findChildren<QTabWidget *>())
            for (int i = 0; i < tabs->count(); ++i) {
                tabs->setCurrentIndex(i);
                QCoreApplication::processEvents();
                QTest::qWait(50);
                shoot(win, QStringLiteral("p-t5encoder-tab-") + QString::number(i));
            }
    }

    // An mBART folder's languages beside the target: the folder's (en_XX, and tr_TR, the code its
    // decoder_start_token_id is); a target language picked restarts the decoder at its code and a
    // source language ends the source with its; other models show no pickers.
    void mbartLanguagePickers()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("mbart-spm-tiny")), &error), qPrintable(error));
        QComboBox *src = win.w.inputPanel()->sourceLanguageCombo(), *tgt = win.w.inputPanel()->targetLanguageCombo();
        QVERIFY(src->isVisibleTo(&win.w) && tgt->isVisibleTo(&win.w));
        QCOMPARE(src->count(), 25);
        QCOMPARE(src->currentText(), QStringLiteral("en_XX"));
        QCOMPARE(tgt->currentText(), QStringLiteral("tr_TR"));
        SnapshotPtr s = settleOn(win, QStringLiteral("the program"), QStringLiteral("the free program"));
        QVERIFY(s);
        QCOMPARE(QString::fromStdString(s->trace->tokens.front().text), QStringLiteral("tr_TR"));
        QCOMPARE(QString::fromStdString(s->trace->seq2seq.sourceTokens.back().text), QStringLiteral("en_XX"));
        const quint64 g = test::shownGeneration(*win.w.session());
        src->setCurrentIndex(src->findText(QStringLiteral("fr_XX")));
        tgt->setCurrentIndex(tgt->findText(QStringLiteral("ro_RO")));
        emit tgt->activated(tgt->currentIndex());
        s = test::waitForSnapshot(
            *win.w.session(), g,
            [&](const ComputeSnapshot &x) { return x.hasResult() && x.trace->tokens.front().text == "ro_RO"; }, 30000);
        QVERIFY(s);
        QCOMPARE(QString::fromStdString(s->trace->seq2seq.sourceTokens.back().text), QStringLiteral("fr_XX"));
        QCOMPARE(s->trace->tokens.front().id, 57);
        Seq2SeqLanguages langs;
        QVERIFY(seq2seqLanguages(*win.w.session()->model(), langs).ok());
        QCOMPARE(langs.target, std::string("ro_RO"));
        shoot(win, QStringLiteral("mbart-languages"));
        // a session keeps them; a code the folder does not know is one problem, the folder's kept
        const SessionState st = win.w.captureSession();
        QCOMPARE(st.sourceLanguage, QStringLiteral("fr_XX"));
        QCOMPARE(st.targetLanguage, QStringLiteral("ro_RO"));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.attnviz")), bad = dir.filePath(QStringLiteral("bad.attnviz"));
        QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("t5-tiny")), &error), qPrintable(error));
        QVERIFY(!src->isVisibleTo(&win.w) && !tgt->isVisibleTo(&win.w));
        QVERIFY(win.w.captureSession().targetLanguage.isEmpty());
        {
            Window other;
            QString report;
            QVERIFY2(other.w.openSession(path, &report), qPrintable(report));
            QCOMPARE(other.w.inputPanel()->sourceLanguageCombo()->currentText(), QStringLiteral("fr_XX"));
            QCOMPARE(other.w.inputPanel()->targetLanguageCombo()->currentText(), QStringLiteral("ro_RO"));
            const SnapshotPtr back = other.settle();
            QVERIFY(back && back->hasResult());
            QCOMPARE(QString::fromStdString(back->trace->tokens.front().text), QStringLiteral("ro_RO"));
            QCOMPARE(QString::fromStdString(back->trace->seq2seq.sourceTokens.back().text), QStringLiteral("fr_XX"));
        }
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
        QJsonObject input = json.value(QStringLiteral("input")).toObject();
        QCOMPARE(input.value(QStringLiteral("targetLanguage")).toString(), QStringLiteral("ro_RO"));
        input.insert(QStringLiteral("targetLanguage"), QStringLiteral("xx_YY"));
        json.insert(QStringLiteral("input"), input);
        QFile b(bad);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write(QJsonDocument(json).toJson());
        b.close();
        Window third;
        QString report;
        third.w.openSession(bad, &report);
        QVERIFY2(report.contains(QStringLiteral("input.sourceLanguage, input.targetLanguage: language xx_YY: mbart-spm-tiny knows 25 "
                                                "codes")),
                 qPrintable(report));
        QCOMPARE(third.w.inputPanel()->targetLanguageCombo()->currentText(), QStringLiteral("tr_TR"));
    }

    void controlsSayTheModelsScaling_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("shown");
        QTest::addColumn<QString>("why");
        QTest::newRow("t5") << QStringLiteral("t5-tiny") << QStringLiteral("none (× 1)")
                            << QStringLiteral("t5-tiny does not divide q·k by √d_head: T5's initialisation folds that factor into W_q");
        QTest::newRow("t5 v1.1") << QStringLiteral("t5-v1_1-tiny") << QStringLiteral("none (× 1)") << QStringLiteral("does not divide");
        QTest::newRow("t5encoder") << QStringLiteral("../gguf/t5encoder.gguf") << QStringLiteral("none (× 1)")
                                   << QStringLiteral("does not divide");
        QTest::newRow("bart") << QStringLiteral("bart-tiny") << QStringLiteral("1/√d_head = 1/√4")
                              << QStringLiteral("bart-tiny divides q·k by √d_head");
        QTest::newRow("mbart") << QStringLiteral("mbart-tiny") << QStringLiteral("1/√d_head = 1/√4") << QStringLiteral("divides");
        QTest::newRow("marian") << QStringLiteral("marian-tiny") << QStringLiteral("1/√d_head = 1/√4") << QStringLiteral("divides");
    }

    // The greyed Scaling row says what the model multiplies q·k by (T5: nothing), in the combo's
    // place; the word vectors get their combo and their choice back.
    void controlsSayTheModelsScaling()
    {
        QFETCH(QString, model);
        QFETCH(QString, shown);
        QFETCH(QString, why);
        Window win;
        auto *combo = win.w.controls()->findChild<QComboBox *>(QStringLiteral("scaleCombo"));
        auto *label = win.w.controls()->findChild<QLabel *>(QStringLiteral("modelScaleLabel"));
        QVERIFY(combo && label);
        combo->setCurrentIndex(combo->findData(int(ScaleRule::InvSqrtDModel)));
        QVERIFY(combo->isVisibleTo(&win.w) && !label->isVisibleTo(&win.w));
        QString error;
        QVERIFY2(win.w.openModel(fixture(model), &error), qPrintable(error));
        QVERIFY(!combo->isVisibleTo(&win.w) && !combo->isEnabled());
        QVERIFY(label->isVisibleTo(&win.w) && !label->isEnabled());
        QCOMPARE(label->text(), shown);
        QVERIFY2(label->toolTip().contains(why), qPrintable(label->toolTip()));
        QVERIFY(!shownTexts(win.w.controls()).contains(QStringLiteral("1/√d_head")) || shown.startsWith(QStringLiteral("1/√d_head")));
        if (model == QLatin1String("t5-tiny"))
            shoot(win, QStringLiteral("p-t5-controls"));
        win.w.useWordVectors();
        QVERIFY(combo->isVisibleTo(&win.w) && combo->isEnabled() && !label->isVisibleTo(&win.w));
        QCOMPARE(win.w.controls()->settings().scaleRule, ScaleRule::InvSqrtDModel);
    }

    void otherViewsSayNotYet_data()
    {
        QTest::addColumn<QString>("view");
        for (const char *id : {"embeddings", "residual", "rollout", "compare"})
            QTest::newRow(id) << QString::fromLatin1(id);
    }
    void otherViewsSayNotYet()
    {
        QFETCH(QString, view);
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("t5-tiny")), &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        const SnapshotPtr handed = win.w.views()->snapshotFor(s, view);
        QVERIFY(handed && !handed->hasResult());
        QVERIFY(handed->message.endsWith(QStringLiteral(": not yet for encoder-decoder models")));
        // its tab shows the line (where the tab is listed for this model)
        QWidget *page = win.w.viewWidget(view);
        if (win.w.showView(view)) {
            QCoreApplication::processEvents();
            for (int i = 0; i < 20 && !shownTexts(page).contains(QStringLiteral("not yet for encoder-decoder models")); ++i)
                QTest::qWait(50);
            QVERIFY2(shownTexts(page).contains(QStringLiteral("not yet for encoder-decoder models")), qPrintable(shownTexts(page)));
            shoot(win, QStringLiteral("t5-tiny-") + view);
        }
        // the attention views get the selector's attention, predictions the decoder's
        QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("weights")), s);
        win.w.session()->setAttentionKind(AttentionKind::Cross);
        QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("grid")), s->crossView);
        QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("predictions")), s);
    }

    // The Lens and DLA tabs read the decoder, its self-attention, cross-attention and MLP told apart:
    // the lens's rows "L0 self", "L0 cross", "L0 MLP", …, every cell the core's seq2seqLens of the
    // snapshot's trace; the attribution's self- then cross-attention heads and MLPs the core's
    // seq2seqAttribute (a post-norm BART: its one line why not).
    void lensAndAttributionOfTheDecoder_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("dates") << bundledModelDir(kBundledDatesArg);
        QTest::newRow("t5") << fixture(QStringLiteral("t5-tiny"));
        QTest::newRow("t5 v1.1") << fixture(QStringLiteral("t5-v1_1-tiny"));
        QTest::newRow("bart") << fixture(QStringLiteral("bart-tiny"));
    }
    void lensAndAttributionOfTheDecoder()
    {
        QFETCH(QString, folder);
        QVERIFY(!folder.isEmpty());
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(folder, &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("lens")), s);
        QCOMPARE(win.w.views()->snapshotFor(s, QStringLiteral("dla")), s);
        const QString name = QFileInfo(folder).fileName();
        const int L = s->trace->numLayers(), P = int(s->trace->tokens.size());

        // the lens: every stage x position as the core computes it
        QVERIFY(win.w.showView(QStringLiteral("lens")));
        auto *lens = qobject_cast<LogitLensView *>(win.w.viewWidget(QStringLiteral("lens")));
        QVERIFY(lens);
        QTRY_VERIFY_WITH_TIMEOUT(lens->positionCount() == P, 10000);
        lens->completeNow();
        QTRY_VERIFY_WITH_TIMEOUT(lens->complete(), 10000);
        QCOMPARE(lens->layerCount(), 3 * L);
        QCOMPARE(lens->rowNames().size(), 3 * L);
        QCOMPARE(lens->rowNames().front(), QStringLiteral("L0 self"));
        QCOMPARE(lens->rowNames()[4], QStringLiteral("L1 cross"));
        QCOMPARE(lens->rowNames().back(), QStringLiteral("L%1 MLP").arg(L - 1));
        Seq2SeqLens core;
        QVERIFY(seq2seqLens(*s->model, *s->trace, 5, core).ok());
        const Mat<double> drawn = lens->topProbabilities();
        for (int r = 0; r < 3 * L; ++r)
            for (int p = 0; p < P; ++p) {
                QCOMPARE(lens->grid().at(r, p).top.front().id, core.at(r, p).top.front().id);
                QCOMPARE(drawn(r, p), core.at(r, p).top.front().p);
                QCOMPARE(lens->grid().at(r, p).actualRank, core.at(r, p).actualRank);
            }
        // the last row is the model's own prediction
        for (int p = 0; p < P; ++p)
            QCOMPARE(core.at(3 * L - 1, p).top.front().id, s->trace->predictions.next[size_t(p)].front().id);
        QVERIFY(lens->cellText(1, 0).startsWith(QStringLiteral("After L0 cross")));
        QVERIFY2(lens->title().startsWith(QStringLiteral("Logit lens of the decoder")), qPrintable(lens->title()));
        shoot(win, name + QStringLiteral("-lens"));

        // attribution of the selected position's predicted token
        QVERIFY(win.w.showView(QStringLiteral("dla")));
        auto *dla = qobject_cast<DlaView *>(win.w.viewWidget(QStringLiteral("dla")));
        QVERIFY(dla);
        const int pos = std::min(4, P - 1);
        win.w.session()->setSelectedQuery(pos);
        QCoreApplication::processEvents();
        QTRY_VERIFY_WITH_TIMEOUT(dla->hasAttribution() || !dla->message().isEmpty(), 10000);
        const int predicted = s->trace->predictions.next[size_t(pos)].front().id;
        Seq2SeqAttribution a;
        const Status st = seq2seqAttribute(*s->model, *s->trace, pos, predicted, a);
        if (folder.endsWith(QLatin1String("bart-tiny"))) {
            QCOMPARE(st.code, StatusCode::Unavailable);
            QVERIFY(!dla->hasAttribution());
            QCOMPARE(dla->message(), QString::fromStdString(st.message));
            shoot(win, name + QStringLiteral("-dla"));
            QVERIFY2(dla->title().contains(QStringLiteral("post-norm decoder")), qPrintable(dla->title()));
            return;
        }
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY2(dla->hasAttribution(), qPrintable(dla->message()));
        QVERIFY(dla->seq2seq());
        QCOMPARE(dla->seq2seqAttribution().position, pos);
        QCOMPARE(dla->seq2seqAttribution().target, predicted);
        const int H = a.heads;
        const Mat<double> m = dla->matrix();
        QCOMPARE(int(m.rows()), L);
        QCOMPARE(int(m.cols()), 2 * H + 1);
        for (int l = 0; l < L; ++l) {
            for (int h = 0; h < H; ++h) {
                QCOMPARE(m(l, h), a.selfHead[size_t(l * H + h)]);
                QCOMPARE(m(l, H + h), a.crossHead[size_t(l * H + h)]);
            }
            QCOMPARE(m(l, 2 * H), a.mlp[size_t(l)]);
        }
        QCOMPARE(dla->attribution().logit, a.logit);
        QVERIFY(std::abs(dla->attribution().sum() - a.logit) <= 1e-4 * std::max(1.0, std::abs(a.logit)));
        QVERIFY(dla->cellText(0, H).startsWith(QStringLiteral("Layer 0, cross-attention head 0")));
        QVERIFY2(dla->title().startsWith(QStringLiteral("Direct logit attribution of the decoder")), qPrintable(dla->title()));
        shoot(win, name + QStringLiteral("-dla"));
        // the date model: how much of each target token's logit the cross-attention heads carry (for
        // the eye; the lesson tests hold the numbers the lessons quote)
        if (folder == bundledModelDir(kBundledDatesArg))
            for (int p = 0; p + 1 < P; ++p) {
                Seq2SeqAttribution b;
                QVERIFY(seq2seqAttribute(*s->model, *s->trace, p, s->trace->tokens[size_t(p) + 1].id, b).ok());
                double self = 0, cross = 0, mlp = 0;
                for (double v : b.selfHead)
                    self += v;
                for (double v : b.crossHead)
                    cross += v;
                for (double v : b.mlp)
                    mlp += v;
                qInfo("dates, after %s -> %s: logit %.3f = input %.3f + self %.3f + cross %.3f + MLP %.3f + biases %.3f",
                      s->trace->tokens[size_t(p)].display.c_str(), b.targetDisplay.c_str(), b.logit, b.input, self, cross, mlp,
                      b.normBias + b.logitsBias);
            }
    }

    // Export writes what the selector shows: the current tab's plot, and its matrices (those of the
    // snapshot the tab was handed: the cross-attention's target rows × source columns).
    void exportsWhatTheSelectorShows()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("t5-tiny")), &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, kTarget);
        QVERIFY(s);
        win.w.session()->setAttentionKind(AttentionKind::Cross);
        win.w.session()->setSelectedLayer(1);
        win.w.session()->setSelectedHead(2);
        QVERIFY(win.w.showView(QStringLiteral("weights")));
        QCoreApplication::processEvents();
        QCOMPARE(win.w.plotFor(win.w.currentView()), win.w.heatmapView()->plot());
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("cross.png"));
        QVERIFY2(saveFigure(win.w.heatmapView()->plot(), png, FigureOptions(), &error), qPrintable(error));
        QVERIFY(QImage(png).width() > 100);
        const SnapshotPtr handed = win.w.views()->snapshotFor(s, win.w.currentViewId());
        QCOMPARE(handed, s->crossView);
        const QString csv = dir.filePath(QStringLiteral("cross.csv"));
        QVERIFY2(saveMatrices(*handed, ExportView::Weights, 1, 2, 0, csv, &error), qPrintable(error));
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
        const WeightMatrix<float> &m = s->trace->seq2seq.cross[1].attention.batch.front().weights[2];
        QCOMPARE(int(lines.size()), int(m.rows()) + 1); // a header row, then a row per target token
        QCOMPARE(int(lines.back().count(',')), int(m.cols())); // the row's label, then a column per source token
    }

    // A query, layer and head chosen on one attention stay drawable on the others (the source is
    // longer than the target, the encoder and the decoder have their own layer counts): every
    // attention view, every attention, no crash, the heatmap as tall as that attention's queries.
    void selectionAcrossAttentions()
    {
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(QStringLiteral("marian-spm-tiny")), &error), qPrintable(error));
        const SnapshotPtr s = settleOn(win, kSource, QStringLiteral("1998"));
        QVERIFY(s);
        QVERIFY(s->trace->seq2seq.sourceTokens.size() > s->trace->tokens.size());
        win.w.session()->setAttentionKind(AttentionKind::Encoder);
        win.w.session()->setSelectedLayer(s->encoderView->numLayers() - 1);
        win.w.session()->setSelectedQuery(int(s->trace->seq2seq.sourceTokens.size()) - 1);
        for (const char *id : {"weights", "grid", "lines", "headRoles"}) {
            QVERIFY(win.w.showView(QString::fromLatin1(id)));
            for (AttentionKind kind : {AttentionKind::Self, AttentionKind::Cross, AttentionKind::Encoder}) {
                win.w.session()->setAttentionKind(kind);
                QCoreApplication::processEvents();
                QVERIFY(!win.w.grab().isNull());
                if (qstrcmp(id, "weights") == 0) // the others draw only while shown: the heatmap too
                    QCOMPARE(win.w.heatmapView()->queryLabels(), displays(s->trace->queriesOf(kind)));
            }
        }
    }

    // View ▸ Norm-weighted attention on an encoder-decoder model: the attention views draw
    // a_ij ||v_j W_O^h|| of the attention the selector names (the core's valueNorms of that attention's
    // layers), and go back to the weights when it is switched off.
    void normWeightedFollowsTheSelector_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("t5") << QStringLiteral("t5-tiny");
        QTest::newRow("bart") << QStringLiteral("bart-tiny");
    }
    void normWeightedFollowsTheSelector()
    {
        QFETCH(QString, folder);
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(fixture(folder), &error), qPrintable(error));
        QVERIFY(settleOn(win, kSource, kTarget));
        auto *action = win.w.findChild<QAction *>(QStringLiteral("normWeightedAction"));
        QVERIFY(action && action->isEnabled());
        std::shared_ptr<Model> model;
        QVERIFY(ModelLoader::load(fixture(folder), model, &error));
        TraceRequest req;
        req.text = kSource.toStdString();
        req.target = kTarget.toStdString();
        Trace<float> want;
        QVERIFY(model->trace(req, want).ok());
        win.w.showView(QStringLiteral("weights"));
        win.w.views()->setNormWeighted(true);
        for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Self, AttentionKind::Cross}) {
            win.w.session()->setAttentionKind(kind);
            Trace<float> one; // that attention as a trace's layers, as valueNorms reads them
            one.tokens = want.queriesOf(kind);
            one.layers = want.attentions(kind);
            const int l = int(one.layers.size()) - 1, h = 1;
            win.w.session()->setSelectedLayer(l);
            win.w.session()->setSelectedHead(h);
            QCoreApplication::processEvents();
            QVERIFY(action->isEnabled());
            Mat<float> norms;
            QVERIFY(valueNorms(one, l, norms).ok());
            const WeightMatrix<float> &a = one.layers[size_t(l)].attention.batch.front().weights[size_t(h)];
            QCOMPARE(win.w.heatmapView()->queryLabels().size(), int(a.rows()));
            QCOMPARE(win.w.heatmapView()->keyLabels().size(), int(a.cols()));
            for (int i = 0; i < a.rows(); ++i)
                for (int j = 0; j < a.cols(); ++j) {
                    const double expect = double(a(i, j)) * double(norms(j, h));
                    if (std::abs(win.w.heatmapView()->cellValue(i, j) - expect) > 1e-5 * std::max(1.0, std::abs(expect)))
                        QFAIL(qPrintable(QStringLiteral("%1 (%2, %3): %4, want %5")
                                             .arg(attentionKindName(kind))
                                             .arg(i)
                                             .arg(j)
                                             .arg(win.w.heatmapView()->cellValue(i, j))
                                             .arg(expect)));
                }
            shoot(win, folder + QStringLiteral("-norm-") + attentionKindName(kind).toLower());
        }
        win.w.views()->setNormWeighted(false);
        QCoreApplication::processEvents();
        const WeightMatrix<float> &cross = want.seq2seq.cross.back().attention.batch.front().weights[1];
        QCOMPARE(win.w.heatmapView()->cellValue(1, 2), double(cross(1, 2)));
    }

    // A session keeps the target and the selector; one without them reads as before (the decoder's,
    // generated).
    void sessionRoundTrip()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.attnviz"));
        {
            Window win;
            QString error;
            QVERIFY2(win.w.openModel(fixture(QStringLiteral("bart-tiny")), &error), qPrintable(error));
            QVERIFY(settleOn(win, kSource, kTarget));
            win.w.session()->setAttentionKind(AttentionKind::Cross);
            const SessionState st = win.w.captureSession();
            QCOMPARE(st.target, kTarget);
            QCOMPARE(st.attention, AttentionKind::Cross);
            const QJsonObject json = sessionToJson(st);
            QCOMPARE(json.value(QStringLiteral("input")).toObject().value(QStringLiteral("target")).toString(), kTarget);
            QCOMPARE(json.value(QStringLiteral("view")).toObject().value(QStringLiteral("attention")).toString(), QStringLiteral("cross"));
            QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
        }
        Window win;
        QString report;
        QVERIFY2(win.w.openSession(path, &report), qPrintable(report));
        QCOMPARE(win.w.inputPanel()->targetEdit()->toPlainText(), kTarget);
        QCOMPARE(win.w.session()->attentionKind(), AttentionKind::Cross);
        auto *combo = win.w.controls()->findChild<QComboBox *>(QStringLiteral("attentionKindCombo"));
        QCOMPARE(combo->currentData().toInt(), int(AttentionKind::Cross));
        const SnapshotPtr s = win.settle();
        QVERIFY(s);
        QVERIFY(win.w.modelSource().endsWith(QStringLiteral("bart-tiny")));

        // the defaults are not written, and a file without them reads them
        SessionState plain;
        const QJsonObject json = sessionToJson(plain);
        QVERIFY(!json.value(QStringLiteral("input")).toObject().contains(QStringLiteral("target")));
        QVERIFY(!json.value(QStringLiteral("view")).toObject().contains(QStringLiteral("attention")));
        SessionState back;
        back.target = QStringLiteral("x");
        back.attention = AttentionKind::Encoder;
        QStringList problems;
        QJsonObject bad = json;
        QJsonObject view = bad.value(QStringLiteral("view")).toObject();
        view.insert(QStringLiteral("attention"), QStringLiteral("sideways"));
        bad.insert(QStringLiteral("view"), view);
        QVERIFY(sessionFromJson(bad, back, &problems));
        QCOMPARE(back.attention, AttentionKind::Encoder); // kept: the bad value is a problem
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.front().startsWith(QStringLiteral("view.attention: \"sideways\" is not one of")), qPrintable(problems.front()));
    }
};

QTEST_MAIN(TestSeq2SeqWindow)
#include "tst_seq2seqwindow.moc"
