// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz model info|run`, `tokenize --model` and `bench --seeded` as a user runs them on the tiny
// fixture folders (tests/fixtures/models): the JSON read back against the float64 reference, a
// sharded copy, and the bad-folder table: one line naming the file and the tensor or field, exit
// code 2, nothing written.
#include "testpaths.h"

#include "attnviz/architecture.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/pretrained.h"
#include "attnviz/patching.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QtEndian>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/modelfolders.h"
#include "../support/runattnviz.h"

#include <sys/stat.h>

#include <cmath>
#include <functional>
#include <limits>

namespace {

using attnviz_test::Run;

Run execCli(const QStringList &args) { return attnviz_test::runAttnviz(args, 300000); }

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

// A copy of gpt2-tiny that reads 30,000 positions (its position table tiled to 30,000 rows).
QString hugePositions(const QTemporaryDir &tmp)
{
    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    editJson(dir + QStringLiteral("/config.json"), [](QJsonObject &o) {
        o.insert(QStringLiteral("n_positions"), 30000);
        o.insert(QStringLiteral("n_ctx"), 30000);
    });
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    QJsonObject e = st.header.value(QStringLiteral("transformer.wpe.weight")).toObject();
    const QJsonArray off = e.value(QStringLiteral("data_offsets")).toArray();
    const QByteArray rows = st.data.mid(int(off[0].toInteger()), int(off[1].toInteger() - off[0].toInteger()));
    const qint64 at = st.data.size();
    for (int i = 0; i < 30000 / 32 + 1; ++i)
        st.data += rows;
    st.data.truncate(int(at + qint64(30000) * 16 * 4));
    e.insert(QStringLiteral("shape"), QJsonArray{30000, 16});
    e.insert(QStringLiteral("data_offsets"), QJsonArray{at, at + qint64(30000) * 16 * 4});
    st.header.insert(QStringLiteral("transformer.wpe.weight"), e);
    writeSt(dir + QStringLiteral("/model.safetensors"), st);
    return dir;
}

// Whether this build runs under AddressSanitizer (packaging/dev.sh sanitize): its shadow memory
// needs terabytes of address space, so no address-space limit is set there (the budget still is
// the machine's).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// attnviz under `prlimit --as=BYTES` (an address-space limit, as `ulimit -v`), with `env` added.
Run limited(qint64 bytes, const QStringList &args, int timeoutMs = 120000, const QStringList &env = {})
{
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    for (const QString &kv : env)
        e.insert(kv.section(QLatin1Char('='), 0, 0), kv.section(QLatin1Char('='), 1));
    p.setProcessEnvironment(e);
    QStringList all = args;
    QString program = QString::fromUtf8(ATTNVIZ_BINARY);
    if (bytes > 0 && !kSanitized) {
        all.prepend(program);
        all.prepend(QStringLiteral("--as=%1").arg(bytes));
        program = QStringLiteral("prlimit");
    }
    p.start(program, all);
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

// A copy of gpt2-tiny whose token embedding has `rows` F32 rows of zeros (a hole in the file):
// mapped cheaply, then copied into float32 memory of its own (16-bit tensors are kept as stored).
QString hugeEmbedding(const QTemporaryDir &tmp, qint64 rows)
{
    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    editJson(dir + QStringLiteral("/config.json"), [&](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), rows); });
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    st.header.remove(QStringLiteral("transformer.wte.weight"));
    writeSt(dir + QStringLiteral("/model.safetensors"), st); // packed: the other tensors
    st = readSt(dir + QStringLiteral("/model.safetensors"));
    const qint64 at = st.data.size(), bytes = rows * 16 * 4;
    st.header.insert(QStringLiteral("transformer.wte.weight"),
                     QJsonObject{{QStringLiteral("dtype"), QStringLiteral("F32")},
                                 {QStringLiteral("shape"), QJsonArray{rows, 16}},
                                 {QStringLiteral("data_offsets"), QJsonArray{at, at + bytes}}});
    const QByteArray h = QJsonDocument(st.header).toJson(QJsonDocument::Compact);
    QByteArray len(8, '\0');
    for (int i = 0; i < 8; ++i)
        len[i] = char((quint64(h.size()) >> (8 * i)) & 0xFF);
    QFile f(dir + QStringLiteral("/model.safetensors"));
    f.open(QIODevice::WriteOnly | QIODevice::Truncate);
    f.write(len + h + st.data);
    f.resize(8 + h.size() + at + bytes); // the embedding: zeros, a hole in the file
    f.close();
    return dir;
}

constexpr qint64 k4GB = qint64(4) << 30;

QString manyTokens(int n)
{
    QString t;
    t.reserve(n * 2);
    for (int i = 0; i < n; ++i)
        t += QStringLiteral(" a");
    return t;
}

} // namespace

class TestModelCli : public QObject {
    Q_OBJECT
private slots:
    void helpNamesWhatIsSupported_data();
    void helpNamesWhatIsSupported();
    void runGpt2_data();
    void runGpt2();
    void runBertMasked();
    void runT5();
    void t5Refusals();
    void exportCrossAndAlignment();
    void exportPipeline_data();
    void exportPipeline();
    void exportPipelineRefusals();
    void generateSeq2Seq();
    void runBart();
    void info();
    void tokenizeWithModel();
    void sharded();
    void badFolders_data();
    void badFolders();
    void benchSeeded();
    void exportModel_data();
    void exportModel();
    void exportModelRefusals();
    // hostile inputs on the command line, one class a letter
    void memoryBudget();            // A, B: refused before allocating, named, under a 4 GB address space too
    void windowUnderAddressLimit(); // A: the window on the same folder and text, headless, cut and up
    void stdoutWriteErrors();       // K
    void specialOutputs();          // J
    void argumentsBeforeSettings(); // L
    void benchSmallModels();        // N
    void nonFiniteResults();        // I
    void nonFinitePredictions();
    void weightsOutOfMemory();      // D
    void weightsOutOfMemoryFromSession(); // D: the window stays up, on the word vectors
    void unreadableFiles_data();
    void unreadableFiles();         // P: a file that cannot be read is bad input (exit 2), named
    void ablate_data();
    void ablate();
    void ablateRefusals_data();
    void ablateRefusals();
    void patchSweeps();
    void patchRefusals_data();
    void patchRefusals();
};

// `window --help` and `export --help` name every model family the core reads (its own table) and
// `window --help` every weights colour map; they named GPT-2, BERT and DistilBERT only.
void TestModelCli::helpNamesWhatIsSupported_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QStringList>("names");
    QStringList families;
    for (const std::string &t : attnviz::knownModelTypes())
        families << QString::fromStdString(t);
    QVERIFY(families.size() > 3);
    QTest::addRow("window") << QStringLiteral("window")
                            << (families + QStringList{QStringLiteral("viridis"), QStringLiteral("cividis"),
                                                       QStringLiteral("magma"), QStringLiteral("greys")});
    QTest::addRow("export") << QStringLiteral("export") << families;
}

void TestModelCli::helpNamesWhatIsSupported()
{
    QFETCH(QString, command);
    QFETCH(QStringList, names);
    const Run h = execCli({command, QStringLiteral("--help")});
    QCOMPARE(h.code, 0);
    const QString text = QString::fromUtf8(h.out).simplified(); // (Qt wraps the option texts)
    for (const QString &name : names)
        QVERIFY2(text.contains(name), qPrintable(QStringLiteral("%1 --help does not name %2").arg(command, name)));
}

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
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")),
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
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("bert-tiny-legacy")),
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

// An encoder-decoder folder: the source read by the encoder, the target after the decoder's start
// token, and the three attentions with their shapes and as distributions.
void TestModelCli::runT5()
{
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("t5-tiny")),
                           QStringLiteral("--text"), QStringLiteral("the 3rd of March"), QStringLiteral("--target"),
                           QStringLiteral("1998-03-03"), QStringLiteral("--precision"), QStringLiteral("float64")});
    QCOMPARE(r.code, 0);
    const QJsonObject got = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(got.value(QStringLiteral("model")).toObject().value(QStringLiteral("family")).toString(), QStringLiteral("t5"));
    const QJsonArray source = got.value(QStringLiteral("source_tokens")).toArray(), target = got.value(QStringLiteral("tokens")).toArray();
    QVERIFY(source.size() > 2);
    QCOMPARE(source.last().toString(), QStringLiteral("</s>"));
    QCOMPARE(got.value(QStringLiteral("source_ids")).toArray().last().toInt(), 1);
    QCOMPARE(got.value(QStringLiteral("ids")).toArray().first().toInt(), 0); // decoder start = pad
    QVERIFY(target.size() > 2);
    const qsizetype s = source.size(), t = target.size();
    auto check = [&](const char *key, int layers, qsizetype rows, qsizetype cols, bool causal) {
        const QJsonArray a = got.value(QLatin1String(key)).toArray();
        QCOMPARE(a.size(), layers);
        for (const QJsonValue &layer : a) {
            QCOMPARE(layer.toArray().size(), 4);
            for (const QJsonValue &head : layer.toArray()) {
                QCOMPARE(head.toArray().size(), rows);
                for (qsizetype i = 0; i < rows; ++i) {
                    const QJsonArray row = head.toArray()[i].toArray();
                    QCOMPARE(row.size(), cols);
                    double sum = 0;
                    for (qsizetype j = 0; j < cols; ++j) {
                        sum += row[j].toDouble();
                        if (causal && j > i)
                            QCOMPARE(row[j].toDouble(), 0.0);
                    }
                    QVERIFY2(std::abs(sum - 1) < 1e-12, key);
                }
            }
        }
    };
    check("encoder_attentions", 2, s, s, false);
    check("attentions", 3, t, t, true);
    check("cross_attentions", 3, t, s, false);
}

