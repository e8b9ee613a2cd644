// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz model info|run`, `tokenize --model` and `bench --seeded` as a user runs them on the tiny
// fixture folders (tests/fixtures/models): the JSON read back against the float64 reference, a
// sharded copy, and the bad-folder table: one line naming the file and the tensor or field, exit
// code 2, nothing written.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/modelfolders.h"
#include "../support/runattnviz.h"

#include <cmath>
#include <functional>
#include <limits>

namespace {

using attnviz_test::Run;

Run attnviz(const QStringList &args) { return attnviz_test::runAttnviz(args, 300000); }

QString fixture(const QString &model) { return attnviz_test::fixtureModel(model); }
using attnviz_test::expectedCase;
QString copyFolder(const QString &model, const QTemporaryDir &tmp) { return attnviz_test::copyModelFolder(model, tmp); }
using attnviz_test::editJson;
using attnviz_test::Safetensors;
Safetensors readSt(const QString &path) { return attnviz_test::readSafetensors(path); }
void writeSt(const QString &path, const Safetensors &st) { attnviz_test::writeSafetensors(path, st); }

// Splits DIR/model.safetensors into two shards and an index.
void shard(const QString &dir, const QString &missingShard = {})
{
    const Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    Safetensors a, b;
    QJsonObject map;
    for (auto it = st.header.begin(); it != st.header.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__"))
            continue;
        QJsonObject e = it.value().toObject();
        const QJsonArray off = e.value(QStringLiteral("data_offsets")).toArray();
        const qint64 b0 = off[0].toInteger(), b1 = off[1].toInteger();
        const bool first = it.key() < QLatin1String("transformer.h.1");
        Safetensors &to = first ? a : b;
        e.insert(QStringLiteral("data_offsets"), QJsonArray{to.data.size(), to.data.size() + (b1 - b0)});
        to.data += st.data.mid(int(b0), int(b1 - b0));
        to.header.insert(it.key(), e);
        map.insert(it.key(), first ? QStringLiteral("model-00001-of-00002.safetensors") : QStringLiteral("model-00002-of-00002.safetensors"));
    }
    QFile::remove(dir + QStringLiteral("/model.safetensors"));
    writeSt(dir + QStringLiteral("/model-00001-of-00002.safetensors"), a);
    if (missingShard.isEmpty())
        writeSt(dir + QStringLiteral("/model-00002-of-00002.safetensors"), b);
    QFile f(dir + QStringLiteral("/model.safetensors.index.json"));
    f.open(QIODevice::WriteOnly);
    f.write(QJsonDocument(QJsonObject{{QStringLiteral("metadata"), QJsonObject{}}, {QStringLiteral("weight_map"), map}}).toJson());
}

} // namespace

class TestModelCli : public QObject {
    Q_OBJECT
private slots:
    void runGpt2_data();
    void runGpt2();
    void runBertMasked();
    void info();
    void tokenizeWithModel();
    void sharded();
    void badFolders_data();
    void badFolders();
    void benchSeeded();
    void exportModel_data();
    void exportModel();
    void exportModelRefusals();
};

void TestModelCli::runGpt2_data()
{
    QTest::addColumn<QString>("precision");
    QTest::addColumn<double>("tol");
    QTest::addRow("float32") << "float32" << 1e-5;
    QTest::addRow("float64") << "float64" << 1e-10;
}

