// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a byte-level BPE vocab.json (parseByteLevelBpe) with GPT-2's first 200 merges
// (the merges_txt seed), then a sentence encoded and decoded back.
#include "testpaths.h"
#include "fuzzcheck.h"

#include "attnviz/subword.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string merges = fuzz::readFile(ATTNVIZ_FUZZ_SEED("/merges_txt/gpt2-200.txt"));
    std::unique_ptr<SubwordTokenizer> tok;
    const Status st = parseByteLevelBpe(fuzz::bytes(data, size), merges, "fuzz", tok);
    fuzz::expectOneLineStarting(st, "fuzz ("); // vocab.json, or merges.txt for a merge naming a token it lacks
    if (st) {
        std::vector<TraceToken> tokens;
        if (!tok->encode("the ship and the crew", tokens))
            std::abort();
    }
    return 0;
}
