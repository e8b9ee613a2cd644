// SPDX-License-Identifier: GPL-3.0-or-later
// Hostile files against every core reader: one table per reader, one row per class of
// bad input that once crashed, hung or was accepted: deep nesting, JSON numbers out of range,
// header counts the file cannot hold, special files (/dev/zero, a folder, a FIFO), attention
// too large for memory, shapes that overflow 64 bits, duplicate keys, .avec with 0 words or
// unknown flags. Each row asserts the Status code, a one-line message naming the file and the
// problem, and that the caller's value is untouched.
#include "testpaths.h"
#include "attnviz/caseio.h"
#include "attnviz/embeddings.h"
#include "attnviz/fileio.h"
#include "attnviz/memorybudget.h"
#include "attnviz/model.h"
#include "attnviz/pretrained.h"
#include "attnviz/subword.h"
#include "attnviz/tokenizer.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <ctime>

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
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/mha_01_h1_d4_tq3_tk3_b1_self_none.json")));
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
    // Model folders: every JSON file through the one hardened reader (C, G, E, O, P)
    void modelFolderJson_data();
    void modelFolderJson();
    // The memory a model's trace keeps, checked before it is made (A, B)
    void traceMemory();
    // Text from files in messages: an escaped excerpt (E, O); empty paths (P)
    void messagesQuoteFileText();
    void tokenizerNotARegularFile();
    // F64 values too large for float32 are not called NaN (P)
    void float32Overflow();
    // One huge word through every tokenizer in well under a second each (F)
    void hugeWord();
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
    // H. offsets Hugging Face's reader refuses: the tensors must tile the data block exactly
    QTest::addRow("two names, the same bytes")
        << safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4)
        << Parse << ": b: data_offsets [0, 4] overlap the tensor before it (which ends at 4)";
    QTest::addRow("overlapping tensors")
        << safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8)
        << Parse << ": b: data_offsets [4, 8] overlap the tensor before it (which ends at 8)";
    QTest::addRow("a gap before the first tensor")
        << safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8)
        << Parse << ": a: data_offsets [4, 8] leave a gap after byte 0";
    QTest::addRow("a gap between tensors")
        << safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12)
        << Parse << ": b: data_offsets [8, 12] leave a gap after byte 4";
    QTest::addRow("bytes after the last tensor")
        << safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 12)
        << Parse << ": the tensors cover 4 of the 12 bytes of the data block";
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

