// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF file as a model (private to the core): its general.architecture and {arch}.* keys mapped
// onto the same Architecture a config.json gives (through the family registry), its tensor names
// onto the canonical weights, its tokenizer.ggml.* metadata onto a tokenizer. The conversion traps
// of llama.cpp's convert_hf_to_gguf.py are undone here: `llama` files store q/k rows in interleaved
// rotary order, Llama 3's RoPE scaling is a rope_freqs tensor, Gemma's norm weights already hold
// the + 1, and Gemma 3's sliding pattern and local base are not in the file (llama.cpp hard-codes
// them; so does attnviz).
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/gguf.h"
#include "attnviz/subword.h"
#include "attnviz/tensorarchive.h"
#include "families/family.h"

#include <memory>
#include <string>

namespace attnviz::detail {

struct GgufModelParts {
    TensorArchive archive; // tensors under their GGUF names; q/k of llama files marked for un-permuting
    GgufFile file;         // header and metadata
    Architecture arch;
    families::TensorNames names;
    std::string quantization; // "Q4_K_M", or the most common type
};

// Maps and reads `path`: every message names the file and the key or tensor.
Status openGgufParts(const std::string &path, GgufModelParts &out);

// The tokenizer of tokenizer.ggml.*: `gpt2` (byte-level BPE with merges and the pre-tokenizer that
// tokenizer.ggml.pre names) or `llama` (SentencePiece-style: scores, byte tokens, add_space_prefix).
Status ggufTokenizer(const GgufFile &f, std::unique_ptr<SubwordTokenizer> &out);
// What ggufTokenizer refuses that the keys alone show, without the arrays' contents (their types
// and counts, the ids, the flags, the pre-tokenizer's name): "metadata \"KEY\": why", "" when none.
// A list of models, which skips the arrays, says it as the reason a file cannot be opened.
std::string ggufTokenizerKeysProblem(const GgufFile &f);

// "Q4_K_M; attention Q8_0 (q, k, v, o), MLP Q4_K / Q6_K, embeddings Q6_K, norms F32": the ggml types
// of each kind of tensor.
std::string ggufQuantizationByKind(const GgufFile &f);

} // namespace attnviz::detail
