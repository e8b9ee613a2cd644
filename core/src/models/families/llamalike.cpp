// SPDX-License-Identifier: GPL-3.0-or-later
// What the Llama-like families share (family.h): Llama's config.json fields (num_hidden_layers,
// num_attention_heads, num_key_value_heads, head_dim, hidden_size, intermediate_size, rms_norm_eps,
// rope_*, attention_bias, mlp_bias, tie_word_embeddings, hidden_act), each family's defaults for
// the absent ones as its Hugging Face configuration class has them, and Llama's tensor names:
//   [model.]embed_tokens, layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
//   mlp.{gate,up,down}_proj}, norm; lm_head (absent when tied)
#include "family.h"

namespace attnviz::families {

Status readLlamaLike(const ConfigFields &c, Architecture &a, const LlamaDefaults &d)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024, posCap = 16'777'216;
    Status st;
    if (!(st = c.integer({"num_hidden_layers"}, a.layers, 1, layerCap)) ||
        !(st = c.integer({"num_attention_heads"}, a.heads, 1, widthCap)) ||
        !(st = c.integer({"hidden_size"}, a.dModel, 1, widthCap)) ||
        !(st = c.integer({"intermediate_size"}, a.dFeedForward, 1, 16 * widthCap)) ||
        !(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap)) ||
        !(st = c.integer({"max_position_embeddings"}, a.maxPositions, 1, posCap, &d.maxPositions)) ||
        !(st = c.integer({"num_key_value_heads"}, a.kvHeads, 1, widthCap, &a.heads)))
        return st;
    if (a.heads % a.kvHeads)
        return c.bad("num_key_value_heads", std::to_string(a.kvHeads) + " does not divide num_attention_heads " +
                                                std::to_string(a.heads));
    int headDim = d.headDim;
    if (headDim == 0) {
        if (!c.has("head_dim") && a.dModel % a.heads)
            return c.bad("num_attention_heads", std::to_string(a.heads) + " does not divide hidden_size " +
                                                    std::to_string(a.dModel) + " (and head_dim is not given)");
        headDim = a.dModel / a.heads;
    }
    if (!(st = c.integer({"head_dim"}, a.dHead, 1, widthCap, &headDim)))
        return st;
    bool attnBias = d.qkvBias;
    if (!(st = c.number("rms_norm_eps", a.normEps, 1e-30, 0.5, d.eps)) ||
        !(st = c.boolean("tie_word_embeddings", a.tiedEmbeddings, d.tied)) ||
        !(st = c.boolean("attention_bias", attnBias, d.qkvBias)) || !(st = c.boolean("mlp_bias", a.mlpBias, d.mlpBias)) ||
        !(st = c.activation({"hidden_act", "hidden_activation"}, a.activation, d.activation)))
        return st;
    a.qkvBias = attnBias;
    a.outBias = c.has("attention_bias") ? attnBias : d.outBias;
    double partial = 1.0;
    if (!(st = c.number("partial_rotary_factor", partial, 1e-6, 1.0, 1.0)))
        return st;
    const int dims = int(a.dHead * partial);
    if (!(st = c.rope(a.rope, dims, d.theta, a.maxPositions)))
        return st;
    a.norm = NormKind::RmsNorm;
    a.placement = NormPlacement::Pre;
    a.positions = PositionKind::Rotary;
    a.gatedMlp = true;
    a.causal = true;
    a.head = LmHead::CausalLm;
    a.window.assign(size_t(a.layers), 0);
    return {};
}

Status readQwenWindows(const ConfigFields &c, Architecture &a)
{
    std::vector<bool> sliding;
    bool present = false;
    if (Status st = c.layerTypes(a.layers, sliding, present); !st)
        return st;
    bool use = false;
    if (Status st = c.boolean("use_sliding_window", use, false); !st)
        return st;
    int window = 0, maxWindowLayers = a.layers;
    if (c.has("sliding_window"))
        if (Status st = c.integer({"sliding_window"}, window, 1, 1 << 30); !st)
            return st;
    if (Status st = c.integer({"max_window_layers"}, maxWindowLayers, 0, 1 << 20, &a.layers); !st)
        return st;
    a.window.assign(size_t(a.layers), 0);
    if (!use || window <= 0)
        return {};
    for (int l = 0; l < a.layers; ++l)
        if (present ? bool(sliding[size_t(l)]) : l >= maxWindowLayers)
            a.window[size_t(l)] = window;
    return {};
}

TensorNames llamaNames(const Architecture &a)
{
    TensorNames n;
    n.prefixes = {"model.", ""};
    n.tokens = "embed_tokens.weight";
    n.finalNorm = "norm";
    n.lmHead = a.tiedEmbeddings ? std::string() : std::string("lm_head.weight");
    n.layer = "layers.{L}.";
    n.attnNorm = "input_layernorm";
    n.q = "self_attn.q_proj";
    n.k = "self_attn.k_proj";
    n.v = "self_attn.v_proj";
    n.o = "self_attn.o_proj";
    n.ffnNorm = "post_attention_layernorm";
    n.gate = "mlp.gate_proj";
    n.up = "mlp.up_proj";
    n.down = "mlp.down_proj";
    if (a.qkNorm) {
        n.qNorm = "self_attn.q_norm";
        n.kNorm = "self_attn.k_norm";
    }
    return n;
}

} // namespace attnviz::families
