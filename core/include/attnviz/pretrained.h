// SPDX-License-Identifier: GPL-3.0-or-later
// Real checkpoints: a Hugging Face model folder (config.json, model.safetensors or shards, tokenizer
// files) opened as a Model. Families come from config.json's model_type, never from a checkpoint's
// name: gpt2 (GPT-2 and its sizes, distilgpt2: pre-norm, causal, tied LM head), bert (post-norm,
// bidirectional, masked-LM head) and distilbert (BERT's arithmetic under other tensor names).
// Weights are read once and shared by every trace; float32 traces and the float64 reference path.
#pragma once

#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"

#include <memory>
#include <string>

namespace attnviz {

enum class ModelFamily { Gpt2, Bert, DistilBert };
enum class HiddenActivation { GeluTanh, GeluErf, Relu };

// What config.json says (the fields each family names differently, under one spelling).
struct PretrainedConfig {
    ModelFamily family = ModelFamily::Gpt2;
    std::string modelType;   // as in config.json
    int layers = 0, heads = 0, dModel = 0, dFeedForward = 0;
    int vocabulary = 0, maxPositions = 0;
    int typeVocabulary = 0;  // BERT's token types (2); 0 for the others
    double layerNormEps = 1e-5;
    HiddenActivation activation = HiddenActivation::GeluTanh;
    bool causal() const { return family == ModelFamily::Gpt2; }
};

const char *familyName(ModelFamily family); // "gpt2", "bert", "distilbert"

// Reads DIR/config.json. Errors name the file and the field ("DIR/config.json: n_head: missing").
Status readPretrainedConfig(const std::string &dir, PretrainedConfig &out);

struct PretrainedLoadOptions {
    LoadProgress progress; // bytes converted, bytes in all; return false to cancel (Status Cancelled)
};

// Opens a model folder: config, tokenizer (vocab.json + merges.txt, or vocab.txt +
// tokenizer_config.json's do_lower_case) and weights. Every problem is one message naming the file
// and the tensor or field; `out` is untouched on error.
Status openPretrained(const std::string &dir, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out);

// The same architectures with seeded random weights and no tokenizer (benchmarks, no download):
// trace() takes TraceRequest::ids.
Status seededPretrained(const PretrainedConfig &config, uint64_t seed, std::unique_ptr<Model> &out);
PretrainedConfig gpt2SmallShape(); // 12 layers x 12 heads x 768, vocabulary 50,257, 1,024 positions
PretrainedConfig bertBaseShape();  // 12 x 12 x 768, vocabulary 30,522, 512 positions

} // namespace attnviz
