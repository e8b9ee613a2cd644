// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 (gpt2, distilgpt2, gpt2-medium ...): learned positions, pre-norm LayerNorm blocks, GELU
// (tanh) MLP, fused q|k|v in Conv1D tensors stored (in, out), the LM head tied to wte.
//   [transformer.]wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f
// h.N.attn.bias / masked_bias (causal buffers of older files) are ignored.
#include "family.h"

namespace attnviz::families {

namespace {

Status readGpt2(const ConfigFields &c, Architecture &a)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024, posCap = 1'000'000;
    Status st;
    if (!(st = c.integer({"n_layer"}, a.layers, 1, layerCap)) || !(st = c.integer({"n_head"}, a.heads, 1, widthCap)) ||
        !(st = c.integer({"n_embd"}, a.dModel, 1, widthCap)) ||
        !(st = c.integer({"n_positions", "n_ctx"}, a.maxPositions, 1, posCap)) ||
        !(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap)))
        return st;
    const int inner = 4 * a.dModel;
    if (!(st = c.integer({"n_inner"}, a.dFeedForward, 1, 4 * widthCap, &inner)) ||
        !(st = c.number("layer_norm_epsilon", a.normEps, 1e-30, 0.5, 1e-5)) ||
        !(st = c.activation({"activation_function"}, a.activation, "gelu_new")))
        return st;
    if (a.dModel % a.heads)
        return c.bad("n_head", std::to_string(a.heads) + " does not divide n_embd " + std::to_string(a.dModel));
    a.kvHeads = a.heads;
    a.dHead = a.dModel / a.heads;
    a.norm = NormKind::LayerNorm;
    a.placement = NormPlacement::Pre;
    a.positions = PositionKind::Learned;
    a.causal = true;
    a.tiedEmbeddings = true;
    a.head = LmHead::CausalLm;
    return {};
}

TensorNames gpt2Names(const Architecture &)
{
    TensorNames n;
    n.prefixes = {"", "transformer."};
    n.tokens = "wte.weight";
    n.positions = "wpe.weight";
    n.finalNorm = "ln_f";
    n.lmHead = "lm_head.weight";
    n.layer = "h.{L}.";
    n.attnNorm = "ln_1";
    n.qkv = "attn.c_attn";
    n.o = "attn.c_proj";
    n.ffnNorm = "ln_2";
    n.up = "mlp.c_fc";
    n.down = "mlp.c_proj";
    n.conv1d = true;
    return n;
}

} // namespace

const Family kGpt2{"gpt2", {"gpt2"}, readGpt2, gpt2Names};

} // namespace attnviz::families
