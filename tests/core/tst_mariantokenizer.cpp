// SPDX-License-Identifier: GPL-3.0-or-later
// Marian's tokenizer (subword.h: loadMarianTokenizer) on marian-spm-tiny (tests/fixtures/models/
// make_marian_spm.py: a unigram source.spm, a BPE target.spm and a vocab.json holding some of their
// pieces): the ids MarianTokenizer gives from python3-sentencepiece's pieces on every line of the
// tokenizer corpus (accents, NFKC forms, whitespace runs, unknown characters) and on language codes,
// for the source and the target; byte ranges; decoding; a folder whose text traces and generates;
// a bad vocab.json named; a Marian folder without the files refused for text in one line.
#include "seq2seqchecks.h"
#include "attnviz/subword.h"
#include "subwordtesthelpers.h"

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QString folder() { return fixture(QStringLiteral("marian-spm-tiny")); }

std::unique_ptr<SubwordTokenizer> load(const char *spm)
{
    std::unique_ptr<SubwordTokenizer> t;
    const Status st = loadMarianTokenizer((folder() + QLatin1Char('/') + QLatin1String(spm)).toStdString(),
                                          (folder() + QStringLiteral("/vocab.json")).toStdString(), t);
    if (!st)
        qWarning("%s", st.message.c_str());
    return t;
}

std::vector<std::string> texts()
{
    std::vector<std::string> t = readCorpus(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/corpus.jsonl")));
    for (const char *extra : {">>de<< Free software", ">>de<<", ">>xx<<  the  Program "})
        t.emplace_back(extra);
    return t;
}

} // namespace

class TestMarianTokenizer : public QObject {
    Q_OBJECT

private slots:
    void corpusIds_data()
    {
        QTest::addColumn<QString>("spm");
        QTest::addColumn<QString>("ids");
        QTest::newRow("source") << QStringLiteral("source.spm") << QStringLiteral("marian-spm.ids");
        QTest::newRow("target") << QStringLiteral("target.spm") << QStringLiteral("marian-spm-target.ids");
    }

