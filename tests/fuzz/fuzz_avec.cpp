// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: attnviz's .avec tables (parseEmbeddings, .avec format), then a sentence lookup.
#include "fuzzcheck.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return attnviz::fuzz::fuzzTable(data, size, "fuzz.avec", attnviz::EmbeddingFormat::Avec);
}
