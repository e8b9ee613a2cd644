// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face tokenizer.json files (loadHfTokenizer) against the ids of the reference encoder
// (npm @lenml/tokenizers, a transformers.js fork; tests/fixtures/tokenizers/make_hf_reference_ids.mjs):
// every line of corpus.jsonl plus lines that type every added token, for Qwen 3 and Mistral
// (committed) and Llama 3.1 and Gemma 3 (fetched from npm by packaging/dev.sh; skipped when absent
// outside CI), except the lines hf_exclusions.json names, which are checked against the ids of
// Unicode White_Space \s instead. Also: byte ranges cover the text, decoding gives the text back,
// chip displays, typed added tokens, a megabyte of text, hostile files get one message each, and the
// real Gemma 3 file opens with a text model of 262,144 embedding rows (its added id 262,144 beyond).
#include "attnviz/pretrained.h"
#include "attnviz/subword.h"
#include "modelfolders.h"
#include "testpaths.h"

#include "subwordtesthelpers.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <algorithm>
#include <cstdlib>

using namespace attnviz;
using namespace attnviz::testing;

namespace {
const QString kDir = QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/"));

// Where the Llama 3.1 and Gemma 3 files are: $ATTNVIZ_HF_TOKENIZERS_DIR (packaging/dev.sh sets it
// after fetching them; then they must be there), else the build folder's hf-tokenizers.
QString fetchedDir(bool &required)
{
    const char *env = std::getenv("ATTNVIZ_HF_TOKENIZERS_DIR");
    required = env && *env;
    return required ? QString::fromLocal8Bit(env) : QString::fromUtf8(ATTNVIZ_BUILD_PATH("/hf-tokenizers"));
}

// The added-token lines of make_hf_reference_ids.mjs: the tokens in the file's order, 20 a line,
// each after one of six fillers, the line closed by " z".
std::vector<std::string> addedTokenLines(const QString &tokenizerJson)
{
    const QJsonArray added =
        QJsonDocument::fromJson(readAll(tokenizerJson)).object().value(QLatin1String("added_tokens")).toArray();
    static const char *const kFill[] = {"a", " b", "\n", "  ", "\xC3\xA9 ", "x\t"};
    std::vector<std::string> lines;
    for (int i = 0; i < added.size(); i += 20) {
        std::string text;
        for (int k = i; k < std::min(i + 20, int(added.size())); ++k)
            text += std::string(kFill[k % 6]) +
                    added.at(k).toObject().value(QLatin1String("content")).toString().toStdString();
        lines.push_back(text + " z");
    }
    return lines;
}

struct Loaded {
    std::unique_ptr<SubwordTokenizer> tok;
    std::vector<std::string> texts; // corpus, then added-token lines
    // Each text's tokens, encoded once for the three corpus tests (empty until then).
    mutable std::vector<std::vector<TraceToken>> tokens;
    bool encodeAll() const
    {
        if (!tokens.empty())
            return true;
        tokens.resize(texts.size());
        for (size_t i = 0; i < texts.size(); ++i)
            if (!tok->encode(texts[i], tokens[i]).ok())
                return false;
        return true;
    }
};

const char *const kNames[] = {"qwen3", "mistral", "llama3_1", "gemma3"};

// Tokens the post-processor adds (BOS / EOS): special, zero width, not typed in the text.
bool templateToken(const TraceToken &t, const std::string &text)
{
    return t.special && t.begin == t.end && (t.begin == 0 || t.begin == text.size());
}
} // namespace

class TestHfTokenizer : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void corpusIds_data();
    void corpusIds();
    void rangesCoverText_data();
    void rangesCoverText();
    void decodeGivesTextBack_data();
    void decodeGivesTextBack();
    void pieces_data();
    void pieces();
    void displays();
    void vocabularyLookups();
    void megabyteText();
    void hostileFiles_data();
    void hostileFiles();
    void catastrophicRegexIsOneError();
    void backtrackingAddsUpOverSplits();
    void growingNormalizers();
    void vocabularyOutnumbersRows();
    void vocabularyCountedBeforeTheRest();
    void deepJson();
    void gemma3WithTextModel();

private:
    const Loaded *get(const QString &name);

    std::map<QString, Loaded> m_loaded;
    std::vector<std::string> m_corpus;
    QJsonObject m_exclusions;
    QString m_fetched;
    bool m_fetchedRequired = false;
};

