// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz tokenize --vocab vocab.json --merges merges.txt [TEXT]` and
// `attnviz tokenize --wordpiece vocab.txt [--cased] [TEXT]`: a real checkpoint's subword tokenizer
// from its files, without a model. TEXT, or all of standard input when no TEXT is given, is one
// text; the answer is one JSON object: the tokenizer, ids, tokens as the vocabulary spells them,
// display strings, byte offsets [begin, end) in the UTF-8 text, and which tokens are specials.
#include "commands.h"
#include "output.h"

#include "attnviz/subword.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace attnviz::cli {

void addSubwordOptions(QCommandLineParser &p)
{
    p.addOption({QStringLiteral("vocab"), QStringLiteral("GPT-2 style vocab.json (byte-level BPE; needs --merges)."),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("merges"), QStringLiteral("GPT-2 style merges.txt."), QStringLiteral("FILE")});
    p.addOption(
        {QStringLiteral("wordpiece"), QStringLiteral("BERT style vocab.txt (WordPiece)."), QStringLiteral("FILE")});
    p.addOption({QStringLiteral("cased"), QStringLiteral("WordPiece: keep case and accents (do_lower_case false).")});
    p.addPositionalArgument(QStringLiteral("TEXT"),
                            QStringLiteral("With --vocab/--wordpiece: the text (default: all of standard input)."),
                            QStringLiteral("[TEXT]"));
}

bool wantsSubword(const QCommandLineParser &p)
{
    return p.isSet(QStringLiteral("vocab")) || p.isSet(QStringLiteral("merges")) ||
           p.isSet(QStringLiteral("wordpiece"));
}

int tokenizeSubword(const QCommandLineParser &p)
{
    auto fail = [](const std::string &message) {
        return cli::fail("tokenize", message, 2);
    };
    const bool bpe = p.isSet(QStringLiteral("vocab")) || p.isSet(QStringLiteral("merges"));
    if (bpe && p.isSet(QStringLiteral("wordpiece")))
        return fail("give either --vocab and --merges (byte-level BPE) or --wordpiece, not both");
    if (bpe && !(p.isSet(QStringLiteral("vocab")) && p.isSet(QStringLiteral("merges"))))
        return fail("byte-level BPE needs both --vocab vocab.json and --merges merges.txt");
    if (p.positionalArguments().size() > 1)
        return fail("one TEXT only (quote it)");
    std::unique_ptr<SubwordTokenizer> tok;
    Status s;
    if (bpe) {
        s = loadByteLevelBpe(p.value(QStringLiteral("vocab")).toStdString(),
                             p.value(QStringLiteral("merges")).toStdString(), tok);
    } else {
        const bool cased = p.isSet(QStringLiteral("cased"));
        s = loadWordPiece(p.value(QStringLiteral("wordpiece")).toStdString(),
                          WordPieceOptions::fromConfig(!cased, std::nullopt), tok);
    }
    if (!s)
        return fail(s.message);
    std::string text;
    if (!p.positionalArguments().isEmpty())
        text = p.positionalArguments().front().toStdString();
    else
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::vector<TraceToken> tokens;
    s = tok->encode(text, tokens);
    if (!s)
        return fail(s.message);
    QJsonArray ids, spelled, display, offsets, special;
    for (const TraceToken &t : tokens) {
        ids.append(t.id);
        spelled.append(QString::fromStdString(t.text));
        display.append(QString::fromStdString(t.display));
        offsets.append(QJsonArray{qint64(t.begin), qint64(t.end)});
        special.append(t.special);
    }
    const QJsonObject o{{QStringLiteral("tokenizer"), QString::fromStdString(tok->kind())},
                        {QStringLiteral("vocabulary"), tok->vocabSize()},
                        {QStringLiteral("ids"), ids},
                        {QStringLiteral("tokens"), spelled},
                        {QStringLiteral("display"), display},
                        {QStringLiteral("offsets"), offsets},
                        {QStringLiteral("special"), special}};
    const QByteArray json = QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
    std::fwrite(json.constData(), 1, size_t(json.size()), stdout);
    return 0;
}

} // namespace attnviz::cli
