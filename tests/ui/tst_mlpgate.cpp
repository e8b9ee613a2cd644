// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline's gated-MLP stages (gate x·W_gateᵀ, its activation, up x·W_upᵀ, their product) on
// llama-tiny and qwen3-tiny (SiLU) and gemma3-tiny (GELU, tanh): the plotted cells against the
// trace's LayerTrace::mlpPre / mlpPreLinear and SiLU / GELU computed here, the neurons shown (the
// most active over the text, strongest first), a click's arithmetic and outlines; GPT-2 without
// them; in the window, the products asked of the core only while the Pipeline tab is shown, and a
// session on the Pipeline tab brings them back; the bundled attnviz-tiny 2 (d_ff 768). With ATTNVIZ_MLP_SHOTS=DIR it writes the window's
// grabs (1400 × 900, and presentation mode at 1280 × 720) to DIR.
#include "files/session.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/pipelineview.h"

#include "../support/modelfolders.h"

#include "bundledmodel.h"

#include "attnviz/pretrained.h"

#include <qcustomplot.h>

#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTextBrowser>
#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::ui;
using namespace attnviz::test;
using attnviz_test::fixtureModel;
using Kind = PipelineView::StageKind;

namespace {

const QString kText = QStringLiteral("The animal didn't cross the street because it was too tired.");

// The activations as PyTorch writes them (torch.nn.functional.silu, gelu(approximate="tanh")).
double silu(double g) { return g / (1.0 + std::exp(-g)); }
double geluTanh(double g) { return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))); }

// A fixture model traced by a session that keeps the MLP's products (as the window does while the
// Pipeline tab is shown).
SnapshotPtr traceKeepingMlp(const QString &model)
{
    std::unique_ptr<Model> m;
    if (!openPretrained(fixtureModel(model).toStdString(), {}, m))
        return nullptr;
    LiveSession session;
    session.setDebounceMs(0);
    session.setKeepMlp(true);
    session.setModel(std::shared_ptr<Model>(std::move(m)));
    session.setSentence(kText);
    session.requestNow();
    return waitForCurrentResult(session) ? session.snapshot() : nullptr;
}

QVector<Kind> kinds(const PipelineView &view)
{
    QVector<Kind> k;
    for (int i = 0; i < view.stageCount(); ++i)
        k << view.stageKind(i);
    return k;
}

QCPColorMap *mapOf(const PipelineView &view, Kind k)
{
    return qobject_cast<QCPColorMap *>(view.stagePlot(view.indexOf(k))->plottable(0));
}

double plotted(const PipelineView &view, Kind k, int row, int col)
{
    return double(mapOf(view, k)->data()->cell(col, row));
}

bool near(double got, double want) { return std::abs(got - want) <= 1e-5 * std::max(1.0, std::abs(want)); }

QString num(double v) { return QString::number(v, 'f', 4); }

const QVector<Kind> kMlp{Kind::MlpGate, Kind::MlpActivated, Kind::MlpUp, Kind::MlpProduct};

// The grab of the window, written to $ATTNVIZ_MLP_SHOTS/name when that is set.
void shoot(QWidget *w, const QString &name)
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_MLP_SHOTS");
    if (dir.isEmpty())
        return;
    QDir().mkpath(dir);
    QVERIFY(w->grab().save(QDir(dir).filePath(name)));
}

} // namespace

