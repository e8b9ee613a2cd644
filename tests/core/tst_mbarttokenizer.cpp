// SPDX-License-Identifier: GPL-3.0-or-later
// mBART's tokenizer (subword.h: loadMBartTokenizer) on mbart-spm-tiny (tests/fixtures/models/
// make_mbart_spm.py: a 37-piece BPE sentencepiece.bpe.model beside mbart-tiny's config and weights):
// the ids MBartTokenizer gives (pieces shifted by fairseq's offset, <unk> at 3, then </s> and the
// source language's code) on every line of the tokenizer corpus and on the traps (accents composed
// and decomposed, NFKC forms, whitespace runs, unknown characters, the empty text); the ids of the
// specials, codes and <mask> in both layouts; the folder's languages: the source's code around the
// text, the target's code starting the decoder, chosen and refused; a folder without the file, and
// one whose layout needs more rows than the embeddings have, refused in one line.
#include "seq2seqchecks.h"
#include "attnviz/subword.h"
#include "subwordtesthelpers.h"

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QString folder() { return fixture(QStringLiteral("mbart-spm-tiny")); }

std::unique_ptr<SubwordTokenizer> load(MBartLayout layout)
{
    std::unique_ptr<SubwordTokenizer> t;
    const Status st = loadMBartTokenizer((folder() + QStringLiteral("/sentencepiece.bpe.model")).toStdString(), layout, t);
    if (!st)
        qWarning("%s", st.message.c_str());
    return t;
}

std::vector<std::string> texts()
{
    std::vector<std::string> t = readCorpus(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/corpus.jsonl")));
    for (const char *extra : {"Caf\xC3\xA9  r\xC3\xA9sum\xC3\xA9", "cafe\xCC\x81 \xEF\xAC\x81le", "\xE6\x97\xA5\xE6\x9C\xAC x", "",
                              "  the   Program  ", "\xEF\xBC\xA6ree software", "na\xC3\xAFve \xC3\xA9t\xC3\xA9"})
        t.emplace_back(extra);
    return t;
}

std::unique_ptr<Model> openFolder(const QString &dir)
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(dir.toStdString(), {}, m);
    if (!st)
        qWarning("%s", st.message.c_str());
    return m;
}

} // namespace

