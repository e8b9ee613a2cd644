// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the subword tokenizers (build with -DATTNVIZ_FUZZ=ON and clang, see
// tests/fuzz/CMakeLists.txt). The first input byte picks what the rest is:
//   0: a vocab.json + merges.txt pair (split at the first NUL) -> parseByteLevelBpe, then encode;
//   1: a vocab.txt -> parseWordPiece (every option combination), then encode;
//   2..: a text -> encode with the real GPT-2 and bert-base-uncased vocabularies; GPT-2 must decode
//        it back byte for byte and its pieces must tile it; BERT's ranges must lie inside it.
#include "testpaths.h"
#include "attnviz/subword.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace attnviz;

namespace {
const SubwordTokenizer &real(bool bpe)
{
    static std::unique_ptr<SubwordTokenizer> gpt2, bert;
    if (!gpt2) {
        const std::string dir = ATTNVIZ_FIXTURE("/tokenizers/");
        if (!loadByteLevelBpe(dir + "gpt2/vocab.json", dir + "gpt2/merges.txt", gpt2) ||
            !loadWordPiece(dir + "bert-base-uncased/vocab.txt", WordPieceOptions(), bert))
            std::abort();
    }
    return bpe ? *gpt2 : *bert;
}

void check(bool ok)
{
    if (!ok)
        std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
    std::vector<TraceToken> tokens;
    std::unique_ptr<SubwordTokenizer> tok;
    switch (data[0]) {
    case 0: {
        const size_t nul = rest.find('\0');
        const std::string vocab = rest.substr(0, nul), merges = nul == std::string::npos ? "" : rest.substr(nul + 1);
        if (parseByteLevelBpe(vocab, merges, "fuzz", tok)) {
            check(tok->encode(vocab, tokens).ok());
            check(tok->decode([&] {
                std::vector<int> ids;
                for (const TraceToken &t : tokens)
                    ids.push_back(t.id);
                return ids;
            }()) == vocab);
        }
        break;
    }
    case 1:
        for (int o = 0; o < 16; ++o) {
            WordPieceOptions options;
            options.lowerCase = o & 1;
            options.stripAccents = o & 2;
            options.chineseChars = o & 4;
            options.addSpecials = o & 8;
            options.maxCharsPerWord = 1 + o;
            if (parseWordPiece(rest, "fuzz", options, tok))
                check(tok->encode(rest, tokens).ok());
        }
        break;
    default: {
        check(real(true).encode(rest, tokens).ok());
        std::vector<int> ids;
        size_t at = 0;
        for (const TraceToken &t : tokens) {
            check(t.begin == at && t.end > t.begin);
            at = t.end;
            ids.push_back(t.id);
        }
        check(at == rest.size() && real(true).decode(ids) == rest);
        check(real(false).encode(rest, tokens).ok());
        for (const TraceToken &t : tokens)
            check(t.begin <= t.end && t.end <= rest.size());
        break;
    }
    }
    return 0;
}
