// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model folder (T5) as a Model (private to the core; openPretrained opens it
// when config.json's family is an encoder-decoder one), and a T5 GGUF file as the same Model.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/pretrained.h"
#include "attnviz/subword.h"
#include "attnviz/tensorarchive.h"
#include "families/family.h"

#include <functional>
#include <memory>
#include <string>

namespace attnviz {
template <typename T>
struct Seq2SeqWeights;
}

namespace attnviz::detail {

// What the decoder's lens and attribution (seq2seqreads.h) read of an encoder-decoder model: its
// architecture, its weights (float64 made on first request) and its tokens' spellings.
struct Seq2SeqReadout {
    Architecture arch;
    std::string name;
    std::shared_ptr<const Seq2SeqWeights<float>> floatWeights;
    std::shared_ptr<const Seq2SeqWeights<double>> doubleWeights;
    std::function<TokenProb(int id)> token; // spelling and display
};
// Unavailable for a model that is not an encoder-decoder one.
Status seq2seqReadout(const Model &model, bool float64, Seq2SeqReadout &out);

Status openEncoderDecoder(const std::string &dir, const Architecture &arch, const PretrainedLoadOptions &options,
                          std::unique_ptr<Model> &out);
// A GGUF file's encoder-decoder model (ggufmodel.h read its architecture, tensor names and
// tokenizer): the same weights, traces and generation as the folder it was converted from;
// generate()'s settings are transformers' defaults (a GGUF file holds no generation_config.json).
Status openEncoderDecoderGguf(const std::string &path, const Architecture &arch, TensorArchive &archive,
                              const families::TensorNames &names, std::unique_ptr<SubwordTokenizer> tokenizer,
                              const std::string &dtype, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out);

// A GGUF file's T5 encoder alone (llama.cpp's t5encoder: the t5 file's enc.* tensors, token_embd,
// no decoder, no LM head) as an encoder-only model (ModelInfo family "t5encoder", its layers the
// encoder's blocks, nothing predicted); `arch` is the t5 shape its keys describe.
Status openT5EncoderGguf(const std::string &path, const Architecture &arch, TensorArchive &archive,
                         const families::TensorNames &names, std::unique_ptr<SubwordTokenizer> tokenizer,
                         const std::string &dtype, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out);

// The architecture with seeded random weights (seedSeq2SeqWeights), no tokenizer, transformers'
// default generation settings (seededPretrained).
Status seededEncoderDecoder(const Architecture &arch, uint64_t seed, std::unique_ptr<Model> &out);

} // namespace attnviz::detail
