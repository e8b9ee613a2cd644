// SPDX-License-Identifier: GPL-3.0-or-later
// Qwen3: Llama's block with an RMSNorm over each head's q and k before rotation (q_norm, k_norm),
// head_dim given apart from hidden_size / heads (default 128), attention_bias off by default.
// Qwen3Config's defaults: untied, rope_theta 10,000, rms_norm_eps 1e-6, 32,768 positions.
#include "family.h"

namespace attnviz::families {

namespace {

Status readQwen3(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.maxPositions = 32768;
    d.headDim = 128;
    a.qkNorm = true;
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    return readQwenWindows(c, a);
}

} // namespace

const Family kQwen3{"qwen3", {"qwen3"}, readQwen3, llamaNames};

} // namespace attnviz::families
