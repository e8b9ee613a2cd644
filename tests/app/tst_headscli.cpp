// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz heads --model M --corpus FILE` as a user runs it on the tiny GPT-2 folder: the CSV's rows
// and the JSON's grids equal the core's corpusHeadScores on the same prompts, a cut prompt is said on
// stderr, and bad input gets one line, exit code 2, nothing written. With --needle, --question and
// --haystack: the retrieval probe's scores (CSV and JSON) equal the core's needleProbe.
#include "testpaths.h"
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/modelfolders.h"
#include "../support/runattnviz.h"

#include "attnviz/headroles.h"
#include "attnviz/needleprobe.h"
#include "attnviz/pretrained.h"

#include <cmath>

namespace {

using attnviz_test::Run;

Run execCli(const QStringList &args) { return attnviz_test::runAttnviz(args, 300000); }

const QStringList kPrompts = {QStringLiteral("the cat sat on the mat"), QString(), QStringLiteral("a dog ran"),
                              QStringLiteral("one two three one two three"), QStringLiteral("  ")};

QString writeCorpus(const QTemporaryDir &dir, const QByteArray &bytes, const QString &name = QStringLiteral("corpus.txt"))
{
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size())
        return {};
    return path;
}

} // namespace

class TestHeadsCli : public QObject {
    Q_OBJECT
private slots:
    void csvAndJsonEqualTheCore()
    {
        using namespace attnviz;
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // CRLF line ends, a blank line and a line of spaces: three prompts
        const QString corpus = writeCorpus(dir, kPrompts.join(QStringLiteral("\r\n")).toUtf8() + "\r\n");
        const QString model = attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny"));
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(model.toStdString(), {}, m).ok());
        CorpusRequest req;
        for (const QString &p : kPrompts)
            req.prompts.push_back(p.trimmed().isEmpty() ? std::string() : p.toStdString());
        CorpusHeadScores want;
        QVERIFY(corpusHeadScores(*m, req, want).ok());
        QCOMPARE(want.prompts, 3);

