// SPDX-License-Identifier: GPL-3.0-or-later
// SentencePiece models read with the SentencePiece library (subword.h: loadSentencePiece): a tiny
// unigram model laid out as T5's spiece.model (tests/fixtures/tokenizers/t5-spm, trained by
// tests/fixtures/models/make_t5.py with byte fallback) gives python3-sentencepiece's own ids on every
// line of the tokenizer corpus (accents, NFKC forms, whitespace runs, controls, unassigned and
// astral characters reaching the byte pieces), then </s>; byte ranges, decoding, a bad file; and a
// T5 folder's text traces.
#include "testpaths.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/pretrained.h"
#include "attnviz/subword.h"
#include "subwordtesthelpers.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QString spiece() { return QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/t5-spm/spiece.model")); }

std::unique_ptr<SubwordTokenizer> load(bool eos = true)
{
    std::unique_ptr<SubwordTokenizer> t;
    const Status st = loadSentencePiece(spiece().toStdString(), eos, t);
    if (!st)
        qWarning("%s", st.message.c_str());
    return t;
}

} // namespace

class TestSentencePiece : public QObject {
    Q_OBJECT

private slots:
    // Every corpus line: the library's ids as python3-sentencepiece gave them, then </s> (id 1).
    void corpusIds()
    {
        const auto tok = load();
        QVERIFY(tok);
        QCOMPARE(tok->kind(), std::string("SentencePiece"));
        QCOMPARE(tok->vocabSize(), 400);
        const std::vector<std::string> corpus = readCorpus(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/corpus.jsonl")));
        const QList<QByteArray> lines = readAll(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/t5-spm.ids"))).split('\n');
        QCOMPARE(int(corpus.size()), 2159);
        QVERIFY(lines.size() >= int(corpus.size()));
        int bytePieces = 0, accents = 0;
        for (size_t i = 0; i < corpus.size(); ++i) {
            std::vector<TraceToken> tokens;
            QVERIFY(tok->encode(corpus[i], tokens).ok());
            std::vector<int> want = parseIds(lines[int(i)]);
            want.push_back(1);
            QVERIFY2(idsOf(tokens) == want, qPrintable(QStringLiteral("line %1: %2 (expected %3)")
                                                          .arg(i + 1)
                                                          .arg(show(idsOf(tokens)), show(want))));
            // byte ranges inside the text, in order; </s> an added special at the end
            size_t at = 0;
            for (size_t k = 0; k + 1 < tokens.size(); ++k) {
                QVERIFY(tokens[k].begin >= at && tokens[k].end >= tokens[k].begin && tokens[k].end <= corpus[i].size());
                at = tokens[k].begin;
                QVERIFY(!tokens[k].special);
                if (tokens[k].id >= 3 && tokens[k].id < 259)
                    ++bytePieces;
            }
            QVERIFY(tokens.back().special);
            QCOMPARE(tokens.back().text, std::string("</s>"));
            if (corpus[i].find("\xC3\xA9") != std::string::npos)
                ++accents;
        }
        QVERIFY(bytePieces > 1000); // the corpus reaches byte fallback
        QVERIFY(accents > 0);
    }

    // The traps one by one: NFKC folds (the ligature "ﬁ", full-width letters), whitespace runs
    // collapsed and trimmed, an unseen character as its UTF-8 bytes.
    void traps_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("ligature") << QStringLiteral("\uFB01le") << QStringLiteral("file");
        QTest::newRow("full width") << QStringLiteral("\uFF4C\uFF49\uFF43\uFF45\uFF4E\uFF53\uFF45") << QStringLiteral("license");
        QTest::newRow("whitespace runs") << QStringLiteral("  the \t  program\n ") << QStringLiteral("the program");
        QTest::newRow("composed accent") << QStringLiteral("caf\u00E9") << QStringLiteral("cafe\u0301");
    }
    void traps()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        const auto tok = load(false);
        QVERIFY(tok);
        std::vector<TraceToken> x, y;
        QVERIFY(tok->encode(a.toStdString(), x).ok());
        QVERIFY(tok->encode(b.toStdString(), y).ok());
        QCOMPARE(show(idsOf(x)), show(idsOf(y)));
    }

    void bytesAndDecode()
    {
        const auto tok = load(false);
        QVERIFY(tok);
        std::vector<TraceToken> t;
        QVERIFY(tok->encode("\xF0\x9F\x90\xA4", t).ok()); // 🐤: not a piece, four byte pieces after ▁
        QCOMPARE(show(idsOf(t)), QStringLiteral("259 243 162 147 167"));
        QCOMPARE(t[1].text, std::string("<0xF0>"));
        QCOMPARE(t[0].display, std::string("\xE2\x90\xA3")); // ▁ shown as ␣
        QCOMPARE(tok->decode(idsOf(t)), std::string("\xF0\x9F\x90\xA4"));
        QVERIFY(tok->encode("This  License", t).ok());
        QCOMPARE(tok->decode(idsOf(t)), std::string("This License"));
        QCOMPARE(tok->token(1), std::string("</s>"));
        QCOMPARE(tok->id("</s>"), 1);
        QCOMPARE(tok->id("<unk>"), 2);
        QCOMPARE(tok->id("no such piece"), -1);
        QCOMPARE(tok->token(400), std::string());
    }

    void badFile()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("spiece.model"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a model at all\n");
        f.close();
        std::unique_ptr<SubwordTokenizer> t;
        const Status st = loadSentencePiece(path.toStdString(), true, t);
        QVERIFY(!st);
        QVERIFY2(st.message.find(path.toStdString() + ": not a SentencePiece model") == 0, st.message.c_str());
        QVERIFY(!t);
    }

    // A T5 folder with spiece.model: the source as T5Tokenizer encodes it (pieces, </s>), the target
    // fed to the decoder after its start token without </s>, pieces as the trace's token texts.
    void t5Text()
    {
        std::unique_ptr<Model> m;
        const Status st = openPretrained(ATTNVIZ_FIXTURE("/models/t5-tiny"), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(m->info().tokenizer, std::string("SentencePiece (400)"));
        const auto tok = load();
        std::vector<TraceToken> src, tgt;
        QVERIFY(tok->encode("the Program, as modified", src).ok());
        QVERIFY(tok->encode("a copy", tgt).ok());
        TraceRequest r;
        r.text = "the Program, as modified";
        r.target = "a copy";
        Trace<double> byText, byIds;
        QVERIFY(m->trace(r, byText).ok());
        QCOMPARE(show(idsOf(byText.seq2seq.sourceTokens)), show(idsOf(src)));
        std::vector<int> decoder{0};
        for (size_t i = 0; i + 1 < tgt.size(); ++i)
            decoder.push_back(tgt[i].id);
        QCOMPARE(show(idsOf(byText.tokens)), show(decoder));
        QCOMPARE(byText.tokens.front().text, std::string("<pad>"));
        QCOMPARE(byText.seq2seq.sourceTokens.back().text, std::string("</s>"));
        r.ids = idsOf(src);
        r.targetIds.assign(decoder.begin() + 1, decoder.end());
        r.text.clear();
        r.target.clear();
        QVERIFY(m->trace(r, byIds).ok());
        QCOMPARE(byIds.final, byText.final);
        QCOMPARE(byIds.seq2seq.sourceTokens[1].text, src[1].text);
        QCOMPARE(m->decode(idsOf(src)), std::string("the Program, as modified"));
    }
};

QTEST_APPLESS_MAIN(TestSentencePiece)
#include "tst_sentencepiece.moc"