void TestModelCli::runGpt2()
{
    QFETCH(QString, precision);
    QFETCH(double, tol);
    const QJsonObject want = expectedCase(QStringLiteral("gpt2-tiny"), 0);
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("run.json"));
    const Run r = attnviz({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")),
                           QStringLiteral("--text"), want.value(QStringLiteral("text")).toString(), QStringLiteral("-o"), out,
                           QStringLiteral("--precision"), precision});
    QCOMPARE(r.code, 0);
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject got = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(got.value(QStringLiteral("ids")).toArray(), want.value(QStringLiteral("ids")).toArray());
    QCOMPARE(got.value(QStringLiteral("tokens")).toArray(), want.value(QStringLiteral("tokens")).toArray());
    QCOMPARE(got.value(QStringLiteral("model")).toObject().value(QStringLiteral("family")).toString(), QStringLiteral("gpt2"));
    // attentions [layer][head][query][key]
    const QJsonArray ga = got.value(QStringLiteral("attentions")).toArray(), wa = want.value(QStringLiteral("attentions")).toArray();
    QCOMPARE(ga.size(), 2);
    double worst = 0;
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            const QJsonArray gq = ga[l].toArray()[h].toArray(), wq = wa[l].toArray()[h].toArray();
            QCOMPARE(gq.size(), wq.size());
            for (int i = 0; i < gq.size(); ++i)
                for (int j = 0; j < gq.size(); ++j)
                    worst = std::max(worst, std::abs(gq[i].toArray()[j].toDouble() - wq[i].toArray()[j].toDouble()));
        }
    QVERIFY2(worst < tol, qPrintable(QString::number(worst)));
    // the top 10 after the last token
    const QJsonArray next = got.value(QStringLiteral("next_tokens")).toArray();
    const QJsonArray wantNext = want.value(QStringLiteral("next")).toArray().last().toArray();
    QCOMPARE(next.size(), 10);
    for (int k = 0; k < 10; ++k) {
        QVERIFY(std::abs(next[k].toObject().value(QStringLiteral("p")).toDouble() -
                         wantNext[k].toObject().value(QStringLiteral("p")).toDouble()) < tol);
        QVERIFY(!next[k].toObject().value(QStringLiteral("token")).toString().isEmpty());
    }
    QCOMPARE(next[0].toObject().value(QStringLiteral("id")).toInt(), wantNext[0].toObject().value(QStringLiteral("id")).toInt());
    QVERIFY(!got.contains(QStringLiteral("masked")));
}

void TestModelCli::runBertMasked()
{
    const QJsonObject want = expectedCase(QStringLiteral("bert-tiny-legacy"), 1);
    const Run r = attnviz({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("bert-tiny-legacy")),
                           QStringLiteral("--text"), want.value(QStringLiteral("text")).toString()});
    QCOMPARE(r.code, 0);
    const QJsonObject got = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(got.value(QStringLiteral("ids")).toArray(), want.value(QStringLiteral("ids")).toArray());
    QCOMPARE(got.value(QStringLiteral("tokens")).toArray().first().toString(), QStringLiteral("[CLS]"));
    const QJsonArray masked = got.value(QStringLiteral("masked")).toArray(), wm = want.value(QStringLiteral("masked")).toArray();
    QCOMPARE(masked.size(), 2);
    for (int m = 0; m < 2; ++m) {
        const QJsonObject g = masked[m].toObject(), w = wm[m].toObject();
        QCOMPARE(g.value(QStringLiteral("position")).toInt(), w.value(QStringLiteral("position")).toInt());
        const QJsonArray gt = g.value(QStringLiteral("top")).toArray(), wt = w.value(QStringLiteral("top")).toArray();
        QCOMPARE(gt[0].toObject().value(QStringLiteral("id")).toInt(), wt[0].toObject().value(QStringLiteral("id")).toInt());
        QVERIFY(std::abs(gt[0].toObject().value(QStringLiteral("p")).toDouble() - wt[0].toObject().value(QStringLiteral("p")).toDouble()) < 1e-5);
    }
    QVERIFY(!got.contains(QStringLiteral("next_tokens")));
}

