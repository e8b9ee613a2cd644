// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz compute`, `attnviz bench` and `attnviz tokenize --vocab/--wordpiece` as a user runs them: results, and bad input that gets a
// one-line error naming the field, a non-zero exit, and nothing written.
#include "testpaths.h"
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/runattnviz.h"

namespace {

using attnviz_test::Run;

Run attnviz(const QStringList &args) { return attnviz_test::runAttnviz(args, 120000); }

QJsonObject readCase(const QString &name)
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/")) + name);
    f.open(QIODevice::ReadOnly);
    return QJsonDocument::fromJson(f.readAll()).object();
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void computeWritesEveryStage();
    void computeCheckAgainstExpected();
    void badInput_data();
    void badInput();
    void unwritableOutput();
    void hostileFiles_data();
    void hostileFiles();
    void unreadableFiles_data();
    void unreadableFiles();
    void benchJson();
    void versionAndHelp();
    void tokenizeSubword_data();
    void tokenizeSubword();
    void tokenizeSubwordBadInput_data();
    void tokenizeSubwordBadInput();
};

void TestCli::computeWritesEveryStage()
{
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("r.json"));
    const Run r = attnviz({QStringLiteral("compute"),
                           QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/mha_04_h2_d8_tq3_tk7_b2_cross_key_padding.json")),
                           QStringLiteral("-o"), out});
    QCOMPARE(r.code, 0);
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o[QStringLiteral("backend")].toString(), QStringLiteral("cpu"));
    QVERIFY(!o[QStringLiteral("device")].toString().isEmpty());
    for (const char *k : {"q", "k", "v", "scores", "weights", "weights_avg", "context", "output"})
        QVERIFY2(o.contains(QLatin1String(k)), k);
    // (B, H, t_q, t_k) = (2, 2, 3, 7)
    const QJsonArray w = o[QStringLiteral("weights")].toArray();
    QCOMPARE(w.size(), 2);
    QCOMPARE(w[0].toArray().size(), 2);
    QCOMPARE(w[0].toArray()[0].toArray().size(), 3);
    QCOMPARE(w[0].toArray()[0].toArray()[0].toArray().size(), 7);
    const QJsonArray expected = readCase(QStringLiteral("mha_04_h2_d8_tq3_tk7_b2_cross_key_padding.json"))
                                    [QStringLiteral("expected")].toObject()[QStringLiteral("output")].toArray();
    const double got = o[QStringLiteral("output")].toArray()[1].toArray()[2].toArray()[5].toDouble();
    QVERIFY(std::abs(got - expected[1].toArray()[2].toArray()[5].toDouble()) < 1e-12);
}

void TestCli::computeCheckAgainstExpected()
{
    const Run r = attnviz({QStringLiteral("compute"),
                           QString::fromUtf8(ATTNVIZ_FIXTURE("/torch/torch_07_b2_h2_d8_fully_masked_rows.json")),
                           QStringLiteral("--check"), QStringLiteral("-o"), QStringLiteral("-")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.err.contains("every key masked")); // never NaN silently
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o[QStringLiteral("fully_masked_rows")].toArray().size(), 7); // row 0 of item 0, all 6 rows of item 1
    QCOMPARE(o[QStringLiteral("weights")].toArray()[1].toArray()[0].toArray()[0].toArray()[0].toString(),
             QStringLiteral("NaN"));
    const Run z = attnviz({QStringLiteral("compute"),
                           QString::fromUtf8(ATTNVIZ_FIXTURE("/torch/torch_07_b2_h2_d8_fully_masked_rows.json")),
                           QStringLiteral("--fully-masked"), QStringLiteral("zero")});
    QCOMPARE(z.code, 0);
    const QJsonObject oz = QJsonDocument::fromJson(z.out).object();
    QCOMPARE(oz[QStringLiteral("weights")].toArray()[1].toArray()[0].toArray()[0].toArray()[0].toDouble(-1), 0.0);
}

