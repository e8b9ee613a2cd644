// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: attnviz's .avec tables (parseEmbeddings, auto-detected by the AVEC magic), then
// a sentence lookup.
#include "fuzzcheck.h"

#include "attnviz/embeddings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    EmbeddingTable t;
    const Status st = parseEmbeddings(fuzz::bytes(data, size), "fuzz.avec", t, EmbeddingFormat::Avec);
    fuzz::expectOneLine(st, "fuzz.avec");
    if (st)
        (void)embedSentence(t, "the ship and the crew");
    return 0;
}
