// SPDX-License-Identifier: GPL-3.0-or-later
// Qwen2 / Qwen2.5: Llama's block with biases on q, k and v — hard-wired in Hugging Face's Qwen2
// attention (no config field turns them off), none on o or the MLP; sliding windows only with
// use_sliding_window (layers from max_window_layers on, or as layer_types says).
// Qwen2Config's defaults: untied, rope_theta 10,000, rms_norm_eps 1e-6, 32,768 positions.
#include "family.h"

namespace attnviz::families {

namespace {

Status readQwen2(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.maxPositions = 32768;
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    a.qkvBias = true; // Qwen2Attention builds q/k/v with bias=True whatever attention_bias says
    a.outBias = false;
    return readQwenWindows(c, a);
}

} // namespace

const Family kQwen2{"qwen2", {"qwen2"}, readQwen2, llamaNames};

} // namespace attnviz::families