void TestCli::badInput_data()
{
    QTest::addColumn<QString>("path");   // case to start from
    QTest::addColumn<QString>("pointer"); // "config/num_heads"-style path to change, or "" for raw text
    QTest::addColumn<QString>("value");   // JSON value, or the raw file text
    QTest::addColumn<QString>("message");
    const QString base = QStringLiteral("mha_03_h2_d6_tq5_tk5_b1_self_causal.json");
    QTest::addRow("malformed JSON") << base << "" << "{\"config\": {" << "malformed JSON";
    QTest::addRow("not an object") << base << "" << "[1, 2]" << "expected a JSON object";
    QTest::addRow("unknown top field") << base << "extra" << "1" << "extra: unknown field";
    QTest::addRow("unknown config field") << base << "config/heads" << "2" << "config.heads: unknown field";
    QTest::addRow("heads do not divide") << base << "config/num_heads" << "4" << "config.num_heads: 4 does not divide d_model 6";
    QTest::addRow("negative size") << base << "config/t_q" << "-5" << "config.t_q: must be a positive size";
    QTest::addRow("shape vs config") << base << "config/t_q" << "4" << "inputs.query: shape (1, 5, 6), expected (1, 4, 6)";
    QTest::addRow("NaN in inputs") << base << "inputs/query/0/1/2" << "\"NaN\"" << "inputs.query: contains NaN";
    QTest::addRow("string in inputs") << base << "inputs/W_q/0/0" << "\"x\"" << "inputs.W_q: expected a number";
    QTest::addRow("ragged") << base << "inputs/query/0/1" << "[1, 2]" << "inputs.query: ragged array";
    QTest::addRow("wrong W shape") << base << "inputs/W_q" << "[[1, 2], [3, 4]]" << "inputs.W_q: shape (2, 2), expected (6, 6)";
    QTest::addRow("mask shape") << base << "inputs/attn_mask" << "[[true, false]]" << "inputs.attn_mask: shape (1, 2)";
    QTest::addRow("mask values") << base << "inputs/attn_mask/0/0" << "0.5" << "inputs.attn_mask: expected booleans";
    QTest::addRow("bad normalization") << base << "config/normalization" << "\"softermax\"" << "config.normalization: unknown";
    QTest::addRow("bad scale rule") << base << "config/scale_rule" << "\"sqrt\"" << "config.scale";
    QTest::addRow("missing inputs") << base << "inputs" << "null" << "inputs: missing";
    QTest::addRow("sentence vs d_model") << base << "inputs" << "{\"sentence\": \"I must go\"}"
                                         << "config.d_model: 6, but the embedding table's vectors have 50 dimensions";
}

// Applies value at a slash-separated path.
static QJsonValue setAt(QJsonValue node, QStringList path, const QJsonValue &value)
{
    if (path.isEmpty())
        return value;
    const QString key = path.takeFirst();
    if (node.isArray()) {
        QJsonArray a = node.toArray();
        const int i = key.toInt();
        a[i] = setAt(a[i], path, value);
        return a;
    }
    QJsonObject o = node.toObject();
    o[key] = setAt(o[key], path, value);
    return o;
}

void TestCli::badInput()
{
    QFETCH(QString, path);
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QByteArray text;
    if (pointer.isEmpty()) {
        text = value.toUtf8();
    } else {
        QJsonValue v;
        if (value == QLatin1String("null"))
            v = QJsonValue::Null;
        else
            v = QJsonDocument::fromJson("[" + value.toUtf8() + "]").array().at(0);
        text = QJsonDocument(setAt(readCase(path), pointer.split(QLatin1Char('/')), v).toObject()).toJson();
    }
    const QString in = dir.filePath(QStringLiteral("case.json"));
    QFile f(in);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    const QString out = dir.filePath(QStringLiteral("out.json"));
    const Run r = attnviz({QStringLiteral("compute"), in, QStringLiteral("-o"), out});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    QCOMPARE(r.err.count('\n'), 1); // one line
    QVERIFY(r.out.isEmpty());
    QVERIFY(!QFile::exists(out)); // nothing written
}