void TestBadInput::modelFolderJson_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("message");
    const QString config = QStringLiteral("config.json"), tc = QStringLiteral("tokenizer_config.json"),
                  vocab = QStringLiteral("vocab.json"), index = QStringLiteral("model.safetensors.index.json");
    const QByteArray gpt2 = R"("model_type": "gpt2", "vocab_size": 50257, "n_positions": 32, "n_embd": 16, "n_layer": 2, "n_head": 4)";
    // C. nesting: a 10 MB config was accepted, a 60 MB vocab.json took 3.8 GB
    QTest::addRow("config.json nested") << config << "{" + gpt2 + ", \"x\": " + deep("[", 2'000'000, "]") + "}"
                                        << "x: nested deeper than 64 levels";
    QTest::addRow("tokenizer_config.json nested") << tc << "{\"x\": " + deep("{\"y\": ", 100, "}") + "}"
                                                  << "nested deeper than 64 levels";
    QTest::addRow("vocab.json nested") << vocab << deep("[", 1'000'000, "]") << "(top level): nested deeper than 64 levels";
    QTest::addRow("index.json nested") << index << "{\"weight_map\": " + deep("[", 1000, "]") + "}"
                                       << "weight_map: nested deeper than 64 levels";
    // G. duplicate keys: the last one silently won
    QTest::addRow("config.json duplicate") << config << "{" + gpt2 + R"(, "n_head": 8})" << "n_head: duplicate key";
    QTest::addRow("tokenizer_config.json duplicate") << tc << QByteArray(R"({"do_lower_case": true, "do_lower_case": false})")
                                                     << "do_lower_case: duplicate key";
    QTest::addRow("vocab.json duplicate") << vocab << QByteArray(R"({"a": 0, "b": 1, "a": 2})") << "a: duplicate key";
    QTest::addRow("index.json duplicate")
        << index << QByteArray(R"({"weight_map": {"wte.weight": "missing.safetensors", "wte.weight": "model-1.safetensors"}})")
        << "weight_map.wte.weight: duplicate key";
    // P. nlohmann's ids stay out of messages
    QTest::addRow("config.json malformed") << config << QByteArray(R"({"model_type": )") << "malformed JSON: parse error at line 1";
    QTest::addRow("vocab.json malformed") << vocab << QByteArray("{\"a\": 0,") << "malformed JSON: parse error";
    // E, O. strings from the file: an escaped excerpt
    QTest::addRow("model_type 5 MB") << config << R"({"model_type": ")" + QByteArray(5'000'000, 'x') + "\"}"
                                     << "model_type: \"xxxxxxxx";
    QTest::addRow("model_type forging a line") << config << QByteArray(R"({"model_type": "x\n\u001b[2J\u001b[31mattnviz: all good"})")
                                               << "model_type: \"x\\x0a\\x1b[2J\\x1b[31mattnviz: all good\" is not a family";
    QTest::addRow("index.json shard name forging a line")
        << index << QByteArray(R"({"weight_map": {"w": "a\u001b[2J/b"}})") << "weight_map.\"w\": \"a\\x1b[2J/b\" is not a file in the folder";
    QTest::addRow("index.json shard name with a newline")
        << index << QByteArray(R"({"weight_map": {"w": "a\nb.safetensors"}})")
        << "weight_map.\"w\": \"a\\x0ab.safetensors\" is not a file in the folder";
}

void TestBadInput::modelFolderJson()
{
    QFETCH(QString, file);
    QFETCH(QByteArray, content);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(file);
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write(content) == content.size());
    }
    const std::string d = dir.path().toStdString();
    Status st;
    if (file == QLatin1String("config.json")) {
        Architecture c;
        c.modelType = "kept";
        st = readArchitecture(d, c);
        QCOMPARE(c.modelType, std::string("kept"));
    } else if (file == QLatin1String("tokenizer_config.json")) {
        // a BERT folder whose other files are the fixture's
        for (const char *other : {"config.json", "model.safetensors", "vocab.txt"})
            QVERIFY(QFile::link(QFileInfo(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/bert-tiny/")) + QLatin1String(other)).canonicalFilePath(),
                                dir.filePath(QLatin1String(other))));
        std::unique_ptr<Model> m;
        st = openPretrained(d, {}, m);
        QVERIFY(!m);
    } else if (file == QLatin1String("vocab.json")) {
        std::unique_ptr<SubwordTokenizer> t;
        st = loadByteLevelBpe(path.toStdString(), ATTNVIZ_FIXTURE("/tokenizers/gpt2/merges.txt"), t);
        QVERIFY(!t);
    } else {
        TensorArchive a;
        st = a.openFolder(d);
        QVERIFY(a.entries().empty());
    }
    const QString text = QString::fromStdString(st.message);
    expectOneLine(st, st.code, path, message);
    QVERIFY2(!text.contains(QLatin1String("[json.exception")), qPrintable(text));
    QVERIFY2(text.size() < 600, qPrintable(text.left(600)));
    QVERIFY2(!st.message.empty() && st.message.find('\x1b') == std::string::npos, qPrintable(text));
}

void TestBadInput::traceMemory()
{
    // A GPT-2 shape with 30,000 positions and a 20,000-token text: 2 layers x 4 heads x 20,000^2
    // weights are 12.8 GB in float32 (the window aborted with bad_alloc at 3.6 GB).
    ModelInfo info;
    info.name = "huge-positions";
    info.layers = 2;
    info.heads = 4;
    info.dModel = 16;
    info.dHead = 4;
    info.dFeedForward = 64;
    info.maxPositions = 30000;
    const uint64_t weights = uint64_t(2) * 4 * 20000 * 20000 * 4;
    QVERIFY(traceBytes(info, 20000, 4, false) >= weights);
    QVERIFY(traceBytes(info, 20000, 4, false) < weights + weights / 2); // the weights dominate
    QVERIFY(traceBytes(info, 20000, 4, true) >= 2 * weights);            // scores kept too
    info.causal = true; // weights stored lower: about half
    QVERIFY(traceBytes(info, 20000, 4, false) >= weights / 2);
    QVERIFY(traceBytes(info, 20000, 4, false) < weights / 2 + weights / 4);
    QVERIFY(traceBytes(info, 20000, 4, true) >= weights + weights / 2); // the scores whole
    info.causal = false;
    const Status st = checkTraceMemory(info, 20000, 4, false);
    QVERIFY(!st.ok());
    QCOMPARE(st.code, StatusCode::InvalidInput);
    QVERIFY2(st.message.rfind("huge-positions: 20,000 tokens through 2 layers x 4 heads need ", 0) == 0, st.message.c_str());
    QVERIFY2(st.message.find("one computation may use here (at most ") != std::string::npos, st.message.c_str());
    // the largest length that fits, exactly
    const uint64_t budget = memoryBudget();
    const int fit = tokensWithin(info, budget, 4, false);
    QVERIFY(fit > 100 && fit < 20000);
    QVERIFY(traceBytes(info, fit, 4, false) <= budget);
    QVERIFY(traceBytes(info, fit + 1, 4, false) > budget);
    QVERIFY(checkTraceMemory(info, fit, 4, false).ok());
    QVERIFY(st.message.find("(at most " + describeCount(fit) + " tokens fit)") != std::string::npos);
    // a model that fits whole: its positions
    info.maxPositions = 32;
    QCOMPARE(tokensWithin(info, budget, 4, false), 32);
    // sizes saturate, never wrap
    info.layers = info.heads = 2147483647;
    QCOMPARE(traceBytes(info, 2147483647, 8, true), std::numeric_limits<uint64_t>::max());
}

void TestBadInput::messagesQuoteFileText()
{
    QCOMPARE(quoteText("ab\ncd"), std::string("\"ab\\x0acd\""));
    QCOMPARE(quoteText("\x1b[2J"), std::string("\"\\x1b[2J\""));
    // C1 controls (U+009B is an 8-bit CSI) and bidirectional overrides as \uNNNN; other characters kept
    QCOMPARE(quoteText("a\xC2\x9B"
                       "2Jb"),
             std::string("\"a\\u009b2Jb\""));
    QCOMPARE(printable("x\xE2\x80\xAEy\xE2\x81\xA6z"), std::string("x\\u202ey\\u2066z"));
    QCOMPARE(printable("\xC2\x80\xC2\x9F"), std::string("\\u0080\\u009f"));
    QCOMPARE(printable("\xC3\xA9 \xC2\xA0 \xE2\x80\xAF \xE2\x80\x94"),
             std::string("\xC3\xA9 \xC2\xA0 \xE2\x80\xAF \xE2\x80\x94"));
    const std::string big(5'000'000, 'x');
    const std::string q = quoteText(big);
    QCOMPARE(q, "\"" + std::string(64, 'x') + "\"... (5.0 MB)");
    // never half of a UTF-8 character
    QCOMPARE(quoteText(std::string(63, 'a') + "\xC3\xA9tail"), "\"" + std::string(63, 'a') + "\"... (69 bytes)");
    const std::string line = printable("x\ny" + big);
    QVERIFY(line.size() < 2100);
    QCOMPARE(line.substr(0, 6), std::string("x\\x0ay"));
    QVERIFY(line.find('\n') == std::string::npos);
    uint64_t size = 0;
    const Status st = regularFileSize("", size);
    QCOMPARE(st.message, std::string("(an empty path): names no file"));
}

// A tokenizer.json that is there but not a regular file (a FIFO, never opened: it would block) is
// said to be what it is, not "missing".
void TestBadInput::tokenizerNotARegularFile()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    for (const char *other : {"config.json", "model.safetensors"})
        QVERIFY(QFile::link(QFileInfo(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/gemma3-tiny/")) + QLatin1String(other))
                                .canonicalFilePath(),
                            dir.filePath(QLatin1String(other))));
    const QString tokenizer = dir.filePath(QStringLiteral("tokenizer.json"));
    QVERIFY(::mkfifo(QFile::encodeName(tokenizer).constData(), 0600) == 0);
    std::unique_ptr<Model> m;
    Status st = openPretrained(dir.path().toStdString(), {}, m);
    QVERIFY(!m);
    expectOneLine(st, StatusCode::IoError, tokenizer, QStringLiteral("not a regular file"));
    QVERIFY2(st.message.find("missing") == std::string::npos, st.message.c_str());
    QVERIFY(QFile::remove(tokenizer));
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("tokenizer.json")));
    st = openPretrained(dir.path().toStdString(), {}, m);
    expectOneLine(st, StatusCode::IoError, tokenizer, QStringLiteral("is a directory, not a file"));
}

