// SPDX-License-Identifier: GPL-3.0-or-later
// A user's own table replaces the bundled one: a GloVe-sized text file (400,000 lines of 50
// numbers, as glove.6B.50d.txt) loads with progress reported and can be cancelled part way,
// leaving the caller's table untouched; `attnviz compute --embeddings FILE` uses that file.
// The file is generated in a temporary folder (short numbers keep it near 100 MB and fast).
#include "testpaths.h"
#include "attnviz/embeddings.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <string>
#include <vector>

using namespace attnviz;

namespace {
constexpr int kLines = 400000;
constexpr int kDim = 50;

// Word i: "w<i>" except a few real words; value k of word i: a fixed pattern in [-0.99, 0.99].
std::string wordAt(int i)
{
    static const char *named[] = {"the", "ship", "crew", "my"};
    return i < 4 ? named[i] : "w" + std::to_string(i);
}
int valueAt(int i, int k)
{
    return int((unsigned(i) * 2654435761u + unsigned(k) * 40503u) % 199u) - 99;
}

bool writeGlove(const QString &path)
{
    std::FILE *f = std::fopen(path.toLocal8Bit().constData(), "wb");
    if (!f)
        return false;
    std::vector<std::string> text(199); // " -0.99" .. " 0.99"
    for (int v = -99; v <= 99; ++v) {
        char num[16];
        std::snprintf(num, sizeof num, " %s0.%02d", v < 0 ? "-" : "", v < 0 ? -v : v);
        text[size_t(v + 99)] = num;
    }
    std::string line;
    for (int i = 0; i < kLines; ++i) {
        line = wordAt(i);
        for (int k = 0; k < kDim; ++k)
            line += text[size_t(valueAt(i, k) + 99)];
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), f);
    }
    return std::fclose(f) == 0;
}
} // namespace

class TestEmbeddingLoading : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void loadsWithProgress();
    void cancels();
    void computeUsesTheGivenTable();

private:
    QTemporaryDir m_dir;
    QString m_glove;
};

void TestEmbeddingLoading::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_glove = m_dir.filePath(QStringLiteral("glove.400k.50d.txt"));
    QVERIFY(writeGlove(m_glove));
}

void TestEmbeddingLoading::loadsWithProgress()
{
    EmbeddingTable t;
    std::vector<double> reports;
    QElapsedTimer timer;
    timer.start();
    const Status st = loadEmbeddings(m_glove.toStdString(), t, EmbeddingFormat::Auto, [&](double f) {
        reports.push_back(f);
        return true;
    });
    qInfo("400k x 50 GloVe text: loaded in %lld ms, %zu progress reports", timer.elapsed(), reports.size());
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(t.size(), kLines);
    QCOMPARE(t.dim(), kDim);
    QCOMPARE(t.indexOf("ship"), 1);
    QCOMPARE(t.words().back(), wordAt(kLines - 1));
    QCOMPARE(t.vector(kLines - 1)[kDim - 1], float(valueAt(kLines - 1, kDim - 1)) / 100.0f);
    // Reported often enough for a progress bar, increasing, ending at 1.
    QVERIFY(reports.size() >= 40);
    for (size_t i = 1; i < reports.size(); ++i)
        QVERIFY(reports[i] >= reports[i - 1]);
    QVERIFY(reports.front() > 0.0 && reports.front() < 0.05);
    QCOMPARE(reports.back(), 1.0);
}

void TestEmbeddingLoading::cancels()
{
    // A table already loaded (say the bundled one) survives a cancelled load.
    EmbeddingTable t;
    Mat<float> one(1, 3);
    one << 1, 2, 3;
    t.assign({"kept"}, one, "before");
    int calls = 0;
    double last = 0;
    const Status st = loadEmbeddings(m_glove.toStdString(), t, EmbeddingFormat::Auto, [&](double f) {
        last = f;
        return ++calls < 10; // cancel at the tenth report
    });
    QCOMPARE(st.code, StatusCode::Cancelled);
    QCOMPARE(calls, 10);
    QVERIFY(last < 0.5); // it stopped early, not at the end
    QCOMPARE(t.size(), 1);
    QCOMPARE(t.source(), std::string("before"));
    QCOMPARE(t.indexOf("kept"), 0);
}

void TestEmbeddingLoading::computeUsesTheGivenTable()
{
    // A small user table: "ship" and "crew" known, the rest falls back; replaces the bundled table.
    const QString table = m_dir.filePath(QStringLiteral("tiny.txt"));
    QFile t(table);
    QVERIFY(t.open(QIODevice::WriteOnly));
    t.write("ship 1 0 0 0\ncrew 0.9 0.1 0 0\n");
    t.close();
    const QString casePath = m_dir.filePath(QStringLiteral("case.json"));
    QFile c(casePath);
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(R"({"name": "tiny", "config": {"projections": "identity"}, "inputs": {"sentence": "ship to crew"}})");
    c.close();
    QProcess p;
    p.start(QString::fromUtf8(ATTNVIZ_BINARY),
            {QStringLiteral("compute"), casePath, QStringLiteral("--embeddings"), table});
    QVERIFY(p.waitForFinished(30000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QJsonObject r = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(r.value(QStringLiteral("tokens")).toArray(), QJsonArray({"ship", "to", "crew"}));
    QCOMPARE(r.value(QStringLiteral("unknown")).toArray(), QJsonArray({false, true, false}));
    QCOMPARE(r.value(QStringLiteral("config")).toObject().value(QStringLiteral("d_model")).toInt(), 4);
}

QTEST_GUILESS_MAIN(TestEmbeddingLoading)
#include "tst_embeddingloading.moc"
