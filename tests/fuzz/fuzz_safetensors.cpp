// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: safetensors (parseSafetensors), and for a file that parses, the GPT-2 mapping
// the window's stack weights go through (stackWeightsFromGpt2).
#include "fuzzcheck.h"

#include "attnviz/transformer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    SafetensorsFile f;
    const Status st = parseSafetensors(fuzz::bytes(data, size), "fuzz.safetensors", f);
    fuzz::expectOneLine(st, "fuzz.safetensors");
    if (!st)
        return 0;
    StackWeights<float> w;
    int depth = 0;
    (void)stackWeightsFromGpt2(f, w, depth);
    return 0;
}
