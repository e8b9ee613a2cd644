// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF file in the real window (offscreen): the Q4_K_M fixture opened as a model folder is, its
// attention read back from the heatmap against the float64 reference on the dequantized weights
// (tests/fixtures/gguf/expected.json), the status line saying what a quantized model's attention is
// (and a BF16 file's saying nothing of the kind), and a broken file leaving the model in use.
#include "testpaths.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/heatmapview.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QString gguf(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + name; }

using Window = test::PromptedWindow;

const QString kNote = QStringLiteral("Q4_K_M — attention of the quantized model; close to, not identical with, the original's");

} // namespace

class TestGgufWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    void quantizedFile()
    {
        QFile f(gguf(QStringLiteral("expected.json")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject c = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("models")).toObject()
                                  .value(QStringLiteral("llama-q4_k")).toObject().value(QStringLiteral("cases")).toArray()
                                  .first().toObject();
        Window win;
        QString error;
        QVERIFY2(win.w.openModel(gguf(QStringLiteral("llama-q4_k.gguf")), &error), qPrintable(error));
        // the reference's 12 ids are the first 12 of this text (BOS first): a causal model's first 12
        // rows of attention do not depend on the tokens after them
        const SnapshotPtr s = win.show(QStringLiteral("The quick brown fox jumps over the lazy dog."));
        QVERIFY(s);
        QVERIFY2(win.w.statusText().contains(kNote), qPrintable(win.w.statusText()));
        const QJsonArray att = c.value(QStringLiteral("attentions")).toArray();
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 4; ++h) {
                win.w.session()->setSelectedLayer(l);
                win.w.session()->setSelectedHead(h);
                QCoreApplication::processEvents();
                const QJsonArray want = att[l].toArray()[h].toArray();
                double worst = 0;
                for (int i = 0; i < want.size(); ++i)
                    for (int j = 0; j < want.size(); ++j)
                        worst = std::max(worst, std::abs(win.w.heatmapView()->cellValue(i, j) - want[i].toArray()[j].toDouble()));
                QVERIFY2(worst < 1e-4, qPrintable(QStringLiteral("layer %1 head %2: %3").arg(l).arg(h).arg(worst)));
            }
        // a BF16 GGUF: no quantization to speak of
        QVERIFY(win.w.openModel(gguf(QStringLiteral("llama.gguf")), nullptr));
        win.show(QStringLiteral("The quick brown fox"));
        QVERIFY(!win.w.statusText().contains(QStringLiteral("quantized")));
        QVERIFY(win.w.statusText().contains(QStringLiteral("llama.gguf")));
        // a broken file: one message naming it and the field, the model in use kept
        QTemporaryDir dir;
        QFile in(gguf(QStringLiteral("llama-q8_0.gguf")));
        QVERIFY(in.open(QIODevice::ReadOnly));
        QByteArray b = in.readAll();
        b.replace("general.architecture", "general.architecturX");
        const QString broken = dir.filePath(QStringLiteral("broken.gguf"));
        QFile out(broken);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(b);
        out.close();
        QVERIFY(!win.w.openModel(broken, &error));
        QVERIFY2(error.contains(QStringLiteral("broken.gguf: metadata \"general.architecture\": missing")), qPrintable(error));
        QVERIFY(win.w.modelSource().endsWith(QStringLiteral("llama.gguf")));
    }
};

QTEST_MAIN(TestGgufWindow)
#include "tst_ggufwindow.moc"