void TestBadInput::float32Overflow()
{
    auto file = [&](double v, const QString &name) {
        const QByteArray header = R"({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})";
        const double values[2] = {1.0, v};
        QByteArray b = safetensors(header);
        b += QByteArray(reinterpret_cast<const char *>(values), 16);
        return place(b, name);
    };
    float out[2];
    TensorArchive a;
    const QString big = file(1e300, QStringLiteral("big.safetensors"));
    QVERIFY(a.openFile(big.toStdString()).ok());
    Status st = a.read(*a.find("w"), out);
    expectOneLine(st, StatusCode::NonFinite, big, QStringLiteral("\"w\": value 1 (1e+300) is larger than float32 holds"));
    // (the path left out: a temporary folder's random name may spell "NaN")
    QVERIFY(!QString::fromStdString(st.message).remove(big).contains(QLatin1String("NaN")));
    double exact[2];
    QVERIFY(a.read(*a.find("w"), exact).ok()); // float64 holds it
    QCOMPARE(exact[1], 1e300);
    const QString nan = file(std::numeric_limits<double>::quiet_NaN(), QStringLiteral("nan.safetensors"));
    QVERIFY(a.openFile(nan.toStdString()).ok());
    st = a.read(*a.find("w"), out);
    expectOneLine(st, StatusCode::NonFinite, nan, QStringLiteral("\"w\": contains NaN or Inf"));
}

