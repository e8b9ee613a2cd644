// SPDX-License-Identifier: GPL-3.0-or-later
// The seed notebooks' models behind the Model seam (model.h), on a word-vector table:
//   WordVectorModel  one attention layer (table + identity, random or loaded projections), self- or
//                    cross-attention: a one-layer trace;
//   WordStackModel   the transformer stack of seed 002 (seeded or loaded weights) on the same token
//                    vectors: a trace with every layer.
// Both tokenize with the word tokenizer (tokenizer.h), embed with the table, cut the text at the
// live token limit (with the reason), and mask padding and hand-picked cells from the request. The
// single layer computes through a Backend (CPU or GPU), which stays beneath the model; the stack
// runs computeStack on the CPU. Messages are the window's (it shows them as they are).
#pragma once

#include "attnviz/backend.h"
#include "attnviz/embeddings.h"
#include "attnviz/model.h"
#include "attnviz/projections.h"
#include "attnviz/transformer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace attnviz {

enum class ProjectionSource { Identity, Random, Loaded };

// The controls of the attention layer (also every stack layer's attention).
struct WordVectorSettings {
    int numHeads = 1;
    int dHead = 0; // 0: ⌈d_model / heads⌉ (headslices.h); free only with random or loaded projections
    ScaleRule scaleRule = ScaleRule::InvSqrtDHead;
    double temperature = 1.0;
    Normalization normalization = Normalization::Softmax;
    MaskMethod maskMethod = MaskMethod::NegInf;
    bool causal = false;
    bool padding = false;    // mask the request's paddedKeys
    bool customMask = false; // mask the request's maskedCells
    ProjectionSource projection = ProjectionSource::Identity;
    uint64_t projectionSeed = 0;
    // Random projections: how torch draws them, in which order, and W_o's output width: 0 = d_model,
    // -1 = no W_o (the output is the heads concatenated), n = an n-wide W_o (with a bias).
    InitScheme initScheme = InitScheme::TorchLinear;
    DrawOrder drawOrder = DrawOrder::Fused;
    int outWidth = 0;
    std::shared_ptr<const Projections<float>> loadedProjections; // ProjectionSource::Loaded
    double dropout = 0.0;
    uint64_t dropoutSeed = 0;
};

// The attention config these settings compute with (d_head resolved for random projections).
AttentionConfig attentionConfig(const WordVectorSettings &s, int dModel);

// The stack around the attention (seed 002).
struct StackModelSettings {
    int depth = 2;
    NormPlacement norm = NormPlacement::Post;
    Activation activation = Activation::Relu;
    PositionEncoding positions = PositionEncoding::None;
    bool fromFile = false;                             // loaded weights; false: seeded
    uint64_t seed = 0;                                 // seeded weights
    std::shared_ptr<const StackWeights<float>> loaded; // loaded weights (GPT-2 names)
    std::string loadedSource;                          // file name, for messages
};

// Largest token count computed live for this many heads: the per-head (t x t) weights and the
// views' copies must fit comfortably in memory (about 256 MiB of weights), at most 4096.
int tokenLimit(int numHeads);
// The same in a stack, where every layer keeps its heads' (t x t) weights.
int stackTokenLimit(int numHeads, int depth);

// Why `heads` cannot be used with this d_model and projection source, in a sentence; empty if fine.
// Every head count from one up gives a view: one that does not divide d_model gets d_head =
// ⌈d_model / heads⌉ and, with identity projections, unequal slices (headslices.h).
std::string headsProblem(int dModel, int heads, int dHead, ProjectionSource source);
// Why `heads` cannot be used in a stack of width dModel; empty if fine.
std::string stackHeadsProblem(int dModel, int heads);
// "1, 2, 5, 10": the divisors of n, for the explanations.
std::string divisorsOf(int n);

class WordVectorModel : public Model {
public:
    // `backend` computes the attention (not owned; it outlives the model or is replaced).
    explicit WordVectorModel(Backend *backend = nullptr);

    void setBackend(Backend *backend) { m_backend = backend; }
    Backend *backend() const { return m_backend; }
    void setTable(std::shared_ptr<const EmbeddingTable> table) { m_table = std::move(table); }
    const std::shared_ptr<const EmbeddingTable> &table() const { return m_table; }
    void setSettings(const WordVectorSettings &s) { m_settings = s; }
    const WordVectorSettings &settings() const { return m_settings; }

    ModelInfo info() const override;
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override;
    // On error the trace keeps what was made before it (the tokens), so that the window can still
    // show the chips; the status message says why there are no layers.
    Status trace(const TraceRequest &request, Trace<float> &out) override;

protected:
    // Tokens, embeddings, the cut and the masks of a request: everything before the layers.
    struct Prepared {
        SequenceInput<float> sequence; // query (and key) vectors, key padding
        BoolMat attnMask;              // hand-picked cells; empty = none
    };
    Status prepare(const TraceRequest &request, int limit, const std::string &headsProblemText, Trace<float> &out,
                   Prepared &prepared) const;
    virtual int liveLimit() const { return tokenLimit(m_settings.numHeads); }

    Backend *m_backend = nullptr;
    std::shared_ptr<const EmbeddingTable> m_table;
    WordVectorSettings m_settings;

private:
    std::shared_ptr<const Projections<float>> randomProjections(const RandomProjectionSpec &spec, Status &status);

    // Random projections are drawn once per (seed, sizes) and reused while typing; the attention
    // input (with its copy of the projections) is kept between requests so that a keystroke copies
    // no weight matrices.
    RandomProjectionSpec m_spec;
    bool m_specValid = false;
    std::shared_ptr<const Projections<float>> m_random;
    AttentionInput<float> m_input;
    std::shared_ptr<const Projections<float>> m_inputProj; // what m_input.proj holds; null = identity
    // Identity projections for a head count that does not divide d_model (headslices.h), kept per
    // (d_model, heads) like the random ones.
    std::shared_ptr<const Projections<float>> m_slices;
    std::pair<int, int> m_slicesKey{0, 0};
};

class WordStackModel : public WordVectorModel {
public:
    static constexpr int kMaxPositions = 4096; // rows of a seeded learned position table

    using WordVectorModel::WordVectorModel;
    void setStack(const StackModelSettings &s) { m_stack = s; }
    const StackModelSettings &stack() const { return m_stack; }

    ModelInfo info() const override;
    Status trace(const TraceRequest &request, Trace<float> &out) override;

protected:
    int liveLimit() const override { return stackTokenLimit(m_settings.numHeads, m_stack.depth); }

private:
    std::shared_ptr<const StackWeights<float>> seeded(int dModel, Status &status);

    StackModelSettings m_stack;
    // Seeded weights are drawn once per (d, depth, seed, positions) and reused while typing.
    int m_d = 0, m_depth = 0;
    uint64_t m_seed = 0;
    PositionEncoding m_pos = PositionEncoding::None;
    std::shared_ptr<const StackWeights<float>> m_weights;
    StackForward<float> m_forward;
};

} // namespace attnviz
