// SPDX-License-Identifier: GPL-3.0-or-later
// BART (facebook/bart-base, bart-large, bart-large-cnn) and mBART (facebook/mbart-large-cc25,
// mbart-large-50), encoder-decoder models, as Hugging Face's configuration_bart.py,
// configuration_mbart.py, modeling_bart.py and modeling_mbart.py define them: token embeddings
// `shared` (times sqrt(d_model) when scale_embedding, default false) plus learned positions whose
// row is the position + 2 (BartLearnedPositionalEmbedding.offset, positions counted from 0 in each
// stack), a LayerNorm on that sum (layernorm_embedding), blocks of biased q/k/v/out projections with
// q·k scaled by head_dim^-0.5 and fc1 / activation_function (default "gelu", the erf form) / fc2,
// LayerNorms (eps 1e-5, nn.LayerNorm's) with bias. BART is post-LN: x = N(x + Attn(x)) for each
// sub-block; mBART is pre-LN (x + Attn(N(x))) and closes each stack with a LayerNorm
// (encoder.layer_norm, decoder.layer_norm). The LM head is tied to `shared`, plus final_logits_bias
// (a buffer: zeros where the file has none). The decoder starts with decoder_start_token_id (BART's
// default 2, </s>; mBART has no default: the file must name it). Tensors sit under "model." (a
// ...ForConditionalGeneration file) or at the top (a BartModel file such as facebook/bart-base's):
//   shared.weight (or encoder.embed_tokens.weight), {encoder,decoder}.embed_positions.weight,
//   {encoder,decoder}.layernorm_embedding, encoder.layers.N.{self_attn.{q,k,v,out}_proj,
//   self_attn_layer_norm, fc1, fc2, final_layer_norm}, decoder.layers.N.{the same,
//   encoder_attn.{q,k,v,out}_proj, encoder_attn_layer_norm}, mBART's {encoder,decoder}.layer_norm;
//   final_logits_bias (1, vocab) at the top.
#include "family.h"

#include <cmath>

namespace attnviz::families {

Status readBartLike(const ConfigFields &c, Architecture &a, const BartDefaults &d)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024;
    const int twelve = 12, sixteen = 16, ffn = 4096;
    Status st;
    int encoderHeads = 0, decoderHeads = 0, encoderFfn = 0, decoderFfn = 0, encoderLayers = 0;
    bool scale = false;
    if (!(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap, &d.vocab)) ||
        !(st = c.integer({"d_model"}, a.dModel, 1, widthCap, &d.dModel)) ||
        !(st = c.integer({"max_position_embeddings"}, a.maxPositions, 1, 1 << 24, &d.maxPositions)) ||
        !(st = c.integer({"encoder_layers"}, encoderLayers, 1, layerCap, &twelve)) ||
        !(st = c.integer({"decoder_layers"}, a.layers, 1, layerCap, &twelve)) ||
        !(st = c.integer({"encoder_attention_heads"}, encoderHeads, 1, widthCap, &sixteen)) ||
        !(st = c.integer({"decoder_attention_heads"}, decoderHeads, 1, widthCap, &sixteen)) ||
        !(st = c.integer({"encoder_ffn_dim"}, encoderFfn, 1, 16 * widthCap, &ffn)) ||
        !(st = c.integer({"decoder_ffn_dim"}, decoderFfn, 1, 16 * widthCap, &ffn)) ||
        !(st = c.activation({"activation_function"}, a.activation, "gelu")) ||
        !(st = c.boolean("scale_embedding", scale, false)) ||
        !(st = c.boolean("tie_word_embeddings", a.tiedEmbeddings, true)) ||
        !(st = c.integer({"pad_token_id"}, a.seq2seq.padId, 0, vocabCap, &d.pad)) ||
        !(st = c.integer({"eos_token_id"}, a.seq2seq.eosId, 0, vocabCap, &d.eos)))
        return st;
    if (d.bos >= 0 && !(st = c.integer({"bos_token_id"}, a.seq2seq.bosId, 0, vocabCap, &d.bos)))
        return st;
    const int *start = d.decoderStart == DecoderStartIsPad ? &a.seq2seq.padId
                       : d.decoderStart >= 0               ? &d.decoderStart
                                                           : nullptr;
    if (!start && !c.has("decoder_start_token_id"))
        return c.bad("decoder_start_token_id", std::string("missing: ") + d.noStart);
    if (!(st = c.integer({"decoder_start_token_id"}, a.seq2seq.decoderStartId, 0, vocabCap, start)))
        return st;
    // one width for both stacks: every published checkpoint has it
    if (decoderHeads != encoderHeads)
        return c.bad("decoder_attention_heads",
                     std::to_string(decoderHeads) + " differs from encoder_attention_heads " +
                         std::to_string(encoderHeads) + ": attnviz reads stacks of one shape");
    if (decoderFfn != encoderFfn)
        return c.bad("decoder_ffn_dim", std::to_string(decoderFfn) + " differs from encoder_ffn_dim " +
                                            std::to_string(encoderFfn) + ": attnviz reads stacks of one shape");
    if (a.dModel % encoderHeads)
        return c.bad("encoder_attention_heads",
                     std::to_string(encoderHeads) + " does not divide d_model " + std::to_string(a.dModel));
    if (!a.tiedEmbeddings)
        return c.bad("tie_word_embeddings",
                     "false: an untied lm_head is not read yet (every published checkpoint ties it)");
    for (auto [field, id] : {std::pair{"decoder_start_token_id", a.seq2seq.decoderStartId},
                             {"eos_token_id", a.seq2seq.eosId},
                             {"pad_token_id", a.seq2seq.padId}})
        if (id >= a.vocabulary)
            return c.bad(field, std::to_string(id) + " is not below vocab_size " + std::to_string(a.vocabulary));
    a.encoderDecoder = true;
    a.seq2seq.encoderLayers = encoderLayers;
    a.heads = a.kvHeads = encoderHeads;
    a.dHead = a.dModel / encoderHeads;
    a.dFeedForward = encoderFfn;
    a.norm = NormKind::LayerNorm;
    a.normEps = 1e-5; // nn.LayerNorm's default: the config has no field for it
    a.placement = d.preNorm ? NormPlacement::Pre : NormPlacement::Post;
    a.finalNorm = d.preNorm;
    a.embeddingNorm = d.embeddingNorm;
    a.positions = d.sinusoidal ? PositionKind::Sinusoidal : PositionKind::Learned;
    a.seq2seq.positionOffset = d.sinusoidal ? 0 : 2;
    a.seq2seq.logitsBias = true;
    a.embeddingScale = scale ? std::sqrt(double(a.dModel)) : 1.0;
    a.attentionScale = 0.0; // head_dim^-0.5
    a.qkvBias = a.outBias = a.mlpBias = true;
    a.gatedMlp = false;
    a.causal = true;
    a.head = LmHead::CausalLm;
    a.outputScale = 1.0;
    a.window.assign(size_t(a.layers), 0);
    return {};
}

