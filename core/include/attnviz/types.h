// SPDX-License-Identifier: GPL-3.0-or-later
// Value types of the attnviz core: configuration in, every stage out.
// Plain C++17 + Eigen, no Qt. All matrices are row-major (a row is a token).
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnviz {

template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
using BoolMat = Eigen::Matrix<uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// How the factor multiplied onto q·k is chosen.
enum class ScaleRule {
    InvSqrtDHead,  // 1/sqrt(d_head)           (torch, Vaswani et al.)
    InvSqrtDModel, // 1/sqrt(d_model)          (seed 000's notebook)
    None,          // 1                        (seed 001's first example)
    Temperature,   // 1/(T * sqrt(d_head))
    Explicit,      // the number in AttentionConfig::explicitScale (case files)
};

// How a row of scores becomes a row of weights.
enum class Normalization {
    Softmax, // exp / sum exp, numerically stable (max subtracted)
    Sum,     // s / sum s over the unmasked keys (seed 001), no exponentials
    Cosine,  // weights are cos(q_i, k_j) themselves (seed 003), not normalized
};

// How masked keys are removed under softmax (seed 001 shows both).
enum class MaskMethod {
    NegInf,              // masked scores set to -inf before softmax
    MultiplyRenormalize, // softmax over all keys, zero the masked, divide by row sum
};

// What a query row gets when every one of its keys is masked.
enum class FullyMaskedPolicy {
    NaN,     // as torch 1.13 nn.MultiheadAttention: the weight row and its output row are NaN
    Zero,    // weights 0: context row 0, output row = b_o
    Uniform, // ignore the mask for that row: uniform weights over all keys
};

enum class MaskKind { None, Causal, KeyPadding, Custom, CausalKeyPadding };

// Which of torch's Bernoulli streams dropout reproduces after torch.manual_seed(dropoutSeed).
enum class DropoutStream {
    TorchMkl, // released PyTorch builds (MKL): the numbers the seed notebooks print
    TorchCpu, // builds without MKL (Debian's python3-torch): Mersenne Twister doubles
};

// A dense layer in the torch.nn.Linear convention: y = x W^T + b, W is (out, in).
// An empty W means identity (then `in` must equal `out`); an empty b means no bias.
template <typename T>
struct Linear {
    Mat<T> W;
    Vec<T> b;
    bool isIdentity() const { return W.size() == 0; }
    bool hasBias() const { return b.size() != 0; }
};

template <typename T>
struct Projections {
    Linear<T> q, k, v, o;
};

struct AttentionConfig {
    int numHeads = 1;
    int dHead = 0; // 0: d_model / numHeads (must divide). Free width otherwise.
    ScaleRule scaleRule = ScaleRule::InvSqrtDHead;
    double temperature = 1.0;   // ScaleRule::Temperature
    double explicitScale = 1.0; // ScaleRule::Explicit
    Normalization normalization = Normalization::Softmax;
    MaskMethod maskMethod = MaskMethod::NegInf;
    bool causal = false; // adds a top-left aligned causal mask (key j > query i masked)
    FullyMaskedPolicy fullyMasked = FullyMaskedPolicy::NaN;
    double dropout = 0.0;         // on the weights, inverted scaling 1/(1-p); 0 = off
    uint64_t dropoutSeed = 0;     // torch.manual_seed-compatible (see torchrng.h)
    DropoutStream dropoutStream = DropoutStream::TorchMkl;
    bool keepScores = true;       // keep the (B,H,t_q,t_k) scores; off saves t^2*h memory
    // GPU backends: the heads whose scores/weights are read back (e.g. the displayed ones when t is
    // large), -1 for weightsAvg; empty = everything. What is not listed is left empty (0 x 0).
    // The CPU core ignores it.
    std::vector<int> readbackHeads;
};

// One sequence of the batch. For self-attention key/value may be left empty
// (then they are the query). Rows are tokens.
template <typename T>
struct SequenceInput {
    Mat<T> query;
    Mat<T> key;   // empty: = query
    Mat<T> value; // empty: = key
    std::vector<uint8_t> keyPadding; // size t_k or empty; 1 = padded (masked out)
};

template <typename T>
struct AttentionInput {
    std::vector<SequenceInput<T>> batch;
    BoolMat attnMask; // (t_q, t_k) shared by batch and heads, 1 = masked; empty = none
    Projections<T> proj;
};

// Every stage of one sequence. Per-head matrices are stored head after head.
template <typename T>
struct SequenceResult {
    Mat<T> q, k, v;               // projected, (t_q, H*d_head), (t_k, H*d_head), (t_k, H*d_head): what the
                                  // scores and the context are computed from. Grouped-query attention:
                                  // k and v of a key/value head repeated for each query head it serves
    Mat<T> qPre, kPre;            // q and k as projected, before q/k norm and rotary positions
                                  // (TransformerLens' hook_q / hook_k beside hook_rot_q / hook_rot_k);
                                  // empty where q and k are used as projected
    std::vector<Mat<T>> scores;   // per head (t_q, t_k): scale * q_h k_h^T, BEFORE masking
    std::vector<Mat<T>> weights;  // per head (t_q, t_k): normalized (after dropout if any)
    std::vector<Mat<T>> weightsPreDropout; // only when dropout > 0
    Mat<T> weightsAvg;            // (t_q, t_k): mean over heads
    Mat<T> context;               // (t_q, H*d_head): heads concatenated
    Mat<T> output;                // (t_q, d_out): context W_o^T + b_o
    BoolMat mask;                 // (t_q, t_k) effective mask (attn OR causal OR padding); empty = none
    std::vector<int> fullyMaskedRows; // query rows whose every key is masked
    std::vector<int> degenerateRows;  // Sum normalization: row sum was 0 (weights NaN/Inf)
};

template <typename T>
struct AttentionResult {
    std::vector<SequenceResult<T>> batch;
    int numHeads = 0;
    int dHead = 0;
    int dModel = 0; // query input width
    int dOut = 0;
    double scale = 1.0; // the factor that was multiplied onto q·k
    int kvHeads = 0;    // key/value heads (grouped-query attention); 0: one per query head
    double softcap = 0; // scores soft-capped as tanh(s / c) * c before the mask (Gemma 2); 0: none
    int kvHeadOf(int head) const { return kvHeads > 0 && kvHeads < numHeads ? head / (numHeads / kvHeads) : head; }
};

// Shapes and options that were resolved from a config and an input.
struct ResolvedShape {
    int batch = 0, tq = 0, tk = 0;
    int dModel = 0, kdim = 0, vdim = 0;
    int numHeads = 0, dHead = 0, dInner = 0, dOut = 0;
    double scale = 1.0;
};

// Problems found before computing anything.
struct ValidationError {
    std::string field;   // e.g. "num_heads", "inputs.W_q"
    std::string message; // one line, names the field
};

} // namespace attnviz