// BART through its byte-level BPE: the source as BartTokenizer encodes it (<s> ... </s>), the
// decoder started at </s> and reading the target's <s> (shift_tokens_right of the labels), the
// three attentions shaped as T5's; a Marian folder without its tokenizer files refused in one line.
void TestModelCli::runBart()
{
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("bart-tiny")),
                           QStringLiteral("--text"), QStringLiteral("the end of the sea"), QStringLiteral("--target"),
                           QStringLiteral("the way"), QStringLiteral("--precision"), QStringLiteral("float64")});
    QCOMPARE(r.code, 0);
    const QJsonObject got = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(got.value(QStringLiteral("model")).toObject().value(QStringLiteral("family")).toString(),
             QStringLiteral("bart"));
    // make_bart.py's BPE ids of both texts
    QCOMPARE(got.value(QStringLiteral("source_ids")).toArray(),
             QJsonArray({0, 271, 36, 267, 104, 266, 262, 272, 273, 2}));
    QCOMPARE(got.value(QStringLiteral("ids")).toArray(), QJsonArray({2, 0, 271, 276}));
    const QJsonArray source = got.value(QStringLiteral("source_tokens")).toArray();
    QCOMPARE(source.first().toString(), QStringLiteral("<s>"));
    QCOMPARE(source.last().toString(), QStringLiteral("</s>"));
    const QJsonArray cross = got.value(QStringLiteral("cross_attentions")).toArray();
    QCOMPARE(cross.size(), 3);
    QCOMPARE(cross[0].toArray().size(), 4);
    QCOMPARE(cross[0].toArray()[0].toArray().size(), 4);               // decoder tokens
    QCOMPARE(cross[0].toArray()[0].toArray()[0].toArray().size(), 10); // source tokens
    QCOMPARE(got.value(QStringLiteral("encoder_attentions")).toArray().size(), 2);
    const Run m = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("marian-tiny")),
                           QStringLiteral("--text"), QStringLiteral("Hello"), QStringLiteral("--target"),
                           QStringLiteral("Hallo")});
    QVERIFY(m.code != 0);
    QVERIFY2(m.err.contains("marian-tiny/source.spm, target.spm and vocab.json: missing (Marian's tokenizer)"),
             m.err.constData());
    QCOMPARE(m.err.count('\n'), 1);
}

// generate for an encoder-decoder model: the core's generateTarget (its own test: tst_seq2seqgenerate)
// written out — source ids and tokens, the generated ids and tokens, the search, and with
// --attention each step's cross-attention (layers × heads × source) — and the decoded target alone
// without --json.
void TestModelCli::generateSeq2Seq()
{
    using namespace attnviz;
    const QString t5 = fixture(QStringLiteral("t5-tiny")), text = QStringLiteral("the 3rd of March");
    Run r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), t5, QStringLiteral("--text"), text,
                     QStringLiteral("--beams"), QStringLiteral("2"), QStringLiteral("--max-new"), QStringLiteral("5"),
                     QStringLiteral("--json"), QStringLiteral("--attention")});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.isEmpty(), r.err.constData());
    const QJsonObject got = QJsonDocument::fromJson(r.out).object();
    std::unique_ptr<Model> m;
    Status st = openPretrained(t5.toStdString(), {}, m);
    QVERIFY2(st.ok(), st.message.c_str());
    TraceRequest req;
    req.text = text.toStdString();
    Seq2SeqGenerateOptions opt;
    opt.beams = 2;
    opt.maxNew = 5;
    Seq2SeqGeneration g;
    st = generateTarget(*m, req, opt, g);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(got.value(QStringLiteral("text")).toString(), text);
    const QJsonArray sourceIds = got.value(QStringLiteral("source_ids")).toArray(),
                     sourceTokens = got.value(QStringLiteral("source_tokens")).toArray(),
                     generated = got.value(QStringLiteral("generated")).toArray(),
                     tokens = got.value(QStringLiteral("generated_tokens")).toArray();
    QCOMPARE(sourceIds.size(), qsizetype(g.source.size()));
    for (qsizetype i = 0; i < sourceIds.size(); ++i)
        QCOMPARE(sourceIds[i].toInt(), g.source[size_t(i)].id);
    QCOMPARE(sourceTokens.last().toString(), QStringLiteral("</s>"));
    QCOMPARE(generated.size(), qsizetype(g.ids.size()));
    QCOMPARE(generated.size(), 5); // the random model never ends: --max-new
    for (qsizetype i = 0; i < generated.size(); ++i) {
        QCOMPARE(generated[i].toInt(), g.ids[size_t(i)]);
        QCOMPARE(tokens[i].toString().toStdString(), g.tokens[size_t(i)].text);
    }
    QCOMPARE(got.value(QStringLiteral("continuation")).toString().toStdString(), g.text);
    const QJsonObject search = got.value(QStringLiteral("search")).toObject();
    QCOMPARE(search.value(QStringLiteral("beams")).toInt(), 2);
    QCOMPARE(search.value(QStringLiteral("max_length")).toInt(), 6);
    QCOMPARE(search.value(QStringLiteral("length_penalty")).toDouble(), 1.0);
    QCOMPARE(search.value(QStringLiteral("early_stopping")), QJsonValue(false));
    QCOMPARE(search.value(QStringLiteral("score")).toDouble(), g.score);
    QCOMPARE(search.value(QStringLiteral("log_prob")).toDouble(), g.logProb);
    QCOMPARE(g.score, g.logProb / 5); // length_penalty 1: the mean over the 5 generated tokens
    const QJsonArray cross = got.value(QStringLiteral("cross_attention")).toArray();
    QCOMPARE(cross.size(), 5);
    for (qsizetype s = 0; s < cross.size(); ++s) {
        const QJsonArray layers = cross[s].toArray();
        QCOMPARE(layers.size(), 3);
        for (int l = 0; l < 3; ++l) {
            QCOMPARE(layers[l].toArray().size(), 4);
            for (int h = 0; h < 4; ++h) {
                const QJsonArray row = layers[l].toArray()[h].toArray();
                QCOMPARE(row.size(), sourceIds.size());
                double sum = 0;
                for (qsizetype j = 0; j < row.size(); ++j) {
                    QCOMPARE(row[j].toDouble(), g.cross[size_t(s)](l * 4 + h, Eigen::Index(j)));
                    sum += row[j].toDouble();
                }
                QVERIFY(std::abs(sum - 1) < 1e-5);
            }
        }
    }
    // the folder's settings (t5-tiny names none: greedy) and the target as text, one line
    r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), t5, QStringLiteral("--text"), text,
                 QStringLiteral("--max-new"), QStringLiteral("4")});
    QCOMPARE(r.code, 0);
    opt.beams = 1;
    opt.maxNew = 4;
    st = generateTarget(*m, req, opt, g);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(r.out.toStdString(), g.text + "\n");
    QVERIFY(!g.text.empty());
    // --attention without --json
    r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), t5, QStringLiteral("--text"), text,
                 QStringLiteral("--attention")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--attention: the cross-attention is written in --json's output: add --json"), r.err.constData());
}

// What is not computed for encoder-decoder models yet is refused in one line; --target elsewhere too.
void TestModelCli::t5Refusals()
{
    const QString t5 = fixture(QStringLiteral("t5-tiny"));
    Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"),
                 QStringLiteral("a"), QStringLiteral("--target"), QStringLiteral("b")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--target: only encoder-decoder models (t5, bart, mbart, marian) read a target"),
             r.err.constData());
    // generate: greedy or beam search, not sampling; --beams 1 to 4; the encoder-decoder options
    // refused for a causal model
    const struct {
        QStringList args;
        const char *message;
    } generateRefusals[] = {
        {{QStringLiteral("--model"), t5, QStringLiteral("--temperature"), QStringLiteral("0.7")},
         "--temperature: sampling from encoder-decoder models (t5) is not computed yet: greedy or --beams"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--beams"), QStringLiteral("5")}, "--beams: 1 (greedy) to 4, not 5"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--tokens"), QStringLiteral("3")},
         "--tokens: t5-tiny is an encoder-decoder model: --max-new counts what it generates"},
        {{QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--beams"), QStringLiteral("2")},
         "--beams: encoder-decoder models only (t5, bart, mbart, marian); gpt2-tiny is gpt2"},
    };
    for (const auto &g : generateRefusals) {
        r = execCli(QStringList{QStringLiteral("generate"), QStringLiteral("--text"), QStringLiteral("a")} + g.args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(g.message), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(r.out.isEmpty());
    }
    // export renders the views with no target and no attention choice: not yet
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("x.png"));
    r = execCli({QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a b c"), QStringLiteral("--model"), t5,
                 QStringLiteral("--out"), out});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--view weights: t5-tiny is an encoder-decoder model (t5): export draws its cross-attention "
                            "(--view cross), its word alignment (--view alignment) and its decoder's logit lens and "
                            "attribution (--view lens, --view dla)"), r.err.constData());
    QCOMPARE(r.err.count("attnviz export:"), 1);
    QVERIFY(!QFile::exists(out));
}

