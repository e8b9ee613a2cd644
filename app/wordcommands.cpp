// SPDX-License-Identifier: GPL-3.0-or-later
// Verbs for word vectors: `tokenize` (the corpus side of the one tokenizer) and `vectors`
// (export a trained table to .avec; inspect cosines and neighbours).
#include "commands.h"
#include "output.h"

#include "attnviz/embeddings.h"
#include "attnviz/tokenizer.h"
#include "bundledvectors.h"

#include <QCommandLineParser>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace attnviz::cli {

namespace {

// The bundled table for "" or "bundled", else the file.
Status loadTable(const std::string &path, EmbeddingTable &table)
{
    if (path.empty() || path == "bundled")
        return loadBundledEmbeddings(table);
    return loadEmbeddings(path, table);
}

float cosine(const EmbeddingTable &t, int a, int b)
{
    const auto u = t.vector(a), v = t.vector(b);
    const float n = u.norm() * v.norm();
    return n > 0 ? u.dot(v) / n : 0.0f;
}

} // namespace

int tokenize(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Reads UTF-8 text on standard input and writes, for each input line, one line of its tokens\n"
                       "separated by single spaces: the same tokens the app looks up in an embedding table\n"
                       "(lower-cased; apostrophes inside words kept as '; punctuation split off). Used to prepare\n"
                       "the corpus the bundled vectors are trained on.\n"
                       "With --vocab vocab.json --merges merges.txt (GPT-2's byte-level BPE) or --wordpiece vocab.txt\n"
                       "(BERT), tokenizes TEXT (or all of standard input) with that vocabulary and writes one JSON\n"
                       "object: ids, tokens, display strings, byte offsets, specials."));
    p.addHelpOption();
    QCommandLineOption wordsOnly(QStringLiteral("words-only"), QStringLiteral("Drop punctuation and symbol tokens."));
    p.addOption(wordsOnly);
    addSubwordOptions(p);
    if (!p.parse(args))
        return fail("tokenize", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (wantsSubword(p))
        return tokenizeSubword(p);
    if (!p.positionalArguments().isEmpty())
        return fail("tokenize", "a TEXT argument needs --vocab/--merges or --wordpiece (the word tokenizer reads standard input)", 2);
    const bool onlyWords = p.isSet(wordsOnly);
    std::ios::sync_with_stdio(false);
    std::string line, out;
    size_t invalid = 0, tokens = 0;
    while (std::getline(std::cin, line)) {
        const Tokenization t = attnviz::tokenize(line);
        invalid += t.invalidBytes;
        out.clear();
        for (const Token &tok : t.tokens) {
            if (onlyWords && !tok.isWord)
                continue;
            if (!out.empty())
                out += ' ';
            out += tok.text;
            ++tokens;
        }
        out += '\n';
        std::fwrite(out.data(), 1, out.size(), stdout);
    }
    if (invalid)
        std::fprintf(stderr, "attnviz tokenize: %zu invalid UTF-8 byte(s) replaced by U+FFFD\n", invalid);
    return 0;
}