class TestMBartTokenizer : public QObject {
    Q_OBJECT

private slots:
    // Every line: MBartTokenizer's ids (src_lang en_XX) as make_mbart_spm.py wrote them, from the
    // folder's tokenize() and, less </s> and the code, from the tokenizer's pieces.
    void corpusIds()
    {
        const auto tok = load(MBartLayout::CC25);
        QVERIFY(tok);
        const std::unique_ptr<Model> m = openFolder(folder());
        QVERIFY(m);
        const std::vector<std::string> corpus = texts();
        QCOMPARE(int(corpus.size()), 2166);
        const QList<QByteArray> lines = readAll(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/mbart-spm.ids"))).split('\n');
        QVERIFY(lines.size() >= int(corpus.size()));
        int unknown = 0, known = 0;
        for (size_t i = 0; i < corpus.size(); ++i) {
            const std::vector<int> want = parseIds(lines[int(i)]);
            std::vector<TraceToken> source, pieces;
            QVERIFY(m->tokenize(corpus[i], source).ok());
            QVERIFY2(idsOf(source) == want, qPrintable(QStringLiteral("line %1: %2 (expected %3)")
                                                          .arg(i + 1)
                                                          .arg(show(idsOf(source)), show(want))));
            QVERIFY(tok->encode(corpus[i], pieces).ok());
            QCOMPARE(pieces.size() + 2, want.size());
            for (const TraceToken &t : pieces) {
                QVERIFY(t.begin <= t.end && t.end <= corpus[i].size());
                QCOMPARE(t.unknown, t.id == 3);
                (t.unknown ? unknown : known) += 1;
            }
            QVERIFY(source[source.size() - 2].special && source.back().special);
            QCOMPARE(source.back().text, std::string("en_XX"));
        }
        QVERIFY(unknown > 1000 && known > 10000); // capitals, digits, punctuation: not among the 37 pieces
    }

    void layout_data()
    {
        QTest::addColumn<int>("layout");
        QTest::addColumn<int>("vocabulary");
        QTest::addColumn<QString>("lastCode");
        QTest::newRow("cc25") << int(MBartLayout::CC25) << 64 << QStringLiteral("zh_CN");
        QTest::newRow("50") << int(MBartLayout::Fifty) << 91 << QStringLiteral("sl_SI");
    }

    // fairseq's ids: <s> <pad> </s> <unk>, the 37 pieces from 4 (SentencePiece's 3 and on), the
    // codes from 38, <mask> last; pieces, ranges and decoding.
    void layout()
    {
        QFETCH(int, layout);
        QFETCH(int, vocabulary);
        QFETCH(QString, lastCode);
        const auto tok = load(MBartLayout(layout));
        QVERIFY(tok);
        QCOMPARE(tok->kind(), std::string("SentencePiece BPE (mBART)"));
        QCOMPARE(tok->vocabSize(), vocabulary);
        const char *fairseq[] = {"<s>", "<pad>", "</s>", "<unk>"};
        for (int i = 0; i < 4; ++i) {
            QCOMPARE(tok->token(i), std::string(fairseq[i]));
            QCOMPARE(tok->id(fairseq[i]), i);
        }
        QCOMPARE(tok->token(4), std::string("\xE2\x96\x81t")); // SentencePiece's piece 3
        QCOMPARE(tok->id("\xE2\x96\x81t"), 4);
        QCOMPARE(tok->id("ar_AR"), 38);
        QCOMPARE(tok->id("en_XX"), 41);
        QCOMPARE(tok->id("ro_RO"), 57);
        QCOMPARE(tok->id(lastCode.toStdString()), vocabulary - 2);
        QCOMPARE(tok->token(vocabulary - 2), lastCode.toStdString());
        QCOMPARE(tok->id("<mask>"), vocabulary - 1);
        QCOMPARE(tok->token(vocabulary - 1), std::string("<mask>"));
        QCOMPARE(tok->token(vocabulary), std::string());
        QCOMPARE(tok->id("nowhere"), -1);
        QCOMPARE(int(mbartLanguages(MBartLayout(layout)).size()), vocabulary - 39);

        std::vector<TraceToken> t;
        QVERIFY(tok->encode("the Program", t).ok());
        QCOMPARE(show(idsOf(t)), QStringLiteral("6 11 10 3 15 12 28 15 17 26"));
        QCOMPARE(t[0].display, std::string("\xE2\x90\xA3th"));
        QCOMPARE(t[0].begin, size_t(0));
        QCOMPARE(t[0].end, size_t(2)); // "▁th": the text's "th"
        QVERIFY(t[3].unknown); // P
        QCOMPARE(t[3].begin, size_t(4));
        QCOMPARE(t[3].end, size_t(5));
        QVERIFY(tok->encode("cafe\xCC\x81", t).ok()); // é decomposed: NFKC composes it into the known piece
        QCOMPARE(show(idsOf(t)), QStringLiteral("10 19 17 25 33"));
        QCOMPARE(t.back().end, size_t(6)); // "é" spans e and the combining accent
        // specials and codes left out, <unk> as SentencePiece writes it
        QCOMPARE(tok->decode({41, 6, 11, 10, 24, 26, 2, 63}), std::string("the pm"));
    }

    // The folder: the source's code after </s>, the decoder started at the target's code (tr_TR,
    // the code config.json's decoder_start_token_id 60 is), both chosen; generation from the target's
    // code; languages refused with the codes named.
    void folderLanguages()
    {
        const std::unique_ptr<Model> m = openFolder(folder());
        QVERIFY(m);
        QCOMPARE(m->info().tokenizer, std::string("SentencePiece BPE (mBART) (64)"));
        Seq2SeqLanguages langs;
        QVERIFY(seq2seqLanguages(*m, langs).ok());
        QCOMPARE(int(langs.codes.size()), 25);
        QCOMPARE(langs.source, std::string("en_XX"));
        QCOMPARE(langs.target, std::string("tr_TR"));
        TraceRequest req;
        req.text = "the program";
        req.target = "the Program";
        Trace<float> tr;
        Status st = m->trace(req, tr);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(tr.seq2seq.sourceTokens)), QStringLiteral("6 11 10 24 15 12 28 15 17 26 2 41"));
        QCOMPARE(show(idsOf(tr.tokens)), QStringLiteral("60 6 11 10 3 15 12 28 15 17 26"));
        QCOMPARE(tr.tokens[0].text, std::string("tr_TR"));
        QVERIFY(tr.tokens[0].special);

