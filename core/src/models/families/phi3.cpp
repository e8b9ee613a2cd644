// SPDX-License-Identifier: GPL-3.0-or-later
// Phi-3 / Phi-3.5 / Phi-4-mini: Llama's block with q|k|v fused in qkv_proj and gate|up fused in
// gate_up_proj (gate first), partial rotary (partial_rotary_factor), LongRoPE scaling chosen by
// the text's length against original_max_position_embeddings, and a sliding window on every
// layer when sliding_window is set. Phi3Config's defaults: untied, rms_norm_eps 1e-5, 4,096 positions.
#include "family.h"

namespace attnviz::families {

namespace {

Status readPhi3(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.eps = 1e-5;
    d.maxPositions = 4096;
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    return c.slidingWindows(a, 0, 0);
}

TensorNames phi3Names(const Architecture &a)
{
    TensorNames n = llamaNames(a);
    n.q = n.k = n.v = std::string();
    n.qkv = "self_attn.qkv_proj";
    n.gate = n.up = std::string();
    n.gateUp = "mlp.gate_up_proj";
    return n;
}

} // namespace

const Family kPhi3{"phi3", {"phi3"}, readPhi3, phi3Names};

} // namespace attnviz::families
