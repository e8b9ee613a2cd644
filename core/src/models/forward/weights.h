// SPDX-License-Identifier: GPL-3.0-or-later
// The one canonical weight layout of every model family (private to the core) and the one forward
// pass over it (forward.cpp). Matrices in the nn.Linear convention (out, in); GPT-2's Conv1D
// tensors transposed and fused q|k|v or gate|up tensors split once on load. Which norms, biases and
// stages exist is the Architecture's business: an absent tensor is an empty matrix. The weight
// matrices stay in 16 bits when the file stores BF16 or F16, or in ggml's blocks (Weight): a token
// appended reads every weight once, so half the bytes is half its floor. The attention projections,
// which the views also read (LayerTrace::projections), sit behind a shared_ptr that every trace
// shares: dense ones as they are, 16-bit ones (PackedProjections) widened a layer at a time when a
// view asks.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace attnviz {

namespace families {
struct TensorNames;
}

// A (rows, cols) row-major matrix of 16-bit floats as a file stores it (BF16 or F16).
struct HalfMatrix {
    enum class Kind : uint8_t { BF16, F16 };
    Kind kind = Kind::BF16;
    Eigen::Index rows = 0, cols = 0;
    std::vector<uint16_t> bits;
    bool empty() const { return bits.empty(); }
    // Rows [r0, r0 + n) widened into dst (n x cols, row-major, contiguous).
    template <typename T>
    void widen(Eigen::Index r0, Eigen::Index n, T *dst) const;
    // The same float rounded to this kind (seeded weights "as the Hub stores them").
    static uint16_t round(Kind kind, float v);
};

// A (rows, cols) matrix in one of ggml's block encodings as a GGUF file stores it (Q8_0, Q4_K ...,
// gguf.h): each row whole blocks, `rowBytes` long. Widened exactly as ggml's reference does.
struct QuantMatrix {
    uint32_t type = 0; // ggml type
    Eigen::Index rows = 0, cols = 0;
    size_t rowBytes = 0;
    std::vector<uint8_t> bytes;
    bool empty() const { return bytes.empty(); }
    // Rows [r0, r0 + n) widened into dst (n x cols, row-major, contiguous).
    template <typename T>
    void widen(Eigen::Index r0, Eigen::Index n, T *dst) const;
};

// A weight matrix read by the forward's products only: dense, or kept as the file stores it — in 16
// bits (half) or quantized (quant), dense then empty — and widened a block of rows at a time inside
// productTransposed.
template <typename T>
struct Weight {
    Mat<T> dense;
    HalfMatrix half;
    QuantMatrix quant;
    Weight() = default;
    Weight(Mat<T> m) : dense(std::move(m)) {} // NOLINT: a dense matrix is a weight
    bool packed() const { return !half.empty() || !quant.empty(); }
    Eigen::Index rows() const { return !quant.empty() ? quant.rows : half.empty() ? dense.rows() : half.rows; }
    Eigen::Index cols() const { return !quant.empty() ? quant.cols : half.empty() ? dense.cols() : half.cols; }
    // Rows [r0, r0 + n) of a packed weight widened into dst (n x cols, row-major).
    void widen(Eigen::Index r0, Eigen::Index n, T *dst) const
    {
        if (!quant.empty())
            quant.widen(r0, n, dst);
        else
            half.widen(r0, n, dst);
    }
    Eigen::Index size() const { return rows() * cols(); }
    // Row r widened (the embedding lookup, one logit).
    Vec<T> row(Eigen::Index r) const;
    // Rows [r0, r0 + n) as a dense copy (fused tensors split on load, float64 copies).
    Weight<T> middleRows(Eigen::Index r0, Eigen::Index n) const;
    Mat<T> toDense() const;
    bool operator==(const Weight<T> &o) const;
    bool operator!=(const Weight<T> &o) const { return !(*this == o); }
};

// y = x W^T + b with W a Weight.
template <typename T>
struct WeightLinear {
    Weight<T> W;
    Vec<T> b;
    WeightLinear() = default;
    WeightLinear(const Linear<T> &l) : W(l.W), b(l.b) {} // NOLINT: a dense layer is a weight layer
    bool hasBias() const { return b.size() != 0; }
};