void TestCli::unwritableOutput()
{
    const Run r = attnviz({QStringLiteral("compute"),
                           QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/seed_01_xtest_softmax_scaled.json")),
                           QStringLiteral("-o"), QStringLiteral("/nonexistent-dir/r.json")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("/nonexistent-dir/r.json: cannot write"));
    const Run missing = attnviz({QStringLiteral("compute"), QStringLiteral("/nonexistent.json")});
    QCOMPARE(missing.code, 2); // bad input (README "Exit codes"); an output that cannot be written is 1
    QVERIFY(missing.err.contains("/nonexistent.json: no such file"));
}

// The hostile-file classes through the command line: each file once crashed, hung or was accepted.
// Arguments name the file as FILE (written from `content`), DIR (a folder) or /dev/zero; OUT is
// the output path, which must never appear.
void TestCli::hostileFiles_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");
    const QStringList computeFile = {"compute", "FILE", "-o", "OUT"};
    const QByteArray deep = QByteArray(100000, '[') + QByteArray(100000, ']');
    QTest::addRow("case nested 100,000 deep")
        << computeFile << R"({"config":{},"inputs":{"query":)" + deep + "}}" << 2 << "FILE: inputs.query: nested deeper than 64 levels";
    QTest::addRow("case batch 1e999") << computeFile << QByteArray(R"({"config":{"batch":1e999}})") << 2
                                      << "FILE: malformed JSON: number overflow parsing '1e999'";
    QTest::addRow("case num_heads twice")
        << computeFile << QByteArray(R"({"config":{"num_heads":7,"num_heads":1},"inputs":{"sentence":"my ship"}})") << 2
        << "FILE: config.num_heads: duplicate key";
    QByteArray words;
    for (int i = 0; i < 20000; ++i)
        words += "ship ";
    QTest::addRow("case of 20,000 tokens")
        << computeFile << R"({"config":{"num_heads":1},"inputs":{"sentence":")" + words + "\"}}" << 2
        << "FILE: 1 x 1 head(s) x 20000 x 20000 tokens of attention needs ";
    QTest::addRow("case /dev/zero") << QStringList{"compute", "/dev/zero", "-o", "OUT"} << QByteArray() << 2
                                    << "/dev/zero: not a regular file";
    QTest::addRow("case is a folder") << QStringList{"compute", "DIR", "-o", "OUT"} << QByteArray() << 2
                                      << "DIR: is a directory";
    const QStringList computeEmb = {"compute", QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/resources/examples/odyssey_ship.json")), "--embeddings", "FILE",
                                    "-o", "OUT"};
    QTest::addRow("vectors: header 50000000 15") << computeEmb << QByteArray("50000000 15\nship 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n")
                                                 << 2 << "FILE:1: the header announces 50000000 words";
    QTest::addRow("vectors: header -5 16") << computeEmb << QByteArray("-5 2\nship 1 2\n") << 2
                                           << "FILE:1: the header announces -5 words";
    QTest::addRow("vectors: .bin dimension 1e-320") << computeEmb << QByteArray("1 1e-320\nship \1\0\0\0\n") << 2
                                                    << "FILE:1: word2vec binary header must be";
    QTest::addRow("vectors: .avec of 0 words")
        << computeEmb << QByteArray("AVEC\1\0\0\0\0\0\0\0\x10\0\0\0\0\0\0\0", 20) << 2 << "FILE: not a valid .avec table (the header announces 0 words)";
    QTest::addRow("vectors: /dev/zero") << QStringList{"vectors", "info", "/dev/zero"} << QByteArray() << 2
                                        << "/dev/zero: not a regular file";
    QTest::addRow("vectors: a folder") << QStringList{"vectors", "info", "DIR"} << QByteArray() << 2 << "DIR: is a directory";
    QTest::addRow("export --projection /dev/zero")
        << QStringList{"export", "--sentence", "my ship", "--projection", "/dev/zero", "--out", "OUT.png"} << QByteArray() << 2
        << "/dev/zero: not a regular file";
    // projections files: the hardened JSON reader's checks before Qt parses them
    const QStringList exportProj = {"export", "--sentence", "my ship", "--projection", "FILE", "--out", "OUT.png"};
    QTest::addRow("projections: W_q twice") << exportProj << QByteArray(R"({"W_q": [[1, 0], [0, 1]], "W_q": [[2]]})") << 2
                                            << "FILE: W_q: duplicate key (a field may be given once)";
    QTest::addRow("projections: nested 100,000 deep") << exportProj << R"({"W_q": )" + deep + "}" << 2
                                                      << "FILE: W_q: nested deeper than 64 levels";
    QTest::addRow("projections: 70 MB") << exportProj << R"({"W_q": [[)" + QByteArray(70'000'000, ' ') + "1]]}" << 2
                                        << "FILE: 70.0 MB, more than the 64.0 MB this reader accepts";
    QTest::addRow("projections: 1e999") << exportProj << QByteArray(R"({"W_q": [[1e999]]})") << 2
                                        << "FILE: malformed JSON: number overflow parsing '1e999'";
    QTest::addRow("export --embeddings DIR")
        << QStringList{"export", "--sentence", "my ship", "--embeddings", "DIR", "--out", "OUT.png"} << QByteArray() << 2
        << "DIR: is a directory";
}