void TestHfTokenizer::initTestCase()
{
    m_corpus = readCorpus(kDir + QStringLiteral("corpus.jsonl"));
    QCOMPARE(m_corpus.size(), size_t(2159));
    m_exclusions = QJsonDocument::fromJson(readAll(kDir + QStringLiteral("hf_exclusions.json"))).object();
    QCOMPARE(m_exclusions.size(), 4);
    m_fetched = fetchedDir(m_fetchedRequired);
    for (const char *name : kNames) {
        const QString n = QLatin1String(name);
        const bool committed = n == QLatin1String("qwen3") || n == QLatin1String("mistral");
        const QString dir = committed ? kDir + n : m_fetched + QLatin1Char('/') + n;
        if (!QFile::exists(dir + QStringLiteral("/tokenizer.json"))) {
            QVERIFY2(!committed && !m_fetchedRequired,
                     qPrintable(dir + QStringLiteral("/tokenizer.json is missing (packaging/dev.sh fetches it)")));
            continue;
        }
        Loaded l;
        const Status s = loadHfTokenizer(dir.toStdString(), l.tok);
        QVERIFY2(s.ok(), s.message.c_str());
        l.texts = m_corpus;
        for (std::string &t : addedTokenLines(dir + QStringLiteral("/tokenizer.json")))
            l.texts.push_back(std::move(t));
        m_loaded[n] = std::move(l);
    }
}

const Loaded *TestHfTokenizer::get(const QString &name)
{
    const auto it = m_loaded.find(name);
    return it == m_loaded.end() ? nullptr : &it->second;
}

#define GET_OR_SKIP(var, name)                                                                                         \
    const Loaded *var = get(name);                                                                                     \
    if (!var)                                                                                                          \
        QSKIP(qPrintable(name + QStringLiteral(": no tokenizer.json under ") + m_fetched +                             \
                         QStringLiteral(" (fetched by bash tests/fixtures/tokenizers/get_hf_tokenizers.sh DIR, "       \
                                        "as packaging/dev.sh test does; needs npm)")));

void TestHfTokenizer::corpusIds_data()
{
    QTest::addColumn<QString>("name");
    for (const char *name : kNames)
        QTest::newRow(name) << QString::fromLatin1(name);
}

void TestHfTokenizer::corpusIds()
{
    QFETCH(QString, name);
    GET_OR_SKIP(l, name);
    const QList<QByteArray> expected = readAll(kDir + name + QStringLiteral(".ids")).split('\n');
    QVERIFY(size_t(expected.size()) >= l->texts.size());
    const QJsonObject excluded = m_exclusions.value(name).toObject();
    int agree = 0, failures = 0, replaced = 0;
    QVERIFY(l->encodeAll());
    for (size_t i = 0; i < l->texts.size(); ++i) {
        std::vector<int> want = parseIds(expected[int(i)]);
        const QJsonObject ex = excluded.value(QString::number(i + 1)).toObject();
        if (!ex.isEmpty()) {
            // JavaScript's \s is not Oniguruma's: the White_Space ids decide.
            want = parseIds(ex.value(QLatin1String("white_space")).toString().toUtf8());
            QVERIFY(!want.empty());
            ++replaced;
        }
        const std::vector<int> got = idsOf(l->tokens[i]);
        if (got == want)
            ++agree;
        else if (++failures <= 5)
            qWarning("%s line %zu: %s\n  want %s\n  got  %s", qPrintable(name), i + 1,
                     QJsonDocument(QJsonArray{QString::fromStdString(l->texts[i])})
                         .toJson(QJsonDocument::Compact)
                         .constData(),
                     qPrintable(show(want)), qPrintable(show(got)));
    }
    qInfo("%s: %d of %zu lines equal the reference ids (%d of them the White_Space ids)", qPrintable(name), agree,
          l->texts.size(), replaced);
    QCOMPARE(failures, 0);
    QVERIFY(l->texts.size() > m_corpus.size()); // the added-token lines are there
    QCOMPARE(replaced, excluded.size());
}

void TestHfTokenizer::rangesCoverText_data()
{
    corpusIds_data();
}

// Every byte of the text lies in a token's range; ranges go left to right; specials the template
// adds have none.
void TestHfTokenizer::rangesCoverText()
{
    QFETCH(QString, name);
    GET_OR_SKIP(l, name);
    QVERIFY(l->encodeAll());
    for (size_t i = 0; i < l->texts.size(); ++i) {
        const std::string &text = l->texts[i];
        size_t covered = 0, lastBegin = 0;
        for (const TraceToken &t : l->tokens[i]) {
            if (templateToken(t, text))
                continue;
            QVERIFY2(t.begin <= covered && t.end <= text.size() && t.begin >= lastBegin && t.end >= t.begin,
                     qPrintable(QStringLiteral("%1 line %2: token %3 [%4, %5) after %6")
                                    .arg(name)
                                    .arg(i + 1)
                                    .arg(QString::fromStdString(t.text))
                                    .arg(t.begin)
                                    .arg(t.end)
                                    .arg(covered)));
            covered = std::max(covered, t.end);
            lastBegin = t.begin;
        }
        QCOMPARE(covered, text.size());
    }
}