// export --view cross|alignment with an encoder-decoder model and --target: the cross-attention's
// matrix as `model run` computes it (target rows x source columns), the word alignment's matrix
// (rows summing to 1, each row's argmax), figures in every format; a model of another kind, or
// --target without an encoder-decoder model, refused in one line with exit code 2.
void TestModelCli::exportCrossAndAlignment()
{
    const QString t5 = fixture(QStringLiteral("t5-tiny"));
    const QString source = QStringLiteral("the 3rd of March, 1998"), target = QStringLiteral("der dritte M\u00e4rz");
    const Run ref = execCli({QStringLiteral("model"), QStringLiteral("run"), t5, QStringLiteral("--text"), source,
                             QStringLiteral("--target"), target});
    QCOMPARE(ref.code, 0);
    const QJsonObject got = QJsonDocument::fromJson(ref.out).object();
    const QJsonArray cross = got.value(QStringLiteral("cross_attentions")).toArray();
    QCOMPARE(cross.size(), 3);
    QTemporaryDir tmp;
    const QStringList common{QStringLiteral("export"), QStringLiteral("--model"), t5, QStringLiteral("--sentence"), source,
                             QStringLiteral("--target"), target};
    // cross: layer 2, head 1, as CSV: a header row, then a row per target token
    const QString csv = tmp.filePath(QStringLiteral("cross.csv"));
    Run r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("cross"), QStringLiteral("--layer"), QStringLiteral("2"),
                                         QStringLiteral("--head"), QStringLiteral("1"), QStringLiteral("--out"), csv});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
    const QJsonArray want = cross[2].toArray()[1].toArray();
    QCOMPARE(lines.size(), want.size() + 1);
    for (qsizetype i = 0; i < want.size(); ++i) {
        const QList<QByteArray> cells = lines[i + 1].split(',');
        const QJsonArray row = want[i].toArray();
        QCOMPARE(cells.size(), row.size() + 1);
        for (qsizetype j = 0; j < row.size(); ++j)
            QVERIFY2(std::abs(cells[j + 1].toDouble() - row[j].toDouble()) < 1e-6, lines[i + 1].constData());
    }
    // alignment: the mean of layers and heads by default, as JSON with its words and argmax
    const QString json = tmp.filePath(QStringLiteral("alignment.json"));
    r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("alignment"), QStringLiteral("--out"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile jf(json);
    QVERIFY(jf.open(QIODevice::ReadOnly));
    const QJsonObject a = QJsonDocument::fromJson(jf.readAll()).object();
    QCOMPARE(a.value(QStringLiteral("view")).toString(), QStringLiteral("alignment"));
    const QJsonArray rows = a.value(QStringLiteral("rows")).toArray(), cols = a.value(QStringLiteral("columns")).toArray();
    QVERIFY(cols.contains(QStringLiteral("1998")));
    QVERIFY(cols.contains(QStringLiteral("March,")));
    QVERIFY(cols.size() < got.value(QStringLiteral("source_tokens")).toArray().size()); // pieces merged into words
    const QJsonObject extra = a.value(QStringLiteral("extra")).toObject();
    QCOMPARE(extra.value(QStringLiteral("layer")).toString(), QStringLiteral("mean"));
    const QJsonArray data = a.value(QStringLiteral("data")).toArray(), argmax = extra.value(QStringLiteral("argmax")).toArray();
    QCOMPARE(data.size(), rows.size());
    for (qsizetype i = 0; i < data.size(); ++i) {
        const QJsonArray row = data[i].toArray();
        QCOMPARE(row.size(), cols.size());
        double sum = 0, best = -1;
        int at = -1;
        for (qsizetype j = 0; j < row.size(); ++j) {
            sum += row[j].toDouble();
            if (row[j].toDouble() > best) {
                best = row[j].toDouble();
                at = int(j);
            }
        }
        QVERIFY(std::abs(sum - 1) < 1e-5);
        QCOMPARE(argmax[i].toInt(), at);
    }
    // the figures
    for (const char *view : {"cross", "alignment"})
        for (const char *suffix : {"png", "svg", "pdf"}) {
            const QString fig = tmp.filePath(QStringLiteral("%1.%2").arg(QLatin1String(view), QLatin1String(suffix)));
            r = execCli(common + QStringList{QStringLiteral("--view"), QLatin1String(view), QStringLiteral("--out"), fig});
            QVERIFY2(r.code == 0, r.err.constData());
            QVERIFY2(QFileInfo(fig).size() > 1000, qPrintable(fig));
        }
    // the npy of the alignment: float32, rows x columns
    const QString npy = tmp.filePath(QStringLiteral("alignment.npy"));
    r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("alignment"), QStringLiteral("--layer"), QStringLiteral("1"),
                                     QStringLiteral("--head"), QStringLiteral("0"), QStringLiteral("--out"), npy});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile nf(npy);
    QVERIFY(nf.open(QIODevice::ReadOnly));
    QVERIFY(nf.readAll().contains(QStringLiteral("'shape': (%1,%2)").arg(rows.size()).arg(cols.size()).toLatin1()));

    // refused: a decoder-only model, the word vectors, --target without an encoder-decoder model
    const QString png = tmp.filePath(QStringLiteral("no.png"));
    const struct {
        QStringList args;
        const char *message;
    } refusals[] = {
        {{QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--view"), QStringLiteral("cross")},
         "--view cross draws an encoder-decoder model's cross-attention: give --model DIR of one (t5, bart, mbart, marian); gpt2-tiny is gpt2"},
        {{QStringLiteral("--view"), QStringLiteral("alignment")},
         "--view alignment aligns an encoder-decoder model's words: give --model DIR of one (t5, bart, mbart, marian); the word vectors have none"},
        {{QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--target"), QStringLiteral("b")},
         "--target: only encoder-decoder models (t5, bart, mbart, marian) read a target; gpt2-tiny is gpt2"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("cross"), QStringLiteral("--layer"), QStringLiteral("7")},
         "--layer 7: "},
    };
    for (const auto &x : refusals) {
        r = execCli(QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a b"), QStringLiteral("--out"), png} + x.args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(x.message), r.err.constData());
        QCOMPARE(r.err.count("attnviz export:"), 1); // one line (Qt may add its own notes)
        QVERIFY(!QFile::exists(png));
    }
}

// export --view pipeline of an encoder-decoder model: the Weights stage of the attention chosen
// (--attention), layer and head, as JSON, equals model run's weights of that attention; mBART's
// languages (--src-lang, --tgt-lang) reach both; the figure is written.
void TestModelCli::exportPipeline_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("attention");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<QString>("key"); // model run's
    QTest::addColumn<QStringList>("languages");
    QTest::addRow("t5 encoder") << "t5-tiny" << "encoder" << 1 << 2 << "encoder_attentions" << QStringList();
    QTest::addRow("t5 decoder") << "t5-tiny" << "decoder" << 2 << 0 << "attentions" << QStringList();
    QTest::addRow("t5 cross") << "t5-tiny" << "cross" << 0 << 3 << "cross_attentions" << QStringList();
    QTest::addRow("bart cross") << "bart-tiny" << "cross" << 2 << 1 << "cross_attentions" << QStringList();
    QTest::addRow("mbart decoder, ro_RO") << "mbart-spm-tiny" << "decoder" << 1 << 3 << "attentions"
                                          << QStringList{QStringLiteral("--src-lang"), QStringLiteral("de_DE"),
                                                         QStringLiteral("--tgt-lang"), QStringLiteral("ro_RO")};
}

void TestModelCli::exportPipeline()
{
    QFETCH(QString, model);
    QFETCH(QString, attention);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(QString, key);
    QFETCH(QStringList, languages);
    const QString dir = fixture(model);
    const QString source = QStringLiteral("the program"), target = QStringLiteral("free program");
    const Run ref = execCli(QStringList{QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), source,
                                       QStringLiteral("--target"), target} + languages);
    QVERIFY2(ref.code == 0, ref.err.constData());
    const QJsonObject got = QJsonDocument::fromJson(ref.out).object();
    const QJsonArray want = got.value(key).toArray()[layer].toArray()[head].toArray();
    QVERIFY(want.size() > 2);
    QTemporaryDir tmp;
    const QStringList common = QStringList{QStringLiteral("export"), QStringLiteral("--model"), dir, QStringLiteral("--sentence"), source,
                                           QStringLiteral("--target"), target, QStringLiteral("--view"), QStringLiteral("pipeline"),
                                           QStringLiteral("--attention"), attention, QStringLiteral("--layer"), QString::number(layer),
                                           QStringLiteral("--head"), QString::number(head)} + languages;
    const QString json = tmp.filePath(QStringLiteral("weights.json"));
    Run r = execCli(common + QStringList{QStringLiteral("--out"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o.value(QStringLiteral("view")).toString(), QStringLiteral("pipeline"));
    const QJsonObject extra = o.value(QStringLiteral("extra")).toObject();
    QCOMPARE(extra.value(QStringLiteral("stage")).toString(), QStringLiteral("Attention weights"));
    QCOMPARE(extra.value(QStringLiteral("attention")).toString(), attention);
    QCOMPARE(extra.value(QStringLiteral("layer")).toInt(), layer);
    QCOMPARE(extra.value(QStringLiteral("head")).toInt(), head);
    const QJsonArray data = o.value(QStringLiteral("data")).toArray();
    QCOMPARE(data.size(), want.size());
    const QJsonArray rows = o.value(QStringLiteral("rows")).toArray(), cols = o.value(QStringLiteral("columns")).toArray();
    QCOMPARE(rows.size(), want.size());
    const QJsonArray queries = got.value(attention == QLatin1String("encoder") ? QStringLiteral("source_tokens") : QStringLiteral("tokens")).toArray();
    const QJsonArray keys = got.value(attention == QLatin1String("decoder") ? QStringLiteral("tokens") : QStringLiteral("source_tokens")).toArray();
    QCOMPARE(rows.size(), queries.size());
    QCOMPARE(cols.size(), keys.size());
    for (qsizetype i = 0; i < want.size(); ++i) {
        const QJsonArray w = want[i].toArray(), g = data[i].toArray();
        QCOMPARE(g.size(), w.size());
        for (qsizetype j = 0; j < w.size(); ++j)
            QVERIFY2(g[j].toDouble() == w[j].toDouble() || std::abs(g[j].toDouble() - w[j].toDouble()) < 1e-7,
                     qPrintable(QStringLiteral("%1, %2: %3 vs %4").arg(i).arg(j).arg(g[j].toDouble()).arg(w[j].toDouble())));
    }
    if (!languages.isEmpty()) { // the decoder starts at ro_RO's code; the source ends in de_DE's
        QCOMPARE(got.value(QStringLiteral("tokens")).toArray().first().toString(), QStringLiteral("ro_RO"));
        QCOMPARE(got.value(QStringLiteral("source_tokens")).toArray().last().toString(), QStringLiteral("de_DE"));
        QCOMPARE(rows.first().toString(), QStringLiteral("ro_RO"));
    }
    // another stage by its name, and by its number; a figure
    const QString raw = tmp.filePath(QStringLiteral("raw.csv"));
    r = execCli(common + QStringList{QStringLiteral("--stage"), QStringLiteral("raw-scores"), QStringLiteral("--out"), raw});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(QFileInfo(raw).size() > 100);
    const QString png = tmp.filePath(QStringLiteral("stage.png"));
    r = execCli(common + QStringList{QStringLiteral("--stage"), QStringLiteral("1"), QStringLiteral("--out"), png});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(QFileInfo(png).size() > 1000);
    const QString shots = qEnvironmentVariable("ATTNVIZ_PIPELINE_SHOTS");
    if (!shots.isEmpty()) {
        const QString name = QString::fromLatin1(QTest::currentDataTag()).replace(QLatin1Char(' '), QLatin1Char('-')).remove(QLatin1Char(','));
        r = execCli(common + QStringList{QStringLiteral("--out"), shots + QStringLiteral("/pipeline-%1.png").arg(name)});
        QCOMPARE(r.code, 0);
    }
}

void TestModelCli::exportPipelineRefusals()
{
    const QString t5 = fixture(QStringLiteral("t5-tiny"));
    QTemporaryDir tmp;
    const QString png = tmp.filePath(QStringLiteral("no.png"));
    const struct {
        QStringList args;
        const char *message;
    } refusals[] = {
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("pipeline"), QStringLiteral("--stage"), QStringLiteral("nowhere")},
         "--stage nowhere: the cross attention's pipeline has 1 residual stream, 2 encoder output, 3 q, 4 k, 5 v, 6 raw scores, "
         "7 scaled scores, 8 masked scores, 9 attention weights, 10 context, 11 concatenated heads, 12 output"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("pipeline"), QStringLiteral("--stage"), QStringLiteral("scores")},
         "--stage scores: the cross attention's pipeline has 1 residual stream,"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("pipeline"), QStringLiteral("--attention"), QStringLiteral("sideways")},
         "--attention sideways: expected encoder, decoder or cross"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("cross"), QStringLiteral("--stage"), QStringLiteral("1")},
         "--stage: for --view pipeline, not --view cross"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--view"), QStringLiteral("pipeline"), QStringLiteral("--attention"), QStringLiteral("encoder"),
          QStringLiteral("--layer"), QStringLiteral("2")},
         "--layer 2: the encoder attention has layers 0..1"},
        {{QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--view"), QStringLiteral("pipeline")},
         "--view pipeline draws a stage of an encoder-decoder model's pipeline (of other models: not yet, File ▸ Export in the window): "
         "give --model DIR of one (t5, bart, mbart, marian); gpt2-tiny is gpt2"},
        {{QStringLiteral("--model"), t5, QStringLiteral("--tgt-lang"), QStringLiteral("ro_RO"), QStringLiteral("--view"), QStringLiteral("cross")},
         "--tgt-lang: t5-tiny (t5) reads no language codes: only mBART folders with sentencepiece.bpe.model do"},
        {{QStringLiteral("--model"), fixture(QStringLiteral("mbart-spm-tiny")), QStringLiteral("--src-lang"), QStringLiteral("xx_YY"),
          QStringLiteral("--view"), QStringLiteral("cross")},
         "--src-lang: language xx_YY: mbart-spm-tiny knows 25 codes: ar_AR,"},
    };
    for (const auto &x : refusals) {
        const Run r = execCli(QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a b"), QStringLiteral("--out"), png} +
                              x.args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(x.message), r.err.constData());
        QCOMPARE(r.err.count("attnviz export:"), 1);
        QVERIFY(!QFile::exists(png));
    }
}