void TestModelCli::info()
{
    Run r = attnviz({QStringLiteral("model"), QStringLiteral("info"), fixture(QStringLiteral("distilbert-tiny"))});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("family      distilbert"));
    QVERIFY(r.out.contains("vocabulary  30,522"));
    QVERIFY(r.out.contains("dtype       F16"));
    QVERIFY(r.out.contains("WordPiece"));
    r = attnviz({QStringLiteral("model"), QStringLiteral("info"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o.value(QStringLiteral("layers")).toInt(), 2);
    QCOMPARE(o.value(QStringLiteral("heads")).toInt(), 4);
    QCOMPARE(o.value(QStringLiteral("d_model")).toInt(), 16);
    QCOMPARE(o.value(QStringLiteral("max_positions")).toInt(), 32);
    QCOMPARE(o.value(QStringLiteral("causal")).toBool(), true);
}

void TestModelCli::tokenizeWithModel()
{
    const Run r = attnviz({QStringLiteral("tokenize"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                           QStringLiteral("Hello world")});
    QCOMPARE(r.code, 0);
    QCOMPARE(r.out, QByteArray("15496\tHello\t0-5\n995\t\xC4\xA0world\t5-11\n"));
}

void TestModelCli::sharded()
{
    QTemporaryDir tmp;
    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    shard(dir);
    const QString text = QStringLiteral("a b c d a b c d");
    const Run a = attnviz({QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), text});
    const Run b = attnviz({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"), text});
    QCOMPARE(a.code, 0);
    QCOMPARE(b.code, 0);
    QJsonObject ja = QJsonDocument::fromJson(a.out).object(), jb = QJsonDocument::fromJson(b.out).object();
    ja.remove(QStringLiteral("model"));
    jb.remove(QStringLiteral("model"));
    QCOMPARE(ja, jb);
}

void TestModelCli::badFolders_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<std::function<QString(const QString &)>>("spoil"); // returns the folder to open
    QTest::addColumn<QStringList>("mentions");
    using Spoil = std::function<QString(const QString &)>;
    auto remove = [](const char *name) {
        return Spoil([name](const QString &d) { QFile::remove(d + QLatin1Char('/') + QLatin1String(name)); return d; });
    };
    auto config = [](std::function<void(QJsonObject &)> edit) {
        return Spoil([edit](const QString &d) { editJson(d + QStringLiteral("/config.json"), edit); return d; });
    };
    auto tensors = [](std::function<void(Safetensors &)> edit) {
        return Spoil([edit](const QString &d) {
            const QString path = d + QStringLiteral("/model.safetensors");
            Safetensors st = readSt(path);
            edit(st);
            writeSt(path, st);
            return d;
        });
    };
    auto bytes = [](std::function<void(QByteArray &)> edit) {
        return Spoil([edit](const QString &d) {
            QFile f(d + QStringLiteral("/model.safetensors"));
            f.open(QIODevice::ReadOnly);
            QByteArray b = f.readAll();
            f.close();
            edit(b);
            f.open(QIODevice::WriteOnly | QIODevice::Truncate);
            f.write(b);
            return d;
        });
    };
    const QString g = QStringLiteral("gpt2-tiny");
    QTest::addRow("no config.json") << g << remove("config.json") << QStringList{"config.json", "no such file"};
    QTest::addRow("no vocab.json") << g << remove("vocab.json") << QStringList{"vocab.json"};
    QTest::addRow("no merges.txt") << g << remove("merges.txt") << QStringList{"merges.txt"};
    QTest::addRow("no vocab.txt") << "bert-tiny" << remove("vocab.txt") << QStringList{"vocab.txt"};
    QTest::addRow("unknown model_type") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("model_type"), QStringLiteral("llama")); })
                                        << QStringList{"config.json", "model_type", "llama"};
    QTest::addRow("field missing") << "bert-tiny" << config([](QJsonObject &o) { o.remove(QStringLiteral("hidden_size")); })
                                   << QStringList{"config.json", "hidden_size", "missing"};
    QTest::addRow("heads do not divide") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("n_head"), 3); })
                                         << QStringList{"config.json", "n_head", "does not divide"};
    QTest::addRow("malformed config") << g << Spoil([](const QString &d) {
        QFile f(d + QStringLiteral("/config.json"));
        f.open(QIODevice::WriteOnly | QIODevice::Truncate);
        f.write("{\"model_type\": ");
        return d;
    }) << QStringList{"config.json", "malformed JSON"};
    QTest::addRow("tensor missing") << g << tensors([](Safetensors &s) { s.header.remove(QStringLiteral("transformer.h.1.mlp.c_fc.weight")); })
                                    << QStringList{"model.safetensors", "transformer.h.1.mlp.c_fc.weight", "missing"};
    QTest::addRow("wrong shape") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("n_inner"), 40); })
                                 << QStringList{"model.safetensors", "transformer.h.0.mlp.c_fc.weight", "shape (16, 48), expected (16, 40)"};
    QTest::addRow("bert wrong shape") << "bert-tiny-legacy" << config([](QJsonObject &o) { o.insert(QStringLiteral("max_position_embeddings"), 128); })
                                      << QStringList{"model.safetensors", "bert.embeddings.position_embeddings.weight", "expected (128, 16)"};
    QTest::addRow("vocabulary vs embeddings") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), 1000); })
                                              << QStringList{"vocab.json", "50,257 tokens", "1,000 rows", "vocab_size"};
    QTest::addRow("truncated") << g << bytes([](QByteArray &b) { b.chop(1000); })
                               << QStringList{"model.safetensors", "outside", "truncated"};
    QTest::addRow("malformed header") << g << bytes([](QByteArray &b) { b[8] = 'x'; b[9] = '{'; })
                                      << QStringList{"model.safetensors", "malformed JSON header"};
    QTest::addRow("header longer than file") << g << bytes([](QByteArray &b) { b[5] = 1; })
                                             << QStringList{"model.safetensors", "header length", "more than the file holds"};
    QTest::addRow("tensor claims more bytes") << g << tensors([](Safetensors &s) {
        QJsonObject e = s.header.value(QStringLiteral("transformer.wte.weight")).toObject();
        e.insert(QStringLiteral("shape"), QJsonArray{qint64(1) << 20, qint64(1) << 20}); // 2^40 elements, each size an int
        s.header.insert(QStringLiteral("transformer.wte.weight"), e);
    }) << QStringList{"model.safetensors", "transformer.wte.weight", "claims more bytes"};
    QTest::addRow("NaN in a tensor") << g << tensors([](Safetensors &s) {
        const qint64 at = s.header.value(QStringLiteral("transformer.ln_f.weight")).toObject().value(QStringLiteral("data_offsets")).toArray()[0].toInteger();
        const float nan = std::numeric_limits<float>::quiet_NaN();
        s.data.replace(int(at), 4, reinterpret_cast<const char *>(&nan), 4);
    }) << QStringList{"model.safetensors", "transformer.ln_f.weight", "NaN"};
    QTest::addRow("pytorch_model.bin only") << g << Spoil([](const QString &d) {
        QFile::rename(d + QStringLiteral("/model.safetensors"), d + QStringLiteral("/pytorch_model.bin"));
        return d;
    }) << QStringList{"pytorch_model.bin", "never unpickles", "model.safetensors"};
    QTest::addRow("weights a directory") << g << Spoil([](const QString &d) {
        QFile::remove(d + QStringLiteral("/model.safetensors"));
        QDir().mkdir(d + QStringLiteral("/model.safetensors"));
        return d;
    }) << QStringList{"model.safetensors", "is a directory"};
    QTest::addRow("folder is a file") << g << Spoil([](const QString &d) { return d + QStringLiteral("/config.json"); })
                                      << QStringList{"config.json", "not a model folder"};
    QTest::addRow("shard missing") << g << Spoil([](const QString &d) { shard(d, QStringLiteral("2")); return d; })
                                   << QStringList{"model-00002-of-00002.safetensors", "no such file"};
}

