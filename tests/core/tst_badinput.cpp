// SPDX-License-Identifier: GPL-3.0-or-later
// Hostile files against every core reader (issue 16): one table per reader, one row per class of
// bad input that once crashed, hung or was accepted: deep nesting, JSON numbers out of range,
// header counts the file cannot hold, special files (/dev/zero, a folder, a FIFO), attention
// too large for memory, shapes that overflow 64 bits, duplicate keys, .avec with 0 words or
// unknown flags. Each row asserts the Status code, a one-line message naming the file and the
// problem, and that the caller's value is untouched.
#include "attnviz/caseio.h"
#include "attnviz/embeddings.h"
#include "attnviz/fileio.h"
#include "attnviz/memorybudget.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <cstring>
#include <string>

using namespace attnviz;

Q_DECLARE_METATYPE(attnviz::StatusCode)

namespace {

QByteArray deep(const char *open, int n, const char *close)
{
    QByteArray b;
    b.reserve(n * 2 + 2);
    for (int i = 0; i < n; ++i)
        b += open;
    b += "1";
    for (int i = 0; i < n; ++i)
        b += close;
    return b;
}

// A valid case (the shared fixture) with one JSON fragment replaced.
QByteArray caseWith(const QByteArray &from, const QByteArray &to)
{
    QFile f(QStringLiteral(ATTNVIZ_FIXTURES_DIR "/cases/mha_01_h1_d4_tq3_tk3_b1_self_none.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QByteArray text = f.readAll();
    if (!text.contains(from))
        return {};
    return text.replace(text.indexOf(from), from.size(), to);
}

QByteArray le32(uint32_t v) { return QByteArray(reinterpret_cast<const char *>(&v), 4); }

// .avec: header, then `words` one-letter words and their vectors of `dim` int8 with scale 1.
QByteArray avec(uint32_t count, uint32_t dim, uint32_t flags, int words)
{
    QByteArray b = "AVEC" + le32(1) + le32(count) + le32(dim) + le32(flags);
    for (int i = 0; i < words; ++i)
        b += QByteArray(1, '\1') + char('a' + i % 26);
    const float one = 1.0f;
    for (int i = 0; i < words; ++i)
        b += QByteArray(reinterpret_cast<const char *>(&one), 4) + QByteArray(int(dim), '\1');
    return b;
}

// word2vec binary: header line, then `words` records "w<i> " + dim floats + "\n".
QByteArray w2vBin(const QByteArray &header, int words, int dim)
{
    QByteArray b = header + "\n";
    for (int i = 0; i < words; ++i) {
        b += "w" + QByteArray::number(i) + " ";
        for (int k = 0; k < dim; ++k) {
            const float v = 0.25f * float(k + 1);
            b += QByteArray(reinterpret_cast<const char *>(&v), 4);
        }
        b += "\n";
    }
    return b;
}

QByteArray textRows(int words, int dim)
{
    QByteArray b;
    for (int i = 0; i < words; ++i) {
        b += "w" + QByteArray::number(i);
        for (int k = 0; k < dim; ++k)
            b += " 0." + QByteArray::number(k + 1);
        b += "\n";
    }
    return b;
}

// safetensors: u64 header length, the header JSON, `data` bytes.
QByteArray safetensors(const QByteArray &header, int dataBytes = 0)
{
    const uint64_t n = uint64_t(header.size());
    QByteArray b(reinterpret_cast<const char *>(&n), 8);
    return b + header + QByteArray(dataBytes, '\0');
}

// Special paths in the data tables, made real in a temporary folder.
const char *const kDevZero = "/dev/zero";
const char *const kFolder = "FOLDER";
const char *const kFifo = "FIFO";

} // namespace

class TestBadInput : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void caseFile_data();
    void caseFile();
    void vectorTable_data();
    void vectorTable();
    void safetensorsFile_data();
    void safetensorsFile();
    // The same table through the memory-mapped reader model folders use: one header check, one answer.
    void mappedSafetensorsFile_data() { safetensorsFile_data(); }
    void mappedSafetensorsFile();
    void attentionMemory_data();
    void attentionMemory();
    void goodFilesStillLoad();

private:
    // Writes `content` (or makes the special path named by it) and returns the path to read.
    QString place(const QByteArray &content, const QString &name);
    void expectOneLine(const Status &st, StatusCode code, const QString &path, const QString &message);
    QTemporaryDir m_dir;
};

void TestBadInput::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QVERIFY(QDir(m_dir.path()).mkdir(QLatin1String(kFolder)));
    QVERIFY(::mkfifo(QFile::encodeName(m_dir.filePath(QLatin1String(kFifo))).constData(), 0600) == 0);
}

