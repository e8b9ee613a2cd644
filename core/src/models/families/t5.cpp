// SPDX-License-Identifier: GPL-3.0-or-later
// T5 (t5-small ... t5-11b: v1.0, feed_forward_proj "relu"; T5 v1.1, FLAN-T5, mT5: "gated-gelu"),
// an encoder-decoder model, as Hugging Face's configuration_t5.py and modeling_t5.py define it:
// RMSNorm without mean subtraction before every sub-block (T5LayerNorm, layer_norm_epsilon) and
// after each stack, q·k NOT scaled by 1/sqrt(d_kv), a bucketed relative position bias that block 0
// of each stack holds and every layer of that stack shares (bidirectional in the encoder,
// unidirectional in the decoder; none in cross-attention), no biases anywhere, heads of d_kv (d_kv x
// num_heads may differ from d_model), the LM head tied to `shared` (final states then scaled by
// d_model^-0.5) unless tie_word_embeddings is false, the decoder started with
// decoder_start_token_id (the pad id).
//   shared.weight (or encoder.embed_tokens.weight),
//   encoder.block.N.layer.0.{layer_norm, SelfAttention.{q,k,v,o}}, encoder.block.0.layer.0.SelfAttention.relative_attention_bias,
//   encoder.block.N.layer.1.{layer_norm, DenseReluDense.{wi | wi_0, wi_1; wo}}, encoder.final_layer_norm,
//   decoder.block.N.layer.0 (self-attention, as the encoder's), decoder.block.N.layer.1.{layer_norm,
//   EncDecAttention.{q,k,v,o}}, decoder.block.N.layer.2 (the MLP), decoder.final_layer_norm; lm_head (untied)
// llama.cpp's `t5` GGUF files are read onto these same fields by ggufmodel.cpp (t5ArchitectureOf:
// what llama.cpp's llama-model.cpp, llama-graph.cpp and convert_hf_to_gguf.py assume of them, the
// max distance it fixes at 128 and the tied head's scale it leaves out among them).
#include "family.h"

#include <cmath>