class TestMlpGate : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    void gateStagesShowTheTrace_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("layer");
        QTest::addColumn<bool>("silu");
        QTest::addColumn<int>("dff");
        QTest::addRow("llama-tiny L1") << "llama-tiny" << 1 << true << 96;
        QTest::addRow("qwen3-tiny L0") << "qwen3-tiny" << 0 << true << 24;
        QTest::addRow("gemma3-tiny L2") << "gemma3-tiny" << 2 << false << 36;
    }
    void gateStagesShowTheTrace()
    {
        QFETCH(QString, model);
        QFETCH(int, layer);
        QFETCH(bool, silu);
        QFETCH(int, dff);
        const SnapshotPtr s = traceKeepingMlp(model);
        QVERIFY(s && s->hasResult());
        const LayerTrace<float> &lt = s->trace->layers[size_t(layer)];
        QCOMPARE(int(lt.mlpPre.cols()), dff);
        QCOMPARE(int(lt.mlpPre.rows()), s->tq());
        QCOMPARE(lt.mlpPreLinear.rows(), lt.mlpPre.rows());
        QCOMPARE(lt.mlpPreLinear.cols(), lt.mlpPre.cols());
        PipelineView view;
        view.resize(1400, 900);
        view.setSnapshot(s);
        view.setSelection(layer, 1, 0);
        // after the attention's stages, the MLP's four
        const QVector<Kind> k = kinds(view);
        QCOMPARE(k.mid(k.size() - 5), (QVector<Kind>{Kind::Output, Kind::MlpGate, Kind::MlpActivated, Kind::MlpUp, Kind::MlpProduct}));
        const auto act = [silu](double g) { return silu ? ::silu(g) : geluTanh(g); };

        // the neurons shown: the 16 most active over the text (largest |act(gate) · up|), strongest first
        std::vector<double> peak(size_t(dff), 0.0);
        for (int n = 0; n < dff; ++n)
            for (int i = 0; i < s->tq(); ++i)
                peak[size_t(n)] = std::max(peak[size_t(n)], std::abs(act(lt.mlpPre(i, n)) * lt.mlpPreLinear(i, n)));
        const std::vector<int> neurons = view.shownNeurons();
        QCOMPARE(int(neurons.size()), PipelineView::kMaxShownNeurons);
        QCOMPARE(PipelineView::kMaxShownNeurons, 16);
        double weakestShown = std::numeric_limits<double>::infinity();
        for (size_t c = 0; c < neurons.size(); ++c) {
            if (c > 0)
                QVERIFY(peak[size_t(neurons[c - 1])] >= peak[size_t(neurons[c])]);
            weakestShown = std::min(weakestShown, peak[size_t(neurons[c])]);
        }
        for (int n = 0; n < dff; ++n)
            if (std::find(neurons.begin(), neurons.end(), n) == neurons.end())
                QVERIFY2(peak[size_t(n)] <= weakestShown, qPrintable(QStringLiteral("neuron %1 left out").arg(n)));

        // every plotted cell against the trace, and the activation computed here
        for (Kind kind : kMlp) {
            QCOMPARE(mapOf(view, kind)->data()->keySize(), int(neurons.size()));
            QCOMPARE(mapOf(view, kind)->data()->valueSize(), s->tq());
            QVERIFY(view.stageMessage(view.indexOf(kind)).isEmpty());
        }
        for (int i = 0; i < s->tq(); ++i)
            for (size_t c = 0; c < neurons.size(); ++c) {
                const int n = neurons[c];
                const double g = lt.mlpPre(i, n), u = lt.mlpPreLinear(i, n);
                QCOMPARE(plotted(view, Kind::MlpGate, i, int(c)), g);
                QCOMPARE(plotted(view, Kind::MlpUp, i, int(c)), u);
                QVERIFY2(near(plotted(view, Kind::MlpActivated, i, int(c)), act(g)),
                         qPrintable(QStringLiteral("act %1 %2").arg(plotted(view, Kind::MlpActivated, i, int(c))).arg(act(g))));
                QVERIFY2(near(plotted(view, Kind::MlpProduct, i, int(c)), act(g) * u),
                         qPrintable(QStringLiteral("product %1 %2").arg(plotted(view, Kind::MlpProduct, i, int(c))).arg(act(g) * u)));
            }
        // a known cell, by hand: token 3, the strongest neuron
        const int n0 = neurons[0];
        QCOMPARE(plotted(view, Kind::MlpGate, 3, 0), double(lt.mlpPre(3, n0)));
        QVERIFY(near(plotted(view, Kind::MlpProduct, 3, 0), act(lt.mlpPre(3, n0)) * lt.mlpPreLinear(3, n0)));

        // names, formulas, captions, axes
        const QString a = silu ? QStringLiteral("SiLU") : QStringLiteral("GELU");
        QCOMPARE(view.stageName(view.indexOf(Kind::MlpGate)), QStringLiteral("MLP gate"));
        QCOMPARE(view.stageName(view.indexOf(Kind::MlpActivated)), QStringLiteral("Gate after ") + a);
        QCOMPARE(view.stageName(view.indexOf(Kind::MlpUp)), QStringLiteral("MLP up"));
        QCOMPARE(view.stageName(view.indexOf(Kind::MlpProduct)), QStringLiteral("Gate times up"));
        const QString shape = QStringLiteral("   %1 × %2  (16 of %2 neurons shown)").arg(s->tq()).arg(dff);
        QCOMPARE(view.stageTitle(view.indexOf(Kind::MlpGate)), QStringLiteral("G = RMSNorm₂(X′)·W_gateᵀ") + shape);
        QCOMPARE(view.stageTitle(view.indexOf(Kind::MlpActivated)),
                 (silu ? QStringLiteral("A = SiLU(G) = G·σ(G)") : QStringLiteral("A = GELU_tanh(G)")) + shape);
        QCOMPARE(view.stageTitle(view.indexOf(Kind::MlpUp)), QStringLiteral("U = RMSNorm₂(X′)·W_upᵀ") + shape);
        QCOMPARE(view.stageTitle(view.indexOf(Kind::MlpProduct)), QStringLiteral("H = %1(G) ⊙ U").arg(a) + shape);
        QVERIFY2(view.stageCaption(view.indexOf(Kind::MlpGate)).contains(QStringLiteral("the 16 most active of %1 neurons").arg(dff)),
                 qPrintable(view.stageCaption(view.indexOf(Kind::MlpGate))));
        QVERIFY(view.stageCaption(view.indexOf(Kind::MlpProduct)).contains(QStringLiteral("d_model = %1").arg(s->modelInfo.dModel)));
        QCustomPlot *gatePlot = view.stagePlot(view.indexOf(Kind::MlpGate));
        settlePlot(gatePlot);
        QCOMPARE(gatePlot->xAxis->label(), QStringLiteral("neuron"));
        QCOMPARE(gatePlot->yAxis->label(), QStringLiteral("token"));
        // the neuron's index under its column
        auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(gatePlot->xAxis->ticker());
        QVERIFY(ticker);
        QCOMPARE(ticker->ticks().value(0.0), QString::number(n0));

        // a click on the product: its arithmetic with the trace's numbers, and where it came from
        const int i = 4, c = 2, n = neurons[size_t(c)];
        const double g = lt.mlpPre(i, n), u = lt.mlpPreLinear(i, n);
        QVERIFY(view.explainCell(view.indexOf(Kind::MlpProduct), i, c));
        const QString text = view.explanation();
        QVERIFY2(text.contains(QStringLiteral("H[%1, %2] = %3: token %1").arg(i).arg(n).arg(num(act(g) * u))), qPrintable(text));
        QVERIFY2(text.contains(num(g)) && text.contains(num(u)) && text.contains(num(act(g))), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("number 3 of the 16 most active")), qPrintable(text));
        for (Kind o : {Kind::MlpGate, Kind::MlpActivated, Kind::MlpUp}) {
            const QVector<QRect> hl = view.highlights(view.indexOf(o));
            QCOMPARE(hl.size(), 1);
            QCOMPARE(hl.front(), QRect(c, i, 1, 1));
        }
        // a click on the gate: SiLU / GELU written out
        QVERIFY(view.explainCell(view.indexOf(Kind::MlpGate), i, c));
        QVERIFY2(view.explanation().contains(QStringLiteral("G[%1, %2] = %3").arg(i).arg(n).arg(num(g))), qPrintable(view.explanation()));
        QVERIFY2(view.explanation().contains(silu ? QStringLiteral("SiLU(g) = g / (1 + e^(−g))") : QStringLiteral("GELU_tanh(g) = 0.5·g·")),
                 qPrintable(view.explanation()));
        QCOMPARE(view.highlights(view.indexOf(Kind::Output)).size(), 1); // the row the MLP reads
        // a click on the attention's output: the MLP's rows of that token
        QVERIFY(view.explainCell(view.indexOf(Kind::Output), i, 0));
        QCOMPARE(view.highlights(view.indexOf(Kind::MlpGate)), (QVector<QRect>{QRect(QPoint(0, i), QPoint(15, i))}));
    }

    // A trace that kept no products: the stages are listed and say why they are empty.
    void withoutProductsTheStagesSaySo()
    {
        const SnapshotPtr s = traceFixtureModel(QStringLiteral("llama-tiny"), kText);
        QVERIFY(s && s->hasResult());
        QCOMPARE(s->trace->layers.front().mlpPre.size(), Eigen::Index(0));
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        QVERIFY(view.indexOf(Kind::MlpGate) > view.indexOf(Kind::Output));
        QVERIFY(view.shownNeurons().empty());
        for (Kind k : kMlp)
            QVERIFY2(view.stageMessage(view.indexOf(k)).contains(QStringLiteral("while the Pipeline tab is shown")),
                     qPrintable(view.stageMessage(view.indexOf(k))));
    }

    // GPT-2's MLP has no gate: no MLP stages, and nothing kept though asked for.
    void gpt2HasNoGate()
    {
        const SnapshotPtr s = traceKeepingMlp(QStringLiteral("gpt2-tiny"));
        QVERIFY(s && s->hasResult());
        QVERIFY(!s->modelInfo.architecture.gatedMlp);
        for (const LayerTrace<float> &lt : s->trace->layers)
            QCOMPARE(lt.mlpPre.size(), Eigen::Index(0));
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        for (Kind k : kMlp)
            QCOMPARE(view.indexOf(k), -1);
        QCOMPARE(view.stageKind(view.stageCount() - 1), Kind::Output);
    }

    // In the window: the products are asked of the core while the Pipeline tab is shown, not before
    // and not after; GPT-2 is never asked for them. The stages then show the trace's numbers.
    void windowAsksOnlyWhileShown()
    {
        PromptedWindow win;
        QString error;
        QVERIFY2(win.w.openModel(fixtureModel(QStringLiteral("llama-tiny")), &error), qPrintable(error));
        QVERIFY(win.w.showView(QStringLiteral("weights")));
        SnapshotPtr s = win.show(kText);
        QVERIFY(s);
        QVERIFY(!win.w.session()->keepMlp());
        QCOMPARE(s->trace->layers.front().mlpPre.size(), Eigen::Index(0));

        // the Pipeline shown: a trace with the products follows by itself
        const quint64 before = shownGeneration(*win.w.session());
        QVERIFY(win.w.showView(QStringLiteral("pipeline")));
        QVERIFY(win.w.session()->keepMlp());
        s = waitForSnapshot(*win.w.session(), before, [](const ComputeSnapshot &x) {
            return x.hasResult() && x.trace->layers.front().mlpPre.size() > 0;
        }, 30000);
        QVERIFY(s);
        for (const LayerTrace<float> &lt : s->trace->layers) {
            QCOMPARE(int(lt.mlpPre.rows()), s->tq());
            QCOMPARE(int(lt.mlpPre.cols()), 96);
            QCOMPARE(int(lt.mlpPreLinear.cols()), 96);
        }
        PipelineView *pipe = win.w.pipelineView();
        QTRY_VERIFY(pipe->shownNeurons().size() == 16);
        const int layer = s->layerIndex(win.w.session()->selectedLayer());
        const LayerTrace<float> &lt = s->trace->layers[size_t(layer)];
        const int n = pipe->shownNeurons()[0];
        QTRY_COMPARE(plotted(*pipe, Kind::MlpGate, 2, 0), double(lt.mlpPre(2, n)));
        QVERIFY(near(plotted(*pipe, Kind::MlpProduct, 2, 0), silu(lt.mlpPre(2, n)) * lt.mlpPreLinear(2, n)));
        // the figure export names the stage after it
        QCOMPARE(pipe->stageName(pipe->indexOf(Kind::MlpGate)).toLower().replace(QLatin1Char(' '), QLatin1Char('-')),
                 QStringLiteral("mlp-gate"));
        QVERIFY(pipe->stageFigureTitle(pipe->indexOf(Kind::MlpGate)).startsWith(QStringLiteral("%1. MLP gate — ").arg(pipe->indexOf(Kind::MlpGate) + 1)));


        // another tab: asked no more, and the next trace leaves them out
        QVERIFY(win.w.showView(QStringLiteral("weights")));
        QVERIFY(!win.w.session()->keepMlp());
        s = win.show(kText + QStringLiteral(" Then it slept."));
        QVERIFY(s);
        QCOMPARE(s->trace->layers.front().mlpPre.size(), Eigen::Index(0));

        // GPT-2 on the Pipeline: nothing to keep, no MLP stages
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), &error));
        QVERIFY(win.w.showView(QStringLiteral("pipeline")));
        s = win.show(kText);
        QVERIFY(s);
        QVERIFY(!s->modelInfo.architecture.gatedMlp);
        QCOMPARE(s->trace->layers.front().mlpPre.size(), Eigen::Index(0));
        QTRY_COMPARE(pipe->indexOf(Kind::MlpGate), -1);
    }

    // The bundled attnviz-tiny 2 (a Llama, d_ff 768): 16 of its neurons, legible, in the window and
    // presenting on a 1280 × 720 screen (the grabs the README's screenshot comes from).
    void bundledModelOnThePipeline()
    {
        PromptedWindow win;
        QString error;
        QVERIFY2(win.w.openModel(kBundledModelArg, &error), qPrintable(error));
        QVERIFY(win.w.showView(QStringLiteral("pipeline")));
        win.w.session()->setSelectedLayer(2);
        const QString text = QStringLiteral("The cat sat on the mat. The cat sat on the mat.");
        const quint64 before = shownGeneration(*win.w.session());
        win.w.setSentence(text);
        const SnapshotPtr s = waitForSnapshot(*win.w.session(), before, [&](const ComputeSnapshot &x) {
            return x.sentence == text && x.hasResult() && x.trace->layers.front().mlpPre.size() > 0;
        }, 30000);
        QVERIFY(s);
        PipelineView *pipe = win.w.pipelineView();
        QTRY_COMPARE(int(pipe->shownNeurons().size()), 16);
        const LayerTrace<float> &lt = s->trace->layers[2];
        QCOMPARE(int(lt.mlpPre.cols()), 768);
        const int i = 7, n = pipe->shownNeurons()[4];
        QTRY_COMPARE(plotted(*pipe, Kind::MlpGate, i, 4), double(lt.mlpPre(i, n)));
        QVERIFY(near(plotted(*pipe, Kind::MlpProduct, i, 4), silu(lt.mlpPre(i, n)) * lt.mlpPreLinear(i, n)));
        QVERIFY(pipe->stageTitle(pipe->indexOf(Kind::MlpGate)).endsWith(QStringLiteral("(16 of 768 neurons shown)")));

        win.w.resize(1600, 1000);
        QTest::qWait(100);
        QVERIFY(pipe->focusCell(pipe->indexOf(Kind::MlpGate), i, 4));
        QTest::qWait(300);
        // every neuron labelled by its index, no position in front of it
        QCustomPlot *plot = pipe->stagePlot(pipe->indexOf(Kind::MlpGate));
        settlePlot(plot);
        const QMap<double, QString> ticks = qSharedPointerDynamicCast<QCPAxisTickerText>(plot->xAxis->ticker())->ticks();
        for (auto t = ticks.begin(); t != ticks.end(); ++t)
            QCOMPARE(t.value(), QString::number(pipe->shownNeurons()[size_t(t.key())]));
        shoot(&win.w, QStringLiteral("pipeline-mlp-gate.png"));
        // presentation mode on a 1280 × 720 screen
        win.w.setPresentationMode(true);
        win.w.setWindowState(Qt::WindowNoState);
        win.w.setGeometry(QRect(0, 0, 1280, 720));
        QTest::qWait(200);
        QVERIFY(pipe->focusCell(pipe->indexOf(Kind::MlpProduct), i, 4));
        QTest::qWait(300);
        settlePlot(pipe->stagePlot(pipe->indexOf(Kind::MlpProduct)));
        QVERIFY(QFontInfo(pipe->stagePlot(pipe->indexOf(Kind::MlpProduct))->xAxis->tickLabelFont()).pixelSize() >= 18);
        shoot(&win.w, QStringLiteral("pipeline-mlp-gate-presentation-1280x720.png"));
        win.w.setPresentationMode(false);
    }

    // A session saved on the Pipeline tab with a gated model opens with the MLP stages filled.
    void sessionOnThePipeline()
    {
        SessionState saved;
        {
            PromptedWindow win;
            QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("qwen3-tiny")), nullptr));
            QVERIFY(win.w.showView(QStringLiteral("pipeline")));
            QVERIFY(win.show(kText));
            saved = win.w.captureSession();
        }
        QCOMPARE(saved.tab, QStringLiteral("pipeline"));
        PromptedWindow win;
        QStringList problems;
        win.w.applySession(saved, &problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QCOMPARE(win.w.currentViewId(), QStringLiteral("pipeline"));
        QVERIFY(win.w.session()->keepMlp());
        const SnapshotPtr s = waitForSnapshot(*win.w.session(), 0, [](const ComputeSnapshot &x) {
            return x.hasResult() && x.trace->layers.front().mlpPre.size() > 0;
        }, 30000);
        QVERIFY(s);
        PipelineView *pipe = win.w.pipelineView();
        QTRY_COMPARE(int(pipe->shownNeurons().size()), 16);
        const LayerTrace<float> &lt = s->trace->layers[size_t(s->layerIndex(win.w.session()->selectedLayer()))];
        QTRY_COMPARE(plotted(*pipe, Kind::MlpUp, 1, 3), double(lt.mlpPreLinear(1, pipe->shownNeurons()[3])));
    }
};

QTEST_MAIN(TestMlpGate)
#include "tst_mlpgate.moc"
