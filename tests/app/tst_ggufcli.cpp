// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF files on the command line (tests/fixtures/gguf): `model info` names the quantization per
// kind of tensor, `model run` and `tokenize --model` take a .gguf path as they take a folder (a T5
// file's run and generate print what its folder prints), and a broken file is one line naming the
// file and the field, exit code 2.
#include "testpaths.h"
#include "../support/runattnviz.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace {

attnviz_test::Run attnviz(const QStringList &args) { return attnviz_test::runAttnviz(args, 300000); }

QString gguf(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + name; }

} // namespace

class TestGgufCli : public QObject {
    Q_OBJECT
private slots:
    void info()
    {
        const auto r = attnviz({QStringLiteral("model"), QStringLiteral("info"), gguf(QStringLiteral("llama-q4_k.gguf"))});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("family      llama"), r.out.constData());
        QVERIFY2(r.out.contains("dtype       Q4_K_M (GGUF; attention Q4_K / Q5_0 / Q6_K, MLP Q4_K / Q6_K, embeddings Q4_K, "
                                "output Q6_K, norms F32)"),
                 r.out.constData());
        QVERIFY2(r.out.contains("byte-level BPE (GGUF metadata)"), r.out.constData());
    }

    void runAndTokenize()
    {
        auto r = attnviz({QStringLiteral("tokenize"), QStringLiteral("--model"), gguf(QStringLiteral("qwen3.gguf")),
                          QStringLiteral("The quick")});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("785\tThe\t0-3\n"), r.out.constData()); // Qwen's id of "The"
        QVERIFY2(r.out.trimmed().endsWith("-9"), r.out.constData());
        r = attnviz({QStringLiteral("model"), QStringLiteral("run"), gguf(QStringLiteral("llama-q8_0.gguf")),
                      QStringLiteral("--text"), QStringLiteral("The quick brown fox")});
        QCOMPARE(r.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonArray att = o.value(QStringLiteral("attentions")).toArray();
        QCOMPARE(att.size(), 2);                     // layers
        QCOMPARE(att[0].toArray().size(), 4);        // heads
        const QJsonArray row = att[0].toArray()[0].toArray()[1].toArray(); // head 0, query 1 (after BOS)
        QCOMPARE(row.size(), o.value(QStringLiteral("ids")).toArray().size());
        QVERIFY(std::abs(row[0].toDouble() + row[1].toDouble() - 1.0) < 1e-5);
    }

    void badFileExit2()
    {
        QTemporaryDir tmp;
        const QString path = tmp.filePath(QStringLiteral("broken.gguf"));
        QFile in(gguf(QStringLiteral("llama.gguf")));
        QVERIFY(in.open(QIODevice::ReadOnly));
        QByteArray b = in.readAll();
        b.replace("general.architecture", "general.architecturX");
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(b);
        out.close();
        for (const QStringList &args : {QStringList{QStringLiteral("model"), QStringLiteral("info"), path},
                                        QStringList{QStringLiteral("tokenize"), QStringLiteral("--model"), path, QStringLiteral("x")}}) {
            const auto r = attnviz(args);
            QCOMPARE(r.code, 2);
            QVERIFY(r.out.isEmpty());
            QCOMPARE(r.err.count('\n'), 1);
            QVERIFY2(r.err.contains(path.toUtf8() + ": metadata \"general.architecture\": missing"), r.err.constData());
        }
    }

    // A T5 file runs as its folder does: `model run` with a target (every attention, the source's and
    // the decoder's tokens, the predictions) and `generate` (greedy and beams) print what the folder
    // prints at llama.cpp's max distance 128 (the one thing the file does not hold); `t5encoder` is
    // refused in one line.
    void t5AsItsFolder()
    {
        QTemporaryDir folder; // t5-tiny at max distance 128
        const QString from = QString::fromUtf8(ATTNVIZ_FIXTURE("/models/t5-tiny/"));
        QVERIFY(QFile::copy(from + QStringLiteral("model.safetensors"), folder.filePath(QStringLiteral("model.safetensors"))));
        QVERIFY(QFile::copy(from + QStringLiteral("spiece.model"), folder.filePath(QStringLiteral("spiece.model"))));
        QFile c(from + QStringLiteral("config.json"));
        QVERIFY(c.open(QIODevice::ReadOnly));
        QJsonObject config = QJsonDocument::fromJson(c.readAll()).object();
        config[QStringLiteral("relative_attention_max_distance")] = 128;
        QFile w(folder.filePath(QStringLiteral("config.json")));
        QVERIFY(w.open(QIODevice::WriteOnly));
        w.write(QJsonDocument(config).toJson());
        w.close();
        const QString file = gguf(QStringLiteral("t5.gguf"));
        const QStringList run{QStringLiteral("model"), QStringLiteral("run"), QStringLiteral("--text"),
                              QStringLiteral("the 3rd of March, 1998"), QStringLiteral("--target"), QStringLiteral("1998-03-03")};
        const auto a = attnviz(run + QStringList{file}), b = attnviz(run + QStringList{folder.path()});
        QCOMPARE(a.code, 0);
        QCOMPARE(b.code, 0);
        QJsonObject x = QJsonDocument::fromJson(a.out).object(), y = QJsonDocument::fromJson(b.out).object();
        for (const char *key : {"encoder_attentions", "attentions", "cross_attentions"})
            QVERIFY(!x.value(QLatin1String(key)).toArray().isEmpty());
        QCOMPARE(x.value(QStringLiteral("cross_attentions")).toArray().size(), 3); // decoder layers
        QCOMPARE(x.value(QStringLiteral("encoder_attentions")).toArray().size(), 2);
        const QJsonObject xm = x.take(QStringLiteral("model")).toObject(), ym = y.take(QStringLiteral("model")).toObject();
        QCOMPARE(x, y); // every number, token and prediction
        QCOMPARE(xm.value(QStringLiteral("name")).toString(), QStringLiteral("t5.gguf"));
        QCOMPARE(xm.value(QStringLiteral("family")).toString(), ym.value(QStringLiteral("family")).toString());
        QCOMPARE(xm.value(QStringLiteral("parameters")), ym.value(QStringLiteral("parameters")));
        for (const QStringList &gen : {QStringList{}, QStringList{QStringLiteral("--beams"), QStringLiteral("3")}}) {
            const QStringList args = QStringList{QStringLiteral("generate"), QStringLiteral("--text"),
                                                 QStringLiteral("the cat sat on the mat"), QStringLiteral("--json"),
                                                 QStringLiteral("--model")};
            const auto g = attnviz(args + QStringList{file} + gen), h = attnviz(args + QStringList{folder.path()} + gen);
            QCOMPARE(g.code, 0);
            QCOMPARE(h.code, 0);
            QJsonObject gj = QJsonDocument::fromJson(g.out).object(), hj = QJsonDocument::fromJson(h.out).object();
            QVERIFY(!gj.isEmpty());
            gj.remove(QStringLiteral("model"));
            hj.remove(QStringLiteral("model"));
            QCOMPARE(gj, hj);
        }
        // t5encoder.gguf, the encoder alone: an encoder-only model whose attentions are t5.gguf's encoder's
        const auto info = attnviz({QStringLiteral("model"), QStringLiteral("info"), gguf(QStringLiteral("t5encoder.gguf")),
                                   QStringLiteral("--json")});
        QVERIFY2(info.code == 0, info.err.constData());
        QCOMPARE(QJsonDocument::fromJson(info.out).object().value(QStringLiteral("family")).toString(), QStringLiteral("t5encoder"));
        const QString text = QStringLiteral("the cat sat on the mat");
        const auto enc = attnviz({QStringLiteral("model"), QStringLiteral("run"), gguf(QStringLiteral("t5encoder.gguf")),
                                  QStringLiteral("--text"), text});
        const auto full = attnviz({QStringLiteral("model"), QStringLiteral("run"), gguf(QStringLiteral("t5.gguf")),
                                   QStringLiteral("--text"), text, QStringLiteral("--target"), QStringLiteral("a")});
        QVERIFY2(enc.code == 0, enc.err.constData());
        QVERIFY2(full.code == 0, full.err.constData());
        const QJsonObject e = QJsonDocument::fromJson(enc.out).object(), f = QJsonDocument::fromJson(full.out).object();
        QCOMPARE(e.value(QStringLiteral("attentions")).toArray().size(), 2);
        QCOMPARE(e.value(QStringLiteral("attentions")), f.value(QStringLiteral("encoder_attentions")));
        QCOMPARE(e.value(QStringLiteral("ids")), f.value(QStringLiteral("source_ids")));
        QVERIFY(!e.contains(QStringLiteral("next_tokens")));
    }
};

QTEST_GUILESS_MAIN(TestGgufCli)
#include "tst_ggufcli.moc"