    // Every line: MarianTokenizer's ids as make_marian_spm.py wrote them from SentencePiece's pieces.
    void corpusIds()
    {
        QFETCH(QString, spm);
        QFETCH(QString, ids);
        const auto tok = load(spm.toLatin1().constData());
        QVERIFY(tok);
        QCOMPARE(tok->kind(), std::string("SentencePiece + vocab.json (Marian)"));
        QCOMPARE(tok->vocabSize(), 64);
        const std::vector<std::string> corpus = texts();
        QCOMPARE(int(corpus.size()), 2162);
        const QList<QByteArray> lines =
            readAll(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/")) + ids).split('\n');
        QVERIFY(lines.size() >= int(corpus.size()));
        int unknown = 0, known = 0;
        for (size_t i = 0; i < corpus.size(); ++i) {
            std::vector<TraceToken> tokens;
            QVERIFY(tok->encode(corpus[i], tokens).ok());
            const std::vector<int> want = parseIds(lines[int(i)]);
            QVERIFY2(idsOf(tokens) == want, qPrintable(QStringLiteral("line %1: %2 (expected %3)")
                                                          .arg(i + 1)
                                                          .arg(show(idsOf(tokens)), show(want))));
            for (size_t k = 0; k + 1 < tokens.size(); ++k) {
                QVERIFY(tokens[k].begin <= tokens[k].end && tokens[k].end <= corpus[i].size());
                (tokens[k].unknown ? unknown : known) += 1;
            }
            QVERIFY(tokens.back().special);
            QCOMPARE(tokens.back().id, 0); // </s>
        }
        QVERIFY(unknown > 1000 && known > 1000); // pieces missing from vocab.json reach <unk>
    }

    // The traps one by one, and a language code kept at the front (removed elsewhere).
    void pieces()
    {
        const auto tok = load("source.spm");
        QVERIFY(tok);
        std::vector<TraceToken> t;
        QVERIFY(tok->encode(">>de<< the", t).ok());
        QCOMPARE(t.size(), size_t(3));
        QCOMPARE(t[0].text, std::string(">>de<<"));
        QCOMPARE(t[0].id, 2);
        QCOMPARE(t[0].begin, size_t(0));
        QCOMPARE(t[0].end, size_t(6));
        QCOMPARE(t[1].text, std::string("\xE2\x96\x81the"));
        QCOMPARE(t[1].id, 17);
        QCOMPARE(t[1].begin, size_t(7)); // SentencePiece's range ("the", past the space), in the text's bytes
        QCOMPARE(t[1].end, size_t(10));
        QCOMPARE(t[1].display, std::string("\xE2\x90\xA3the"));
        QVERIFY(tok->encode("the >>de<< the", t).ok()); // a code inside is removed, not kept
        QCOMPARE(show(idsOf(t)), QStringLiteral("17 17 0"));
        QVERIFY(tok->encode("\xE6\x97\xA5", t).ok()); // 日: unknown to the .spm and the vocabulary
        QVERIFY(t.size() >= 2 && t[t.size() - 2].unknown && t[t.size() - 2].id == 1);
        QVERIFY(tok->encode("", t).ok());
        QCOMPARE(show(idsOf(t)), QStringLiteral("0"));
        QCOMPARE(tok->decode({17, 33, 17, 0, 63}), std::string("the of the"));
        QCOMPARE(tok->token(63), std::string("<pad>"));
        QCOMPARE(tok->id("</s>"), 0);
        QCOMPARE(tok->id("nowhere"), -1);
    }

    // The folder: its text traces (source.spm for the source, target.spm for the target) and
    // generates; Marian without the files, and a vocab.json without <unk>, in one line.
    void folderAndRefusals()
    {
        std::unique_ptr<Model> m;
        Status st = openPretrained(folder().toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(m->info().tokenizer, std::string("SentencePiece + vocab.json (Marian) (64)"));
        const auto src = load("source.spm"), tgt = load("target.spm");
        std::vector<TraceToken> s, t;
        QVERIFY(src->encode("Free software", s).ok());
        QVERIFY(tgt->encode("the Program", t).ok());
        TraceRequest req;
        req.text = "Free software";
        req.target = "the Program";
        Trace<float> tr;
        st = m->trace(req, tr);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(tr.seq2seq.sourceTokens)), show(idsOf(s)));
        std::vector<int> decoder{63}; // the decoder's start, then the target without </s>
        for (size_t k = 0; k + 1 < t.size(); ++k)
            decoder.push_back(t[k].id);
        QCOMPARE(show(idsOf(tr.tokens)), show(decoder));
        Seq2SeqGenerateOptions opt;
        opt.beams = 2;
        opt.maxNew = 4;
        Seq2SeqGeneration g;
        st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(g.source)), show(idsOf(s)));
        std::vector<int> body = g.ids;
        if (!body.empty() && body.back() == 0)
            body.pop_back();
        QCOMPARE(g.text, tgt->decode(body));

        st = openPretrained(fixture(QStringLiteral("marian-tiny")).toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        std::vector<TraceToken> none;
        st = m->tokenize("Hello", none);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("marian-tiny/source.spm, target.spm and vocab.json: missing (Marian's tokenizer): only token "
                                 "ids trace") != std::string::npos,
                 st.message.c_str());

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const char *f : {"config.json", "model.safetensors", "source.spm", "target.spm"})
            QVERIFY(QFile::copy(folder() + QLatin1Char('/') + QLatin1String(f), dir.filePath(QLatin1String(f))));
        QFile v(dir.filePath(QStringLiteral("vocab.json")));
        QVERIFY(v.open(QIODevice::WriteOnly));
        v.write(R"({"</s>": 0, "a": 2})");
        v.close();
        st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("vocab.json: no <unk> (MarianTokenizer's end and unknown tokens)") != std::string::npos,
                 st.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestMarianTokenizer)
#include "tst_mariantokenizer.moc"
