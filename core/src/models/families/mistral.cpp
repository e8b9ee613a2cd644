// SPDX-License-Identifier: GPL-3.0-or-later
// Mistral: Llama's block with a sliding window on every layer (sliding_window; null = none).
// MistralConfig's defaults: 32,768 positions (4,096 x 32), rope_theta 10,000, untied.
#include "family.h"

namespace attnviz::families {

namespace {

Status readMistral(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.maxPositions = 4096 * 32;
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    return c.slidingWindows(a, 0, 0);
}

} // namespace

const Family kMistral{"mistral", {"mistral"}, readMistral, llamaNames};

} // namespace attnviz::families