void TestHfTokenizer::decodeGivesTextBack_data()
{
    corpusIds_data();
}

// Byte-level tokenizers give every text back (Qwen's in NFC, its normalizer). Mistral and Gemma 3
// write spaces as "▁" and decode every "▁" as a space, so a text that holds "▁" itself does not come
// back (as with Hugging Face's own decode); nor, for Mistral, a text with a typed added token: its
// legacy Prepend normalizer puts a "▁" before every piece after one.
void TestHfTokenizer::decodeGivesTextBack()
{
    QFETCH(QString, name);
    GET_OR_SKIP(l, name);
    int checked = 0;
    QVERIFY(l->encodeAll());
    for (size_t i = 0; i < l->texts.size(); ++i) {
        const std::string &text = l->texts[i];
        std::vector<int> ids;
        bool typedAdded = false;
        for (const TraceToken &t : l->tokens[i]) {
            if (templateToken(t, text))
                continue;
            typedAdded = typedAdded || t.begin != t.end && t.text == text.substr(t.begin, t.end - t.begin) &&
                                           t.text.size() > 1 && t.text.front() == '<';
            ids.push_back(t.id);
        }
        const bool sentencePiece = name == QLatin1String("mistral") || name == QLatin1String("gemma3");
        if ((name == QLatin1String("mistral") && typedAdded) ||
            (sentencePiece && text.find("\xE2\x96\x81") != std::string::npos))
            continue;
        ++checked;
        QString want = QString::fromStdString(text);
        if (name == QLatin1String("qwen3"))
            want = want.normalized(QString::NormalizationForm_C);
        QCOMPARE(QString::fromStdString(l->tok->decode(ids)), want);
    }
    QVERIFY(checked > 2100);
}

void TestHfTokenizer::pieces_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("ids");
    // From the reference encoder (node, @lenml/tokenizers 3.7.2).
    QTest::newRow("qwen3 chat") << "qwen3"
                                << "<|im_start|>user\nhi<|im_end|>\n<think>x</think>"
                                << "151644 872 198 6023 151645 198 151667 87 151668";
    QTest::newRow("qwen3 tab") << "qwen3"
                               << "Hello world\n\tdone"
                               << "9707 1879 198 40495";
    QTest::newRow("mistral bos") << "mistral"
                                 << "Hello world"
                                 << "1 22557 1526";
    QTest::newRow("mistral byte fallback") << "mistral" << QString::fromUtf8("x \xF0\x9F\xA7\xBF \xEA\x99\xAE y")
                                           << "1 1318 28705 243 162 170 194 28705 237 156 177 337";
    QTest::newRow("mistral newline") << "mistral"
                                     << "a\nb"
                                     << "1 264 13 28726";
    QTest::newRow("llama3_1 header") << "llama3_1"
                                     << "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                                     << "128000 128006 882 128007 271 6151 128009";
    QTest::newRow("gemma3 turn") << "gemma3"
                                 << "<start_of_turn>user\nhi<end_of_turn>"
                                 << "2 105 2364 107 2202 106";
    QTest::newRow("gemma3 spaces") << "gemma3" << QString::fromUtf8("Hello world  \xEA\x99\xAE")
                                   << "2 9259 1902 138 472 391 412";
}

void TestHfTokenizer::pieces()
{
    QFETCH(QString, name);
    QFETCH(QString, text);
    QFETCH(QString, ids);
    GET_OR_SKIP(l, name);
    std::vector<TraceToken> tokens;
    QVERIFY(l->tok->encode(text.toStdString(), tokens).ok());
    QCOMPARE(show(idsOf(tokens)), ids);
}

