// SPDX-License-Identifier: GPL-3.0-or-later
// BERT (bert-base-uncased ...): learned positions and token types, a LayerNorm on the embeddings,
// post-norm blocks, GELU (erf) MLP, bidirectional, the masked-LM head when the file has it.
//   [bert.]embeddings.{word,position,token_type}_embeddings, embeddings.LayerNorm,
//   encoder.layer.N.{attention.self.{query,key,value}, attention.output.{dense, LayerNorm},
//   intermediate.dense, output.{dense, LayerNorm}};
//   cls.predictions.{transform.dense, transform.LayerNorm, bias, decoder.weight (tied when absent)}
#include "family.h"

namespace attnviz::families {

namespace {

Status readBert(const ConfigFields &c, Architecture &a)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024, posCap = 1'000'000, types = 2;
    Status st;
    if (!(st = c.integer({"num_hidden_layers"}, a.layers, 1, layerCap)) ||
        !(st = c.integer({"num_attention_heads"}, a.heads, 1, widthCap)) ||
        !(st = c.integer({"hidden_size"}, a.dModel, 1, widthCap)) ||
        !(st = c.integer({"intermediate_size"}, a.dFeedForward, 1, 4 * widthCap)) ||
        !(st = c.integer({"max_position_embeddings"}, a.maxPositions, 1, posCap)) ||
        !(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap)) ||
        !(st = c.integer({"type_vocab_size"}, a.typeVocabulary, 0, 1024, &types)) ||
        !(st = c.number("layer_norm_eps", a.normEps, 1e-30, 0.5, 1e-12)) ||
        !(st = c.activation({"hidden_act"}, a.activation, "gelu")))
        return st;
    if (a.dModel % a.heads)
        return c.bad("num_attention_heads",
                     std::to_string(a.heads) + " does not divide hidden_size " + std::to_string(a.dModel));
    setBertBlocks(a);
    return {};
}

TensorNames bertNames(const Architecture &)
{
    TensorNames n;
    n.prefixes = {"", "bert."};
    n.tokens = "embeddings.word_embeddings.weight";
    n.positions = "embeddings.position_embeddings.weight";
    n.tokenTypes = "embeddings.token_type_embeddings.weight";
    n.embeddingNorm = "embeddings.LayerNorm";
    n.layer = "encoder.layer.{L}.";
    n.q = "attention.self.query";
    n.k = "attention.self.key";
    n.v = "attention.self.value";
    n.o = "attention.output.dense";
    n.attnNorm = "attention.output.LayerNorm";
    n.up = "intermediate.dense";
    n.down = "output.dense";
    n.ffnNorm = "output.LayerNorm";
    n.mlmTransform = "cls.predictions.transform.dense";
    n.mlmNorm = "cls.predictions.transform.LayerNorm";
    n.mlmDecoder = "cls.predictions.decoder.weight";
    n.mlmBias = "cls.predictions.bias";
    n.mlmBiasAlt = "cls.predictions.decoder.bias";
    return n;
}

} // namespace

void setBertBlocks(Architecture &a)
{
    a.kvHeads = a.heads;
    a.dHead = a.dModel / a.heads;
    a.norm = NormKind::LayerNorm;
    a.placement = NormPlacement::Post;
    a.embeddingNorm = true;
    a.finalNorm = false;
    a.positions = PositionKind::Learned;
    a.causal = false;
    a.tiedEmbeddings = true;
    a.head = LmHead::MaskedLm;
}

const Family kBert{"bert", {"bert"}, readBert, bertNames};

} // namespace attnviz::families
