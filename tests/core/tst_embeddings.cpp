// SPDX-License-Identifier: GPL-3.0-or-later
// Embedding tables: every format, the errors a bad file gives (and that nothing is lost), unknown
// words, and .avec quantization.
#include "attnviz/embeddings.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace attnviz;

namespace {

std::string write(const QTemporaryDir &dir, const char *name, const std::string &data)
{
    const std::string path = dir.filePath(QLatin1String(name)).toStdString();
    std::ofstream(path, std::ios::binary) << data;
    return path;
}

const char *kGlove = "ship 1.0 0.0 0.5\ncrew 0.9 0.1 0.4\nmy 0.0 1.0 0.0\n";

} // namespace

class TestEmbeddings : public QObject {
    Q_OBJECT
private slots:
    void gloveText();
    void vecWithHeader();
    void word2vecBinary();
    void avecRoundTrip();
    void badFiles_data();
    void badFiles();
    void unknownWordsAreFlaggedAndDeterministic();
    void progressAndCancel();
};

void TestEmbeddings::gloveText()
{
    QTemporaryDir dir;
    EmbeddingTable t;
    const Status st = loadEmbeddings(write(dir, "g.txt", kGlove), t);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(t.size(), 3);
    QCOMPARE(t.dim(), 3);
    QCOMPARE(t.indexOf("crew"), 1);
    QCOMPARE(t.vector(1)[2], 0.4f);
}

void TestEmbeddings::vecWithHeader()
{
    QTemporaryDir dir;
    EmbeddingTable t;
    QVERIFY(loadEmbeddings(write(dir, "g.vec", std::string("3 3\n") + kGlove), t).ok());
    QCOMPARE(t.size(), 3);
    QCOMPARE(t.indexOf("my"), 2);
}

void TestEmbeddings::word2vecBinary()
{
    QTemporaryDir dir;
    std::string data = "2 3\n";
    const float a[3] = {1.0f, -2.0f, 0.25f}, b[3] = {0.0f, 3.5f, 1e-3f};
    data += "alpha ";
    data.append(reinterpret_cast<const char *>(a), 12);
    data += "\nbeta ";
    data.append(reinterpret_cast<const char *>(b), 12);
    data += "\n";
    EmbeddingTable t;
    const Status st = loadEmbeddings(write(dir, "w.bin", data), t);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(t.size(), 2);
    QCOMPARE(t.vector(t.indexOf("beta"))[1], 3.5f);
    QCOMPARE(t.vector(t.indexOf("alpha"))[1], -2.0f);
}

void TestEmbeddings::avecRoundTrip()
{
    QTemporaryDir dir;
    EmbeddingTable t;
    QVERIFY(loadEmbeddings(write(dir, "g.txt", kGlove), t).ok());
    const std::string path = dir.filePath(QStringLiteral("t.avec")).toStdString();
    QVERIFY(writeAvec(path, t, 2).ok());
    EmbeddingTable q;
    QVERIFY(loadEmbeddings(path, q).ok());
    QCOMPARE(q.size(), 2); // maxWords
    for (int i = 0; i < 2; ++i)
        QVERIFY((q.vector(i) - t.vector(i)).cwiseAbs().maxCoeff() <= t.vector(i).cwiseAbs().maxCoeff() / 254.0f + 1e-7f);
}