// What chips show: ▁ and Ġ as "␣", newlines as "↵", byte-fallback pieces as the character they
// spell (on the first byte's piece, "…" on the others), specials as typed.
void TestHfTokenizer::displays()
{
    std::vector<TraceToken> t;
    const Loaded *mistral = get(QStringLiteral("mistral"));
    QVERIFY(mistral->tok->encode("Hello world\n\xF0\x9F\xA7\xBF\x01", t).ok());
    QStringList shown, texts;
    for (const TraceToken &k : t) {
        shown << QString::fromStdString(k.display);
        texts << QString::fromStdString(k.text);
    }
    QCOMPARE(texts.join(QLatin1Char('|')),
             QString::fromUtf8("<s>|\xE2\x96\x81Hello|\xE2\x96\x81world|<0x0A>|<0xF0>|<0x9F>|<0xA7>|<0xBF>|\x01"));
    QCOMPARE(shown.join(QLatin1Char('|')),
             QString::fromUtf8("<s>|\xE2\x90\xA3Hello|\xE2\x90\xA3world|\xE2\x86\xB5|\xF0\x9F\xA7\xBF|"
                               "\xE2\x80\xA6|\xE2\x80\xA6|\xE2\x80\xA6|\\x01"));
    QVERIFY(t[0].special && !t[1].special && !t[1].unknown);
    // Every byte piece covers the character it is part of.
    QCOMPARE(t[4].begin, size_t(12));
    QCOMPARE(t[7].end, size_t(16));
    // Bytes that are not UTF-8 go through byte fallback one by one, shown as hex.
    QVERIFY(mistral->tok->encode("a\xE2\x82", t).ok());
    QCOMPARE(show(idsOf(t)), QStringLiteral("1 264 229 133"));
    QCOMPARE(QString::fromStdString(t[2].display), QStringLiteral("\\xE2"));
    QCOMPARE(QString::fromStdString(t[3].display), QStringLiteral("\\x82"));

    const Loaded *qwen = get(QStringLiteral("qwen3"));
    QVERIFY(qwen->tok->encode("Hello world\n<|im_end|>", t).ok());
    shown.clear();
    for (const TraceToken &k : t)
        shown << QString::fromStdString(k.display);
    QCOMPARE(shown.join(QLatin1Char('|')), QString::fromUtf8("Hello|\xE2\x90\xA3world|\xE2\x86\xB5|<|im_end|>"));
    QVERIFY(t.back().special);
    QVERIFY(qwen->tok->encode("<think>", t).ok());
    QCOMPARE(t.size(), size_t(1));
    QVERIFY(!t[0].special); // an added token that is not special
    // Invalid UTF-8 is kept byte for byte by ByteLevel.
    QVERIFY(qwen->tok->encode("a\xFF", t).ok());
    std::vector<int> ids = idsOf(t);
    QCOMPARE(qwen->tok->decode(ids), std::string("a\xFF"));
}

void TestHfTokenizer::vocabularyLookups()
{
    const Loaded *qwen = get(QStringLiteral("qwen3"));
    QCOMPARE(qwen->tok->vocabSize(), 151669);
    QCOMPARE(qwen->tok->id("<|im_end|>"), 151645);
    QCOMPARE(qwen->tok->token(9707), std::string("Hello"));
    QCOMPARE(qwen->tok->id("no such token"), -1);
    QCOMPARE(qwen->tok->token(-1), std::string());
    QCOMPARE(QString::fromStdString(qwen->tok->kind()), QStringLiteral("byte-level BPE (tokenizer.json)"));
    const Loaded *mistral = get(QStringLiteral("mistral"));
    QCOMPARE(mistral->tok->vocabSize(), 32000);
    QCOMPARE(mistral->tok->decode({1, 22557, 1526, 999999, -4}), std::string("<s> Hello world"));
}

// A megabyte of mixed text, and long runs of one kind (white space, which the Split patterns'
// \s*[\r\n]+ and \s+(?!\S) backtrack over; letters, one word): each encodes (no time asserted)
// and the ranges reach the text's end.
void TestHfTokenizer::megabyteText()
{
    std::string mixed;
    for (size_t i = 0; mixed.size() < (1u << 20); i = (i + 7) % m_corpus.size())
        mixed += m_corpus[i] + "\n";
    const std::string texts[] = {mixed, std::string(300000, ' ') + "x", std::string(300000, '\n'),
                                 std::string(300000, 'a')};
    for (const auto &[name, l] : m_loaded)
        for (const std::string &text : texts) {
            std::vector<TraceToken> tokens;
            const Status s = l.tok->encode(text, tokens);
            QVERIFY2(s.ok(), s.message.c_str());
            QVERIFY(!tokens.empty());
            size_t end = 0;
            for (const TraceToken &t : tokens)
                end = std::max(end, t.end);
            QCOMPARE(end, text.size());
            qInfo("%s: %zu bytes -> %zu tokens", qPrintable(name), text.size(), tokens.size());
        }
}

namespace {
// A small valid tokenizer.json; `patch` ("\"field\":value") replaces that top-level field.
std::string tiny(const std::string &patch = "")
{
    static const std::pair<const char *, const char *> kFields[] = {
        {"added_tokens", R"([{"id":3,"content":"<s>","special":true}])"},
        {"normalizer", "null"},
        {"pre_tokenizer", "null"},
        {"post_processor", "null"},
        {"decoder", "null"},
        {"model", R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3},"merges":["a b"]})"}};
    std::string out = "{\"version\":\"1.0\"";
    for (const auto &[key, value] : kFields)
        if (patch.rfind("\"" + std::string(key) + "\"", 0) != 0)
            out += ",\"" + std::string(key) + "\":" + value;
    if (!patch.empty())
        out += "," + patch;
    return out + "}";
}
} // namespace