// A layer's attention projections as the file stores them (16 bits or ggml blocks): the forward
// multiplies these; a view that asks gets them widened, one copy shared while anyone holds it.
template <typename T>
class PackedProjections final : public ProjectionProvider<T> {
public:
    WeightLinear<T> q, k, v, o;
    std::shared_ptr<const Projections<T>> projections() const override;

private:
    mutable std::mutex m_mutex;
    mutable std::weak_ptr<const Projections<T>> m_widened;
};

template <typename T>
struct LayerWeights {
    // q (H d_head, d), k, v (KV d_head, d), o (d, H d_head): in T (attn), or as the file stores them
    // (packed, when all four are 16-bit or quantized); the other null
    std::shared_ptr<const Projections<T>> attn;
    std::shared_ptr<const PackedProjections<T>> packed;
    ProjectionsRef<T> projections() const
    {
        if (packed)
            return ProjectionsRef<T>(std::static_pointer_cast<const ProjectionProvider<T>>(packed));
        return ProjectionsRef<T>(attn);
    }
    LayerNorm<T> attnNorm;     // pre-norm: before attention; post-norm: after its residual add
    LayerNorm<T> ffnNorm;      // the same for the MLP
    LayerNorm<T> postAttnNorm; // sandwich (Gemma): on attention's output before the residual add
    LayerNorm<T> postFfnNorm;  // sandwich: on the MLP's output
    LayerNorm<T> qNorm, kNorm; // (d_head) over each head's q and k (Qwen3, Gemma 3)
    WeightLinear<T> gate, up, down; // gate empty: a plain MLP down(act(up x))
};

template <typename T>
struct ModelWeights {
    Weight<T> tokens;  // (vocabulary, d)
    Mat<T> positions;  // (maxPositions, d) learned positions; empty for rotary models
    Mat<T> tokenTypes; // (types, d) BERT; empty otherwise
    LayerNorm<T> embeddingNorm;
    std::vector<LayerWeights<T>> layers;
    LayerNorm<T> finalNorm;
    Weight<T> lmHead; // (vocabulary, d); empty = tied to `tokens`
    // Masked-LM head: transform (d, d) + activation + LayerNorm, then the decoder (lmHead or tied)
    bool hasMlmHead = false;
    Linear<T> mlmTransform;
    LayerNorm<T> mlmNorm;
    Vec<T> outputBias; // (vocabulary) or empty
    int64_t parameters = 0;
    const Weight<T> &outputEmbedding() const { return lmHead.size() ? lmHead : tokens; }
};

// Reads the tensors `names` gives for `arch` from `archive` (the first of names.prefixes under
// which the token embeddings exist; heads outside it). Messages name the file and the tensor.
template <typename T>
Status loadWeights(const TensorArchive &archive, const Architecture &arch, const families::TensorNames &names,
                   ModelWeights<T> &out);

// Seeded N(0, 0.02) weights of the architecture's shape (benchmarks), norms at their identity;
// with `bf16`, the matrices a file would keep in 16 bits are rounded to BF16 and kept so; with a
// ggml type (`quant` >= 0: Q8_0, Q4_K), those matrices are quantized and kept so instead.
template <typename T>
void seedWeights(const Architecture &arch, uint64_t seed, ModelWeights<T> &out, bool bf16 = false, int quant = -1);

template <typename To, typename From>
std::shared_ptr<const ModelWeights<To>> castWeights(const ModelWeights<From> &w);

// The bytes the weights hold (dense matrices and vectors at sizeof(T), 16-bit ones at 2, quantized
// ones as stored).
template <typename T>
int64_t weightBytes(const ModelWeights<T> &w);