void TestCli::hostileFiles()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, content);
    QFETCH(int, code);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("input"));
    const QString folder = dir.filePath(QStringLiteral("folder"));
    const QString out = dir.filePath(QStringLiteral("out"));
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("folder")));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content);
    f.close();
    for (QString &a : args)
        a.replace(QLatin1String("FILE"), file).replace(QLatin1String("DIR"), folder).replace(QLatin1String("OUT"), out);
    message.replace(QLatin1String("FILE"), file).replace(QLatin1String("DIR"), folder);
    const Run r = attnviz(args);
    QCOMPARE(r.code, code);
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    // one line from attnviz (Qt may add its own warnings, such as QStandardPaths' about XDG_RUNTIME_DIR)
    const QList<QByteArray> lines = r.err.split('\n');
    QCOMPARE(std::count_if(lines.begin(), lines.end(), [](const QByteArray &l) { return l.startsWith("attnviz"); }), 1);
    QVERIFY(r.out.isEmpty());
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot),
             QStringList({QStringLiteral("folder"), QStringLiteral("input")})); // nothing written
}

// A file that exists but cannot be read (chmod 000) is bad input like any other: exit 2, one line
// naming the file and why, nothing written (README "Exit codes").
void TestCli::unreadableFiles_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("content");
    const QString ship = QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/resources/examples/odyssey_ship.json"));
    QFile caseFile(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/seed_01_xtest_softmax_scaled.json")));
    caseFile.open(QIODevice::ReadOnly);
    QTest::addRow("compute CASE") << QStringList{"compute", "FILE", "-o", "OUT"} << caseFile.readAll();
    QTest::addRow("compute --embeddings") << QStringList{"compute", ship, "--embeddings", "FILE", "-o", "OUT"}
                                          << QByteArray("ship 1 2 3\ncrew 4 5 6\n");
    QTest::addRow("vectors info") << QStringList{"vectors", "info", "FILE"} << QByteArray("ship 1 2 3\ncrew 4 5 6\n");
    QTest::addRow("export --projection") << QStringList{"export", "--sentence", "my ship", "--projection", "FILE", "--out", "OUT.png"}
                                         << QByteArray(R"({"W_q": [[1]]})");
    QTest::addRow("export --embeddings") << QStringList{"export", "--sentence", "my ship", "--embeddings", "FILE", "--out", "OUT.png"}
                                         << QByteArray("ship 1 2 3\ncrew 4 5 6\n");
}

void TestCli::unreadableFiles()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("input"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content);
    f.close();
    QVERIFY(f.setPermissions({}));
    for (QString &a : args)
        a.replace(QLatin1String("FILE"), file).replace(QLatin1String("OUT"), dir.filePath(QStringLiteral("out")));
    bool possible = false;
    const Run r = attnviz_test::runAttnvizUnprivileged(args, possible);
    if (!possible)
        QSKIP("cannot drop root's override of file permissions here");
    QCOMPARE(r.code, 2);
    const QList<QByteArray> lines = r.err.split('\n');
    const auto ours = std::count_if(lines.begin(), lines.end(), [](const QByteArray &l) { return l.startsWith("attnviz"); });
    QCOMPARE(ours, 1);
    const QByteArray line = *std::find_if(lines.begin(), lines.end(), [](const QByteArray &l) { return l.startsWith("attnviz"); });
    QVERIFY2(line.contains(": " + file.toUtf8() + ": cannot "), line.constData()); // "cannot open: ", "cannot read ("
    QVERIFY2(line.contains("Permission denied"), line.constData());
    QVERIFY(r.out.isEmpty());
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList(QStringLiteral("input")));
}