void TestHfTokenizer::hostileFiles_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("message");
    auto row = [](const char *name, const std::string &json, const char *message) {
        QTest::newRow(name) << QByteArray::fromStdString(json) << QString::fromUtf8(message);
    };
    row("not json", "{\"model\":", "bad (tokenizer.json): malformed JSON");
    row("no model", "{}", "bad (tokenizer.json): (top level).model: missing");
    row("wordpiece", tiny(R"("model":{"type":"WordPiece","vocab":{}})"),
        "bad (tokenizer.json): model.type: \"WordPiece\" is not supported (only BPE)");
    row("unigram", tiny(R"("model":{"type":"Unigram","vocab":[]})"),
        "bad (tokenizer.json): model.type: Unigram models are not supported yet (only BPE)");
    row("normalizer", tiny(R"("normalizer":{"type":"Precompiled"})"),
        "bad (tokenizer.json): normalizer.type: unknown normalizer \"Precompiled\"");
    row("nested normalizer", tiny(R"("normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"X"}]})"),
        "bad (tokenizer.json): normalizer.normalizers[1].type: unknown normalizer \"X\"");
    row("pre-tokenizer", tiny(R"("pre_tokenizer":{"type":"BertPreTokenizer"})"),
        "bad (tokenizer.json): pre_tokenizer.type: unknown pre-tokenizer \"BertPreTokenizer\"");
    row("post-processor", tiny(R"("post_processor":{"type":"RobertaProcessing"})"),
        "bad (tokenizer.json): post_processor.type: unknown post-processor \"RobertaProcessing\"");
    row("decoder", tiny(R"("decoder":{"type":"CTC"})"), "bad (tokenizer.json): decoder.type: unknown decoder \"CTC\"");
    row("regex", tiny(R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated"})"),
        "bad (tokenizer.json): pre_tokenizer.pattern.Regex: the regex does not compile (U_REGEX_MISMATCHED_PAREN");
    {
        std::string groups;
        for (int k = 0; k < 20000; ++k)
            groups += "()";
        row("20,000 empty groups",
            tiny(R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":")" + groups + R"(x"},"behavior":"Isolated"})"),
            "bad (tokenizer.json): pre_tokenizer.pattern.Regex: 40001 bytes, more than the 4096 a pattern may have");
    }
    row("back-reference",
        tiny(R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"[\\1](.+)\\1+x"},"behavior":"Isolated"})"),
        "bad (tokenizer.json): pre_tokenizer.pattern.Regex: a back-reference (\\1 at offset 8) is not supported");
    row("named back-reference",
        tiny(R"("normalizer":{"type":"Replace","pattern":{"Regex":"(?<w>a)\\k<w>"},"content":""})"),
        "bad (tokenizer.json): normalizer.pattern.Regex: a back-reference (\\k at offset 7) is not supported");
    row("behaviour", tiny(R"("pre_tokenizer":{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"})"),
        "bad (tokenizer.json): pre_tokenizer.behavior: unknown behaviour \"Sideways\"");
    row("merge symbol", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b","a c"]})"),
        "bad (tokenizer.json): model.merges[1]: \"c\" is not in the vocabulary");
    row("merge result", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"<s>":2,"x":3},"merges":[["a","b"]]})"),
        "bad (tokenizer.json): model.merges[0]: the merged token \"ab\" is not in the vocabulary");
    row("merge shape", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["ab"]})"),
        "bad (tokenizer.json): model.merges[0]: expected two tokens separated by one space");
    row("duplicate key", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"a":1},"merges":[]})"),
        "bad (tokenizer.json): model.vocab.a: duplicate key");
    row("id twice", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":0},"merges":[]})"),
        "bad (tokenizer.json): model.vocab[\"b\"]: the id 0 is given twice");
    row("huge id", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":2147483647},"merges":[]})"),
        "bad (tokenizer.json): model.vocab[\"b\"]: the id 2147483647 is outside 0..1");
    row("unk", tiny(R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"d":3},"merges":[],"unk_token":"<unk>"})"),
        "bad (tokenizer.json): model.unk_token: \"<unk>\" is not in the vocabulary");
    row("added id", tiny(R"("added_tokens":[{"id":-1,"content":"x"}])"),
        "bad (tokenizer.json): added_tokens[0].id: the id -1 is outside");
    row("megabyte added token", tiny(R"("added_tokens":[{"id":3,"content":")" + std::string(1 << 20, 'x') + "\"}]"),
        "bad (tokenizer.json): added_tokens[0].content: 1048576 bytes, more than the 1024 an added token may have");
    {
        std::string added;
        for (int k = 0; k < 1100; ++k)
            added += std::string(k ? "," : "") + R"({"id":)" + std::to_string(4 + k) + R"(,"content":")" +
                     std::to_string(100000 + k) + std::string(994, 'x') + "\"}";
        row("added tokens of a megabyte", tiny(R"("added_tokens":[)" + added + "]"),
            "bad (tokenizer.json): added_tokens[1048].content: the added tokens reach 1049000 bytes, more than the "
            "1048576 they may have together");
    }
    row("template",
        tiny(R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<bos>"}}]})"),
        "bad (tokenizer.json): post_processor.single[0].SpecialToken.id: \"<bos>\" is not a token");
    row("metaspace scheme", tiny(R"("pre_tokenizer":{"type":"Metaspace","prepend_scheme":"sometimes"})"),
        "bad (tokenizer.json): pre_tokenizer.prepend_scheme: expected \"always\", \"first\" or \"never\"");
    row("type not a string", tiny(R"("decoder":{"type":7})"), "bad (tokenizer.json): decoder.type: expected a string");
}

