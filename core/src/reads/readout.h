// SPDX-License-Identifier: GPL-3.0-or-later
// What reads.h's computations need of a real checkpoint (private to the core): its architecture,
// its weights (the final norm, the unembedding, the MLM head, the attention norms of a sandwich
// block) and its tokenizer's spellings. PretrainedModel::readout() hands one out; the helpers below
// are the pieces the lens, the attribution and generation share: the head from a residual row to
// the vocabulary and a scan of the vocabulary in chunks.
#pragma once

#include "../models/forward/weights.h"
#include "attnviz/reads.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace attnviz {

struct ReadoutWeights {
    Architecture arch;
    std::shared_ptr<const ModelWeights<float>> floatWeights;
    std::shared_ptr<const ModelWeights<double>> doubleWeights; // null until a float64 trace ran
    uint64_t producerFloat = 0, producerDouble = 0;
    std::string name;
    std::function<TokenProb(int id)> token;         // spelling and display
    std::function<int(std::string_view)> id;        // exact spelling -> id (-1: none)
    std::function<Status(std::string_view, std::vector<TraceToken> &)> tokenize;
    std::function<std::string(const std::vector<int> &)> decode;

    template <typename T>
    const ModelWeights<T> *weights() const
    {
        if constexpr (std::is_same_v<T, float>)
            return floatWeights.get();
        else
            return doubleWeights.get();
    }
    template <typename T>
    uint64_t producer() const
    {
        if constexpr (std::is_same_v<T, float>)
            return producerFloat;
        else
            return producerDouble;
    }
};

namespace reads {

// The readout of `model` for a trace it made, or a message: not a checkpoint, not its trace.
template <typename T>
Status readoutFor(const Model &model, const Trace<T> &trace, std::shared_ptr<const ReadoutWeights> &out);

// Rows of a residual stream as the head reads them: the final norm (if any), and for a masked LM
// its transform, activation and LayerNorm. (n, d) -> (n, d).
template <typename T>
Mat<T> headInput(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &residual);

// Per row of `h` (already through headInput): the top-k, the softmax's log normalizer, the
// entropy and, where target[i] >= 0, that token's rank and probability. Logits are h E^T + b,
// soft-capped where the model caps them; the vocabulary in chunks over the pool.
struct ScanRow {
    std::vector<std::pair<double, int>> top; // logit, id: best first
    double logNormalizer = 0, entropy = 0;
    double targetLogit = 0;
    int targetRank = 0; // 0: no target
};
template <typename T>
void scanLogits(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &h, const std::vector<int> &target,
                int topK, std::vector<ScanRow> &out);

// Every logit of one row (soft-capped as the model does), in double.
template <typename T>
void allLogits(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &h, std::vector<double> &out);

} // namespace reads
} // namespace attnviz
