// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a byte-level BPE merges.txt (parseByteLevelBpe) against a fixed small
// vocabulary (the vocab_json seed: the 256 byte symbols and the tokens of GPT-2's first 200 merges),
// then a text encoded and decoded back byte for byte.
#include "testpaths.h"
#include "fuzzcheck.h"

#include "attnviz/subword.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string vocab = fuzz::readFile(ATTNVIZ_FUZZ_SEED("/vocab_json/gpt2-small.json"));
    std::unique_ptr<SubwordTokenizer> tok;
    const Status st = parseByteLevelBpe(vocab, fuzz::bytes(data, size), "fuzz", tok);
    fuzz::expectOneLineStarting(st, "fuzz (merges.txt):");
    if (st) {
        const std::string text = "the ship and the crew, the ship!";
        std::vector<TraceToken> tokens;
        if (!tok->encode(text, tokens))
            std::abort();
        std::vector<int> ids;
        for (const TraceToken &t : tokens)
            ids.push_back(t.id);
        if (tok->decode(ids) != text)
            std::abort();
    }
    return 0;
}