void TestHfTokenizer::hostileFiles()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, message);
    std::unique_ptr<SubwordTokenizer> tok;
    const Status s = parseHfTokenizer(json.toStdString(), "", "bad", tok);
    QVERIFY(!s.ok());
    QVERIFY(!tok);
    QVERIFY2(QString::fromStdString(s.message).startsWith(message), s.message.c_str());
    QVERIFY(s.message.find('\n') == std::string::npos);
}

// (a+)+$ on "aaaa...b" backtracks exponentially: encode gives up with one message naming the file
// and the field, and the tokenizer keeps working on other texts.
void TestHfTokenizer::catastrophicRegexIsOneError()
{
    std::unique_ptr<SubwordTokenizer> tok;
    const std::string json =
        tiny(R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a+)+$"},"behavior":"Isolated"})");
    Status s = parseHfTokenizer(json, "", "slow", tok);
    QVERIFY2(s.ok(), s.message.c_str());
    std::vector<TraceToken> tokens;
    s = tok->encode(std::string(64, 'a') + "b", tokens);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("slow (tokenizer.json): pre_tokenizer.pattern.Regex: matching gave up", 0) == 0,
             s.message.c_str());
    QVERIFY(tokens.empty());
    QVERIFY(tok->encode("ab", tokens).ok());
    QCOMPARE(show(idsOf(tokens)), QStringLiteral("2"));
    // tokenizer_config.json's add_bos_token puts the BOS in front.
    s = parseHfTokenizer(tiny(), R"({"add_bos_token":true,"bos_token":{"content":"<s>"}})", "cfg", tok);
    QVERIFY2(s.ok(), s.message.c_str());
    QVERIFY(tok->encode("ab", tokens).ok());
    QCOMPARE(show(idsOf(tokens)), QStringLiteral("3 2"));
    s = parseHfTokenizer(tiny(), R"({"add_bos_token":true,"bos_token":"<nope>"})", "cfg", tok);
    QCOMPARE(QString::fromStdString(s.message),
             QStringLiteral("cfg (tokenizer_config.json): bos_token: \"<nope>\" is not a token"));
}

// A pattern that backtracks some 260,000 states on each of 1,000 words finishes no word's match
// at the limit of one match, yet adds up: the encode's budget, in proportion to its text, runs out
// and the text is refused naming the field.
void TestHfTokenizer::backtrackingAddsUpOverSplits()
{
    std::unique_ptr<SubwordTokenizer> tok;
    const std::string json = tiny(R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},)"
                                  R"({"type":"Split","pattern":{"Regex":"(a+)+$"},"behavior":"Isolated"}]})");
    Status s = parseHfTokenizer(json, "", "slow", tok);
    QVERIFY2(s.ok(), s.message.c_str());
    std::string text;
    for (int k = 0; k < 1000; ++k)
        text += std::string(18, 'a') + "b ";
    std::vector<TraceToken> tokens;
    s = tok->encode(text, tokens);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("slow (tokenizer.json): pre_tokenizer.pretokenizers[1].pattern.Regex: matching gave up",
                             0) == 0,
             s.message.c_str());
    QVERIFY(s.message.find('\n') == std::string::npos);
    // One such word is within its text's budget.
    QVERIFY(tok->encode(std::string(18, 'a') + "b", tokens).ok());
}

