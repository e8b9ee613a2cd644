// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model folder (T5) as a Model (private to the core; openPretrained opens it
// when config.json's family is an encoder-decoder one).
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/pretrained.h"

#include <memory>
#include <string>

namespace attnviz::detail {

Status openEncoderDecoder(const std::string &dir, const Architecture &arch, const PretrainedLoadOptions &options,
                          std::unique_ptr<Model> &out);

// The architecture with seeded random weights (seedSeq2SeqWeights), no tokenizer, transformers'
// default generation settings (seededPretrained).
Status seededEncoderDecoder(const Architecture &arch, uint64_t seed, std::unique_ptr<Model> &out);

} // namespace attnviz::detail