void TestEmbeddings::badFiles_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("message");
    QTest::addColumn<int>("code");
    QTest::addRow("ragged") << QByteArray("a 1 2 3\nb 1 2\n") << ":2: expected 3 numbers, found 2" << int(StatusCode::ParseError);
    QTest::addRow("not a number") << QByteArray("a 1 2 x3\n") << ":1: \"x3\" is not a number" << int(StatusCode::ParseError);
    QTest::addRow("nan") << QByteArray("a 1 nan 3\n") << ":1: NaN or Inf" << int(StatusCode::NonFinite);
    QTest::addRow("empty") << QByteArray("") << "empty file" << int(StatusCode::ParseError);
    QTest::addRow("word only") << QByteArray("a\n") << ":1: expected a word and its numbers" << int(StatusCode::ParseError);
    QTest::addRow("truncated avec") << QByteArray("AVEC\x01\0\0\0\x05\0\0\0\x03\0\0\0\0\0\0\0\x02hi", 22)
                                    << "truncated vocabulary" << int(StatusCode::ParseError);
    QTest::addRow("newer avec") << QByteArray("AVEC\x02\0\0\0\x01\0\0\0\x03\0\0\0\0\0\0\0", 20) << "version 2"
                                << int(StatusCode::ParseError);
}

void TestEmbeddings::badFiles()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, message);
    QFETCH(int, code);
    QTemporaryDir dir;
    EmbeddingTable t;
    QVERIFY(loadEmbeddings(write(dir, "good.txt", kGlove), t).ok());
    const Status st = loadEmbeddings(write(dir, "bad.txt", std::string(content.constData(), size_t(content.size()))), t);
    QCOMPARE(int(st.code), code);
    QVERIFY2(QString::fromStdString(st.message).contains(message), st.message.c_str());
    QCOMPARE(t.size(), 3); // the table loaded before is untouched
    QCOMPARE(loadEmbeddings(dir.filePath(QStringLiteral("missing.txt")).toStdString(), t).code, StatusCode::IoError);
}

void TestEmbeddings::unknownWordsAreFlaggedAndDeterministic()
{
    QTemporaryDir dir;
    EmbeddingTable t;
    QVERIFY(loadEmbeddings(write(dir, "g.txt", kGlove), t).ok());
    const EmbeddedSentence s = embedSentence(t, "My ship, my zyzzyva!");
    QCOMPARE(int(s.tokens.size()), 6);
    QCOMPARE(s.unknown, (std::vector<uint8_t>{0, 0, 1, 0, 1, 1}));
    QCOMPARE(s.matrix.row(0), t.vector(2).transpose());
    const Vec<float> z1 = t.fallbackVector("zyzzyva"), z2 = t.fallbackVector("zyzzyva");
    QCOMPARE(z1, z2);
    QVERIFY(z1 != t.fallbackVector("zyzzyvb"));
    QCOMPARE(Vec<float>(s.matrix.row(4).transpose()), z1);
    QVERIFY(z1.norm() > 0.2f * t.meanNorm() && z1.norm() < 3.0f * t.meanNorm());
}

void TestEmbeddings::progressAndCancel()
{
    QTemporaryDir dir;
    std::string data;
    for (int i = 0; i < 40000; ++i)
        data += "w" + std::to_string(i) + " 0.1 0.2 0.3 0.4\n";
    const std::string path = write(dir, "big.txt", data);
    int calls = 0;
    double last = 0;
    EmbeddingTable t;
    QVERIFY(loadEmbeddings(path, t, EmbeddingFormat::Auto, [&](double f) { ++calls; last = f; return true; }).ok());
    QVERIFY(calls >= 4);
    QCOMPARE(last, 1.0);
    QCOMPARE(t.size(), 40000);
    const Status st = loadEmbeddings(path, t, EmbeddingFormat::Auto, [&](double f) { return f < 0.3; });
    QCOMPARE(st.code, StatusCode::Cancelled);
    QCOMPARE(t.size(), 40000); // untouched
    // cancelled while the file is still being read (the first progress report comes from reading)
    double first = -1;
    const Status early = loadEmbeddings(path, t, EmbeddingFormat::Auto, [&](double f) { first = f; return false; });
    QCOMPARE(early.code, StatusCode::Cancelled);
    QVERIFY(first > 0.0 && first <= 0.3);
    QCOMPARE(t.size(), 40000);
}

QTEST_GUILESS_MAIN(TestEmbeddings)
#include "tst_embeddings.moc"