QString TestBadInput::place(const QByteArray &content, const QString &name)
{
    if (content == kDevZero)
        return QString::fromLatin1(kDevZero);
    if (content == kFolder || content == kFifo)
        return m_dir.filePath(QString::fromLatin1(content));
    const QString path = m_dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(content) != content.size())
        return {};
    return path;
}

void TestBadInput::expectOneLine(const Status &st, StatusCode code, const QString &path, const QString &message)
{
    QVERIFY2(!st.ok(), "accepted");
    const QString text = QString::fromStdString(st.message);
    QVERIFY2(text.startsWith(path + QLatin1Char(':')), qPrintable(text)); // names the file first ("F: ", "F:1: ")
    QVERIFY2(text.contains(message), qPrintable(text));                       // and the problem
    QVERIFY2(!text.contains(QLatin1Char('\n')), qPrintable(text));              // in one line
    QCOMPARE(st.code, code);
}

void TestBadInput::caseFile_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<StatusCode>("code");
    QTest::addColumn<QString>("message");
    const auto Parse = StatusCode::ParseError, Invalid = StatusCode::InvalidInput, Io = StatusCode::IoError;
    // 1. deep nesting (was SIGSEGV: flatten() recursed without a limit)
    QTest::addRow("100,000 nested [ in inputs.query")
        << caseWith("\"query\":", "\"query\":" + deep("[", 100000, "]") + ",\"x\":") << Parse
        << "inputs.query: nested deeper than 64 levels";
    QTest::addRow("100,000 nested {") << deep("{\"a\":", 100000, "}") << Parse << "nested deeper than 64 levels";
    // 2. every JSON exception (was SIGABRT: out_of_range.406 escaped)
    QTest::addRow("batch 1e999") << QByteArray(R"({"config":{"batch":1e999}})") << Parse
                                 << "malformed JSON: number overflow parsing '1e999'";
    QTest::addRow("scale -1e400") << caseWith("\"config\":{", "\"config\":{\"scale\":-1e400,") << Parse
                                  << "number overflow";
    QTest::addRow("invalid UTF-8") << QByteArray("{\"name\": \"\xff\xfe\"}") << Parse << "malformed JSON";
    // 7. duplicate keys (was exit 0: the last num_heads silently won)
    QTest::addRow("num_heads 7 then 1")
        << caseWith("\"config\":{", "\"config\":{\"num_heads\":7,") << Parse
        << "config.num_heads: duplicate key";
    QTest::addRow("duplicate top-level key") << caseWith("\"inputs\":{", "\"name\":\"x\",\"inputs\":{") << Parse
                                             << "name: duplicate key";
    // a number list that grows a dimension after numbers were read (read past its buffer)
    QTest::addRow("ragged deeper later") << QByteArray(R"({"config":{"self_attention":true},"inputs":{"query":[[1,[2,3]]]}})") << Invalid
                                         << "inputs.query: ragged array";
    QTest::addRow("mask ragged deeper later") << QByteArray(R"({"config":{"self_attention":true},"inputs":{"query":[[[1,2],[3,4]]],"attn_mask":[true,[false,true]]}})")
                                              << Invalid << "inputs.attn_mask: ragged array";
    // 4. special files (was: /dev/zero hung; a folder read as "malformed JSON")
    QTest::addRow("/dev/zero") << QByteArray(kDevZero) << Io << "not a regular file";
    QTest::addRow("a folder") << QByteArray(kFolder) << Io << "is a directory";
    QTest::addRow("a FIFO") << QByteArray(kFifo) << Io << "not a regular file";
}

