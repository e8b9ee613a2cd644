// SPDX-License-Identifier: GPL-3.0-or-later
// DistilBERT: BERT's arithmetic (post-norm, GELU, masked-LM head) under other config fields and
// tensor names, no token types, LayerNorm eps 1e-12 built into the model (not in config.json).
//   [distilbert.]embeddings.{word,position}_embeddings, embeddings.LayerNorm,
//   transformer.layer.N.{attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1, ffn.lin2,
//   output_layer_norm}; vocab_transform, vocab_layer_norm, vocab_projector
#include "family.h"

namespace attnviz::families {

namespace {

Status readDistilBert(const ConfigFields &c, Architecture &a)
{
    const int vocabCap = 10'000'000, widthCap = 65536, layerCap = 1024, posCap = 1'000'000;
    Status st;
    if (!(st = c.integer({"n_layers"}, a.layers, 1, layerCap)) || !(st = c.integer({"n_heads"}, a.heads, 1, widthCap)) ||
        !(st = c.integer({"dim"}, a.dModel, 1, widthCap)) || !(st = c.integer({"hidden_dim"}, a.dFeedForward, 1, 4 * widthCap)) ||
        !(st = c.integer({"max_position_embeddings"}, a.maxPositions, 1, posCap)) ||
        !(st = c.integer({"vocab_size"}, a.vocabulary, 1, vocabCap)) || !(st = c.activation({"activation"}, a.activation, "gelu")))
        return st;
    if (a.dModel % a.heads)
        return c.bad("n_heads", std::to_string(a.heads) + " does not divide dim " + std::to_string(a.dModel));
    a.normEps = 1e-12;
    setBertBlocks(a);
    return {};
}

TensorNames distilBertNames(const Architecture &)
{
    TensorNames n;
    n.prefixes = {"", "distilbert."};
    n.tokens = "embeddings.word_embeddings.weight";
    n.positions = "embeddings.position_embeddings.weight";
    n.embeddingNorm = "embeddings.LayerNorm";
    n.layer = "transformer.layer.{L}.";
    n.q = "attention.q_lin";
    n.k = "attention.k_lin";
    n.v = "attention.v_lin";
    n.o = "attention.out_lin";
    n.attnNorm = "sa_layer_norm";
    n.up = "ffn.lin1";
    n.down = "ffn.lin2";
    n.ffnNorm = "output_layer_norm";
    n.mlmTransform = "vocab_transform";
    n.mlmNorm = "vocab_layer_norm";
    n.mlmDecoder = "vocab_projector.weight";
    n.mlmBias = "vocab_projector.bias";
    return n;
}

} // namespace

const Family kDistilBert{"distilbert", {"distilbert"}, readDistilBert, distilBertNames};

} // namespace attnviz::families
