// SPDX-License-Identifier: GPL-3.0-or-later
// Speed of the subword tokenizers (not a test: numbers for the report, no assertions). Loads the
// real GPT-2 and bert-base-uncased vocabularies, then encodes the first 1,000 words of the
// reference corpus (licence prose, as typed text) with an empty BPE cache and warm, and the whole
// corpus. Usage: bench_subword [FIXTURES_DIR]
#include "testpaths.h"
#include "attnviz/subword.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace attnviz;
using Clock = std::chrono::steady_clock;

static double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

static double medianMs(int reps, const std::function<void()> &f)
{
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(msSince(t0));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char **argv)
{
    const std::string dir = std::string(argc > 1 ? argv[1] : ATTNVIZ_FIXTURES_DIR) + "/tokenizers/";
    std::vector<std::string> corpus;
    {
        std::ifstream f(dir + "corpus.jsonl");
        for (std::string line; std::getline(f, line);)
            corpus.push_back(nlohmann::json::parse(line).get<std::string>());
    }
    std::string words;
    int n = 0;
    for (const std::string &line : corpus) {
        std::istringstream in(line);
        for (std::string w; n < 1000 && in >> w; ++n)
            words += (n ? " " : "") + w;
    }
    std::unique_ptr<SubwordTokenizer> gpt2, bert;
    auto t0 = Clock::now();
    Status s = loadByteLevelBpe(dir + "gpt2/vocab.json", dir + "gpt2/merges.txt", gpt2);
    const double loadGpt2 = msSince(t0);
    t0 = Clock::now();
    if (s)
        s = loadWordPiece(dir + "bert-base-uncased/vocab.txt", WordPieceOptions(), bert);
    const double loadBert = msSince(t0);
    if (!s) {
        std::fprintf(stderr, "bench_subword: %s\n", s.message.c_str());
        return 2;
    }
    std::vector<TraceToken> tokens;
    std::printf("| tokenizer | load (ms) | 1,000 words, first time (µs/word, median of 5 fresh loads) | 1,000 words, "
                "again (µs/word) | tokens | "
                "corpus, %zu lines (ms) |\n|---|---|---|---|---|---|\n",
                corpus.size());
    for (SubwordTokenizer *tok : {gpt2.get(), bert.get()}) {
        // First time: a freshly loaded tokenizer each run (the BPE cache empty), median of 5.
        const bool isBpe = tok == gpt2.get();
        std::vector<double> firsts;
        for (int rep = 0; rep < 5; ++rep) {
            std::unique_ptr<SubwordTokenizer> fresh;
            const Status ls = isBpe ? loadByteLevelBpe(dir + "gpt2/vocab.json", dir + "gpt2/merges.txt", fresh)
                                    : loadWordPiece(dir + "bert-base-uncased/vocab.txt", WordPieceOptions(), fresh);
            if (!ls)
                return 2;
            firsts.push_back(medianMs(1, [&] { fresh->encode(words, tokens); }));
        }
        std::sort(firsts.begin(), firsts.end());
        const double first = firsts[2];
        const double again = medianMs(21, [&] { tok->encode(words, tokens); });
        const size_t count = tokens.size();
        const double all = medianMs(5, [&] {
            for (const std::string &c : corpus)
                tok->encode(c, tokens);
        });
        std::printf("| %s | %.0f | %.2f | %.2f | %zu | %.1f |\n", tok->kind().c_str(), isBpe ? loadGpt2 : loadBert,
                    first * 1000 / n, again * 1000 / n, count, all);
    }
    return 0;
}