void TestModelCli::info()
{
    Run r = execCli({QStringLiteral("model"), QStringLiteral("info"), fixture(QStringLiteral("distilbert-tiny"))});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("family      distilbert"));
    QVERIFY(r.out.contains("vocabulary  30,522"));
    QVERIFY(r.out.contains("dtype       F16"));
    QVERIFY(r.out.contains("WordPiece"));
    r = execCli({QStringLiteral("model"), QStringLiteral("info"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--json")});
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
    const Run r = execCli({QStringLiteral("tokenize"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
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
    const Run a = execCli({QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), text});
    const Run b = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"), text});
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
    QTest::addRow("unknown model_type") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("model_type"), QStringLiteral("mamba")); })
                                        << QStringList{"config.json", "model_type", "mamba"};
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
    // C, G: every JSON of the folder through the hardened reader
    auto raw = [](const char *name, std::function<void(QByteArray &)> edit) {
        return Spoil([name, edit](const QString &d) {
            QFile f(d + QLatin1Char('/') + QLatin1String(name));
            f.open(QIODevice::ReadOnly);
            QByteArray b = f.readAll();
            f.close();
            edit(b);
            QFile::remove(f.fileName()); // a copy of a link's target, written anew
            f.open(QIODevice::WriteOnly | QIODevice::Truncate);
            f.write(b);
            return d;
        });
    };
    auto closeWith = [](const QByteArray &extra) {
        return [extra](QByteArray &b) { b.truncate(b.lastIndexOf('}')); b += extra + "}"; };
    };
    QTest::addRow("config.json duplicate key") << g << raw("config.json", closeWith(R"(, "n_head": 8)"))
                                               << QStringList{"config.json", "n_head: duplicate key"};
    QTest::addRow("config.json nested 2,000,000 deep") << g << raw("config.json", [](QByteArray &b) {
        b.truncate(b.lastIndexOf('}'));
        b += ", \"x\": " + QByteArray(2'000'000, '[') + QByteArray(2'000'000, ']') + "}";
    }) << QStringList{"config.json", "x: nested deeper than 64 levels"};
    QTest::addRow("vocab.json duplicate token") << g << raw("vocab.json", closeWith(R"(, "!": 5)"))
                                                << QStringList{"vocab.json", "!: duplicate key"};
    QTest::addRow("tokenizer_config.json duplicate key") << "bert-tiny" << raw("tokenizer_config.json", closeWith(R"(, "do_lower_case": false)"))
                                                         << QStringList{"tokenizer_config.json", "do_lower_case: duplicate key"};
    // a sharded copy whose index.json is then edited
    auto sharded = [raw](std::function<void(QByteArray &)> edit) {
        const Spoil index = raw("model.safetensors.index.json", edit);
        return Spoil([index](const QString &d) { shard(d); return index(d); });
    };
    QTest::addRow("index.json duplicate tensor") << g << sharded([](QByteArray &b) {
        b.replace("\"weight_map\": {", "\"weight_map\": {\"transformer.wte.weight\": \"missing.safetensors\", ");
    }) << QStringList{"model.safetensors.index.json", "weight_map.transformer.wte.weight: duplicate key"};
    // E, O: strings from the folder quoted short and escaped
    QTest::addRow("model_type 5 MB") << g << config([](QJsonObject &o) { o.insert(QStringLiteral("model_type"), QString(5'000'000, QLatin1Char('x'))); })
                                     << QStringList{"config.json", "model_type: \"xxxx", "(5.0 MB) is not a family"};
    QTest::addRow("model_type forging a line") << g << config([](QJsonObject &o) {
        o.insert(QStringLiteral("model_type"), QStringLiteral("x\n\x1b[2J\x1b[31mattnviz: all good"));
    }) << QStringList{"config.json", "model_type: \"x\\x0a\\x1b[2J\\x1b[31mattnviz: all good\""};
    QTest::addRow("shard name forging a line") << g << sharded([](QByteArray &b) {
        b.replace("model-00002-of-00002.safetensors", "\\u001b[2J\\nattnviz: all good");
    }) << QStringList{"\"\\x1b[2J\\x0aattnviz: all good\" is not a file in the folder"}; // the shard's name, escaped
    QTest::addRow("vocab.json token forging a line") << g << raw("vocab.json", closeWith(R"(, "\u001b[2J\nattnviz: all good": 7, "\u001b[2J\nattnviz: all good": 8)"))
                                                     << QStringList{"vocab.json", "\\x1b[2J\\x0aattnviz: all good: duplicate key"};
    // H: offsets that alias another tensor's bytes
    QTest::addRow("tensors alias") << g << tensors([](Safetensors &s) {
        QJsonObject e = s.header.value(QStringLiteral("transformer.ln_f.bias")).toObject();
        e.insert(QStringLiteral("data_offsets"), s.header.value(QStringLiteral("transformer.ln_f.weight")).toObject().value(QStringLiteral("data_offsets")));
        s.header.insert(QStringLiteral("transformer.ln_f.bias"), e);
    }) << QStringList{"model.safetensors", "overlap the tensor before it"};
    // P: an index.json that cannot be read is not "missing"
    QTest::addRow("index.json a directory") << g << Spoil([](const QString &d) {
        QFile::remove(d + QStringLiteral("/model.safetensors"));
        QDir().mkdir(d + QStringLiteral("/model.safetensors.index.json"));
        return d;
    }) << QStringList{"model.safetensors.index.json", "is a directory"};
}

void TestModelCli::badFolders()
{
    QFETCH(QString, model);
    QFETCH(std::function<QString(const QString &)>, spoil);
    QFETCH(QStringList, mentions);
    QTemporaryDir tmp;
    const QString dir = spoil(copyFolder(model, tmp));
    const QString out = tmp.filePath(QStringLiteral("out.json"));
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), QStringLiteral("hi"),
                           QStringLiteral("-o"), out});
    QCOMPARE(r.code, 2);
    QVERIFY(!QFile::exists(out));
    const QString err = QString::fromUtf8(r.err).trimmed();
    QCOMPARE(err.count(QLatin1Char('\n')), 0);
    QVERIFY2(!r.err.contains('\x1b') && r.err.size() < 1000, r.err.left(1000).constData()); // O, E: an escaped excerpt
    QVERIFY2(!r.err.contains("[json.exception"), r.err.constData());                    // P
    for (const QString &m : mentions)
        QVERIFY2(err.contains(m), qPrintable(err));
    // model info says the same
    const Run i = execCli({QStringLiteral("model"), QStringLiteral("info"), dir});
    QCOMPARE(i.code, 2);
    QCOMPARE(QString::fromUtf8(i.err).trimmed().section(QLatin1Char(':'), 1), err.section(QLatin1Char(':'), 1));
}

