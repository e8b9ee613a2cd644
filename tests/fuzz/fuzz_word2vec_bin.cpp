// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: word2vec binary tables (parseEmbeddings, binary format), then a sentence lookup.
#include "fuzzcheck.h"

#include "attnviz/embeddings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    EmbeddingTable t;
    const Status st = parseEmbeddings(fuzz::bytes(data, size), "fuzz.bin", t, EmbeddingFormat::Word2VecBinary);
    fuzz::expectOneLine(st, "fuzz.bin");
    if (st)
        (void)embedSentence(t, "the ship and the crew");
    return 0;
}
