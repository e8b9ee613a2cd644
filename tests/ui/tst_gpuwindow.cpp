// SPDX-License-Identifier: GPL-3.0-or-later
// A model in the window on the GPU: the Backend control set to GPU computes the model's trace on
// the GPU forward device (Qt RHI), the status bar names the device that computed it, and what the
// views read equals the CPU's within 1e-4, typing on included (the causal prefix kept on the GPU);
// Auto keeps a software rasterizer off and says so. Runs under xvfb-run (label xvfb): lavapipe or
// llvmpipe in CI; where no GPU backend starts, the status bar's reason is checked instead.
// ATTNVIZ_SCREENSHOT_DIR=DIR writes the window computed on the GPU as DIR/gpu-window.png.
#include "controls/controlpanel.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/heatmapview.h"
#include "promptedwindow.h"
#include "testsupport.h"

#include "../support/modelfolders.h"

#include "attnviz/gpubackend.h"
#include "attnviz/pretrained.h"

#include <QComboBox>
#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::ui;
using attnviz_test::fixtureModel;

namespace {

// Over the layers `a` holds (a GPU trace brings back what the shown views read).
double maxDiff(const Trace<float> &a, const Trace<float> &b)
{
    double mx = 0;
    if (a.numLayers() != b.numLayers())
        return INFINITY;
    for (int l = 0; l < a.numLayers(); ++l)
        for (int h = -1; h < a.numHeads() && a.observed.layer(l); ++h) {
            const Mat<float> &x = a.weights(l, h), &y = b.weights(l, h);
            if (x.rows() != y.rows() || x.cols() != y.cols())
                return INFINITY;
            mx = std::max(mx, double((x - y).cwiseAbs().maxCoeff()));
        }
    return mx;
}

} // namespace

class TestGpuWindow : public QObject {
    Q_OBJECT
private slots:
    void modelOnTheGpu_data();
    void modelOnTheGpu();
    void viewsBringBackWhatTheyRead();
    void failuresFallBackToTheCpu_data();
    void failuresFallBackToTheCpu();
    void autoKeepsSoftwareOff();
};

void TestGpuWindow::modelOnTheGpu_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("gpt2-tiny") << QStringLiteral("gpt2-tiny");
    QTest::newRow("llama-tiny") << QStringLiteral("llama-tiny");
    QTest::newRow("gemma3-tiny") << QStringLiteral("gemma3-tiny");
}

void TestGpuWindow::modelOnTheGpu()
{
    QFETCH(QString, model);
    // what the window's GPU backend will be: probed first, and gone before the window makes its own
    std::string name, device;
    Status started;
    {
        GpuBackend probe;
        started = probe.start();
        name = probe.name();
        device = probe.device();
    }
    test::PromptedWindow win;
    QVERIFY(win.w.openModel(fixtureModel(model), nullptr));
    const QString text = QStringLiteral("The quick brown fox jumps over the lazy dog");
    const SnapshotPtr cpu = win.show(text);
    QVERIFY(cpu);
    QCOMPARE(cpu->backendName, QStringLiteral("cpu"));
    test::setCombo(test::child<QComboBox>(win.w.controls(), "backendCombo"), 1); // GPU
    SnapshotPtr gpu = win.settle();
    QVERIFY(gpu && gpu->hasResult());
    if (!started) { // no GPU here: the CPU computed it, and the status bar says why
        QCOMPARE(gpu->backendName, QStringLiteral("cpu"));
        QVERIFY2(win.w.statusText().contains(QLatin1String("computed on the CPU")), qPrintable(win.w.statusText()));
        QSKIP(qPrintable(QString::fromStdString(started.message)));
    }
    QCOMPARE(gpu->backendName, QString::fromStdString(name));
    QVERIFY2(!gpu->device.contains(QLatin1String("computed on the CPU")), qPrintable(gpu->device));
    QVERIFY2(win.w.statusText().contains(QString::fromStdString(name) + QStringLiteral(": ") +
                                         QString::fromStdString(device)),
             qPrintable(win.w.statusText()));
    QVERIFY2(maxDiff(*gpu->trace, *cpu->trace) < 1e-4, qPrintable(QString::number(maxDiff(*gpu->trace, *cpu->trace))));
    if (!qEnvironmentVariableIsEmpty("ATTNVIZ_SCREENSHOT_DIR") && model == QLatin1String("llama-tiny"))
        win.w.grab().save(qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR") + QStringLiteral("/gpu-window.png"));
    // typing on: each keystroke on the GPU equals the CPU's trace of the same text
    for (const QString &more : {QStringLiteral(" and"), QStringLiteral(" and runs")}) {
        gpu = win.show(text + more);
        QVERIFY(gpu);
        QCOMPARE(gpu->backendName, QString::fromStdString(name));
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(fixtureModel(model).toStdString(), {}, m));
        TraceRequest req;
        req.text = (text + more).toStdString();
        Trace<float> ref;
        QVERIFY(m->trace(req, ref));
        QVERIFY2(maxDiff(*gpu->trace, ref) < 1e-4, qPrintable(QString::number(maxDiff(*gpu->trace, ref))));
    }
}