// Normalizers that grow the text: doubling it 24 times, a Replace by a megabyte, a Sequence of
// 1,000 Prepends. Each is refused with one line naming the normalizer, and the tokenizer still
// encodes a text its normalizers keep small.
void TestHfTokenizer::growingNormalizers()
{
    std::string doublings;
    for (int k = 0; k < 24; ++k)
        doublings += std::string(k ? "," : "") + R"({"type":"Replace","pattern":{"String":"a"},"content":"aa"})";
    std::unique_ptr<SubwordTokenizer> tok;
    Status s = parseHfTokenizer(tiny(R"("normalizer":{"type":"Sequence","normalizers":[)" + doublings + "]}"), "",
                                "grow", tok);
    QVERIFY2(s.ok(), s.message.c_str());
    std::vector<TraceToken> tokens;
    s = tok->encode("ab", tokens);
    QVERIFY(!s.ok());
    QVERIFY(tokens.empty());
    QVERIFY2(s.message.rfind("grow (tokenizer.json): normalizer.normalizers[", 0) == 0 &&
                 s.message.find("characters, more than the") != std::string::npos &&
                 s.message.find('\n') == std::string::npos,
             s.message.c_str());
    QVERIFY(tok->encode("bb", tokens).ok());
    QCOMPARE(show(idsOf(tokens)), QStringLiteral("1 1"));

    const std::string mega = std::string(1 << 20, 'b');
    s = parseHfTokenizer(tiny(R"("normalizer":{"type":"Replace","pattern":{"String":"a"},"content":")" + mega + "\"}"),
                         "", "grow", tok);
    QVERIFY2(s.ok(), s.message.c_str());
    s = tok->encode("ab", tokens);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("grow (tokenizer.json): normalizer: the text would grow to 1048577 characters", 0) == 0,
             s.message.c_str());

    // the issue's 400,000 (a 20 MB array of objects: read in linear time, then refused by its count)
    std::string prepends;
    for (int k = 0; k < 400000; ++k)
        prepends += std::string(k ? "," : "") + R"({"type":"Prepend","prepend":"a"})";
    s = parseHfTokenizer(tiny(R"("normalizer":{"type":"Sequence","normalizers":[)" + prepends + "]}"), "", "grow", tok);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("grow (tokenizer.json): normalizer.normalizers[255]: more than the 256 normalizers", 0) ==
                 0,
             s.message.c_str());
}

// A folder whose config.json gives fewer embedding rows than tokenizer.json's vocabulary has
// tokens: refused by the vocabulary's count, naming the field, before its tokens are read.
// The vocabulary's tokens are counted against the embeddings' rows as the file is read, before the
// rest of it is: a tokenizer.json whose 2,000 tokens outnumber 1,000 rows is refused by that count
// even where what follows the vocabulary would not parse (it is never read), the document never built.
void TestHfTokenizer::vocabularyCountedBeforeTheRest()
{
    std::string vocab;
    for (int k = 0; k < 2000; ++k)
        vocab += std::string(k ? "," : "") + "\"t" + std::to_string(k) + "\":" + std::to_string(k);
    const std::string head = R"({"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,)"
                             R"("model":{"type":"BPE","vocab":{)" + vocab + "},";
    const std::string message = "big (tokenizer.json): model.vocab: 2000 tokens, more than the 1000 rows of the "
                                "embeddings (config.json: vocab_size)";
    for (const std::string &rest : {std::string(R"("merges":[]}})"), std::string(R"("merges":["t0 t1", [ nul)")}) {
        std::unique_ptr<SubwordTokenizer> tok;
        const Status s = parseHfTokenizer(head + rest, "", "big", tok, 1000);
        QVERIFY(!s.ok());
        QCOMPARE(QString::fromStdString(s.message), QString::fromStdString(message));
        QVERIFY(!tok);
    }
    // within the rows: the rest is read, and a broken rest is what is said
    std::unique_ptr<SubwordTokenizer> tok;
    const Status s = parseHfTokenizer(head + R"("merges":["t0 t1", [ nul)", "", "big", tok, 2000);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("big (tokenizer.json): ", 0) == 0 && s.message.find("model.vocab") == std::string::npos,
             s.message.c_str());
}

void TestHfTokenizer::vocabularyOutnumbersRows()
{
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString dir = attnviz_test::copyModelFolder(QStringLiteral("qwen3-tiny"), tmp);
    attnviz_test::editJson(dir + QStringLiteral("/config.json"),
                           [](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), 1000); });
    std::unique_ptr<Model> model;
    const Status s = openPretrained(dir.toStdString(), {}, model);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.find("(tokenizer.json): model.vocab: 151643 tokens, more than the 1000 rows of the embeddings "
                            "(config.json: vocab_size)") != std::string::npos,
             s.message.c_str());
    QCOMPARE(s.message.find('\n'), std::string::npos);
}

// 60 MB of "[": refused at the nesting limit, no recursion over it.
void TestHfTokenizer::deepJson()
{
    std::unique_ptr<SubwordTokenizer> tok;
    const Status s = parseHfTokenizer(std::string(60u << 20, '['), "", "deep", tok);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.rfind("deep (tokenizer.json): ", 0) == 0 &&
                 s.message.find("nested deeper than") != std::string::npos,
             s.message.c_str());
    const Status c = parseHfTokenizer(tiny(), std::string(1000, '['), "deep", tok);
    QVERIFY(!c.ok());
    QVERIFY2(c.message.rfind("deep (tokenizer_config.json): ", 0) == 0, c.message.c_str());
}