void TestModelCli::benchSeeded()
{
    const Run r = execCli({QStringLiteral("bench"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                           QStringLiteral("--tokens"), QStringLiteral("8,16"), QStringLiteral("--repeat"), QStringLiteral("1"),
                           QStringLiteral("--typed"), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const QJsonArray rows = o.value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 6); // full, appended and typed (--typed) at 8 and 16
    QCOMPARE(rows[1].toObject().value(QStringLiteral("tokens")).toInt(), 9);
    QCOMPARE(rows[2].toObject().value(QStringLiteral("what")).toString(), QStringLiteral("one token typed (two traces, growing)"));
    QVERIFY(rows[2].toObject().value(QStringLiteral("ms")).toDouble() > 0);
    QVERIFY(o.value(QStringLiteral("peak_rss_mb")).toDouble() > 0);
    const Run bad = execCli({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("gpt3")});
    QCOMPARE(bad.code, 2);
    QVERIFY(bad.err.contains("gpt2-small, bert-base, smollm2-135m, qwen3-0.6b, llama3.2-1b"));
    // --context: a rotary shape's positions only, refused before any model is built
    const Run learned = execCli({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("gpt2-small"),
                                 QStringLiteral("--context"), QStringLiteral("4096")});
    QCOMPARE(learned.code, 2);
    QVERIFY2(learned.err.contains("gpt2-small learns a table of its positions"), learned.err.constData());
    const Run folder = execCli({QStringLiteral("bench"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                                QStringLiteral("--context"), QStringLiteral("4096")});
    QCOMPARE(folder.code, 2);
    QVERIFY2(folder.err.contains("--context: only with --seeded"), folder.err.constData());
    const Run one = execCli({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("smollm2-135m"),
                             QStringLiteral("--context"), QStringLiteral("1")});
    QCOMPARE(one.code, 2);
    QVERIFY2(one.err.contains("--context: a length of 2 positions or more, not 1"), one.err.constData());
    // --map-device: cpu or gpu, gpu only with a map to draw (tests/gpu/tst_gpumap times it)
    const Run device = execCli({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("smollm2-135m"),
                                QStringLiteral("--map"), QStringLiteral("8"), QStringLiteral("--map-device"), QStringLiteral("tpu")});
    QCOMPARE(device.code, 2);
    QVERIFY2(device.err.contains("--map-device: cpu or gpu, not tpu"), device.err.constData());
    const Run noMap = execCli({QStringLiteral("bench"), QStringLiteral("--seeded"), QStringLiteral("smollm2-135m"),
                               QStringLiteral("--map-device"), QStringLiteral("gpu")});
    QCOMPARE(noMap.code, 2);
    QVERIFY2(noMap.err.contains("--map-device gpu: only with --map N"), noMap.err.constData());
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
        const Run r = execCli({QStringLiteral("export"), QStringLiteral("--model"), fixture(model), QStringLiteral("--layer"),
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
        const Run r = execCli(QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a b c"),
                                          QStringLiteral("--out"), out}
                              + extra);
        QVERIFY2(r.code == 2, qPrintable(extra.join(QLatin1Char(' ')) + QStringLiteral(": ") + QString::fromUtf8(r.err)));
        // one message (Qt's own platform warnings aside)
        QCOMPARE(QString::fromUtf8(r.err).count(QLatin1String("attnviz export: ")), 1);
        QVERIFY(!QFile::exists(out));
    }
}

// A, B: 20,000 tokens through a model that reads 30,000 positions need 12.8 GB of attention weights:
// refused before anything is allocated, naming the model, the length and what fits, by every verb
// that traces (the window cuts instead: windowUnderAddressLimit).
void TestModelCli::memoryBudget()
{
    QTemporaryDir tmp;
    const QString dir = hugePositions(tmp);
    const QString out = tmp.filePath(QStringLiteral("out.json"));
    const QString text = manyTokens(20000);
    QElapsedTimer timer;
    timer.start();
    Run r = limited(k4GB, {QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), text, QStringLiteral("-o"), out});
    QCOMPARE(r.code, 2);
    QVERIFY(!QFile::exists(out));
    QString err = QString::fromUtf8(r.err).trimmed();
    QCOMPARE(err.count(QLatin1Char('\n')), 0);
    QVERIFY2(err.startsWith(QLatin1String("attnviz model run: gpt2-tiny: 20,000 tokens through 2 layers x 4 heads need ")), qPrintable(err));
    QVERIFY2(err.contains(QLatin1String("one computation may use here (at most ")), qPrintable(err));
    QVERIFY2(timer.elapsed() < 20000, qPrintable(QString::number(timer.elapsed())));
    // the JSON counts too: at a length whose trace alone fits, model run still refuses its 60 bytes a weight
    r = limited(k4GB, {QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), manyTokens(5000)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("5,000 tokens through 2 layers x 4 heads need"), r.err.constData());
    // bench --model: the same refusal, before timing anything
    r = limited(k4GB, {QStringLiteral("bench"), QStringLiteral("--model"), dir, QStringLiteral("--tokens"), QStringLiteral("20000"),
                       QStringLiteral("--repeat"), QStringLiteral("1")});
    QCOMPARE(r.code, 2);
    err = QString::fromUtf8(r.err).trimmed();
    QVERIFY2(err.startsWith(QLatin1String("attnviz bench: gpt2-tiny: 20,000 tokens through")), qPrintable(err));
    // export --model: the figure shows what fits, and says so
    const QString png = tmp.filePath(QStringLiteral("w.png"));
    r = limited(k4GB, {QStringLiteral("export"), QStringLiteral("--model"), dir, QStringLiteral("--sentence"), text,
                       QStringLiteral("--out"), png}, 300000);
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.err.contains("tokens fit in the"), r.err.constData());
    QVERIFY2(r.err.contains("the text has 20,000"), r.err.constData());
    QFile f(png);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.read(8) == QByteArray("\x89PNG\r\n\x1a\n", 8));
}

// A: the window, headless, on the same folder and a 20,000-token text under a 4 GB address space
// (it aborted with bad_alloc at 3.6 GB): the trace is cut to what its budget holds, the window stays up.
void TestModelCli::windowUnderAddressLimit()
{
    QTemporaryDir tmp;
    const QString dir = hugePositions(tmp);
    const QString shot = tmp.filePath(QStringLiteral("shot.png"));
    const Run r = limited(k4GB, {QStringLiteral("window"), QStringLiteral("--no-restore"), QStringLiteral("--model"), dir,
                                 QStringLiteral("--sentence"), manyTokens(20000), QStringLiteral("--screenshot"), shot,
                                 QStringLiteral("--size"), QStringLiteral("900x700")},
                          300000, {QStringLiteral("XDG_CONFIG_HOME=") + tmp.filePath(QStringLiteral("config"))});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(!r.err.contains("out of memory"));
    QFile png(shot);
    QVERIFY(png.open(QIODevice::ReadOnly));
    const QByteArray head = png.read(24); // signature, IHDR: width and height big-endian
    QVERIFY(head.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
    QVERIFY(qFromBigEndian<quint32>(head.constData() + 16) >= 100);
}

// K: what cannot be written to standard output fails the run with a message
void TestModelCli::stdoutWriteErrors()
{
    if (!QFileInfo(QStringLiteral("/dev/full")).exists())
        QSKIP("no /dev/full here");
    const QList<QStringList> runs = {
        {QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"), QStringLiteral("hi")},
        {QStringLiteral("model"), QStringLiteral("info"), fixture(QStringLiteral("gpt2-tiny"))},
        {QStringLiteral("tokenize"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("Hello")},
    };
    for (const QStringList &args : runs) {
        QProcess p;
        p.setStandardOutputFile(QStringLiteral("/dev/full"));
        p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
        QVERIFY2(p.exitCode() == 1, qPrintable(args.join(QLatin1Char(' ')) + QStringLiteral(": ") + err));
        QVERIFY2(err.contains(QLatin1String("cannot write the standard output (No space left on device)")), qPrintable(err));
        QCOMPARE(err.count(QLatin1Char('\n')), 0);
    }
}

// J: -o / --out never replace what is not a regular file: a FIFO is written in place, a folder refused
void TestModelCli::specialOutputs()
{
    QTemporaryDir tmp;
    const QString fifo = tmp.filePath(QStringLiteral("pipe.json"));
    QVERIFY(::mkfifo(QFile::encodeName(fifo).constData(), 0600) == 0);
    for (const QStringList &args : QList<QStringList>{
             {QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"),
              QStringLiteral("hi"), QStringLiteral("-o"), fifo},
             {QStringLiteral("export"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--sentence"),
              QStringLiteral("a b c"), QStringLiteral("--out"), fifo}}) {
        QProcess reader;
        reader.start(QStringLiteral("cat"), {fifo});
        QVERIFY(reader.waitForStarted());
        const Run r = execCli(args);
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(reader.waitForFinished(30000));
        const QJsonDocument doc = QJsonDocument::fromJson(reader.readAllStandardOutput());
        QVERIFY(doc.isObject());
        struct stat st {};
        QVERIFY(::lstat(QFile::encodeName(fifo).constData(), &st) == 0);
        QVERIFY2(S_ISFIFO(st.st_mode), "the FIFO was replaced");
        QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::System | QDir::Hidden).size(), 1); // no temporary left
    }
    // /dev/null: written, still a device
    Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"),
                     QStringLiteral("hi"), QStringLiteral("-o"), QStringLiteral("/dev/null")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(QFileInfo(QStringLiteral("/dev/null")).exists() && !QFileInfo(QStringLiteral("/dev/null")).isFile());
    // a folder: refused, untouched
    const QString folder = tmp.filePath(QStringLiteral("folder.json"));
    QVERIFY(QDir().mkdir(folder));
    r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"),
                 QStringLiteral("hi"), QStringLiteral("-o"), folder});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("folder.json: cannot write (is a folder)"), r.err.constData());
    QVERIFY(QFileInfo(folder).isDir());
}

