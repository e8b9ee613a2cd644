// SPDX-License-Identifier: GPL-3.0-or-later
// Export: figures of each view as PNG / SVG / PDF of the requested size, matrices as CSV / NPY /
// JSON, nothing half-written on failure, and `attnviz export` run as a process with no display.
#include "testpaths.h"
#include "views/embeddingview.h"
#include "files/figureexport.h"
#include "views/headgridview.h"
#include "views/heatmapview.h"
#include "live/livecompute.h"
#include "views/rowview.h"

#include <qcustomplot.h>

#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

const QString kToyTable = QString::fromUtf8(ATTNVIZ_FIXTURE("/embeddings/toy-en16.txt"));
const QString kSentence = QStringLiteral("I must go back to my ship and to my crew");

SnapshotPtr compute(int heads, MaskChoice mask = MaskChoice::None, const QString &sentence = kSentence)
{
    auto table = std::make_shared<EmbeddingTable>();
    if (!loadEmbeddings(kToyTable.toStdString(), *table).ok())
        qFatal("cannot load the toy table");
    ComputeRequest r;
    r.generation = 1;
    r.sentence = sentence;
    r.table = table;
    r.settings.numHeads = heads;
    r.settings.mask = mask;
    CpuBackend backend;
    LiveModels cache;
    return computeSnapshot(r, backend, cache);
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestExport : public QObject {
    Q_OBJECT

private slots:
    void figure_data()
    {
        QTest::addColumn<QString>("view");
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("height");
        QTest::addColumn<double>("dpi");
        for (const char *view : {"weights", "grid", "embeddings", "row"}) {
            QTest::addRow("%s png", view) << view << "png" << 900 << 600 << 96.0;
            QTest::addRow("%s svg", view) << view << "svg" << 800 << 500 << 96.0;
            QTest::addRow("%s pdf", view) << view << "pdf" << 640 << 480 << 96.0;
        }
        QTest::addRow("weights png 300 dpi") << "weights" << "png" << 2400 << 1500 << 300.0;
    }

    void figure()
    {
        QFETCH(QString, view);
        QFETCH(QString, format);
        QFETCH(int, width);
        QFETCH(int, height);
        QFETCH(double, dpi);
        const SnapshotPtr s = compute(4, MaskChoice::Causal);
        QVERIFY(s->hasResult());
        std::unique_ptr<QWidget> w;
        QCustomPlot *plot = nullptr;
        QString title;
        if (view == QLatin1String("weights")) {
            auto *v = new HeatmapView;
            w.reset(v);
            v->setSnapshot(s);
            plot = v->plot();
            title = v->title();
        } else if (view == QLatin1String("grid")) {
            auto *v = new HeadGridView;
            w.reset(v);
            v->setSnapshot(s);
            plot = v->plot();
            title = v->title();
        } else if (view == QLatin1String("embeddings")) {
            auto *v = new EmbeddingView;
            w.reset(v);
            v->setSnapshot(s);
            plot = v->plot();
            title = v->title();
        } else {
            auto *v = new RowView;
            w.reset(v);
            v->setSnapshot(s);
            v->setSelection(0, 0, 6);
            plot = v->plot();
            title = v->title();
        }
        // the title states the configuration
        if (view != QLatin1String("row"))
            QVERIFY2(title.contains(QStringLiteral("causal")) && title.contains(QStringLiteral("d_head 4")), qPrintable(title));
        w->resize(700, 500);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("fig.") + format);
        QString error;
        QVERIFY2(saveFigure(plot, path, {width, height, dpi}, &error), qPrintable(error));
        const QByteArray bytes = readAll(path);
        QVERIFY(bytes.size() > 1000);
        if (format == QLatin1String("png")) {
            QImage img;
            QVERIFY(img.loadFromData(bytes, "PNG"));
            QCOMPARE(img.size(), QSize(width, height));
            QCOMPARE(int(std::lround(img.dotsPerMeterX() * 0.0254)), int(dpi));
            // not blank: the heatmap / bars put many colours on the page
            QSet<QRgb> colours;
            for (int y = 0; y < img.height(); y += 7)
                for (int x = 0; x < img.width(); x += 7)
                    colours.insert(img.pixel(x, y));
            QVERIFY(colours.size() > 8);
        } else if (format == QLatin1String("svg")) {
            QSvgRenderer r(bytes);
            QVERIFY(r.isValid());
            // width x height user units, drawn at 96 dpi (the physical size is written in mm)
            QCOMPARE(r.viewBoxF(), QRectF(0, 0, width, height));
            QVERIFY(bytes.contains(QStringLiteral("width=\"%1mm\"").arg(width / 96.0 * 25.4).toLatin1()));
        } else {
            QVERIFY(bytes.startsWith("%PDF-"));
            QVERIFY(bytes.trimmed().endsWith("%%EOF"));
            const QRegularExpression box(QStringLiteral("/MediaBox \\[0 0 ([0-9.]+) ([0-9.]+)\\]"));
            const auto m = box.match(QString::fromLatin1(bytes));
            QVERIFY(m.hasMatch());
            QCOMPARE(qRound(m.captured(1).toDouble()), width);
            QCOMPARE(qRound(m.captured(2).toDouble()), height);
        }
    }

    void unwritablePathWritesNothing_data()
    {
        QTest::addColumn<QString>("suffix");
        for (const char *s : {"png", "svg", "pdf", "csv", "npy", "json"})
            QTest::addRow("%s", s) << s;
    }

    void unwritablePathWritesNothing()
    {
        QFETCH(QString, suffix);
        const SnapshotPtr s = compute(1);
        HeatmapView v;
        v.setSnapshot(s);
        const QString path = QStringLiteral("/nonexistent-attnviz-dir/out.") + suffix;
        QString error;
        const bool ok = isFigureSuffix(suffix) ? saveFigure(v.plot(), path, {}, &error)
                                               : saveMatrices(*s, ExportView::Weights, 0, 0, 0, path, &error);
        QVERIFY(!ok);
        QVERIFY(error.contains(QStringLiteral("cannot write")));
        QVERIFY(!QFile::exists(path));
        // a read-only directory: the old file stays as it was
        QTemporaryDir dir;
        const QString existing = dir.filePath(QStringLiteral("keep.") + suffix);
        QFile f(existing);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("old");
        f.close();
        QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::ExeOwner);
        if (QFileInfo(dir.path()).isWritable()) {
            QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
            return; // running as root: permissions are not enforced
        }
        const bool ok2 = isFigureSuffix(suffix) ? saveFigure(v.plot(), existing, {}, &error)
                                                : saveMatrices(*s, ExportView::Weights, 0, 0, 0, existing, &error);
        QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        QVERIFY(!ok2);
        QCOMPARE(readAll(existing), QByteArray("old"));
    }

    void matrices_data()
    {
        QTest::addColumn<int>("view");
        QTest::addColumn<QList<int>>("shape");
        QTest::addRow("weights") << int(ExportView::Weights) << QList<int>{11, 11};
        QTest::addRow("grid") << int(ExportView::Grid) << QList<int>{4, 11, 11};
        QTest::addRow("row") << int(ExportView::Row) << QList<int>{11};
        QTest::addRow("embeddings") << int(ExportView::Embeddings) << QList<int>{2, 11, 16};
    }

    void matrices()
    {
        QFETCH(int, view);
        QFETCH(QList<int>, shape);
        const SnapshotPtr s = compute(4, MaskChoice::Causal);
        QTemporaryDir dir;
        QString error;
        const ExportView v = ExportView(view);
        // NPY: header shape and float32 payload equal the computed numbers
        const QString npy = dir.filePath(QStringLiteral("m.npy"));
        QVERIFY2(saveMatrices(*s, v, 0, 2, 6, npy, &error), qPrintable(error));
        const QByteArray b = readAll(npy);
        QVERIFY(b.startsWith(QByteArray("\x93NUMPY\x01\x00", 8)));
        const int hlen = quint8(b[8]) | (quint8(b[9]) << 8);
        QCOMPARE((10 + hlen) % 64, 0);
        const QByteArray header = b.mid(10, hlen);
        QStringList dims;
        for (int d : shape)
            dims << QString::number(d);
        const QString expectShape = shape.size() == 1 ? QStringLiteral("(%1,)").arg(dims[0])
                                                      : QStringLiteral("(%1)").arg(dims.join(QStringLiteral(", ")));
        QVERIFY2(QString::fromLatin1(header).remove(QLatin1Char(' ')).contains(QString(expectShape).remove(QLatin1Char(' '))),
                 header.constData());
        qsizetype count = 1;
        for (int d : shape)
            count *= d;
        QCOMPARE(b.size() - 10 - hlen, count * qsizetype(sizeof(float)));
        const float *data = reinterpret_cast<const float *>(b.constData() + 10 + hlen);
        if (v == ExportView::Weights)
            QCOMPARE(data[6 * 11 + 3], s->weights(0, 2)(6, 3));
        if (v == ExportView::Row)
            QCOMPARE(data[3], s->weights(0, 2)(6, 3));
        if (v == ExportView::Grid)
            QCOMPARE(data[2 * 121 + 6 * 11 + 3], s->weights(0, 2)(6, 3));

        // JSON: shape, tokens and data
        const QString json = dir.filePath(QStringLiteral("m.json"));
        QVERIFY2(saveMatrices(*s, v, 0, 2, 6, json, &error), qPrintable(error));
        const QJsonObject o = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(o.value(QStringLiteral("view")).toString(), exportViewName(v));
        QCOMPARE(o.value(QStringLiteral("query_tokens")).toArray().size(), 11);
        QCOMPARE(o.value(QStringLiteral("shape")).toArray().size(), shape.size());
        QCOMPARE(o.value(QStringLiteral("data")).toArray().size(), shape[0]);
        QVERIFY(o.value(QStringLiteral("title")).toString().contains(QStringLiteral("causal")));

        // CSV: one line per row (+ header)
        const QString csv = dir.filePath(QStringLiteral("m.csv"));
        QVERIFY2(saveMatrices(*s, v, 0, 2, 6, csv, &error), qPrintable(error));
        const QList<QByteArray> lines = readAll(csv).trimmed().split('\n');
        const int expectLines = v == ExportView::Grid ? 4 * 121 + 1 : v == ExportView::Row ? 12 : 12;
        QCOMPARE(lines.size(), expectLines);
        if (v == ExportView::Weights) {
            QVERIFY(lines[0].contains("\"ship\""));
            QVERIFY(lines[7].startsWith("\"ship\","));
        }
    }

    void nanIsWrittenAsNaN()
    {
        // a fully masked row (causal + the first key padded) exports as NaN, not as numbers
        auto table = std::make_shared<EmbeddingTable>();
        QVERIFY(loadEmbeddings(kToyTable.toStdString(), *table).ok());
        ComputeRequest r;
        r.generation = 1;
        r.sentence = kSentence;
        r.table = table;
        r.settings.mask = MaskChoice::CausalPadding;
        r.paddedKeys = {0};
        CpuBackend backend;
        LiveModels cache;
        const SnapshotPtr s = computeSnapshot(r, backend, cache);
        QVERIFY(s->hasResult());
        QTemporaryDir dir;
        QString error;
        QVERIFY(saveMatrices(*s, ExportView::Weights, 0, 0, 0, dir.filePath(QStringLiteral("w.csv")), &error));
        const QList<QByteArray> lines = readAll(dir.filePath(QStringLiteral("w.csv"))).split('\n');
        QVERIFY(lines[1].startsWith("\"i\",NaN,NaN"));
        QVERIFY(saveMatrices(*s, ExportView::Weights, 0, 0, 0, dir.filePath(QStringLiteral("w.json")), &error));
        const QJsonObject o = QJsonDocument::fromJson(readAll(dir.filePath(QStringLiteral("w.json")))).object();
        QCOMPARE(o.value(QStringLiteral("data")).toArray().at(0).toArray().at(0).toString(), QStringLiteral("NaN"));
        QCOMPARE(o.value(QStringLiteral("fully_masked_rows")).toArray().at(0).toInt(), 0);
    }

    void cliExportWithoutDisplay_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("check"); // png:WxH, svg, pdf, csv, stderr text
        QTest::addRow("weights png") << QStringList{"--view", "weights", "--heads", "4", "--head", "0", "--mask", "causal",
                                                    "--scale", "inv_sqrt_dhead", "--width", "640", "--height", "480",
                                                    "--out", "OUT.png"}
                                     << 0 << "png:640x480";
        QTest::addRow("grid svg") << QStringList{"--view", "grid", "--heads", "4", "--out", "OUT.svg"} << 0 << "svg";
        QTest::addRow("row pdf") << QStringList{"--view", "row", "--query", "6", "--out", "OUT.pdf"} << 0 << "pdf";
        QTest::addRow("lines svg") << QStringList{"--view", "lines", "--heads", "2", "--head", "1", "--out", "OUT.svg"}
                                   << 0 << "svg";
        QTest::addRow("embeddings csv") << QStringList{"--view", "embeddings", "--out", "OUT.csv"} << 0 << "csv";
        QTest::addRow("cross json") << QStringList{"--key-sentence", "we process and ship your order", "--out", "OUT.json"}
                                    << 0 << "json";
        // 3 heads do not divide d_model 16: unequal identity slices (headslices.h), a figure all the same
        QTest::addRow("heads do not divide") << QStringList{"--heads", "3", "--view", "grid", "--out", "OUT.png"} << 0
                                             << "png";
        QTest::addRow("bad view") << QStringList{"--view", "pie", "--out", "OUT.png"} << 2 << "--view pie";
        QTest::addRow("bad suffix") << QStringList{"--out", "OUT.gif"} << 2 << "unknown format";
        QTest::addRow("unwritable") << QStringList{"--out", "/nonexistent-attnviz-dir/x.png"} << 1 << "cannot write";
        QTest::addRow("missing embeddings") << QStringList{"--embeddings", "/nonexistent.txt", "--out", "OUT.png"} << 2
                                            << "nonexistent.txt";
    }

    void cliExportWithoutDisplay()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, check);
        QTemporaryDir dir;
        QString out;
        for (QString &a : args)
            if (a.startsWith(QLatin1String("OUT."))) {
                a = dir.filePath(a);
                out = a;
            }
        QStringList full{QStringLiteral("export"), QStringLiteral("--sentence"), kSentence};
        if (!args.contains(QStringLiteral("--embeddings")))
            full << QStringLiteral("--embeddings") << kToyTable;
        full << args;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        p.setProcessEnvironment(env);
        p.start(QString::fromUtf8(ATTNVIZ_BINARY), full);
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromLocal8Bit(p.readAllStandardError());
        QVERIFY2(p.exitStatus() == QProcess::NormalExit, qPrintable(err));
        QVERIFY2(p.exitCode() == exitCode, qPrintable(QStringLiteral("exit %1: %2").arg(p.exitCode()).arg(err)));
        if (exitCode != 0) {
            QVERIFY2(err.contains(check), qPrintable(err));
            if (!out.isEmpty())
                QVERIFY(!QFile::exists(out));
            return;
        }
        const QByteArray bytes = readAll(out);
        if (check.startsWith(QLatin1String("png:"))) {
            QImage img;
            QVERIFY(img.loadFromData(bytes, "PNG"));
            const QStringList wh = check.mid(4).split(QLatin1Char('x'));
            QCOMPARE(img.size(), QSize(wh[0].toInt(), wh[1].toInt()));
        } else if (check == QLatin1String("svg")) {
            QVERIFY(QSvgRenderer(bytes).isValid());
        } else if (check == QLatin1String("pdf")) {
            QVERIFY(bytes.startsWith("%PDF-"));
        } else if (check == QLatin1String("csv")) {
            QCOMPARE(bytes.trimmed().split('\n').size(), 12);
        } else if (check == QLatin1String("json")) {
            const QJsonObject o = QJsonDocument::fromJson(bytes).object();
            QCOMPARE(o.value(QStringLiteral("key_tokens")).toArray().size(), 6);
            QCOMPARE(o.value(QStringLiteral("query_tokens")).toArray().size(), 11);
        }
    }

    // A small figure of the bundled model's weights (400 x 320, 13 tokens), as SVG text: the window's
    // export thins the key labels and says how to zoom; a publication figure labels every token,
    // gives no window hint, and its title is one whole line (not "Attention…"); --title replaces it.
    void publicationFigure()
    {
        QTemporaryDir dir;
        const auto run = [&](const QStringList &extra, const QString &name, QString *err = nullptr) {
            QProcess p;
            p.start(QString::fromUtf8(ATTNVIZ_BINARY),
                    QStringList{QStringLiteral("export"), QStringLiteral("--model"), QStringLiteral("bundled"),
                                QStringLiteral("--sentence"), QStringLiteral("The cat sat on the mat because it was tired."),
                                QStringLiteral("--width"), QStringLiteral("400"), QStringLiteral("--height"), QStringLiteral("320"),
                                QStringLiteral("--no-numbers"), QStringLiteral("--out"), dir.filePath(name)}
                        + extra);
            p.waitForFinished(60000);
            if (err)
                *err = QString::fromLocal8Bit(p.readAllStandardError());
            return p.exitCode() == 0 ? QString::fromUtf8(readAll(dir.filePath(name))) : QString();
        };
        const QString window = run({}, QStringLiteral("w.svg"));
        QVERIFY(!window.isEmpty());
        QVERIFY(window.contains(QStringLiteral("labels shown")));
        const QString paper = run({QStringLiteral("--publication")}, QStringLiteral("p.svg"));
        QVERIFY(!paper.isEmpty());
        QVERIFY(!paper.contains(QStringLiteral("labels shown")) && !paper.contains(QStringLiteral("zoom")));
        for (const char *token : {"␣cat", "␣sat", "␣was", "ired"})
            QVERIFY2(paper.count(QString::fromUtf8(token)) >= 2, token); // the key axis as well as the query axis
        QVERIFY(paper.contains(QStringLiteral("Attention weights — head 0 of 8")));
        QVERIFY(!paper.contains(QStringLiteral("Attention…")));
        const QString titled = run({QStringLiteral("--title"), QStringLiteral("Figure 3: layer 0")}, QStringLiteral("t.svg"));
        QVERIFY(titled.contains(QStringLiteral("Figure 3: layer 0")) && !titled.contains(QStringLiteral("Attention weights")));
        const QString untitled = run({QStringLiteral("--no-title")}, QStringLiteral("n.svg"));
        QVERIFY(!untitled.isEmpty() && !untitled.contains(QStringLiteral("Attention weights")));
        QString err;
        QVERIFY(run({QStringLiteral("--font-size"), QStringLiteral("200")}, QStringLiteral("f.svg"), &err).isEmpty());
        QVERIFY2(err.contains(QStringLiteral("--font-size")), qPrintable(err));
        QVERIFY(!run({QStringLiteral("--font-size"), QStringLiteral("7")}, QStringLiteral("g.svg")).isEmpty());
    }

    void cliEmptySentenceIsAnExplainedFigure()
    {
        QTemporaryDir dir;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        p.setProcessEnvironment(env);
        const QString out = dir.filePath(QStringLiteral("empty.png"));
        p.start(QString::fromUtf8(ATTNVIZ_BINARY),
                {QStringLiteral("export"), QStringLiteral("--sentence"), QString(), QStringLiteral("--embeddings"), kToyTable,
                 QStringLiteral("--out"), out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QImage(out).width() == 1200);
        // but its matrices are an error: there are none
        p.start(QString::fromUtf8(ATTNVIZ_BINARY),
                {QStringLiteral("export"), QStringLiteral("--sentence"), QString(), QStringLiteral("--embeddings"), kToyTable,
                 QStringLiteral("--out"), dir.filePath(QStringLiteral("empty.csv"))});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(QString::fromLocal8Bit(p.readAllStandardError()).contains(QStringLiteral("Type a sentence")));
    }
};

QTEST_MAIN(TestExport)
#include "tst_export.moc"