// The GPU brings back what the shown views read: the Weights tab the selected layer, another layer
// when one is selected, every layer for the Layers × heads tab; each equal to the CPU's.
void TestGpuWindow::viewsBringBackWhatTheyRead()
{
    {
        GpuBackend probe;
        if (Status st = probe.start(); !st)
            QSKIP(st.message.c_str());
    }
    test::PromptedWindow win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("llama-tiny")), nullptr));
    const QString text = QStringLiteral("The quick brown fox jumps over the lazy dog");
    const SnapshotPtr cpu = win.show(text);
    QVERIFY(cpu && cpu->trace->observed.everything()); // the CPU keeps everything
    QVERIFY(cpu->numLayers() >= 2);
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    test::setCombo(test::child<QComboBox>(win.w.controls(), "backendCombo"), 1); // GPU
    SnapshotPtr gpu = win.settle();
    QVERIFY(gpu && gpu->hasResult());
    QVERIFY2(gpu->backendName != QLatin1String("cpu"), qPrintable(gpu->device));
    QCOMPARE(gpu->trace->observed.layers, std::vector<int>{0});
    QCOMPARE(gpu->trace->layers[1].attention.batch.front().weights.size(), size_t(0)); // left on the GPU
    QVERIFY(maxDiff(*gpu->trace, *cpu->trace) < 1e-4);

    // layer 1 selected: computed again with layer 1 brought back, and the heatmap shows it
    quint64 g = gpu->generation;
    win.w.session()->setSelectedLayer(1);
    gpu = test::waitForSnapshot(*win.w.session(), g, [](const ComputeSnapshot &s) { return s.trace->observed.layer(1); },
                                30000);
    QVERIFY(gpu);
    QVERIFY(!gpu->trace->observed.layer(0));
    const WeightMatrix<float> *shown = win.w.heatmapView()->shownMatrix();
    QVERIFY(shown);
    const Mat<float> &want = cpu->weights(1, win.w.session()->shownHead());
    QCOMPARE(shown->rows(), want.rows());
    QVERIFY2((shown->toDense() - want).cwiseAbs().maxCoeff() < 1e-4,
             "the heatmap shows layer 1 as the CPU computes it");

    // the Layers × heads tab reads every layer: everything comes back
    g = gpu->generation;
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    gpu = test::waitForSnapshot(*win.w.session(), g, [](const ComputeSnapshot &s) { return s.trace->observed.everything(); },
                                30000);
    QVERIFY(gpu);
    QVERIFY(maxDiff(*gpu->trace, *cpu->trace) < 1e-4);
    QCOMPARE(gpu->trace->layers[0].attention.batch.front().weights.size(), size_t(cpu->trace->numHeads()));
}

void TestGpuWindow::failuresFallBackToTheCpu_data()
{
    QTest::addColumn<QByteArray>("fault");
    QTest::addColumn<QString>("why");
    QTest::newRow("a shader that does not build") << QByteArray("shader") << QStringLiteral("attend.comp failed to build");
    QTest::newRow("weights larger than its memory") << QByteArray("memory") << QStringLiteral("do not fit the GPU's memory");
    QTest::newRow("the device lost in a frame") << QByteArray("lost") << QStringLiteral("device lost");
}

// A GPU that fails (ATTNVIZ_GPU_FAULT makes the failure): the CPU computes the trace, the status bar
// says why, the text and the views stay, and typing on keeps computing.
void TestGpuWindow::failuresFallBackToTheCpu()
{
    QFETCH(QByteArray, fault);
    QFETCH(QString, why);
    {
        GpuBackend probe;
        if (Status st = probe.start(); !st)
            QSKIP(st.message.c_str());
    }
    qputenv("ATTNVIZ_GPU_FAULT", fault);
    struct Unset {
        ~Unset() { qunsetenv("ATTNVIZ_GPU_FAULT"); }
    } unset;
    test::PromptedWindow win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("llama-tiny")), nullptr));
    const QString text = QStringLiteral("The quick brown fox");
    const SnapshotPtr cpu = win.show(text);
    QVERIFY(cpu);
    test::setCombo(test::child<QComboBox>(win.w.controls(), "backendCombo"), 1); // GPU
    SnapshotPtr s = win.settle();
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->sentence, text);
    QCOMPARE(s->backendName, QStringLiteral("cpu"));
    QVERIFY2(win.w.statusText().contains(why) && win.w.statusText().contains(QLatin1String("computed on the CPU")),
             qPrintable(win.w.statusText()));
    QVERIFY(s->trace->observed.everything());
    QVERIFY(maxDiff(*s->trace, *cpu->trace) < 1e-6);
    QVERIFY(win.w.heatmapView()->shownMatrix());
    // typing on: the CPU again, and the status bar still says why
    s = win.show(text + QStringLiteral(" jumps"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->backendName, QStringLiteral("cpu"));
    QVERIFY2(win.w.statusText().contains(why), qPrintable(win.w.statusText()));
    QVERIFY(win.messages.isEmpty()); // said in the status bar, not in a dialog per keystroke
}

// Auto takes the GPU only where it is a real one: on a software rasterizer the CPU computes, and
// the status bar says why.
void TestGpuWindow::autoKeepsSoftwareOff()
{
    {
        GpuBackend probe;
        if (!probe.start() || !probe.isSoftware())
            QSKIP("needs a software rasterizer (lavapipe or llvmpipe), as CI has");
    }
    test::PromptedWindow win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("llama-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("a b c d")));
    test::setCombo(test::child<QComboBox>(win.w.controls(), "backendCombo"), 2); // Auto
    const SnapshotPtr s = win.settle();
    QVERIFY(s);
    QCOMPARE(s->backendName, QStringLiteral("cpu"));
    QVERIFY2(win.w.statusText().contains(QLatin1String("software rasterizer")), qPrintable(win.w.statusText()));
}

QTEST_MAIN(TestGpuWindow)
#include "tst_gpuwindow.moc"
