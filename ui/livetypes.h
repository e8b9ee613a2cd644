// SPDX-License-Identifier: GPL-3.0-or-later
// Value types passed between the window and the compute thread: what to compute (a request) and
// what came out (a snapshot). Snapshots are immutable once published and shared by every view.
#pragma once

#include "stacksettings.h"

#include "attnviz/embeddings.h"
#include "attnviz/projections.h"
#include "attnviz/status.h"
#include "attnviz/types.h"

#include <QMetaType>
#include <QString>

#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace attnviz::ui {

enum class ProjectionMode { Identity, Random, File };
enum class MaskChoice { None, Causal, Padding, CausalPadding, Custom };
enum class HeadDisplay { One, Average, All };

// Everything about the computation that a control sets.
struct ComputeSettings {
    int numHeads = 1;
    int dHead = 0; // 0: d_model / heads; free only with random or loaded projections
    ScaleRule scaleRule = ScaleRule::InvSqrtDHead;
    double temperature = 1.0;
    Normalization normalization = Normalization::Softmax;
    MaskChoice mask = MaskChoice::None;
    MaskMethod maskMethod = MaskMethod::NegInf;
    ProjectionMode projection = ProjectionMode::Identity;
    quint64 projectionSeed = 0;
    // Random projections: how torch would draw them (nn.Linear, torch.rand, xavier), in which order
    // (one Linear per role, or one module per head), and W_o's output width: 0 = d_model,
    // -1 = no W_o (the output is the heads concatenated), n = an n-wide W_o (with a bias).
    InitScheme initScheme = InitScheme::TorchLinear;
    DrawOrder drawOrder = DrawOrder::Fused;
    int outWidth = 0;
    std::shared_ptr<const Projections<float>> loadedProjections; // ProjectionMode::File
    QString projectionSource;
    double dropout = 0.0;
    quint64 dropoutSeed = 0;
    QString backend = QStringLiteral("cpu");
    StackSettings stack; // depth 1 (the default): the single layer

    bool operator==(const ComputeSettings &o) const;
    bool operator!=(const ComputeSettings &o) const { return !(*this == o); }
};

struct ComputeRequest {
    quint64 generation = 0;
    QString sentence;
    QString keySentence; // empty: self-attention
    ComputeSettings settings;
    std::shared_ptr<const EmbeddingTable> table;
    std::set<int> paddedKeys;               // key token indices masked as padding
    std::set<std::pair<int, int>> customMask; // (query, key) cells masked by hand
    int maxTokens = 0;                        // 0: tokenLimit(settings.numHeads)
    int layer = 0;                            // stack: the layer whose attention `result` holds
};

// The result of one request, with what the views need to label it.
struct ComputeSnapshot {
    quint64 generation = 0;
    QString sentence, keySentence;
    ComputeSettings settings;
    QString tableName;
    bool cross = false;
    EmbeddedSentence query; // possibly truncated to tokenLimit
    EmbeddedSentence key;   // = query for self-attention
    int totalQueryTokens = 0, totalKeyTokens = 0; // before truncation
    size_t invalidBytes = 0;
    std::set<int> paddedKeys;
    std::set<std::pair<int, int>> customMask;
    AttentionConfig config;
    // The projections `result` was computed with (random or loaded); null = identity, and in
    // stack mode (the layer's weights live in the stack cache).
    std::shared_ptr<const Projections<float>> projections;
    AttentionResult<float> result;
    Status status;       // not ok: result is empty, `message` explains
    QString message;     // for the views: why there is nothing to show ("" when there is)
    QString backendName, device;
    double computeMs = 0.0; // embedding + attention on the worker
    double totalMs = 0.0;   // request posted -> snapshot ready (set by the worker)
    // Stack mode (settings.stack.depth >= 2): every layer; `result` is layer `layer`'s attention and
    // `query.matrix` the residual stream entering that layer (the token vectors are stack->embeddings).
    std::shared_ptr<const StackResult<float>> stack;
    int layer = 0;

    bool hasResult() const { return status.ok() && !result.batch.empty() && query.tokens.size() > 0; }
    int tq() const { return int(query.tokens.size()); }
    int tk() const { return int(key.tokens.size()); }
    const SequenceResult<float> &seq() const { return result.batch.front(); }
    // Weights shown for a head; -1 = the average over heads.
    const Mat<float> &weights(int head) const;
    bool truncated() const { return tq() < totalQueryTokens || tk() < totalKeyTokens; }
};

using SnapshotPtr = std::shared_ptr<const ComputeSnapshot>;

// Largest token count computed live for this many heads: the per-head (t x t) weights and the
// views' copies must fit comfortably in memory (about 256 MiB of weights), at most 4096.
int tokenLimit(int numHeads);

// "attnviz-en50 — 50,000 words, 50 dimensions": how the window names a table.
QString describeTable(const EmbeddingTable &t);

// Display text of a token ("ship", "," ...).
QString tokenText(const Token &t);

// One line naming the configuration, used as every figure's title.
QString describeConfig(const ComputeSnapshot &s, int head, HeadDisplay display);

QString scaleRuleName(ScaleRule r);
QString normalizationName(Normalization n);
QString maskName(MaskChoice m);

} // namespace attnviz::ui

Q_DECLARE_METATYPE(attnviz::ui::SnapshotPtr)