void TestBadInput::caseFile()
{
    QFETCH(QByteArray, content);
    QFETCH(StatusCode, code);
    QFETCH(QString, message);
    QVERIFY(!content.isEmpty());
    const QString path = place(content, QStringLiteral("case.json"));
    QVERIFY(!path.isEmpty());
    CaseFile c;
    c.name = "untouched";
    const Status st = loadCase(path.toStdString(), c);
    expectOneLine(st, code, path, message);
    QCOMPARE(c.name, std::string("untouched"));
    QVERIFY(c.input.batch.empty());
}

void TestBadInput::vectorTable_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<int>("format"); // EmbeddingFormat
    QTest::addColumn<StatusCode>("code");
    QTest::addColumn<QString>("message");
    const int Auto = int(EmbeddingFormat::Auto), Bin = int(EmbeddingFormat::Word2VecBinary);
    const auto Parse = StatusCode::ParseError, Io = StatusCode::IoError;
    // 3. header counts trusted before the data (were bad_alloc / length_error aborts, or "1 words" and exit 0)
    QTest::addRow("text: 50000000 15, one row") << "50000000 15\n" + textRows(1, 15) << Auto << Parse
                                                << ":1: the header announces 50000000 words of dimension 15, the file holds at most";
    QTest::addRow("text: 2^63-1 4096") << "9223372036854775807 4096\n" + textRows(1, 4096) << Auto << Parse
                                       << "the header announces 9223372036854775807 words";
    QTest::addRow("text: -5 16") << "-5 16\n" + textRows(2, 16) << Auto << Parse << "the header announces -5 words";
    QTest::addRow("text: header 3, rows 2") << "3 4\n" + textRows(2, 4) << Auto << Parse
                                            << ":1: the header announces 3 words, the file has 2";
    QTest::addRow("text: header 1, rows 2") << "1 4\n" + textRows(2, 4) << Auto << Parse
                                            << ":1: the header announces 1 words, the file has 2";
    QTest::addRow("bin: 4294967295 words") << w2vBin("4294967295 4", 2, 4) << Bin << Parse
                                           << ":1: the header announces 4294967295 words of dimension 4, the file holds at most 2";
    QTest::addRow("bin: 2^63 words") << w2vBin("9223372036854775808 4", 2, 4) << Bin << Parse
                                     << ":1: word2vec binary header must be '<count> <dim>' (two whole numbers)";
    QTest::addRow("bin: dimension 1e-320") << w2vBin("2 1e-320", 2, 1) << Bin << Parse << "two whole numbers";
    QTest::addRow("bin: -5 words") << w2vBin("-5 4", 2, 4) << Bin << Parse << "the header announces -5 words";
    QTest::addRow("bin: more rows than the header") << w2vBin("1 4", 2, 4) << Bin << Parse
                                                    << "bytes after the 1 words the header announces";
    // 7. .avec that cannot be what it claims (were accepted with exit 0)
    QTest::addRow("avec: 0 words") << avec(0, 8, 0, 0) << Auto << Parse << "the header announces 0 words";
    QTest::addRow("avec: unknown flags") << avec(2, 8, 0x4, 2) << Auto << Parse << "unknown flags 0x4";
    QTest::addRow("avec: 50M words in 60 bytes") << avec(50'000'000, 8, 0, 2) << Auto << Parse
                                                 << "truncated vocabulary and vectors: the header announces 50000000 words of dimension 8";
    // 4. special files (a folder aborted in basic_string::_M_replace_aux)
    QTest::addRow("/dev/zero") << QByteArray(kDevZero) << Auto << Io << "not a regular file";
    QTest::addRow("a folder") << QByteArray(kFolder) << Auto << Io << "is a directory";
    QTest::addRow("a FIFO") << QByteArray(kFifo) << Auto << Io << "not a regular file";
}