// What a forward pass needs besides the weights.
struct ForwardInput {
    std::vector<int> ids;
    std::vector<int> paddedKeys;
    std::vector<std::pair<int, int>> maskedCells;
    int topK = 10;
    bool keepScores = false;
    bool keepMlp = false; // a gated MLP's products before the gate's activation (LayerTrace::mlpPre ...)
    bool allPredictions = false; // causal: the LM head at every position (else the last only)
    bool lmHead = true;          // causal: false, the LM head at no position (TraceRequest::lmHead)
    int maskId = -1; // [MASK]: masked-LM predictions at these positions
    const std::atomic<bool> *cancel = nullptr;
    const std::function<void(int, int)> *progress = nullptr; // TraceRequest::progress; null: none
    const std::vector<Intervention> *edits = nullptr; // applied at their hooks (TraceRequest::edits);
                                                      // null or empty: none. Any edit needs reuse 0.
    bool keepHookOutputs = false; // LayerTrace::attnOut and mlpOut kept
    // edits over runForward's `source`, the same input's unedited trace (TraceRequest::unedited): the
    // layers before the first edited one copied whole, and rows [0, sourceReuse) of the others (aligned
    // down to the products' row blocks)
    bool overUnedited = false;
    Observe observe; // what the trace keeps: the CPU forward keeps these layers' weights and stages,
                     // and every layer's keys, values and mask (runForward)
    // The float forward over a window of rows of a long text (positionwindow.h): called as each layer
    // starts (`done` false: the caller puts rows [0, reuse) of the layer's k and v into `lt`, as the
    // trace being continued would hold them) and once the layer is computed (`done` true: rows
    // [reuse, t) of its streams, resid_pre and resid_mid included, and of its attention's q, k, v,
    // context and output are in `lt`; the caller copies them and may free the layer's q, k, v and
    // log-sum-exp, which nothing reads again). Null: none.
    const std::function<void(int layer, bool done, LayerTrace<float> &lt)> *rowsByLayer = nullptr;
};

// Causal models: out[k] = the next tokens after position positions[k] from the final hidden states
// (the LM head over those rows only, the vocabulary in chunks over the pool); `ids` the trace's
// tokens (the one after each position for actualNext). Token strings are left empty for the caller.
// Reads only its arguments: safe beside a trace() of the same weights on another thread.
template <typename T>
void predictNext(const Architecture &arch, const ModelWeights<T> &weights, const Mat<T> &final,
                 const std::vector<int> &ids, const std::vector<int> &positions, int topK, std::vector<NextTokens> &out);

// A text's mask from in.maskedCells and in.paddedKeys (out-of-range ones ignored), with causality:
// effectiveMask's; `userMask` says whether the user masked anything.
BoolMat textMask(const ForwardInput &in, bool causal, int t, bool &userMask);
// Layer `layer`'s mask as the forward uses and records it: the text's mask where the user masked
// something or the model is not causal (else empty: causality alone), and a sliding window narrower
// than the text (key j seen by query i when i - w < j <= i).
BoolMat layerMask(const Architecture &arch, const BoolMat &mask, bool userMask, int layer, int t);

// cos and sin of positions [p, t) for one rotary parameter set (row-major, dims / 2 a row), times the
// attention scaling Hugging Face's rotary embedding multiplies them by (the devices' rotary pass).
template <typename T>
void rotaryRows(const Rope &rope, int p, int t, std::vector<T> &cos, std::vector<T> &sin);

// Causal models: position i's next tokens from its row of V logits (x E^T + b, before the final
// soft-capping, which is applied here), as predictNext computes them: top-k, the softmax's log
// normalizer, the probability of ids[i + 1] where there is one.
void nextFromLogits(const Architecture &arch, const float *logits, int V, const std::vector<int> &ids, int i, int topK,
                    NextTokens &out);

// Masked-LM models: the top fills at each [MASK] of in.ids (in.maskId) from the final hidden states,
// appended to pr.masked.
template <typename T>
void maskedPredictions(const Architecture &arch, const ModelWeights<T> &w, const ForwardInput &in, const Mat<T> &final,
                       Predictions &pr);

// Runs the model on `in.ids` into `out`, keeping out's first `reuse` positions as they are (a causal
// model's unchanged prefix; 0 = everything computed) and copying positions [reuse, sourceReuse) from
// `source` (a trace of the same model, masks and stages sharing that longer prefix; null: none).
// Fills embeddings, input, layers, final and predictions; tokens, cut and producer are the caller's.
template <typename T>
Status runForward(const Architecture &arch, const std::shared_ptr<const ModelWeights<T>> &weights,
                  const ForwardInput &in, int reuse, Trace<T> &out, const Trace<T> *source = nullptr,
                  int sourceReuse = 0);

} // namespace attnviz