namespace attnviz::families {

namespace {

// feed_forward_proj as T5Config reads it: "ACT" or "gated-ACT"; "gated-gelu" means gelu_new.
Status readFeedForward(const ConfigFields &c, Architecture &a)
{
    std::string proj = "relu";
    if (c.has("feed_forward_proj")) {
        if (!c.json()["feed_forward_proj"].is_string())
            return c.bad("feed_forward_proj", "must be a name such as \"relu\" or \"gated-gelu\"");
        proj = c.json()["feed_forward_proj"].get<std::string>();
    }
    std::string act = proj;
    a.gatedMlp = false;
    if (const size_t dash = proj.find('-'); dash != std::string::npos) {
        if (proj.compare(0, dash, "gated") != 0 || proj.find('-', dash + 1) != std::string::npos)
            return c.bad("feed_forward_proj", "\"" + proj + "\" is not ACT or gated-ACT (\"relu\", \"gated-gelu\")");
        a.gatedMlp = true;
        act = proj.substr(dash + 1);
    }
    if (proj == "gated-gelu")
        act = "gelu_new";
    if (act == "relu")
        a.activation = Activation::Relu;
    else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
        a.activation = Activation::GeluTanh;
    else if (act == "gelu")
        a.activation = Activation::GeluErf;
    else if (act == "silu" || act == "swish")
        a.activation = Activation::Silu;
    else
        return c.bad("feed_forward_proj", "\"" + proj + "\": " + act + " is not an activation attnviz knows (relu, gelu, gelu_new, silu)");
    return {};
}

Status readT5(const ConfigFields &c, Architecture &a)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024;
    const int buckets = 32, maxDistance = 128, pad = 0, eos = 1;
    Status st;
    int encoderLayers = 0;
    if (!(st = c.integer({"num_layers"}, encoderLayers, 1, layerCap)) ||
        !(st = c.integer({"num_decoder_layers"}, a.layers, 1, layerCap, &encoderLayers)) ||
        !(st = c.integer({"num_heads"}, a.heads, 1, widthCap)) || !(st = c.integer({"d_model"}, a.dModel, 1, widthCap)) ||
        !(st = c.integer({"d_kv"}, a.dHead, 1, widthCap)) || !(st = c.integer({"d_ff"}, a.dFeedForward, 1, 16 * widthCap)) ||
        !(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap)) ||
        !(st = c.integer({"relative_attention_num_buckets"}, a.relative.buckets, 4, 1 << 16, &buckets)) ||
        !(st = c.integer({"relative_attention_max_distance"}, a.relative.maxDistance, 2, 1 << 24, &maxDistance)) ||
        !(st = c.number("layer_norm_epsilon", a.normEps, 1e-30, 0.5, 1e-6)) ||
        !(st = c.boolean("tie_word_embeddings", a.tiedEmbeddings, true)) ||
        !(st = c.integer({"pad_token_id"}, a.seq2seq.padId, 0, vocabCap, &pad)) ||
        !(st = c.integer({"eos_token_id"}, a.seq2seq.eosId, 0, vocabCap, &eos)) ||
        !(st = c.integer({"decoder_start_token_id"}, a.seq2seq.decoderStartId, 0, vocabCap, &a.seq2seq.padId)) ||
        !(st = readFeedForward(c, a)))
        return st;
    if (a.relative.maxDistance <= a.relative.buckets / 2)
        return c.bad("relative_attention_max_distance", std::to_string(a.relative.maxDistance) +
                                                            " must exceed half of relative_attention_num_buckets (" +
                                                            std::to_string(a.relative.buckets) + ")");
    for (auto [field, id] : {std::pair{"decoder_start_token_id", a.seq2seq.decoderStartId}, {"eos_token_id", a.seq2seq.eosId}})
        if (id >= a.vocabulary)
            return c.bad(field, std::to_string(id) + " is not below vocab_size " + std::to_string(a.vocabulary));
    a.encoderDecoder = true;
    a.seq2seq.encoderLayers = encoderLayers;
    a.kvHeads = a.heads;
    a.maxPositions = 1 << 20; // relative positions: no table to run out of
    a.norm = NormKind::RmsNorm;
    a.placement = NormPlacement::Pre;
    a.finalNorm = true;
    a.positions = PositionKind::RelativeBuckets;
    a.attentionScale = 1.0;
    a.qkvBias = a.outBias = a.mlpBias = false;
    a.causal = true;
    a.head = LmHead::CausalLm;
    a.outputScale = a.tiedEmbeddings ? 1.0 / std::sqrt(double(a.dModel)) : 1.0;
    a.window.assign(size_t(a.layers), 0);
    return {};
}

TensorNames t5Names(const Architecture &a)
{
    TensorNames n;
    n.prefixes = {""};
    n.tokens = "shared.weight";
    n.tokensAlt = "encoder.embed_tokens.weight";
    n.lmHead = a.tiedEmbeddings ? std::string() : std::string("lm_head.weight");
    n.layer = "decoder.block.{L}.";
    n.encoderLayer = "encoder.block.{L}.";
    n.attnNorm = "layer.0.layer_norm";
    n.q = "layer.0.SelfAttention.q";
    n.k = "layer.0.SelfAttention.k";
    n.v = "layer.0.SelfAttention.v";
    n.o = "layer.0.SelfAttention.o";
    n.relativeBias = "layer.0.SelfAttention.relative_attention_bias.weight";
    n.crossNorm = "layer.1.layer_norm";
    n.crossQ = "layer.1.EncDecAttention.q";
    n.crossK = "layer.1.EncDecAttention.k";
    n.crossV = "layer.1.EncDecAttention.v";
    n.crossO = "layer.1.EncDecAttention.o";
    n.ffnNorm = "layer.2.layer_norm";
    n.encoderFfnNorm = "layer.1.layer_norm";
    if (a.gatedMlp) {
        n.gate = "layer.2.DenseReluDense.wi_0";
        n.up = "layer.2.DenseReluDense.wi_1";
        n.encoderGate = "layer.1.DenseReluDense.wi_0";
        n.encoderUp = "layer.1.DenseReluDense.wi_1";
    } else {
        n.up = "layer.2.DenseReluDense.wi";
        n.encoderUp = "layer.1.DenseReluDense.wi";
    }
    n.down = "layer.2.DenseReluDense.wo";
    n.encoderDown = "layer.1.DenseReluDense.wo";
    n.finalNorm = "decoder.final_layer_norm";
    n.encoderFinalNorm = "encoder.final_layer_norm";
    return n;
}

} // namespace

const Family kT5{"t5", {"t5"}, readT5, t5Names};

} // namespace attnviz::families