void TestBadInput::vectorTable()
{
    QFETCH(QByteArray, content);
    QFETCH(int, format);
    QFETCH(StatusCode, code);
    QFETCH(QString, message);
    const QString path = place(content, QStringLiteral("vectors.bin"));
    QVERIFY(!path.isEmpty());
    EmbeddingTable table;
    table.assign({"kept"}, Mat<float>::Constant(1, 3, 0.5f), "before");
    const Status st = loadEmbeddings(path.toStdString(), table, EmbeddingFormat(format));
    expectOneLine(st, code, path, message);
    QCOMPARE(table.size(), 1);
    QCOMPARE(table.source(), std::string("before"));
}

void TestBadInput::safetensorsFile_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<StatusCode>("code");
    QTest::addColumn<QString>("message");
    const auto Parse = StatusCode::ParseError, Io = StatusCode::IoError;
    // 6. shapes that overflow 64 bits (were caught late as "expected (0, 0)")
    QTest::addRow("[2^32, 3*2^32]")
        << safetensors(R"({"h.0.attn.c_attn.weight": {"dtype": "F32", "shape": [4294967296, 12884901888], "data_offsets": [0, 0]}})")
        << Parse << "h.0.attn.c_attn.weight: dimension 4294967296 of shape (4294967296, 12884901888) is larger than 2147483647";
    QTest::addRow("[2^31-1]^3 wraps")
        << safetensors(R"({"w": {"dtype": "F64", "shape": [2147483647, 2147483647, 2147483647, 2147483647], "data_offsets": [0, 0]}})")
        << Parse << "w: shape (2147483647, 2147483647, 2147483647, 2147483647) holds more elements than 64 bits can count";
    QTest::addRow("elements x width wrap")
        << safetensors(R"({"w": {"dtype": "F64", "shape": [2147483647, 2147483647, 4], "data_offsets": [0, 0]}})")
        << Parse << "needs more bytes than 64 bits can count";
    QTest::addRow("negative dimension")
        << safetensors(R"({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 0]}})") << Parse
        << "w: shape holds a negative or non-integer size";
    // 1. and 2. through the header's JSON
    QTest::addRow("metadata nested 100,000 deep")
        << safetensors("{\"__metadata__\": {\"x\": " + deep("[", 100000, "]") + "}}") << Parse
        << ": __metadata__.x: nested deeper than 64 levels";
    QTest::addRow("offset 1e999")
        << safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 1e999]}})", 4) << Parse
        << "malformed JSON header: number overflow";
    QTest::addRow("duplicate tensor")
        << safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4)
        << Parse << ": w: duplicate key";
    QTest::addRow("/dev/zero") << QByteArray(kDevZero) << Io << "not a regular file";
    QTest::addRow("a folder") << QByteArray(kFolder) << Io << "is a directory";
    QTest::addRow("a FIFO") << QByteArray(kFifo) << Io << "not a regular file";
}

void TestBadInput::safetensorsFile()
{
    QFETCH(QByteArray, content);
    QFETCH(StatusCode, code);
    QFETCH(QString, message);
    const QString path = place(content, QStringLiteral("model.safetensors"));
    QVERIFY(!path.isEmpty());
    SafetensorsFile file;
    file.metadata["kept"] = "yes";
    const Status st = readSafetensors(path.toStdString(), file);
    expectOneLine(st, code, path, message);
    QCOMPARE(file.metadata.size(), size_t(1));
    QVERIFY(file.tensors.empty());
}

