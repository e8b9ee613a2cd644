// SPDX-License-Identifier: GPL-3.0-or-later
// Real checkpoints: a Hugging Face model folder (config.json, model.safetensors or shards, tokenizer
// files) opened as a Model. Its config.json is read as an Architecture (architecture.h) through the
// family registry — gpt2, bert, distilbert, llama, mistral, qwen2, qwen3, gemma2, gemma3(_text),
// phi3 — from model_type, never from a checkpoint's name; its tensors are read into one canonical
// layout and every family runs the same forward pass. The tokenizer is tokenizer.json where the
// folder has one (Hugging Face's format, read generically), else GPT-2's vocab.json + merges.txt or
// BERT's vocab.txt. Weights are read once and shared by every trace; float32 traces and the float64
// reference path.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"

#include <memory>
#include <string>

namespace attnviz {

struct PretrainedLoadOptions {
    LoadProgress progress; // bytes converted, bytes in all; return false to cancel (Status Cancelled)
};

// Opens a model folder: config, tokenizer and weights. Every problem is one message naming the
// file and the tensor or field; `out` is untouched on error.
Status openPretrained(const std::string &dir, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out);

// The same architectures with seeded random weights and no tokenizer (benchmarks, no download):
// trace() takes TraceRequest::ids. See seededShape (architecture.h) for real checkpoints' shapes.
// dtype "BF16": the matrices a BF16 file's weights keep in 16 bits are rounded and kept so (the
// memory and speed of the published checkpoint); "F32": float32 throughout.
Status seededPretrained(const Architecture &architecture, uint64_t seed, std::unique_ptr<Model> &out,
                        const std::string &dtype = "F32");

} // namespace attnviz