// L: a mistake in a later argument leaves the settings (the recent models, the theme) as they were
void TestModelCli::argumentsBeforeSettings()
{
    QTemporaryDir tmp;
    const QString config = tmp.filePath(QStringLiteral("config"));
    const QStringList env = {QStringLiteral("XDG_CONFIG_HOME=") + config};
    for (const QStringList &bad : QList<QStringList>{{QStringLiteral("--tab"), QStringLiteral("bogus")},
                                                     {QStringLiteral("--layer"), QStringLiteral("x")},
                                                     {QStringLiteral("--size"), QStringLiteral("big")},
                                                     {QStringLiteral("--heads"), QStringLiteral("0")}}) {
        const Run r = limited(0, QStringList{QStringLiteral("--no-restore"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                                             QStringLiteral("--theme"), QStringLiteral("dark")} + bad,
                              60000, env);
        QVERIFY2(r.code == 2, qPrintable(bad.join(QLatin1Char(' ')) + QStringLiteral(": ") + QString::fromUtf8(r.err)));
        QVERIFY2(r.err.contains("\nattnviz: " + bad.first().toUtf8() + ": ") || r.err.startsWith("attnviz: " + bad.first().toUtf8() + ": "),
                 r.err.constData()); // no "attnviz :" (Qt's own warnings aside)
        QStringList saved;
        QDirIterator it(config, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            QFile f(it.next());
            f.open(QIODevice::ReadOnly);
            if (f.readAll().contains("gpt2-tiny") || f.fileName().endsWith(QLatin1String(".conf")))
                saved << f.fileName();
        }
        QVERIFY2(saved.isEmpty(), qPrintable(saved.join(QLatin1Char(' '))));
    }
}

// N: bench --model on small models: ids inside a 1,000-token vocabulary, lengths cut to 64 positions
void TestModelCli::benchSmallModels()
{
    QTemporaryDir tmp;
    const QString dir = copyFolder(QStringLiteral("bert-tiny"), tmp);
    {
        QFile f(dir + QStringLiteral("/vocab.txt"));
        f.open(QIODevice::ReadOnly);
        const QList<QByteArray> lines = f.readAll().split('\n').mid(0, 1000);
        f.close();
        f.open(QIODevice::WriteOnly | QIODevice::Truncate);
        f.write(lines.join('\n') + '\n');
    }
    editJson(dir + QStringLiteral("/config.json"), [](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), 1000); });
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    for (const QString &name : st.header.keys()) {
        QJsonObject e = st.header.value(name).toObject();
        QJsonArray shape = e.value(QStringLiteral("shape")).toArray();
        if (shape.isEmpty() || shape[0].toInt() != 30522)
            continue;
        const qint64 begin = e.value(QStringLiteral("data_offsets")).toArray()[0].toInteger();
        const qint64 end = e.value(QStringLiteral("data_offsets")).toArray()[1].toInteger();
        shape[0] = 1000;
        e.insert(QStringLiteral("shape"), shape);
        e.insert(QStringLiteral("data_offsets"), QJsonArray{begin, begin + (end - begin) / 30522 * 1000});
        st.header.insert(name, e);
    }
    writeSt(dir + QStringLiteral("/model.safetensors"), st);
    Run r = execCli({QStringLiteral("model"), QStringLiteral("info"), dir});
    QVERIFY2(r.code == 0, r.err.constData());
    r = execCli({QStringLiteral("bench"), QStringLiteral("--model"), dir, QStringLiteral("--repeat"), QStringLiteral("1"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    // the default 128 and 1,024 tokens are cut to the 64 positions, once, and said
    QVERIFY2(r.err.contains("attnviz bench: note: bert-tiny reads at most 64 tokens: 128 tokens timed at 64"), r.err.constData());
    const QJsonArray rows = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows[0].toObject().value(QStringLiteral("tokens")).toInt(), 64);
    r = execCli({QStringLiteral("bench"), QStringLiteral("--model"), dir, QStringLiteral("--tokens"), QStringLiteral("1")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--tokens: \"1\" is not a length of 2 tokens or more") || r.err.contains("--tokens: 1 is not a length of 2 tokens or more"),
             r.err.constData());
}

// I: finite weights that overflow float32 give non-finite attention: written as compute writes them
// ("NaN" strings), counted, and said, never a silent null
void TestModelCli::nonFiniteResults()
{
    QTemporaryDir tmp;
    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    const QJsonArray off = st.header.value(QStringLiteral("transformer.h.0.ln_1.weight")).toObject().value(QStringLiteral("data_offsets")).toArray();
    const float big = 3e38f;
    for (qint64 at = off[0].toInteger(); at < off[1].toInteger(); at += 4)
        st.data.replace(int(at), 4, reinterpret_cast<const char *>(&big), 4);
    writeSt(dir + QStringLiteral("/model.safetensors"), st);
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), QStringLiteral("a b c d")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(!r.out.contains("null"));
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const int n = o.value(QStringLiteral("non_finite")).toInt();
    QVERIFY2(n > 0, r.out.left(300).constData());
    QVERIFY(r.out.contains("\"NaN\""));
    QVERIFY2(r.err.contains(QByteArray("attention weights are not finite")), r.err.constData());
}

// A final norm that overflows float32 leaves the attention finite and every predicted p NaN:
// counted in `non_finite_predictions` and said, never a silent exit 0
void TestModelCli::nonFinitePredictions()
{
    QTemporaryDir tmp;
    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    const QJsonArray off = st.header.value(QStringLiteral("transformer.ln_f.weight"))
                               .toObject()
                               .value(QStringLiteral("data_offsets"))
                               .toArray();
    QVERIFY(!off.isEmpty());
    const float big = 3e38f;
    for (qint64 at = off[0].toInteger(); at < off[1].toInteger(); at += 4)
        st.data.replace(int(at), 4, reinterpret_cast<const char *>(&big), 4);
    writeSt(dir + QStringLiteral("/model.safetensors"), st);
    const Run r = execCli(
        {QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), QStringLiteral("a b c d")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QVERIFY(!o.contains(QStringLiteral("non_finite"))); // the attention is finite
    const int n = o.value(QStringLiteral("non_finite_predictions")).toInt();
    QCOMPARE(n, o.value(QStringLiteral("next_tokens")).toArray().size());
    QVERIFY2(n > 0, r.out.right(300).constData());
    QVERIFY2(r.err.contains(QByteArray("predicted probabilities are not finite")), r.err.constData());
    QCOMPARE(r.err.count('\n'), 1);
}

// D: an allocation that fails while the weights are converted is one line naming the file and the
// size, not a bare "out of memory" (a 10,000,000-row F32 embedding: 640 MB mapped, 640 MB more as float32,
// under an address space that holds the first but not the second)
void TestModelCli::weightsOutOfMemory()
{
    if (kSanitized)
        QSKIP("no address-space limit under AddressSanitizer");
    QTemporaryDir tmp;
    const QString dir = hugeEmbedding(tmp, 10'000'000);
    const Run r = limited(qint64(900) << 20, {QStringLiteral("model"), QStringLiteral("info"), dir});
    QCOMPARE(r.code, 1);
    const QString err = QString::fromUtf8(r.err).trimmed();
    QCOMPARE(err.count(QLatin1Char('\n')), 0);
    QVERIFY2(err.startsWith(QLatin1String("attnviz model info: ") + dir + QLatin1String("/model.safetensors: out of memory converting ")), qPrintable(err));
    QVERIFY2(err.contains(QLatin1String("640.0 MB of F32 weights to float32")), qPrintable(err));
}

// D: a session naming that folder (10,000,000 rows: 640 MB mapped, 640 MB more as float32) opened in the
// window under an address space that holds the window but not the converted weights: the window
// stays up with the word vectors (it quit), and draws
void TestModelCli::weightsOutOfMemoryFromSession()
{
    if (kSanitized)
        QSKIP("no address-space limit under AddressSanitizer");
    QTemporaryDir tmp;
    const QString dir = hugeEmbedding(tmp, 10'000'000);
    const qint64 limit = qint64(900) << 20; // holds the window, not the weights converted
    const Run info = limited(limit, {QStringLiteral("model"), QStringLiteral("info"), dir}); // what the session meets
    QVERIFY2(info.code == 1, info.err.constData());
    QVERIFY2(info.err.contains("/model.safetensors: out of memory converting "), info.err.constData());
    const QString session = tmp.filePath(QStringLiteral("s.attnviz"));
    QFile f(session);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(QJsonObject{{QStringLiteral("format"), QStringLiteral("attnviz-session")},
                                      {QStringLiteral("version"), 1},
                                      {QStringLiteral("model"), dir},
                                      {QStringLiteral("input"), QJsonObject{{QStringLiteral("sentence"), QStringLiteral("a b c")}}}})
                .toJson());
    f.close();
    const QString shot = tmp.filePath(QStringLiteral("shot.png"));
    const Run r = limited(limit, {QStringLiteral("window"), session, QStringLiteral("--screenshot"), shot, QStringLiteral("--size"),
                                 QStringLiteral("900x700")},
                          300000, {QStringLiteral("XDG_CONFIG_HOME=") + tmp.filePath(QStringLiteral("config"))});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(!r.err.contains("attnviz: out of memory"), r.err.constData());
    QFile png(shot);
    QVERIFY(png.open(QIODevice::ReadOnly));
    QVERIFY(png.read(8) == QByteArray("\x89PNG\r\n\x1a\n", 8));
}

void TestModelCli::unreadableFiles_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("file");
    for (const char *f : {"config.json", "vocab.json", "merges.txt", "model.safetensors"})
        QTest::addRow("gpt2-tiny %s", f) << QStringLiteral("gpt2-tiny") << QString::fromLatin1(f);
    for (const char *f : {"vocab.txt", "tokenizer_config.json"})
        QTest::addRow("bert-tiny %s", f) << QStringLiteral("bert-tiny") << QString::fromLatin1(f);
}

