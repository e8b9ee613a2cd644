// SPDX-License-Identifier: GPL-3.0-or-later
// What a model family is to attnviz (private to the core): how its config.json maps onto an
// Architecture (a function over ConfigFields) and how its tensor names map onto the one canonical
// weight layout (TensorNames, plain data). Every family is one file in this folder and one row of
// the registry (registry.cpp); the forward pass and the views never see a family's name.
#pragma once

#include "attnviz/architecture.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace attnviz::families {

// config.json's fields read with bounds; every error names the file and the field.
class ConfigFields {
public:
    ConfigFields(const nlohmann::json &j, std::string file) : m_j(j), m_file(std::move(file)) {}

    bool has(const char *name) const { return m_j.contains(name) && !m_j[name].is_null(); }
    const nlohmann::json &json() const { return m_j; }
    const std::string &file() const { return m_file; }
    Status bad(const std::string &field, const std::string &message) const;

    // The first of `names` present, an integer in [lo, hi]; absent: `fallback`, or an error if null.
    Status integer(std::initializer_list<const char *> names, int &v, int lo, int hi, const int *fallback = nullptr) const;
    Status integer(const char *name, int &v, int lo, int hi, int fallback) const { return integer({name}, v, lo, hi, &fallback); }
    // A number in [lo, hi] (finite); absent: fallback.
    Status number(const char *name, double &v, double lo, double hi, double fallback) const;
    // A positive number, or null / absent for "none" (0).
    Status optionalPositive(const char *name, double &v) const;
    Status boolean(const char *name, bool &v, bool fallback) const;
    Status activation(std::initializer_list<const char *> names, Activation &v, const char *fallback) const;

    // Rotary parameters, in either spelling: rope_theta + rope_scaling (older files) or
    // rope_parameters (newer ones; per layer type for Gemma 3: `layerType` picks the entry).
    // `dims` is the rotated width of a head; `defaultTheta` the family's.
    Status rope(Rope &r, int dims, double defaultTheta, int maxPositions, const char *layerType = nullptr) const;

    // layer_types (newer files): per layer "sliding_attention" / "full_attention"; false if absent.
    Status layerTypes(int layers, std::vector<bool> &sliding, bool &present) const;
    // a.window per layer: sliding_window (absent or null: `fallback`, 0 = none) on the layers that
    // layer_types calls sliding, else on every layer but each `pattern`-th (layer l is global when
    // (l + 1) % pattern == 0; pattern 0: every layer slides).
    Status slidingWindows(Architecture &a, int fallback, int pattern) const;

private:
    const nlohmann::json &m_j;
    std::string m_file;
};

// Tensor names of one family, relative to a prefix. Module names get ".weight" / ".bias" appended
// (LayerNorms also ".gamma" / ".beta", older BERT files). Empty: the family has no such tensor.
// "{L}" in `layer` stands for the layer index.
struct TensorNames {
    std::vector<std::string> prefixes; // tried in order: the first under which `tokens` exists
    std::string tokens, positions, tokenTypes; // full tensor names (with .weight)
    std::string embeddingNorm, finalNorm;      // modules
    std::string lmHead;                        // a full tensor name, looked up with and without the prefix
    std::string layer;                         // "layers.{L}."
    std::string attnNorm, q, k, v, qkv, o, qNorm, kNorm, postAttnNorm, ffnNorm, postFfnNorm;
    std::string up, gate, gateUp, down;        // gateUp: gate and up fused (gate first, as Phi-3)
    bool conv1d = false;                       // GPT-2: matrices stored (in, out), q|k|v fused in qkv
    // BERT's masked-LM head (optional in the file: absent = a bare encoder).
    std::string mlmTransform, mlmNorm, mlmDecoder, mlmBias, mlmBiasAlt;
    // Encoder-decoder families: `layer` and its sub-names are the decoder's blocks; the encoder's
    // blocks sit under `encoderLayer` with the same attention names and their own MLP names; the
    // decoder's cross-attention; the relative position bias (a full name under a block, the
    // (buckets, heads) table that block 0 of each stack holds); the encoder's final norm.
    // `tokensAlt`: where the token embeddings sit when `tokens` is absent. `positions` and
    // `embeddingNorm` are the decoder's, `encoderPositions` and `encoderEmbeddingNorm` the encoder's;
    // `logitsBias` a full name looked up without the prefix (BART's final_logits_bias), optional.
    // Names are read under the first of `prefixes` under which `tokens` or `tokensAlt` exists.
    std::string tokensAlt;
    std::string encoderPositions, encoderEmbeddingNorm, logitsBias;
    std::string encoderLayer, encoderFfnNorm, encoderUp, encoderGate, encoderDown, encoderFinalNorm;
    std::string crossNorm, crossQ, crossK, crossV, crossO;
    std::string relativeBias;
};

struct Family {
    const char *name;                          // "llama"
    std::vector<std::string> modelTypes;       // config.json model_type values it reads
    Status (*readConfig)(const ConfigFields &, Architecture &);
    TensorNames (*names)(const Architecture &);
};

// The registry (registry.cpp): every family attnviz reads.
const std::vector<Family> &registry();
const Family *familyFor(const std::string &modelType);
const Family *familyNamed(const std::string &name);

// Shared by the Llama-like families (llamalike.cpp): the fields Llama's config.json names, read
// with the given defaults, and Llama's tensor names.
struct LlamaDefaults {
    bool tied = false;
    double theta = 10000.0;
    double eps = 1e-6;
    int maxPositions = 2048;
    const char *activation = "silu";
    bool qkvBias = false, outBias = false, mlpBias = false;
    int headDim = 0; // 0: hidden_size / num_attention_heads
};
Status readLlamaLike(const ConfigFields &c, Architecture &a, const LlamaDefaults &d);
TensorNames llamaNames(const Architecture &a);
// Sliding windows of Qwen2/3-style configs: use_sliding_window + max_window_layers, or layer_types.
Status readQwenWindows(const ConfigFields &c, Architecture &a);

// BERT's arithmetic, shared with DistilBERT: one head per key/value, LayerNorm after each sub-block
// and on the embeddings, learned positions, bidirectional, the masked-LM head.
void setBertBlocks(Architecture &a);

// Shared by BART, mBART (bart.cpp) and Marian (marian.cpp): their configuration classes' fields,
// read with the given defaults, and their tensor names.
constexpr int DecoderStartIsPad = -2;
struct BartDefaults {
    int vocab = 50265, dModel = 1024, maxPositions = 1024, pad = 1, eos = 2;
    int bos = 0;          // -1: the tokenizer puts nothing before a source
    int decoderStart = 2; // -1: no default (the file must name it); DecoderStartIsPad: the pad id
    const char *noStart = "";
    bool preNorm = false, embeddingNorm = true, sinusoidal = false;
};
Status readBartLike(const ConfigFields &c, Architecture &a, const BartDefaults &d);
TensorNames bartNames(const Architecture &a);

// Each family's entry (one per file).
extern const Family kGpt2, kBert, kDistilBert, kLlama, kMistral, kQwen2, kQwen3, kGemma2, kGemma3, kPhi3, kT5, kBart,
    kMBart, kMarian;

} // namespace attnviz::families