// Gemma 3's tokenizer.json has 262,145 ids: the text models' 262,144 rows plus the added
// <image_soft_token>. A gemma3_text folder with that many rows (gemma3-tiny's weights, its
// embeddings grown) opens, its tokens equal the reference ids, and a text that types
// <image_soft_token> is refused by name; with fewer rows than the vocabulary's own tokens the
// folder is refused.
void TestHfTokenizer::gemma3WithTextModel()
{
    const QString name = QStringLiteral("gemma3");
    GET_OR_SKIP(l, name);
    constexpr int kRows = 262144;
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gemma3-tiny"), tmp);
    for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
        const QString dst = dir + QLatin1Char('/') + QLatin1String(f);
        QFile::remove(dst);
        QVERIFY(QFile::copy(m_fetched + QStringLiteral("/gemma3/") + QLatin1String(f), dst));
    }
    attnviz_test::editJson(dir + QStringLiteral("/config.json"),
                           [](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), kRows); });
    // The embeddings grown to kRows rows of zeros (BF16); every other tensor moves by the growth.
    const QString weights = dir + QStringLiteral("/model.safetensors");
    attnviz_test::Safetensors st = attnviz_test::readSafetensors(weights);
    const QString embed = QStringLiteral("model.embed_tokens.weight");
    QJsonObject e = st.header.value(embed).toObject();
    const qint64 width = e.value(QStringLiteral("shape")).toArray()[1].toInteger();
    const qint64 oldEnd = e.value(QStringLiteral("data_offsets")).toArray()[1].toInteger();
    QCOMPARE(e.value(QStringLiteral("data_offsets")).toArray()[0].toInteger(), qint64(0));
    const qint64 newEnd = kRows * width * 2;
    for (auto it = st.header.begin(); it != st.header.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__") || it.key() == embed)
            continue;
        QJsonObject t = it.value().toObject();
        const QJsonArray o = t.value(QStringLiteral("data_offsets")).toArray();
        t.insert(QStringLiteral("data_offsets"),
                 QJsonArray{o[0].toInteger() + newEnd - oldEnd, o[1].toInteger() + newEnd - oldEnd});
        it.value() = t;
    }
    e.insert(QStringLiteral("shape"), QJsonArray{kRows, width});
    e.insert(QStringLiteral("data_offsets"), QJsonArray{0, newEnd});
    st.header.insert(embed, e);
    st.data = QByteArray(int(newEnd), '\0') + st.data.mid(int(oldEnd));
    attnviz_test::writeSafetensors(weights, st);

    std::unique_ptr<Model> model;
    Status s = openPretrained(dir.toStdString(), {}, model);
    QVERIFY2(s.ok(), s.message.c_str());
    QCOMPARE(model->info().vocabulary, kRows);
    const QList<QByteArray> expected = readAll(kDir + name + QStringLiteral(".ids")).split('\n');
    const QJsonObject excluded = m_exclusions.value(name).toObject();
    int failures = 0, refused = 0;
    for (size_t i = 0; i < l->texts.size(); ++i) {
        std::vector<TraceToken> tokens;
        s = model->tokenize(l->texts[i], tokens);
        if (l->texts[i].find("<image_soft_token>") != std::string::npos) {
            QVERIFY(!s.ok());
            QVERIFY2(s.message.find("\"<image_soft_token>\" (id 262,144)") != std::string::npos, s.message.c_str());
            QVERIFY2(s.message.find("tokenizer.json") != std::string::npos, s.message.c_str());
            QCOMPARE(s.message.find('\n'), std::string::npos);
            ++refused;
            continue;
        }
        QVERIFY2(s.ok(), s.message.c_str());
        const QJsonObject ex = excluded.value(QString::number(i + 1)).toObject();
        const std::vector<int> want =
            parseIds(ex.isEmpty() ? expected[int(i)] : ex.value(QLatin1String("white_space")).toString().toUtf8());
        if (idsOf(tokens) != want && ++failures <= 5)
            qWarning("gemma3 line %zu:\n  want %s\n  got  %s", i + 1, qPrintable(show(want)),
                     qPrintable(show(idsOf(tokens))));
    }
    QCOMPARE(failures, 0);
    QCOMPARE(refused, 1);

    // Fewer rows than the vocabulary has tokens: refused by their count.
    attnviz_test::editJson(dir + QStringLiteral("/config.json"),
                           [](QJsonObject &o) { o.insert(QStringLiteral("vocab_size"), 255967); });
    model.reset();
    s = openPretrained(dir.toStdString(), {}, model);
    QVERIFY(!s.ok());
    QVERIFY2(s.message.find("(tokenizer.json): model.vocab: 262144 tokens, more than the 255967 rows") !=
                 std::string::npos,
             s.message.c_str());
    QVERIFY2(s.message.find("config.json: vocab_size") != std::string::npos, s.message.c_str());
}

QTEST_GUILESS_MAIN(TestHfTokenizer)
#include "tst_hftokenizer.moc"
