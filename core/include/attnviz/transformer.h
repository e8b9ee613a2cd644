// SPDX-License-Identifier: GPL-3.0-or-later
// From one attention layer to a transformer (seed 002): token + position embeddings, blocks of
// multi-head self-attention + residual + LayerNorm + feed-forward (4·d, ReLU) + residual + LayerNorm,
// stacked to a depth, mean-pooled into an optional classifier. Every layer's stages are kept. The
// stack runs on the one forward pass of every model (core/src/models/forward/): its config and
// weights are an Architecture and the forward's weight layout.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/status.h"
#include "attnviz/types.h"

#include <map>
#include <string>
#include <vector>

namespace attnviz {

enum class PositionEncoding {
    None,
    Sinusoidal, // Vaswani et al.: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...)
    Learned,    // a (max_positions, d) table: seeded (nn.Embedding's N(0,1)-like) or loaded (GPT-2's wpe)
};

// NormPlacement and Activation are architecture.h's: the stack uses Post (seed 002 as written:
// x = LN1(attn(x) + x); x = LN2(ff(x) + x)) or Pre (GPT-2: x = x + attn(LN1(x)); x = x + ff(LN2(x)),
// a final LayerNorm after the stack), and ReLU (seed 002), GELU (erf) or GELU (tanh).

template <typename T>
struct LayerNorm {
    Vec<T> gamma, beta; // (d); empty = ones / zeros
    double eps = 1e-5;
};

template <typename T>
struct BlockWeights {
    Projections<T> attn; // q, k, v, o in the nn.Linear convention
    LayerNorm<T> ln1, ln2;
    Linear<T> ff1, ff2; // d -> ff, ff -> d
};

template <typename T>
struct StackWeights {
    std::vector<BlockWeights<T>> blocks;
    Mat<T> positions;   // learned position table (max_positions, d); empty unless PositionEncoding::Learned
    LayerNorm<T> lnFinal; // used when StackConfig::finalNorm
    Linear<T> classifier; // optional: (classes, d) on the mean-pooled output (seed 002's toprobs)
};

struct StackConfig {
    int depth = 1;
    AttentionConfig attention; // heads, scaling, mask ... shared by every layer
    NormPlacement norm = NormPlacement::Post;
    Activation activation = Activation::Relu;
    PositionEncoding positions = PositionEncoding::None;
    bool finalNorm = false;
    // Masks applied in every layer, as in AttentionInput (1 = masked); empty = none.
    std::vector<uint8_t> keyPadding; // (t)
    BoolMat attnMask;                // (t, t)
};

template <typename T>
struct LayerResult {
    AttentionResult<T> attention; // every stage of this layer's attention (batch of one)
    Mat<T> afterAttention;        // residual stream after the attention sub-block (t, d)
    Mat<T> output;                // residual stream after the block (t, d)
};

template <typename T>
struct StackResult {
    Mat<T> embeddings;  // token vectors as given (t, d)
    Mat<T> input;       // + position encoding: what layer 0 reads
    std::vector<LayerResult<T>> layers;
    Mat<T> final;       // after the last block (and the final LayerNorm if any)
    Vec<T> pooled;      // mean over tokens
    Vec<T> logProbs;    // log_softmax(classifier(pooled)) when a classifier is present
};

Mat<double> sinusoidalPositions(int t, int d);

template <typename T>
struct ModelWeights;

// The stack as the one forward reads it, kept between runs: the weights are laid out once per
// weights set, depth, head shape and position encoding (the feed-forward copied, the attention
// projections lent).
template <typename T>
class StackForward {
public:
    // Runs the stack on one sequence of token vectors (t, d) into `out`: embeddings (the tokens),
    // input, every layer's stages, final (no predictions). `tokens` may be out.embeddings; out's
    // projections point into `weights`. Validation names the layer and tensor.
    Status run(const StackConfig &config, const std::shared_ptr<const StackWeights<T>> &weights, const Mat<T> &tokens,
               Trace<T> &out);

private:
    Status layout(const StackConfig &config, int d);

    std::shared_ptr<const StackWeights<T>> m_source;
    int m_depth = 0, m_heads = 0, m_dHead = 0, m_d = 0;
    PositionEncoding m_positions = PositionEncoding::None;
    std::shared_ptr<ModelWeights<T>> m_weights;
};

// The same into a StackResult, with the mean-pooled classifier (tests, the reference of the views).
template <typename T>
Status computeStack(const StackConfig &config, const StackWeights<T> &weights, const Mat<T> &tokens,
                    StackResult<T> &result);

// Seeded weights in the order seed 002's TransformerBlock constructs them (torch.manual_seed(seed)
// compatible draws): per block key, query, value (d -> d, no bias), unify (d -> d, bias), then the
// feed-forward d -> 4d -> d with biases; LayerNorms ones/zeros; learned positions (if any) after.
template <typename T>
Status seededStackWeights(int d, int depth, uint64_t seed, PositionEncoding pos, int maxPositions,
                          StackWeights<T> &out);

// --- safetensors (own reader): 8-byte little-endian header length, JSON header, raw tensors ---
struct Tensor {
    std::string dtype; // F64, F32, F16, BF16
    std::vector<int64_t> shape;
    std::vector<double> values; // row-major
};

struct SafetensorsFile {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> metadata;
};

// Every size in the header is checked against the file with overflow-safe arithmetic; each
// dimension must fit an int. readSafetensors reads regular files of at most this many bytes.
constexpr uint64_t kMaxSafetensorsFileBytes = 8'000'000'000;
Status parseSafetensors(const std::string &bytes, const std::string &name, SafetensorsFile &out);
Status readSafetensors(const std::string &path, SafetensorsFile &out);

// Maps GPT-2 tensor names (transformer. prefix optional) onto a stack:
//   h.{i}.attn.c_attn.weight (d, 3d) / .bias (3d)   Conv1D: y = x W + b, columns q | k | v
//   h.{i}.attn.c_proj.weight (d, d)  / .bias
//   h.{i}.ln_1.weight / .bias, h.{i}.ln_2.weight / .bias
//   h.{i}.mlp.c_fc.weight (d, f) / .bias, h.{i}.mlp.c_proj.weight (f, d) / .bias
//   wpe.weight (positions, d) optional, ln_f.weight / .bias optional
// Depth is the number of consecutive h.{i} blocks. Nothing is changed in `out` on error; messages
// name the tensor ("h.1.attn.c_attn.weight: shape (8, 20), expected (8, 24)").
template <typename T>
Status stackWeightsFromGpt2(const SafetensorsFile &file, StackWeights<T> &out, int &depth);

} // namespace attnviz