        const QString csvPath = dir.filePath(QStringLiteral("scores.csv"));
        Run r = execCli({QStringLiteral("heads"), QStringLiteral("--model"), model, QStringLiteral("--corpus"), corpus,
                         QStringLiteral("-o"), csvPath});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.isEmpty(), r.err.constData());
        QFile csv(csvPath);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(csv.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.front(), QStringLiteral("layer,head,score,mean,spread,prompts"));
        QCOMPARE(lines.size(), 1 + 2 * 4 * 5); // 2 layers x 4 heads x (4 scores + induction)
        auto near = [](const QString &cell, double v) {
            if (!std::isfinite(v))
                return cell.isEmpty();
            return std::abs(cell.toDouble() - v) <= 1e-8 * std::max(1.0, std::abs(v));
        };
        const std::map<QString, const CorpusScore *> byName = {{QStringLiteral("previous"), &want.previousToken},
                                                              {QStringLiteral("first"), &want.firstToken},
                                                              {QStringLiteral("same"), &want.sameToken},
                                                              {QStringLiteral("self"), &want.self}};
        int sameUndefined = 0;
        for (int i = 1; i < lines.size(); ++i) {
            const QStringList c = lines[i].split(QLatin1Char(','));
            QCOMPARE(c.size(), 6);
            const int l = c[0].toInt(), h = c[1].toInt();
            if (c[2] == QLatin1String("induction")) {
                QVERIFY(near(c[3], want.induction(l, h)));
                QVERIFY(c[4].isEmpty());
                continue;
            }
            const CorpusScore *s = byName.at(c[2]);
            QVERIFY2(near(c[3], s->mean(l, h)), qPrintable(lines[i]));
            QVERIFY2(near(c[4], s->spread(l, h)), qPrintable(lines[i]));
            QCOMPARE(c[5].toInt(), s->count(l, h));
            sameUndefined += c[2] == QLatin1String("same") && c[4].isEmpty(); // one prompt repeats a token
        }
        QCOMPARE(sameUndefined, 8);

        // JSON on standard output, without the probe
        r = execCli({QStringLiteral("heads"), QStringLiteral("--model"), model, QStringLiteral("--corpus"), corpus,
                     QStringLiteral("--format"), QStringLiteral("json"), QStringLiteral("--no-induction")});
        QCOMPARE(r.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value(QStringLiteral("prompts")).toInt(), 3);
        QCOMPARE(o.value(QStringLiteral("tokens")).toDouble(), double(want.tokens));
        const QJsonObject scores = o.value(QStringLiteral("scores")).toObject();
        QVERIFY(!scores.contains(QStringLiteral("induction")));
        const QJsonArray prevMean = scores.value(QStringLiteral("previous")).toObject().value(QStringLiteral("mean")).toArray();
        QCOMPARE(prevMean.size(), 2);
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 4; ++h)
                QVERIFY(std::abs(prevMean[l].toArray()[h].toDouble() - want.previousToken.mean(l, h)) < 1e-12);
    }

    void cutPromptsSaid()
    {
        QTemporaryDir dir;
        QByteArray longLine;
        for (int i = 0; i < 40; ++i)
            longLine += " cat";
        const QString corpus = writeCorpus(dir, "the cat\n" + longLine + "\n");
        const Run r = execCli({QStringLiteral("heads"), QStringLiteral("--model"),
                               attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")), QStringLiteral("--corpus"), corpus,
                               QStringLiteral("--no-induction")});
        QCOMPARE(r.code, 0);
        QCOMPARE(QString::fromUtf8(r.err),
                 QStringLiteral("attnviz heads: note: 1 of 2 prompts cut: gpt2-tiny reads at most 32 tokens; the text has 40: "
                                "the rest is cut (the first shown)\n"));
    }


    void needleProbeEqualsTheCore()
    {
        using namespace attnviz;
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QByteArray hay = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
        const QString file = writeCorpus(dir, hay, QStringLiteral("haystack.txt"));
        const QString model = attnviz_test::fixtureModel(QStringLiteral("llama-tiny"));
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(model.toStdString(), {}, m).ok());
        NeedleRequest req;
        req.haystack = hay.toStdString();
        req.needle = "The best thing to do in San Francisco is eat a sandwich.";
        req.question = "What is the best thing to do in San Francisco?";
        req.depth = 0.25;
        NeedleProbe want;
        QVERIFY(needleProbe(*m, req, want).ok());
        const QStringList args{QStringLiteral("heads"),     QStringLiteral("--model"),    model,
                               QStringLiteral("--needle"),  QString::fromStdString(req.needle),
                               QStringLiteral("--question"), QString::fromStdString(req.question),
                               QStringLiteral("--haystack"), file,
                               QStringLiteral("--depth"),   QStringLiteral("0.25")};
        const Run csv = execCli(args);
        QCOMPARE(csv.code, 0);
        QVERIFY2(QString::fromUtf8(csv.err).contains(QStringLiteral("the needle at tokens %1-%2").arg(want.needleBegin).arg(want.needleEnd - 1)),
                 csv.err.constData());
        const QList<QByteArray> lines = csv.out.trimmed().split('\n');
        QCOMPARE(lines.front(), QByteArray("layer,head,retrieval"));
        QCOMPARE(int(lines.size()) - 1, int(want.retrieval.size()));
        for (int k = 1; k < int(lines.size()); ++k) {
            const QList<QByteArray> f = lines[k].split(',');
            QCOMPARE(f.size(), 3);
            QCOMPARE(f[2].toDouble(), want.retrieval(f[0].toInt(), f[1].toInt()));
        }
        const Run json = execCli(args + QStringList{QStringLiteral("--format"), QStringLiteral("json")});
        QCOMPARE(json.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(json.out).object();
        QCOMPARE(o.value(QStringLiteral("promptTokens")).toInt(), want.promptTokens);
        QCOMPARE(o.value(QStringLiteral("needle")).toArray(), (QJsonArray{want.needleBegin, want.needleEnd}));
        QCOMPARE(o.value(QStringLiteral("answer")).toArray().size(), qsizetype(want.answer.size()));
        QCOMPARE(o.value(QStringLiteral("answerText")).toString(), QString::fromStdString(want.answerText));
        const QJsonArray grid = o.value(QStringLiteral("retrieval")).toArray();
        QCOMPARE(grid.size(), qsizetype(want.retrieval.rows()));
        for (int l = 0; l < int(want.retrieval.rows()); ++l)
            for (int h = 0; h < int(want.retrieval.cols()); ++h)
                QCOMPARE(grid[l].toArray()[h].toDouble(), want.retrieval(l, h));
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QByteArray>("corpus"); // written to corpus.txt in the test's folder (@CORPUS@)
        QTest::addColumn<QString>("message");   // @DIR@: that folder
        const QString g = attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny"));
        const QString h = QStringLiteral("heads"), m = QStringLiteral("--model"), c = QStringLiteral("--corpus"),
                      at = QStringLiteral("@CORPUS@");
        QTest::newRow("no corpus") << QStringList{h, m, g} << QByteArray("a\n") << QStringLiteral("attnviz heads: --corpus: missing\n");
        QTest::newRow("no model") << QStringList{h, c, at} << QByteArray("a\n") << QStringLiteral("attnviz heads: --model: missing\n");
        QTest::newRow("empty lines only") << QStringList{h, m, g, c, at} << QByteArray("\n  \n\t\n")
                                          << QStringLiteral("attnviz heads: @DIR@/corpus.txt: no prompt in it (every line is empty)\n");
        QTest::newRow("binary") << QStringList{h, m, g, c, at} << QByteArray("ab\0cd", 5)
                                << QStringLiteral("attnviz heads: @DIR@/corpus.txt: a NUL byte at offset 2: not a text file of prompts\n");
        QTest::newRow("a folder") << QStringList{h, m, g, c, QStringLiteral("@DIR@")} << QByteArray("a\n")
                                  << QStringLiteral("attnviz heads: @DIR@: is a directory, not a file\n");
        QTest::newRow("output kind") << QStringList{h, m, g, c, at, QStringLiteral("-o"), QStringLiteral("@DIR@/x.png")}
                                     << QByteArray("a\n") << QStringLiteral("attnviz heads: -o @DIR@/x.png: .csv or .json\n");
        QTest::newRow("format") << QStringList{h, m, g, c, at, QStringLiteral("--format"), QStringLiteral("xml")} << QByteArray("a\n")
                                << QStringLiteral("attnviz heads: --format: csv or json, not xml\n");
        const QString n = QStringLiteral("--needle"), q = QStringLiteral("--question"), hs = QStringLiteral("--haystack");
        QTest::newRow("needle without question") << QStringList{h, m, g, n, QStringLiteral("x"), hs, at} << QByteArray("a\n")
                                                 << QStringLiteral("attnviz heads: --question: missing\n");
        QTest::newRow("needle and corpus") << QStringList{h, m, g, c, at, n, QStringLiteral("x")} << QByteArray("a\n")
                                           << QStringLiteral("attnviz heads: --corpus or --needle (the retrieval probe), not both\n");
        QTest::newRow("depth") << QStringList{h, m, g, n, QStringLiteral("x"), q, QStringLiteral("y"), hs, at,
                                              QStringLiteral("--depth"), QStringLiteral("2")}
                               << QByteArray("a\n") << QStringLiteral("attnviz heads: --depth 2: a number from 0 to 1\n");
        QTest::newRow("haystack not text") << QStringList{h, m, g, n, QStringLiteral("x"), q, QStringLiteral("y"), hs, at}
                                           << QByteArray("a\0b", 3)
                                           << QStringLiteral("attnviz heads: @DIR@/corpus.txt: a NUL byte at offset 1: not a text file\n");
        QTest::newRow("not causal") << QStringList{h, m, attnviz_test::fixtureModel(QStringLiteral("bert-tiny")), n,
                                                   QStringLiteral("x"), q, QStringLiteral("y"), hs, at}
                                    << QByteArray("a b c\n")
                                    << QStringLiteral("attnviz heads: bert-tiny: the needle probe needs a causal language model\n");
    }

    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QByteArray, corpus);
        QFETCH(QString, message);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(!writeCorpus(dir, corpus).isEmpty());
        for (QString &a : args)
            a.replace(QStringLiteral("@CORPUS@"), dir.filePath(QStringLiteral("corpus.txt"))).replace(QStringLiteral("@DIR@"), dir.path());
        const Run r = execCli(args);
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), QString(message).replace(QStringLiteral("@DIR@"), dir.path()));
        QVERIFY(r.out.isEmpty());
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    }
};

QTEST_GUILESS_MAIN(TestHeadsCli)
#include "tst_headscli.moc"