// P: a model file that exists but cannot be read (chmod 000; as root, with the permission override
// dropped) exits 2 as every other bad file does (README "Exit codes"), with one line naming it
void TestModelCli::unreadableFiles()
{
    QFETCH(QString, model);
    QFETCH(QString, file);
    QTemporaryDir tmp;
    const QString dir = copyFolder(model, tmp);
    const QString path = dir + QLatin1Char('/') + file;
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    f.close();
    QVERIFY(QFile::remove(path)); // a copy of a link's target, made unreadable
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    f.close();
    QVERIFY(f.setPermissions({}));
    const QString out = tmp.filePath(QStringLiteral("out.json"));
    for (const QStringList &args : {QStringList{QStringLiteral("model"), QStringLiteral("info"), dir},
                                    QStringList{QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"),
                                                QStringLiteral("hi"), QStringLiteral("-o"), out}}) {
        bool possible = false;
        const Run r = attnviz_test::runAttnvizUnprivileged(args, possible);
        if (!possible)
            QSKIP("cannot drop root's override of file permissions here");
        QCOMPARE(r.code, 2);
        const QString err = QString::fromUtf8(r.err).trimmed();
        QCOMPARE(err.count(QLatin1Char('\n')), 0);
        QVERIFY2(err.startsWith(QStringLiteral("attnviz %1: %2: ").arg(args[0] + QLatin1Char(' ') + args[1], path)), qPrintable(err));
        QVERIFY2(err.endsWith(QLatin1String("Permission denied")), qPrintable(err));
        QVERIFY(!QFile::exists(out));
    }
}


// `model run --ablate L.H[:zero|mean]`: the JSON is the edited model's and lists the edits. Zeroing
// head H's z equals zeroing its inputs of W_O (GPT-2's Conv1D c_proj: rows H d_head .. (H + 1) d_head)
// in a copy of the folder, run unedited: the same next tokens to 1e-10 in float64.
void TestModelCli::ablate_data()
{
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addRow("L1 H2") << 1 << 2;
    QTest::addRow("L0 H0") << 0 << 0;
}

void TestModelCli::ablate()
{
    QFETCH(int, layer);
    QFETCH(int, head);
    QTemporaryDir tmp;
    const QString text = QStringLiteral("The cat sat on the mat and the dog sat on the log");
    auto run = [&](const QString &dir, const QStringList &extra) {
        const QString out = tmp.filePath(QStringLiteral("run.json"));
        QFile::remove(out);
        const Run r = execCli(QStringList{QStringLiteral("model"), QStringLiteral("run"), dir, QStringLiteral("--text"), text,
                                          QStringLiteral("-o"), out, QStringLiteral("--precision"), QStringLiteral("float64")}
                              + extra);
        if (r.code != 0)
            qWarning("%s", r.err.constData());
        QFile f(out);
        f.open(QIODevice::ReadOnly);
        return QJsonDocument::fromJson(f.readAll()).object();
    };
    const QString spec = QString::number(layer) + QLatin1Char('.') + QString::number(head);
    const QJsonObject edited = run(fixture(QStringLiteral("gpt2-tiny")), {QStringLiteral("--ablate"), spec});
    const QJsonArray edits = edited.value(QStringLiteral("edits")).toArray();
    QCOMPARE(edits.size(), 1);
    const QJsonObject e = edits[0].toObject();
    QCOMPARE(e.value(QStringLiteral("hook")).toString(), QStringLiteral("attn.hook_z"));
    QCOMPARE(e.value(QStringLiteral("layer")).toInt(), layer);
    QCOMPARE(e.value(QStringLiteral("head")).toInt(), head);
    QCOMPARE(e.value(QStringLiteral("kind")).toString(), QStringLiteral("zero"));
    QCOMPARE(e.value(QStringLiteral("positions")).toString(), QStringLiteral("all"));

    const QString dir = copyFolder(QStringLiteral("gpt2-tiny"), tmp);
    Safetensors st = readSt(dir + QStringLiteral("/model.safetensors"));
    const QJsonObject t = st.header.value(QStringLiteral("transformer.h.%1.attn.c_proj.weight").arg(layer)).toObject();
    const qint64 at = t.value(QStringLiteral("data_offsets")).toArray()[0].toInteger();
    const int cols = t.value(QStringLiteral("shape")).toArray()[1].toInt(), dh = 4; // 16 wide, 4 heads
    for (int r = head * dh; r < (head + 1) * dh; ++r)
        for (int c = 0; c < cols * 4; ++c)
            st.data[int(at + qint64(r) * cols * 4 + c)] = 0;
    writeSt(dir + QStringLiteral("/model.safetensors"), st);
    const QJsonObject want = run(dir, {});
    QVERIFY(!want.contains(QStringLiteral("edits")));
    const QJsonArray a = edited.value(QStringLiteral("next_tokens")).toArray(), b = want.value(QStringLiteral("next_tokens")).toArray(),
                     clean = run(fixture(QStringLiteral("gpt2-tiny")), {}).value(QStringLiteral("next_tokens")).toArray();
    QCOMPARE(a.size(), 10);
    QCOMPARE(b.size(), 10);
    double worst = 0, change = 0;
    for (int k = 0; k < 10; ++k) {
        QCOMPARE(a[k].toObject().value(QStringLiteral("id")).toInt(), b[k].toObject().value(QStringLiteral("id")).toInt());
        worst = std::max(worst, std::abs(a[k].toObject().value(QStringLiteral("p")).toDouble() -
                                         b[k].toObject().value(QStringLiteral("p")).toDouble()));
        change = std::max(change, std::abs(clean[k].toObject().value(QStringLiteral("p")).toDouble() -
                                           b[k].toObject().value(QStringLiteral("p")).toDouble()));
    }
    QVERIFY2(worst <= 1e-10, qPrintable(QString::number(worst)));
    QVERIFY(change > 1e-6); // the ablation changes the predictions
    // a mean ablation is said so
    const QJsonObject mean = run(fixture(QStringLiteral("gpt2-tiny")), {QStringLiteral("--ablate"), spec + QStringLiteral(":mean"),
                                                                        QStringLiteral("--ablate"), QStringLiteral("0.1")});
    QCOMPARE(mean.value(QStringLiteral("edits")).toArray().size(), 2);
    QCOMPARE(mean.value(QStringLiteral("edits")).toArray()[0].toObject().value(QStringLiteral("kind")).toString(), QStringLiteral("mean"));
}

// Out-of-range or malformed ablations: one line naming the value, exit code 2, nothing written.
void TestModelCli::ablateRefusals_data()
{
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::addRow("layer") << "2.0" << "attnviz model run: --ablate 2.0: layer 2 is not one of the model's 2 layers (0..1)\n";
    QTest::addRow("head") << "1.4" << "attnviz model run: --ablate 1.4: head 4 is not one of the model's 4 query heads (0..3)\n";
    QTest::addRow("negative") << "-1.0" << "attnviz model run: --ablate -1.0: layer -1 is not one of the model's 2 layers (0..1)\n";
    QTest::addRow("syntax") << "3" << "attnviz model run: --ablate 3: not LAYER.HEAD[:zero|mean] (e.g. 0.3 or 1.2:mean)\n";
    QTest::addRow("kind") << "0.1:half" << "attnviz model run: --ablate 0.1:half: the ablation is zero or mean, not half\n";
}

void TestModelCli::ablateRefusals()
{
    QFETCH(QString, value);
    QFETCH(QString, message);
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("run.json"));
    const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(QStringLiteral("gpt2-tiny")), QStringLiteral("--text"),
                           QStringLiteral("a cat"), QStringLiteral("-o"), out, QStringLiteral("--ablate"), value});
    QCOMPARE(r.code, 2);
    QCOMPARE(QString::fromUtf8(r.err), message);
    QVERIFY(!QFile::exists(out));
}

