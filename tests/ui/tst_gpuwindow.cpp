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

double maxDiff(const Trace<float> &a, const Trace<float> &b)
{
    double mx = 0;
    if (a.numLayers() != b.numLayers())
        return INFINITY;
    for (int l = 0; l < a.numLayers(); ++l)
        for (int h = -1; h < a.numHeads(); ++h) {
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