void TestCli::benchJson()
{
    const Run r = attnviz({QStringLiteral("bench"), QStringLiteral("--sizes"), QStringLiteral("8:16:2,2:8:16:4"),
                           QStringLiteral("--json"), QStringLiteral("--seconds"), QStringLiteral("0")});
    QCOMPARE(r.code, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    const QJsonObject o = QJsonDocument::fromJson(lines[1]).object();
    QCOMPARE(o[QStringLiteral("batch")].toInt(), 2);
    QCOMPARE(o[QStringLiteral("t")].toInt(), 8);
    QCOMPARE(o[QStringLiteral("d")].toInt(), 16);
    QCOMPARE(o[QStringLiteral("h")].toInt(), 4);
    QVERIFY(o[QStringLiteral("median_ms")].toDouble() > 0);
    QVERIFY(o[QStringLiteral("gflops")].toDouble() > 0);
    QCOMPARE(attnviz({QStringLiteral("bench"), QStringLiteral("--sizes"), QStringLiteral("8:10:3")}).code, 2);
}

void TestCli::versionAndHelp()
{
    const Run v = attnviz({QStringLiteral("--version")});
    QCOMPARE(v.code, 0);
    QVERIFY(v.out.startsWith("attnviz "));
    const Run h = attnviz({QStringLiteral("compute"), QStringLiteral("--help")});
    QCOMPARE(h.code, 0);
    QVERIFY(h.out.contains("--backend"));
    // bench's own help names the model and window benchmarks' helps, which hold their options.
    const Run b = attnviz({QStringLiteral("bench"), QStringLiteral("--help")});
    QCOMPARE(b.code, 0);
    QVERIFY(b.out.contains("--seeded gpt2-small --help"));
    const Run bm = attnviz({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("gpt2-small"),
                            QStringLiteral("--help")});
    QCOMPARE(bm.code, 0);
    QVERIFY(bm.out.contains("--observe"));
    QVERIFY(bm.out.contains("--context"));
    QCOMPARE(attnviz({QStringLiteral("frobnicate")}).code, 2);
}

static const QString kTok = QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/"));

void TestCli::tokenizeSubword_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QList<int>>("ids");
    QTest::addColumn<QStringList>("display");
    const QStringList gpt2{QStringLiteral("--vocab"), kTok + "gpt2/vocab.json", QStringLiteral("--merges"),
                           kTok + "gpt2/merges.txt"};
    const QStringList bert{QStringLiteral("--wordpiece"), kTok + "bert-base-uncased/vocab.txt"};
    QTest::addRow("gpt2") << (gpt2 + QStringList{"Hello world<|endoftext|>"}) << QList<int>{15496, 995, 50256}
                          << QStringList{"Hello", "␣world", "<|endoftext|>"};
    QTest::addRow("bert") << (bert + QStringList{"The [MASK] sat."}) << QList<int>{101, 1996, 103, 2938, 1012, 102}
                          << QStringList{"[CLS]", "the", "[MASK]", "sat", ".", "[SEP]"};
    QTest::addRow("bert cased") << (bert + QStringList{"--cased", "The"}) << QList<int>{101, 100, 102}
                                << QStringList{"[CLS]", "[UNK]", "[SEP]"};
}

void TestCli::tokenizeSubword()
{
    QFETCH(QStringList, args);
    QFETCH(QList<int>, ids);
    QFETCH(QStringList, display);
    const Run r = attnviz(QStringList{QStringLiteral("tokenize")} + args);
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QList<int> gotIds;
    QStringList gotDisplay;
    for (const QJsonValue v : o.value(QLatin1String("ids")).toArray())
        gotIds << v.toInt();
    for (const QJsonValue v : o.value(QLatin1String("display")).toArray())
        gotDisplay << v.toString();
    QCOMPARE(gotIds, ids);
    QCOMPARE(gotDisplay, display);
    QCOMPARE(o.value(QLatin1String("offsets")).toArray().size(), ids.size());
}

void TestCli::tokenizeSubwordBadInput_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::addRow("merges missing") << QStringList{"--vocab", kTok + "gpt2/vocab.json", "x"}
                                    << "needs both --vocab vocab.json and --merges merges.txt";
    QTest::addRow("both kinds") << QStringList{"--vocab", "a", "--merges", "b", "--wordpiece", "c", "x"}
                                << "not both";
    QTest::addRow("device") << QStringList{"--wordpiece", "/dev/zero", "x"} << "/dev/zero: not a regular file";
    QTest::addRow("folder") << QStringList{"--vocab", kTok + "gpt2", "--merges", kTok + "gpt2/merges.txt", "x"}
                            << "gpt2: is a directory";
    QTest::addRow("vocab is merges") << QStringList{"--vocab", kTok + "gpt2/merges.txt", "--merges",
                                                    kTok + "gpt2/merges.txt", "x"}
                                     << "merges.txt: malformed JSON: parse error at line 1, column 1";
    QTest::addRow("text without vocabulary") << QStringList{"some text"} << "needs --vocab/--merges or --wordpiece";
}

void TestCli::tokenizeSubwordBadInput()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const Run r = attnviz(QStringList{QStringLiteral("tokenize")} + args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(r.out.isEmpty());
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