void TestBadInput::hugeWord()
{
    // one word of 1 MB (a session's sentence ran past 20 s). Not a speed test: the ceiling is far above
    // what any build takes (0.3-0.6 s in release, 2.4 s under ASan) and far below what a path quadratic
    // in the word's length takes (minutes), which is what it is there to catch.
    const std::string word(1'000'000, 'a');
    constexpr long long kCeilingMs = 30'000;
    // the thread's CPU time: what the work costs, whatever else the machine runs meanwhile
    struct CpuTimer {
        double t0 = now();
        static double now()
        {
            timespec ts {};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
        }
        void restart() { t0 = now(); }
        long long elapsed() const { return (long long)(now() - t0); }
    } timer;
    const Tokenization words = tokenize(word);
    QCOMPARE(int(words.tokens.size()), 1);
    QVERIFY2(timer.elapsed() < kCeilingMs, qPrintable(QString::number(timer.elapsed())));
    std::unique_ptr<SubwordTokenizer> bpe, wp;
    QVERIFY(loadByteLevelBpe(ATTNVIZ_FIXTURE("/tokenizers/gpt2/vocab.json"), ATTNVIZ_FIXTURE("/tokenizers/gpt2/merges.txt"), bpe).ok());
    QVERIFY(loadWordPiece(ATTNVIZ_FIXTURE("/tokenizers/bert-base-uncased/vocab.txt"), WordPieceOptions(), wp).ok());
    for (const std::string &text : {word, std::string(333'333, 'x') + std::string(333'333, 'y') + std::string(333'334, 'z'),
                                    [] { std::string s; for (int i = 0; i < 250'000; ++i) s += "ab1é"; return s; }()}) {
        std::vector<TraceToken> tokens;
        timer.restart();
        QVERIFY(bpe->encode(text, tokens).ok());
        qInfo("BPE %zu bytes: %lld ms, %zu tokens", text.size(), timer.elapsed(), tokens.size());
        QVERIFY2(timer.elapsed() < kCeilingMs, qPrintable(QStringLiteral("BPE: %1 ms").arg(timer.elapsed())));
        QVERIFY(!tokens.empty());
        QCOMPARE(tokens.back().end, text.size());
        timer.restart();
        QVERIFY(wp->encode(text, tokens).ok());
        qInfo("WordPiece %zu bytes: %lld ms, %zu tokens", text.size(), timer.elapsed(), tokens.size());
        QVERIFY2(timer.elapsed() < kCeilingMs, qPrintable(QStringLiteral("WordPiece: %1 ms").arg(timer.elapsed())));
        QVERIFY(!tokens.empty());
    }
}

// The checks refuse what cannot be, not what is merely unusual: real files of every reader load.
void TestBadInput::goodFilesStillLoad()
{
    CaseFile c;
    const Status cs = loadCase(ATTNVIZ_FIXTURE("/cases/mha_04_h2_d8_tq3_tk7_b2_cross_key_padding.json"), c);
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
    const Status ss = readSafetensors(ATTNVIZ_FIXTURE("/torch/stack_postnorm_relu_sinusoidal.safetensors"), f);
    QVERIFY2(ss.ok(), ss.message.c_str());
    QVERIFY(!f.tensors.empty());
}

QTEST_GUILESS_MAIN(TestBadInput)
#include "tst_badinput.moc"
