// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: GloVe / word2vec / fastText text tables (parseEmbeddings, text format), then a
// sentence looked up in what loaded.
#include "fuzzcheck.h"

#include "attnviz/embeddings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    EmbeddingTable t;
    const Status st = parseEmbeddings(fuzz::bytes(data, size), "fuzz.vec", t, EmbeddingFormat::Text);
    fuzz::expectOneLine(st, "fuzz.vec");
    if (st)
        (void)embedSentence(t, "the ship and the crew");
    return 0;
}
