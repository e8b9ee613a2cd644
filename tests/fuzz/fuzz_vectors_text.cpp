// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: GloVe / word2vec / fastText text tables (parseEmbeddings, text format), then a
// sentence looked up in what loaded.
#include "fuzzcheck.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return attnviz::fuzz::fuzzTable(data, size, "fuzz.vec", attnviz::EmbeddingFormat::Text);
}
