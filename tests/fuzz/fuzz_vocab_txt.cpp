// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a WordPiece vocab.txt (parseWordPiece, BERT's options), then a sentence encoded.
#include "fuzzcheck.h"

#include "attnviz/subword.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    std::unique_ptr<SubwordTokenizer> tok;
    const Status st = parseWordPiece(fuzz::bytes(data, size), "fuzz", WordPieceOptions(), tok);
    fuzz::expectOneLineStarting(st, "fuzz:");
    if (st) {
        std::vector<TraceToken> tokens;
        if (!tok->encode("The ship's crew, unaffable!", tokens))
            std::abort();
    }
    return 0;
}