int vectors(const QStringList &args)
{
    const char *usage =
        "Usage: attnviz vectors export IN OUT.avec [--top N] [--tokenizable]\n"
        "           quantize a table (text/.vec/.bin/.avec) to .avec, keeping its first N words (file order);\n"
        "           --tokenizable first drops words the tokenizer never produces (fastText's </s>, capitals)\n"
        "       attnviz vectors info [TABLE]                 size, dimension, load time\n"
        "       attnviz vectors cos WORD WORD [--table T]    cosine of two words\n"
        "       attnviz vectors neighbours WORD [-n K] [--table T]  the K nearest words by cosine\n"
        "TABLE / T default to the bundled table.\n";
    QStringList rest = args.mid(1);
    if (rest.isEmpty() || rest.first() == QLatin1String("--help") || rest.first() == QLatin1String("-h")) {
        std::fputs(usage, rest.isEmpty() ? stderr : stdout);
        return rest.isEmpty() ? 2 : 0;
    }
    const QString sub = rest.takeFirst();
    QCommandLineParser p;
    QCommandLineOption topOpt(QStringLiteral("top"), QStringLiteral("Words kept."), QStringLiteral("n"),
                              QStringLiteral("0"));
    QCommandLineOption kOpt(QStringLiteral("n"), QStringLiteral("Neighbours listed."), QStringLiteral("k"),
                            QStringLiteral("10"));
    QCommandLineOption tableOpt(QStringLiteral("table"), QStringLiteral("Embedding table."), QStringLiteral("file"));
    QCommandLineOption tokOpt(QStringLiteral("tokenizable"), QStringLiteral("Keep only words the tokenizer produces."));
    p.addOptions({topOpt, kOpt, tableOpt, tokOpt});
    rest.prepend(args.first() + QLatin1Char(' ') + sub);
    if (!p.parse(rest))
        return fail("vectors", p.errorText().toStdString(), 2);
    const QStringList pos = p.positionalArguments();
    const std::string tablePath = p.value(tableOpt).toStdString();

    if (sub == QLatin1String("export")) {
        if (pos.size() != 2)
            return fail("vectors", "export needs IN and OUT", 2);
        bool ok = false;
        const long long top = p.value(topOpt).toLongLong(&ok);
        if (!ok || top < 0)
            return fail("vectors", "--top: expected a count", 2);
        EmbeddingTable t;
        if (Status st = loadEmbeddings(pos[0].toStdString(), t); !st)
            return fail("vectors", st.message, 2);
        size_t dropped = 0;
        if (p.isSet(tokOpt)) {
            // A word the app can look up is one the tokenizer returns unchanged, as one token.
            std::vector<std::string> words;
            std::vector<int> rows;
            for (int i = 0; i < t.size(); ++i) {
                const std::string &w = t.words()[size_t(i)];
                const Tokenization tk = attnviz::tokenize(w);
                if (tk.invalidBytes == 0 && tk.tokens.size() == 1 && tk.tokens[0].text == w) {
                    words.push_back(w);
                    rows.push_back(i);
                } else {
                    ++dropped;
                }
            }
            Mat<float> kept(Eigen::Index(rows.size()), t.dim());
            for (size_t r = 0; r < rows.size(); ++r)
                kept.row(Eigen::Index(r)) = t.vectors().row(rows[r]);
            const std::string source = t.source();
            t.assign(std::move(words), std::move(kept), source);
        }
        if (Status st = writeAvec(pos[1].toStdString(), t, size_t(top)); !st)
            return fail("vectors", st.message, 1);
        std::printf("%s: %d words of dimension %d (dropped first: %zu word(s) the tokenizer never produces)\n",
                    qPrintable(pos[1]), top ? std::min(int(top), t.size()) : t.size(), t.dim(), dropped);
        return 0;
    }
    if (sub == QLatin1String("info")) {
        const std::string path = pos.isEmpty() ? tablePath : pos[0].toStdString();
        EmbeddingTable t;
        const auto t0 = std::chrono::steady_clock::now();
        if (Status st = loadTable(path, t); !st)
            return fail("vectors", st.message, 2);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s: %d words, dimension %d, mean norm %.4f, loaded in %.1f ms\n", t.source().c_str(), t.size(),
                    t.dim(), double(t.meanNorm()), ms);
        return 0;
    }
    EmbeddingTable t;
    if (Status st = loadTable(tablePath, t); !st)
        return fail("vectors", st.message, 2);
    auto index = [&](const QString &w, int &i) {
        i = t.indexOf(lowerCase(w.toStdString()));
        if (i < 0)
            std::fprintf(stderr, "attnviz vectors: '%s' is not in %s\n", qPrintable(w), t.source().c_str());
        return i >= 0;
    };
    if (sub == QLatin1String("cos")) {
        int a, b;
        if (pos.size() != 2)
            return fail("vectors", "cos needs two words", 2);
        if (!index(pos[0], a) || !index(pos[1], b))
            return 1;
        std::printf("%.4f\n", double(cosine(t, a, b)));
        return 0;
    }
    if (sub == QLatin1String("neighbours") || sub == QLatin1String("neighbors")) {
        int a;
        if (pos.size() != 1)
            return fail("vectors", "neighbours needs one word", 2);
        if (!index(pos[0], a))
            return 1;
        const int k = std::max(1, p.value(kOpt).toInt());
        const Vec<float> u = t.vector(a).normalized();
        Vec<float> sims = t.vectors() * u;
        for (int i = 0; i < t.size(); ++i) {
            const float n = t.vector(i).norm();
            sims[i] = n > 0 ? sims[i] / n : -2.0f;
        }
        sims[a] = -3.0f;
        std::vector<int> order(size_t(t.size()));
        for (int i = 0; i < t.size(); ++i)
            order[size_t(i)] = i;
        const int m = std::min(k, t.size() - 1);
        std::partial_sort(order.begin(), order.begin() + m, order.end(),
                          [&](int x, int y) { return sims[x] > sims[y] || (sims[x] == sims[y] && x < y); });
        for (int i = 0; i < m; ++i)
            std::printf("%-20s %.4f\n", t.words()[size_t(order[size_t(i)])].c_str(), double(sims[order[size_t(i)]]));
        return 0;
    }
    fail("vectors", "unknown subcommand '" + sub.toStdString() + "'", 2);
    std::fputs(usage, stderr); // the usage after the one line
    return 2;
}

} // namespace attnviz::cli