        QVERIFY(setSeq2SeqLanguages(*m, "ro_RO", "de_DE").ok());
        QVERIFY(seq2seqLanguages(*m, langs).ok());
        QCOMPARE(langs.source, std::string("ro_RO"));
        QCOMPARE(langs.target, std::string("de_DE"));
        st = m->trace(req, tr);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(tr.seq2seq.sourceTokens)), QStringLiteral("6 11 10 24 15 12 28 15 17 26 2 57"));
        QCOMPARE(show(idsOf(tr.tokens)), QStringLiteral("40 6 11 10 3 15 12 28 15 17 26"));
        // generation starts from the target's code: its ids are those of traces fed them one by one
        Seq2SeqGenerateOptions opt;
        opt.beams = 1;
        opt.maxNew = 5;
        opt.float64 = true;
        Seq2SeqGeneration g;
        st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(g.source)), QStringLiteral("6 11 10 24 15 12 28 15 17 26 2 57"));
        std::vector<int> greedy;
        TraceRequest src;
        src.text = req.text;
        QVERIFY(greedyTarget(*m, src, 5, greedy).ok());
        QCOMPARE(show(g.ids), show(greedy));
        QCOMPARE(g.cross.size(), g.ids.size());

        st = setSeq2SeqLanguages(*m, "en_XX", "xx_XX");
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("language xx_XX: mbart-spm-tiny knows 25 codes: ar_AR, cs_CZ,") != std::string::npos,
                 st.message.c_str());
        QVERIFY(seq2seqLanguages(*m, langs).ok());
        QCOMPARE(langs.target, std::string("de_DE")); // unchanged
    }

    // mBART-50's layout on a folder (mbart-tiny's weights, tokenizers/mbart50-spm's 10-piece model:
    // 10 + 54 ids fill the 64 rows), named by tokenizer_config.json or found by the rows alone: the
    // source `en_XX X </s>` as make_mbart_spm.py wrote it, the decoder at the folder's start with the
    // target's code first, generation forced to begin with it.
    void fiftyLayout_data()
    {
        QTest::addColumn<bool>("named");
        QTest::newRow("tokenizer_config.json") << true;
        QTest::newRow("by the rows") << false;
    }

    void fiftyLayout()
    {
        QFETCH(bool, named);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const char *f : {"config.json", "model.safetensors"})
            QVERIFY(QFile::copy(fixture(QStringLiteral("mbart-tiny")) + QLatin1Char('/') + QLatin1String(f), dir.filePath(QLatin1String(f))));
        QVERIFY(QFile::copy(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/mbart50-spm/sentencepiece.bpe.model")),
                            dir.filePath(QStringLiteral("sentencepiece.bpe.model"))));
        if (named) {
            QFile c(dir.filePath(QStringLiteral("tokenizer_config.json")));
            QVERIFY(c.open(QIODevice::WriteOnly));
            c.write(R"({"tokenizer_class": "MBart50TokenizerFast"})");
        }
        const std::unique_ptr<Model> m = openFolder(dir.path());
        QVERIFY(m);
        Seq2SeqLanguages langs;
        QVERIFY(seq2seqLanguages(*m, langs).ok());
        QCOMPARE(int(langs.codes.size()), 52);
        QCOMPARE(langs.source, std::string("en_XX"));
        QCOMPARE(langs.target, std::string("en_XX")); // no forced_bos_token_id in the folder
        const QList<QByteArray> lines = readAll(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/mbart50-spm.ids"))).split('\n');
        const char *texts[] = {"abc dab", "a  b", "xyz", "", "CAB"};
        for (int i = 0; i < 5; ++i) {
            std::vector<TraceToken> t;
            QVERIFY(m->tokenize(texts[i], t).ok());
            QCOMPARE(show(idsOf(t)), show(parseIds(lines[i])));
            QVERIFY(t.front().special && t.back().special);
        }
        QVERIFY(setSeq2SeqLanguages(*m, "en_XX", "sl_SI").ok());
        TraceRequest req;
        req.text = "abc dab";
        req.target = "dab";
        Trace<double> tr;
        Status st = m->trace(req, tr);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(show(idsOf(tr.tokens)), QStringLiteral("60 62 7 9 4")); // the start, sl_SI, ▁ d ab
        Seq2SeqGenerateOptions opt;
        opt.beams = 2;
        opt.maxNew = 3;
        opt.float64 = true;
        Seq2SeqGeneration g;
        st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(g.settings.forcedBosId, 62);
        QVERIFY(!g.ids.empty());
        QCOMPARE(g.ids.front(), 62);
        QCOMPARE(show(idsOf(g.source)), show(parseIds(lines[0])));
    }

    // No language codes for other models; mbart-tiny (no file) traces ids only; a file whose layout
    // (tokenizer_config.json: MBart50Tokenizer) needs 91 rows where the embeddings have 64.
    void refusals()
    {
        const std::unique_ptr<Model> t5 = openFolder(fixture(QStringLiteral("t5-tiny")));
        QVERIFY(t5);
        Seq2SeqLanguages langs;
        QVERIFY(seq2seqLanguages(*t5, langs).ok());
        QVERIFY(langs.codes.empty());
        Status st = setSeq2SeqLanguages(*t5, "en_XX", "ro_RO");
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("reads no language codes: only mBART folders with sentencepiece.bpe.model do") != std::string::npos,
                 st.message.c_str());

        const std::unique_ptr<Model> bare = openFolder(fixture(QStringLiteral("mbart-tiny")));
        QVERIFY(bare);
        std::vector<TraceToken> none;
        st = bare->tokenize("the", none);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("mbart-tiny/sentencepiece.bpe.model: missing (mBART's tokenizer): only token ids trace") !=
                     std::string::npos,
                 st.message.c_str());

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const char *f : {"config.json", "model.safetensors", "sentencepiece.bpe.model"})
            QVERIFY(QFile::copy(folder() + QLatin1Char('/') + QLatin1String(f), dir.filePath(QLatin1String(f))));
        QFile c(dir.filePath(QStringLiteral("tokenizer_config.json")));
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write(R"({"tokenizer_class": "MBart50Tokenizer", "src_lang": "en_XX"})");
        c.close();
        std::unique_ptr<Model> m;
        st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("sentencepiece.bpe.model: 37 pieces and 52 language codes make ids up to 90, but the embeddings "
                                 "have 64 rows") != std::string::npos,
                 st.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestMBartTokenizer)
#include "tst_mbarttokenizer.moc"