void TestBadInput::mappedSafetensorsFile()
{
    QFETCH(QByteArray, content);
    QFETCH(StatusCode, code);
    QFETCH(QString, message);
    const QString path = place(content, QStringLiteral("model.safetensors"));
    QVERIFY(!path.isEmpty());
    TensorArchive archive;
    const Status st = archive.openFile(path.toStdString());
    expectOneLine(st, code, path, message);
    QVERIFY(archive.entries().empty());
}

void TestBadInput::attentionMemory_data()
{
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("heads");
    QTest::addColumn<bool>("fits");
    // 5. too many tokens (a 20,000-token sentence case aborted with bad_alloc)
    QTest::addRow("20,000 tokens") << 20000 << 1 << false;
    QTest::addRow("2^31-1 tokens (saturates, never wraps)") << 2147483647 << 2147483647 << false;
    QTest::addRow("512 tokens, 12 heads") << 512 << 12 << true;
}

void TestBadInput::attentionMemory()
{
    QFETCH(int, tokens);
    QFETCH(int, heads);
    QFETCH(bool, fits);
    ResolvedShape s;
    s.batch = 1;
    s.tq = s.tk = tokens;
    s.dModel = s.kdim = s.vdim = s.dOut = 64;
    s.numHeads = heads;
    s.dHead = 64 / std::min(heads, 64);
    s.dInner = s.numHeads * s.dHead;
    QVERIFY(memoryBudget() > 0 && memoryBudget() <= kMaxComputeBytes);
    const Status st = checkAttentionMemory(s, false, 8, "sentence.json");
    if (fits) {
        QVERIFY2(st.ok(), st.message.c_str());
        return;
    }
    QVERIFY(!st.ok());
    QCOMPARE(st.code, StatusCode::InvalidInput);
    const std::string want = "sentence.json: 1 x " + std::to_string(heads) + " head(s) x " + std::to_string(tokens) + " x " +
                             std::to_string(tokens) + " tokens of attention needs ";
    QVERIFY2(st.message.rfind(want, 0) == 0, st.message.c_str());
    QVERIFY2(st.message.find(" one computation may use here") != std::string::npos, st.message.c_str());
}

// The checks refuse what cannot be, not what is merely unusual: real files of every reader load.
void TestBadInput::goodFilesStillLoad()
{
    CaseFile c;
    const Status cs = loadCase(ATTNVIZ_FIXTURES_DIR "/cases/mha_04_h2_d8_tq3_tk7_b2_cross_key_padding.json", c);
    QVERIFY2(cs.ok(), cs.message.c_str());
    QCOMPARE(int(c.input.batch.size()), 2);

    EmbeddingTable t;
    const QString text = place("3 4\n" + textRows(3, 4), QStringLiteral("ok.vec"));
    const Status ts = loadEmbeddings(text.toStdString(), t);
    QVERIFY2(ts.ok(), ts.message.c_str());
    QCOMPARE(t.size(), 3);
    const QString bin = place(w2vBin("2 4", 2, 4), QStringLiteral("ok.bin"));
    const Status bs = loadEmbeddings(bin.toStdString(), t, EmbeddingFormat::Word2VecBinary);
    QVERIFY2(bs.ok(), bs.message.c_str());
    QCOMPARE(t.size(), 2);
    QCOMPARE(t.vector(1)[3], 1.0f);
    const QString av = place(avec(2, 8, 0, 2), QStringLiteral("ok.avec"));
    const Status as = loadEmbeddings(av.toStdString(), t);
    QVERIFY2(as.ok(), as.message.c_str());
    QCOMPARE(t.size(), 2);

    SafetensorsFile f;
    const Status ss = readSafetensors(ATTNVIZ_FIXTURES_DIR "/torch/stack_postnorm_relu_sinusoidal.safetensors", f);
    QVERIFY2(ss.ok(), ss.message.c_str());
    QVERIFY(!f.tensors.empty());
}

QTEST_GUILESS_MAIN(TestBadInput)
#include "tst_badinput.moc"