void TestModelCli::badFolders()
{
    QFETCH(QString, model);
    QFETCH(std::function<QString(const QString &)>, spoil);
    QFETCH(QStringList, mentions);
    QTemporaryDir tmp;
    const QString dir = spoil(copyFolder(model, tmp));
    const QString out = tmp.filePath(QStringLiteral("out.json"));
    const Run r = attnviz({QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), QStringLiteral("hi"),
                           QStringLiteral("-o"), out});
    QCOMPARE(r.code, 2);
    QVERIFY(!QFile::exists(out));
    const QString err = QString::fromUtf8(r.err).trimmed();
    QCOMPARE(err.count(QLatin1Char('\n')), 0);
    for (const QString &m : mentions)
        QVERIFY2(err.contains(m), qPrintable(err));
    // model info says the same
    const Run i = attnviz({QStringLiteral("model"), QStringLiteral("info"), dir});
    QCOMPARE(i.code, 2);
    QCOMPARE(QString::fromUtf8(i.err).trimmed().section(QLatin1Char(':'), 1), err.section(QLatin1Char(':'), 1));
}

void TestModelCli::benchSeeded()
{
    const Run r = attnviz({QStringLiteral("bench"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                           QStringLiteral("--tokens"), QStringLiteral("8,16"), QStringLiteral("--repeat"), QStringLiteral("1"),
                           QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const QJsonArray rows = o.value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 4); // full and appended at 8 and 16
    QCOMPARE(rows[1].toObject().value(QStringLiteral("tokens")).toInt(), 9);
    QVERIFY(o.value(QStringLiteral("peak_rss_mb")).toDouble() > 0);
    const Run bad = attnviz({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("gpt3")});
    QCOMPARE(bad.code, 2);
    QVERIFY(bad.err.contains("gpt2-small or bert-base"));
}

void TestModelCli::exportModel_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("caseIndex");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addRow("gpt2-tiny layer 1 head 2") << "gpt2-tiny" << 2 << 1 << 2;
    QTest::addRow("gpt2-tiny layer 0 head 0") << "gpt2-tiny" << 0 << 0 << 0;
    QTest::addRow("bert-tiny layer 1 head 3") << "bert-tiny" << 0 << 1 << 3;
    QTest::addRow("distilbert-tiny layer 0 head 1") << "distilbert-tiny" << 1 << 0 << 1;
}

// `export --model DIR --layer L --head H` writes that layer and head's weights (the matrices as JSON,
// the figure as PNG), headless, with the float64 reference's values.
void TestModelCli::exportModel()
{
    QFETCH(QString, model);
    QFETCH(int, caseIndex);
    QFETCH(int, layer);
    QFETCH(int, head);
    const QJsonObject want = expectedCase(model, caseIndex);
    QTemporaryDir tmp;
    const QString json = tmp.filePath(QStringLiteral("w.json")), png = tmp.filePath(QStringLiteral("w.png"));
    for (const QString &out : {json, png}) {
        const Run r = attnviz({QStringLiteral("export"), QStringLiteral("--model"), fixture(model), QStringLiteral("--layer"),
                               QString::number(layer), QStringLiteral("--head"), QString::number(head), QStringLiteral("--sentence"),
                               want.value(QStringLiteral("text")).toString(), QStringLiteral("--out"), out});
        QVERIFY2(r.code == 0, r.err.constData());
    }
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject got = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(got.value(QStringLiteral("head")).toInt(), head);
    QVERIFY(got.value(QStringLiteral("title")).toString().contains(QStringLiteral("layer %1 of 2").arg(layer)));
    const QJsonArray data = got.value(QStringLiteral("data")).toArray();
    const QJsonArray ref = want.value(QStringLiteral("attentions")).toArray()[layer].toArray()[head].toArray();
    QCOMPARE(data.size(), ref.size());
    double worst = 0;
    for (int i = 0; i < ref.size(); ++i)
        for (int j = 0; j < ref.size(); ++j)
            worst = std::max(worst, std::abs(data[i].toArray()[j].toDouble() - ref[i].toArray()[j].toDouble()));
    QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));
    QFile image(png);
    QVERIFY(image.open(QIODevice::ReadOnly));
    QVERIFY(image.read(8) == QByteArray("\x89PNG\r\n\x1a\n", 8));
}

void TestModelCli::exportModelRefusals()
{
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("x.json"));
    const QString g = fixture(QStringLiteral("gpt2-tiny"));
    const QList<QStringList> cases = {
        {QStringLiteral("--model"), g, QStringLiteral("--layer"), QStringLiteral("2")},
        {QStringLiteral("--model"), g, QStringLiteral("--head"), QStringLiteral("4")},
        {QStringLiteral("--model"), tmp.filePath(QStringLiteral("nothing-here"))},
        {QStringLiteral("--layer"), QStringLiteral("1")}, // the word vectors have one layer
    };
    for (const QStringList &extra : cases) {
        const Run r = attnviz(QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a b c"),
                                          QStringLiteral("--out"), out}
                              + extra);
        QVERIFY2(r.code == 2, qPrintable(extra.join(QLatin1Char(' ')) + QStringLiteral(": ") + QString::fromUtf8(r.err)));
        // one message (Qt's own platform warnings aside)
        QCOMPARE(QString::fromUtf8(r.err).count(QLatin1String("attnviz export: ")), 1);
        QVERIFY(!QFile::exists(out));
    }
}

QTEST_GUILESS_MAIN(TestModelCli)
#include "tst_modelcli.moc"
