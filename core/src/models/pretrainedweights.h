// SPDX-License-Identifier: GPL-3.0-or-later
// The weights of a real checkpoint in one layout for every family (private to the core): matrices
// in the nn.Linear convention (out, in), GPT-2's Conv1D tensors transposed once on load; the
// attention projections behind a shared_ptr so that every trace's LayerTrace::projections points
// at them instead of copying. Also the forward pass over them (pretrainedforward.cpp).
#pragma once

#include "attnviz/model.h"
#include "attnviz/pretrained.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <memory>
#include <vector>

namespace attnviz {

template <typename T>
struct PretrainedBlock {
    std::shared_ptr<const Projections<T>> attn; // q, k, v (d, d), o (d, d)
    LayerNorm<T> ln1, ln2; // GPT-2: before attention / MLP. BERT: after attention / MLP.
    Linear<T> ff1, ff2;    // (f, d), (d, f)
};

template <typename T>
struct PretrainedWeights {
    Mat<T> tokens;         // (vocabulary, d)
    Mat<T> positions;      // (maxPositions, d)
    Mat<T> tokenTypes;     // (types, d) BERT; empty otherwise
    LayerNorm<T> embeddingNorm; // BERT, DistilBERT
    bool hasEmbeddingNorm = false;
    std::vector<PretrainedBlock<T>> blocks;
    LayerNorm<T> finalNorm; // GPT-2's ln_f
    bool hasFinalNorm = false;
    // Masked-LM head: transform (d, d) + activation + LayerNorm, then the decoder (tied: tokens).
    bool hasMlmHead = false;
    Linear<T> mlmTransform;
    LayerNorm<T> mlmNorm;
    Mat<T> decoder;        // (vocabulary, d); empty = tied to `tokens`
    Vec<T> decoderBias;    // (vocabulary) or empty
    int64_t parameters = 0;
    const Mat<T> &outputEmbedding() const { return decoder.size() ? decoder : tokens; }
};

// Reads the tensors of `config.family` from `archive` (prefixes transformer./bert./distilbert.
// optional, LayerNorm weight/bias or gamma/beta). Messages name the file and the tensor.
template <typename T>
Status loadPretrainedWeights(const TensorArchive &archive, const PretrainedConfig &config, PretrainedWeights<T> &out);

// Seeded N(0, 0.02) weights of the family's shape (benchmarks), LayerNorms ones/zeros.
template <typename T>
void seedPretrainedWeights(const PretrainedConfig &config, uint64_t seed, PretrainedWeights<T> &out);

template <typename To, typename From>
std::shared_ptr<const PretrainedWeights<To>> castWeights(const PretrainedWeights<From> &w);

// What a forward pass needs besides the weights.
struct ForwardInput {
    std::vector<int> ids;
    std::vector<int> paddedKeys;
    std::vector<std::pair<int, int>> maskedCells;
    int topK = 10;
    bool keepScores = false;
    bool allPredictions = false; // causal: the LM head at every position (else the last only)
    int maskId = -1; // [MASK]: masked-LM predictions at these positions
    const std::atomic<bool> *cancel = nullptr;
};

// Causal models: out[k] = the next tokens after position positions[k] from the final hidden states
// (the LM head over those rows only, the vocabulary in chunks over the pool); `ids` the trace's
// tokens (the one after each position for actualNext). Token strings are left empty for the caller.
// Reads only its arguments: safe beside a trace() of the same weights on another thread.
template <typename T>
void predictNext(const PretrainedWeights<T> &weights, const Mat<T> &final, const std::vector<int> &ids,
                 const std::vector<int> &positions, int topK, std::vector<NextTokens> &out);

// Runs the model on `in.ids` into `out`, keeping out's first `reuse` positions as they are (a causal
// model's unchanged prefix; 0 = everything computed) and copying positions [reuse, sourceReuse) from
// `source` (a trace of the same model, masks and stages sharing that longer prefix; null: none).
// Fills embeddings, input, layers, final and predictions; tokens, cut and producer are the caller's.
template <typename T>
Status runPretrained(const PretrainedConfig &config, const std::shared_ptr<const PretrainedWeights<T>> &weights,
                     const ForwardInput &in, int reuse, Trace<T> &out, const Trace<T> *source = nullptr,
                     int sourceReuse = 0);

} // namespace attnviz