TensorNames bartNames(const Architecture &a)
{
    TensorNames n;
    n.prefixes = {"model.", ""};
    n.tokens = "shared.weight";
    n.tokensAlt = "encoder.embed_tokens.weight";
    n.logitsBias = "final_logits_bias";
    // learned tables (BART, mBART); Marian's sinusoids, which a file may hold too
    n.positions = "decoder.embed_positions.weight";
    n.encoderPositions = "encoder.embed_positions.weight";
    if (a.embeddingNorm) {
        n.embeddingNorm = "decoder.layernorm_embedding";
        n.encoderEmbeddingNorm = "encoder.layernorm_embedding";
    }
    n.layer = "decoder.layers.{L}.";
    n.encoderLayer = "encoder.layers.{L}.";
    n.attnNorm = "self_attn_layer_norm";
    n.q = "self_attn.q_proj";
    n.k = "self_attn.k_proj";
    n.v = "self_attn.v_proj";
    n.o = "self_attn.out_proj";
    n.crossNorm = "encoder_attn_layer_norm";
    n.crossQ = "encoder_attn.q_proj";
    n.crossK = "encoder_attn.k_proj";
    n.crossV = "encoder_attn.v_proj";
    n.crossO = "encoder_attn.out_proj";
    n.ffnNorm = n.encoderFfnNorm = "final_layer_norm";
    n.up = n.encoderUp = "fc1";
    n.down = n.encoderDown = "fc2";
    if (a.finalNorm) {
        n.finalNorm = "decoder.layer_norm";
        n.encoderFinalNorm = "encoder.layer_norm";
    }
    return n;
}

namespace {

Status readBart(const ConfigFields &c, Architecture &a)
{
    BartDefaults d;
    d.decoderStart = 2;
    return readBartLike(c, a, d);
}

Status readMBart(const ConfigFields &c, Architecture &a)
{
    BartDefaults d;
    d.preNorm = true;
    d.decoderStart = -1;
    d.noStart = "mBART starts the decoder with the target language's code (MBartConfig has no default)";
    return readBartLike(c, a, d);
}

} // namespace

const Family kBart{"bart", {"bart"}, readBart, bartNames};
const Family kMBart{"mbart", {"mbart"}, readMBart, bartNames};

} // namespace attnviz::families
