// SPDX-License-Identifier: GPL-3.0-or-later
// Marian (Helsinki-NLP/opus-mt-*), an encoder-decoder translation model, as Hugging Face's
// configuration_marian.py and modeling_marian.py define it: BART's post-LN blocks (bart.cpp) without
// layernorm_embedding, token embeddings times sqrt(d_model) when scale_embedding (false by default,
// true in every converted opus-mt file), sinusoidal positions counted from 0 in each stack
// (MarianSinusoidalPositionalEmbedding: sines in the first half of a row, cosines in the second;
// computed, not stored — MarianMTModel neither saves nor needs embed_positions; a file that has them
// must hold that table), the LM head tied to `shared`, plus final_logits_bias. The decoder starts
// with decoder_start_token_id (MarianConfig's default 58100, the pad id of its defaults); pad
// 58100, eos 0, vocab_size 58101. share_encoder_decoder_embeddings false (separate source and
// target vocabularies) is not read yet.
#include "family.h"

namespace attnviz::families {

namespace {

Status readMarian(const ConfigFields &c, Architecture &a)
{
    bool shared = true;
    if (Status st = c.boolean("share_encoder_decoder_embeddings", shared, true); !st)
        return st;
    if (!shared)
        return c.bad("share_encoder_decoder_embeddings",
                     "false: separate source and target vocabularies are not read yet");
    BartDefaults d;
    d.vocab = 58101;
    d.pad = 58100;
    d.eos = 0;
    d.bos = -1;
    d.decoderStart = 58100;
    d.embeddingNorm = false;
    d.sinusoidal = true;
    return readBartLike(c, a, d);
}

} // namespace

const Family kMarian{"marian", {"marian"}, readMarian, bartNames};

} // namespace attnviz::families