// `attnviz patch`: the grid's shape and labels, the invariants that hold exactly (resid_pre of layer 0
// patched where the prompts differ is the clean run: 1; where they agree, the corrupted run: 0), and
// the .npy's header. Each cell against the patched forward itself: tst_patching.
void TestModelCli::patchSweeps()
{
    QTemporaryDir tmp;
    const QString json = tmp.filePath(QStringLiteral("p.json")), npy = tmp.filePath(QStringLiteral("p.npy"));
    const QStringList common = {QStringLiteral("patch"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                                QStringLiteral("--clean"), QStringLiteral("The cat sat on the mat"), QStringLiteral("--corrupted"),
                                QStringLiteral("The dog sat on the mat"), QStringLiteral("--answer"), QStringLiteral(" mat"),
                                QStringLiteral("--wrong"), QStringLiteral(" log"), QStringLiteral("--precision"), QStringLiteral("float64")};
    Run r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("resid"), QStringLiteral("-o"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o.value(QStringLiteral("sweep")).toString(), QStringLiteral("resid_pre"));
    const QJsonArray metric = o.value(QStringLiteral("metric")).toArray();
    QCOMPARE(metric.size(), 2); // layers
    QCOMPARE(metric[0].toArray().size(), 6); // positions
    QCOMPARE(o.value(QStringLiteral("columns")).toArray()[1].toString(), QStringLiteral("1 ␣cat"));
    for (int c = 0; c < 6; ++c)
        QCOMPARE(metric[0].toArray()[c].toDouble(), c == 1 ? 1.0 : 0.0);
    QCOMPARE(metric[1].toArray()[0].toDouble(), 0.0);
    QVERIFY(o.value(QStringLiteral("clean_logit_diff")).toDouble() != o.value(QStringLiteral("corrupted_logit_diff")).toDouble());
    r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("heads"), QStringLiteral("-o"), npy});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile n(npy);
    QVERIFY(n.open(QIODevice::ReadOnly));
    const QByteArray b = n.readAll();
    QVERIFY(b.startsWith(QByteArray("\x93NUMPY", 6)));
    QVERIFY(b.contains("'shape': (2,4)"));
    // the heatmap as a figure, at the size asked (PNG pixels at 2x: --dpi 192), and as SVG
    const QString png = tmp.filePath(QStringLiteral("p.png")), svg = tmp.filePath(QStringLiteral("p.svg"));
    r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("resid"), QStringLiteral("-o"), png,
                                     QStringLiteral("--width"), QStringLiteral("640"), QStringLiteral("--height"),
                                     QStringLiteral("360"), QStringLiteral("--dpi"), QStringLiteral("192")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(!r.err.contains("attnviz patch:"), r.err.constData());
    QFile pf(png);
    QVERIFY(pf.open(QIODevice::ReadOnly));
    const QByteArray pb = pf.readAll(); // the signature, then IHDR: width and height, big-endian
    QVERIFY(pb.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)) && pb.mid(12, 4) == "IHDR");
    QCOMPARE(qFromBigEndian<quint32>(pb.constData() + 16), 640u);
    QCOMPARE(qFromBigEndian<quint32>(pb.constData() + 20), 360u);
    QVERIFY(pb.size() > 8000); // a heatmap with its axes, not a blank page
    r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("path"), QStringLiteral("--receiver"),
                                     QStringLiteral("1.3:k"), QStringLiteral("-o"), svg});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile sv(svg);
    QVERIFY(sv.open(QIODevice::ReadOnly));
    const QByteArray svgText = sv.readAll();
    QVERIFY(svgText.contains("<svg"));
    QVERIFY(svgText.contains("sender layer"));
    // a figure size out of range: one line of attnviz's (Qt's offscreen platform may say something of
    // its own before it), exit 2, nothing written
    const QString small = tmp.filePath(QStringLiteral("small.png"));
    r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("heads"), QStringLiteral("-o"), small,
                                     QStringLiteral("--width"), QStringLiteral("8")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.endsWith("\nattnviz patch: --width/--height: expected 16..20000\n") ||
                 r.err == "attnviz patch: --width/--height: expected 16..20000\n",
             r.err.constData());
    QCOMPARE(r.err.count("attnviz patch:"), 1);
    QVERIFY(!QFile::exists(small));
    // mlp_out scored by KL to the clean run (no answer tokens), heads by position by the answer's probability
    const QStringList prompts = {QStringLiteral("patch"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                                 QStringLiteral("--clean"), QStringLiteral("The cat sat on the mat"), QStringLiteral("--corrupted"),
                                 QStringLiteral("The dog sat on the mat")};
    r = execCli(prompts + QStringList{QStringLiteral("--sweep"), QStringLiteral("mlp"), QStringLiteral("--metric"), QStringLiteral("kl"),
                                      QStringLiteral("-o"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    f.close();
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject k = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(k.value(QStringLiteral("sweep")).toString(), QStringLiteral("mlp_out"));
    QCOMPARE(k.value(QStringLiteral("metric_kind")).toString(), QStringLiteral("kl"));
    QCOMPARE(k.value(QStringLiteral("clean_value")).toDouble(), 0.0);
    const double corruptedKl = k.value(QStringLiteral("corrupted_value")).toDouble();
    QVERIFY(corruptedKl > 0);
    const QJsonArray kg = k.value(QStringLiteral("metric")).toArray();
    QCOMPARE(kg.size(), 2);
    QCOMPARE(kg[1].toArray().size(), 6);
    QCOMPARE(kg[1].toArray()[0].toDouble(), corruptedKl); // before the prompts differ: the corrupted run
    QVERIFY(kg[1].toArray()[1].toDouble() >= 0);
    r = execCli(prompts + QStringList{QStringLiteral("--sweep"), QStringLiteral("heads-by-pos"), QStringLiteral("--metric"),
                                      QStringLiteral("prob"), QStringLiteral("--answer"), QStringLiteral(" mat"), QStringLiteral("-o"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    f.close();
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject h = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(h.value(QStringLiteral("metric")).toArray()[0].toArray().size(), 6 * 4);
    QCOMPARE(h.value(QStringLiteral("columns")).toArray()[6].toString(), QStringLiteral("1 ␣cat H2"));
    const double pc = h.value(QStringLiteral("clean_value")).toDouble(), pk = h.value(QStringLiteral("corrupted_value")).toDouble();
    QVERIFY(pc > 0 && pc < 1 && pk > 0 && pk < 1 && pc != pk);
    // path patching into head 3 of layer 1's keys: the senders of layer 0 as patchSweep gives them
    // (float64: the JSON's numbers exact), layer 1's cells NaN
    r = execCli(common + QStringList{QStringLiteral("--sweep"), QStringLiteral("path"), QStringLiteral("--receiver"), QStringLiteral("1.3:k"),
                                     QStringLiteral("-o"), json});
    QVERIFY2(r.code == 0, r.err.constData());
    f.close();
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject pp = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(pp.value(QStringLiteral("sweep")).toString(), QStringLiteral("path"));
    QCOMPARE(pp.value(QStringLiteral("receiver")).toString(), QStringLiteral("1.3:k"));
    QCOMPARE(pp.value(QStringLiteral("columns")).toArray()[2].toString(), QStringLiteral("H2"));
    std::unique_ptr<attnviz::Model> m;
    QVERIFY(attnviz::openPretrained(fixture(QStringLiteral("gpt2-tiny")).toStdString(), {}, m).ok());
    attnviz::PatchRequest req;
    req.sweep = attnviz::PatchSweep::Path;
    req.receiver = {1, 3, attnviz::HeadInput::K};
    req.clean = "The cat sat on the mat";
    req.corrupted = "The dog sat on the mat";
    req.answer = pp.value(QStringLiteral("answer")).toObject().value(QStringLiteral("id")).toInt();
    req.wrong = pp.value(QStringLiteral("wrong")).toObject().value(QStringLiteral("id")).toInt();
    attnviz::PatchResult want;
    QVERIFY(attnviz::patchSweep<double>(*m, req, want).ok());
    const QJsonArray pg = pp.value(QStringLiteral("metric")).toArray();
    for (int c = 0; c < 4; ++c) {
        QCOMPARE(pg[0].toArray()[c].toDouble(), want.at(0, c));
        QCOMPARE(pg[1].toArray()[c].toString(), QStringLiteral("NaN"));
    }
}

void TestModelCli::patchRefusals_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::addRow("token counts") << QStringList{QStringLiteral("--corrupted"), QStringLiteral("The dog sat on the mat today")}
                                  << "attnviz patch: the clean prompt has 6 tokens and the corrupted 7; they differ from token 1 on "
                                     "(clean: \"Ġcat\" \"Ġsat\" \"Ġon\" \"Ġthe\" \"Ġmat\"; corrupted: \"Ġdog\" \"Ġsat\" \"Ġon\" \"Ġthe\" "
                                     "\"Ġmat\" \"Ġtoday\")\n";
    QTest::addRow("answer of two tokens") << QStringList{QStringLiteral("--answer"), QStringLiteral(" mat mat")}
                                          << "attnviz patch: --answer: \" mat mat\" is not in the vocabulary of gpt2-tiny (it is 2 tokens: "
                                             "\"Ġmat\" \"Ġmat\")\n";
    QTest::addRow("sweep") << QStringList{QStringLiteral("--sweep"), QStringLiteral("walk")}
                           << "attnviz patch: --sweep: resid, heads, heads-by-pos, mlp or path, not walk\n";
    const QString path = QStringLiteral("path"), sweep = QStringLiteral("--sweep"), receiver = QStringLiteral("--receiver");
    QTest::addRow("path without receiver") << QStringList{sweep, path}
                                           << "attnviz patch: --receiver: missing (--sweep path patches into one receiver head, e.g. "
                                              "--receiver 1.3:k)\n";
    QTest::addRow("receiver in layer 0") << QStringList{sweep, path, receiver, QStringLiteral("0.1:k")}
                                         << "attnviz patch: --receiver: receiver layer 0 has no sender before it (a receiver is in layer 1..1)\n";
    QTest::addRow("receiver layer out of range") << QStringList{sweep, path, receiver, QStringLiteral("2.1:k")}
                                                 << "attnviz patch: --receiver: receiver layer 2 is out of range (the model has 2 layers; a "
                                                    "receiver is in layer 1..1)\n";
    QTest::addRow("receiver head out of range") << QStringList{sweep, path, receiver, QStringLiteral("1.4:q")}
                                                << "attnviz patch: --receiver: receiver head 4 is out of range (0..3)\n";
    QTest::addRow("receiver input") << QStringList{sweep, path, receiver, QStringLiteral("1.3:w")}
                                    << "attnviz patch: --receiver: the receiver's input 'w' is not q, k or v\n";
    QTest::addRow("receiver form") << QStringList{sweep, path, receiver, QStringLiteral("1:k")}
                                   << "attnviz patch: --receiver: the receiver '1:k' is not LAYER.HEAD:q, :k or :v (layer and head "
                                      "from 0, e.g. 1.3:k)\n";
    QTest::addRow("receiver without path") << QStringList{receiver, QStringLiteral("1.3:k")}
                                           << "attnviz patch: --receiver: only with --sweep path\n";
    QTest::addRow("metric") << QStringList{QStringLiteral("--metric"), QStringLiteral("loss")}
                            << "attnviz patch: --metric: logit-diff, prob or kl, not loss\n";
    QTest::addRow("output suffix") << QStringList{QStringLiteral("-o"), QStringLiteral("p.bmp")}
                                   << "attnviz patch: -o p.bmp: .json, .npy, .png, .svg or .pdf\n";
}

void TestModelCli::patchRefusals()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("p.json"));
    QMap<QString, QString> opts{{QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny"))},
                                {QStringLiteral("--clean"), QStringLiteral("The cat sat on the mat")},
                                {QStringLiteral("--corrupted"), QStringLiteral("The dog sat on the mat")},
                                {QStringLiteral("--answer"), QStringLiteral(" mat")},
                                {QStringLiteral("--wrong"), QStringLiteral(" log")},
                                {QStringLiteral("--sweep"), QStringLiteral("heads")},
                                {QStringLiteral("-o"), out}};
    for (int i = 0; i + 1 < args.size(); i += 2)
        opts[args[i]] = args[i + 1];
    QStringList cli{QStringLiteral("patch")};
    for (auto it = opts.begin(); it != opts.end(); ++it)
        cli << it.key() << it.value();
    const Run r = execCli(cli);
    QCOMPARE(r.code, 2);
    QCOMPARE(QString::fromUtf8(r.err), message);
    QVERIFY(!QFile::exists(out));
}

QTEST_GUILESS_MAIN(TestModelCli)
#include "tst_modelcli.moc"
