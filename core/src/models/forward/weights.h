// SPDX-License-Identifier: GPL-3.0-or-later
// The one canonical weight layout of every model family (private to the core) and the one forward
// pass over it (forward.cpp). Matrices in the nn.Linear convention (out, in); GPT-2's Conv1D
// tensors transposed and fused q|k|v or gate|up tensors split once on load. The attention
// projections sit behind a shared_ptr so that every trace's LayerTrace::projections points at them
// instead of copying. Which norms, biases and stages exist is the Architecture's business: an
// absent tensor is an empty matrix.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <memory>
#include <vector>

namespace attnviz {

namespace families {
struct TensorNames;
}

template <typename T>
struct LayerWeights {
    std::shared_ptr<const Projections<T>> attn; // q (H d_head, d), k, v (KV d_head, d), o (d, H d_head)
    LayerNorm<T> attnNorm;     // pre-norm: before attention; post-norm: after its residual add
    LayerNorm<T> ffnNorm;      // the same for the MLP
    LayerNorm<T> postAttnNorm; // sandwich (Gemma): on attention's output before the residual add
    LayerNorm<T> postFfnNorm;  // sandwich: on the MLP's output
    LayerNorm<T> qNorm, kNorm; // (d_head) over each head's q and k (Qwen3, Gemma 3)
    Linear<T> gate, up, down;  // gate empty: a plain MLP down(act(up x))
};

template <typename T>
struct ModelWeights {
    Mat<T> tokens;     // (vocabulary, d)
    Mat<T> positions;  // (maxPositions, d) learned positions; empty for rotary models
    Mat<T> tokenTypes; // (types, d) BERT; empty otherwise
    LayerNorm<T> embeddingNorm;
    std::vector<LayerWeights<T>> layers;
    LayerNorm<T> finalNorm;
    Mat<T> lmHead; // (vocabulary, d); empty = tied to `tokens`
    // Masked-LM head: transform (d, d) + activation + LayerNorm, then the decoder (lmHead or tied)
    bool hasMlmHead = false;
    Linear<T> mlmTransform;
    LayerNorm<T> mlmNorm;
    Vec<T> outputBias; // (vocabulary) or empty
    int64_t parameters = 0;
    const Mat<T> &outputEmbedding() const { return lmHead.size() ? lmHead : tokens; }
};

// Reads the tensors `names` gives for `arch` from `archive` (the first of names.prefixes under
// which the token embeddings exist; heads outside it). Messages name the file and the tensor.
template <typename T>
Status loadWeights(const TensorArchive &archive, const Architecture &arch, const families::TensorNames &names,
                   ModelWeights<T> &out);

// Seeded N(0, 0.02) weights of the architecture's shape (benchmarks), norms at their identity.
template <typename T>
void seedWeights(const Architecture &arch, uint64_t seed, ModelWeights<T> &out);

template <typename To, typename From>
std::shared_ptr<const ModelWeights<To>> castWeights(const ModelWeights<From> &w);

// What a forward pass needs besides the weights.
struct ForwardInput {
    std::vector<int> ids;
    std::vector<int> paddedKeys;
    std::vector<std::pair<int, int>> maskedCells;
    int topK = 10;
    bool keepScores = false;
    bool keepMlp = false; // a gated MLP's products before the gate's activation (LayerTrace::mlpPre ...)
    bool allPredictions = false; // causal: the LM head at every position (else the last only)
    int maskId = -1; // [MASK]: masked-LM predictions at these positions
    const std::atomic<bool> *cancel = nullptr;
};

// Causal models: out[k] = the next tokens after position positions[k] from the final hidden states
// (the LM head over those rows only, the vocabulary in chunks over the pool); `ids` the trace's
// tokens (the one after each position for actualNext). Token strings are left empty for the caller.
// Reads only its arguments: safe beside a trace() of the same weights on another thread.
template <typename T>
void predictNext(const Architecture &arch, const ModelWeights<T> &weights, const Mat<T> &final,
                 const std::vector<int> &ids, const std::vector<int> &positions, int topK, std::vector<NextTokens> &out);

// Runs the model on `in.ids` into `out`, keeping out's first `reuse` positions as they are (a causal
// model's unchanged prefix; 0 = everything computed) and copying positions [reuse, sourceReuse) from
// `source` (a trace of the same model, masks and stages sharing that longer prefix; null: none).
// Fills embeddings, input, layers, final and predictions; tokens, cut and producer are the caller's.
template <typename T>
Status runForward(const Architecture &arch, const std::shared_ptr<const ModelWeights<T>> &weights,
                  const ForwardInput &in, int reuse, Trace<T> &out, const Trace<T> *source = nullptr,
                  int sourceReuse = 0);

} // namespace attnviz
