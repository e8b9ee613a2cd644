// SPDX-License-Identifier: GPL-3.0-or-later
// Encoder-decoder models (T5, BART, mBART, Marian) beyond one trace: greedy decoding through
// Model::trace alone, and generation as Hugging Face's generate() does it for these models (greedy
// or beam search, the folder's generation settings) with each generated step's cross-attention. A
// trace of such a model holds its three attentions (Trace::seq2seq, AttentionKind in model.h).
#pragma once

#include "attnviz/model.h"

#include <limits>

#include <string>
#include <vector>

namespace attnviz {

// Greedy decoding of `source` (its text or ids, as TraceRequest reads them): the decoder's start
// token, then each step's most probable next token (the lower id on a tie) appended, up to `maxNew`
// tokens or the end token (kept), each step a float64 trace of the whole target so far. `target`
// gets the generated ids without the start token.
Status greedyTarget(Model &model, const TraceRequest &source, int maxNew, std::vector<int> &target);

// What generate() reads from the folder: generation_config.json's fields, else config.json's, else
// transformers' defaults (GenerationConfig). maxLength counts the decoder's start token.
struct Seq2SeqGenerationSettings {
    int numBeams = 1;
    double lengthPenalty = 1.0;
    int earlyStopping = 0; // 0: false, 1: true, 2: "never"
    int maxLength = 20;
    int minLength = 0;
    int noRepeatNgramSize = 0;
    int forcedBosId = -1; // -1: none
    int forcedEosId = -1;
    std::vector<std::vector<int>> badWordsIds;
};

struct Seq2SeqGenerateOptions {
    int beams = 0;                   // 1 (greedy) to 4; 0: the folder's num_beams (1 to 4)
    int maxNew = -1;                 // tokens to generate at most; -1: the folder's max_length - 1
    double lengthPenalty = std::numeric_limits<double>::quiet_NaN(); // NaN: the folder's
    int earlyStopping = -1;          // -1: the folder's; else as Seq2SeqGenerationSettings
    int noRepeatNgramSize = -1;      // -1: the folder's
    bool float64 = false;            // the float64 forward (else float32's)
};

struct Seq2SeqGeneration {
    Seq2SeqGenerationSettings settings; // what was used (numBeams and maxLength after the options)
    std::vector<TraceToken> source;     // what the encoder read
    std::vector<int> ids;               // the kept beam's generated ids: no start token, the end token kept
    std::vector<TraceToken> tokens;     // their tokens (pieces where the folder has a tokenizer, else ids)
    std::string text;                   // the ids before the end token, decoded ("" without a tokenizer)
    double logProb = 0;                 // the sum of its steps' (processed) log-probabilities
    double score = 0;                   // beam search's score: logProb / generated length ^ length_penalty
    // Per generated id: the cross-attention row of the decoder position that predicted it,
    // (layers × heads, source) layer-major, the kept beam's own history.
    std::vector<Mat<double>> cross;
};

// The folder's generation settings (config.json and generation_config.json, as read when it opened);
// an error for a model that is not an encoder-decoder one.
Status generationSettings(const Model &model, Seq2SeqGenerationSettings &out);

// The languages an mBART folder reads and writes (MBartTokenizer's src_lang and tgt_lang): the codes
// its tokenizer knows (none for another model, or an mBART folder without sentencepiece.bpe.model)
// and the ones chosen. The source's code goes around the text the encoder reads; the target's
// starts the decoder (mBART-cc25: decoder start = the code) or is its first token (mBART-50: the
// folder's start, </s>, then the code, forced in generation as forced_bos_token_id).
struct Seq2SeqLanguages {
    std::vector<std::string> codes; // in id order
    std::string source, target;     // en_XX unless the folder's start or forced token names one
};
Status seq2seqLanguages(const Model &model, Seq2SeqLanguages &out);
// Chooses them (thread-safe: a trace or generation running keeps the ones it began with); an error
// naming the codes for one the folder does not know, or for a model without language codes.
Status setSeq2SeqLanguages(Model &model, const std::string &source, const std::string &target);

// generate() of transformers for one source (its text or ids, as TraceRequest reads them). One beam:
// greedy search (the most probable processed token, the lower id on a tie); 2 to 4: beam search as
// BeamSearchScorer does it (2 × beams candidates a step over every beam's log-probs plus its score;
// an end token among the best `beams` closes a hypothesis scored sum / length^length_penalty, the
// length counting the generated tokens with the end token; early_stopping true, false or "never";
// the open beams added at max_length; the best hypothesis kept). Both apply the logits processors
// the settings name: no_repeat_ngram_size, bad_words_ids, min_length, forced_bos_token_id,
// forced_eos_token_id. The encoder and each decoder layer's cross-attention keys and values run once;
// each step runs the decoder at its one new position over the keys and values kept from the steps
// before (each beam its own, copied as beams are chosen): the same numbers as a re-run of the whole
// target.
Status generateTarget(Model &model, const TraceRequest &source, const Seq2SeqGenerateOptions &options,
                      Seq2SeqGeneration &out);

} // namespace attnviz
