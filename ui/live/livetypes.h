// SPDX-License-Identifier: GPL-3.0-or-later
// Value types passed between the window and the compute thread: what to compute (a request) and
// what came out (a snapshot). Snapshots are immutable once published and shared by every view.
#pragma once

#include "live/stacksettings.h"

#include "attnviz/embeddings.h"
#include "attnviz/model.h"
#include "attnviz/patching.h"
#include "attnviz/projections.h"
#include "attnviz/status.h"
#include "attnviz/types.h"

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <algorithm>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace attnviz::ui {

class LongTextTiles; // live/longtext.h

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
    int maxTokens = 0;                        // 0: the model's live limit (tokenLimit, stackTokenLimit)
    // A model of its own (a folder read by File > Open model): traced as it is, and `settings` only
    // label it. Null: the word-vector layer or stack that `settings` and `table` describe.
    std::shared_ptr<Model> model;
    // What a model's trace brings back from a GPU (TraceRequest::observe); the CPU keeps everything.
    Observe observe;
    // A model's text past what every head's weights fit in the trace's budget: traced without them
    // and read through AttentionTiles (the window: ComputeSnapshot::longText); false: cut there
    // (export's figures and matrices).
    bool longTexts = false;
    // A model's gated MLP: keep its two products, gate and up (TraceRequest::keepMlp), for a view
    // that shows them; the trace then holds 2 × tokens × d_ff more numbers a layer.
    bool keepMlp = false;
    // Set by the compute worker when a newer request arrives: a model's trace stops between layers
    // (Status Cancelled) and the snapshot is dropped, so a keystroke never waits for a stale trace.
    const std::atomic<bool> *cancel = nullptr;
    // A model's trace, as each layer starts and when all are done (TraceRequest::progress), on the
    // compute thread. Empty: none.
    std::function<void(int done, int layers)> progress;
    // Edits of a model's forward (the window's head ablations: attn.hook_z of one head at every
    // position), applied unless `editsShownClean` (the View menu's clean switch: the edits kept, the
    // model shown as it is). A causal model's edited trace comes with the clean model's next-token
    // probabilities at the last position (ComputeSnapshot::cleanNext), for the deltas.
    std::vector<Intervention> edits;
    bool editsShownClean = false;
    // An encoder-decoder model: `sentence` is the source the encoder reads, `target` what the
    // decoder reads after its start token (teacher-forced); an empty target is generated from the
    // source with the folder's settings first, greedily (`beams` 1) or by beam search of `beams`
    // (2 to 4), the kept beam read.
    QString target;
    int beams = 1;
};

// "1 head", "4 heads": a count with its noun in the number it needs (English only: no translations
// ship, and tr()'s %n plurals need one to say "1 head").
inline QString countText(qint64 n, const QString &one, const QString &many)
{
    return QStringLiteral("%L1 %2").arg(n).arg(n == 1 ? one : many);
}

// The result of one request: the model's trace and what the views need to label it. Views take a
// snapshot plus a (layer, head, query) selection and never ask which kind of model made the trace.
struct ComputeSnapshot {
    quint64 generation = 0;
    QString sentence, keySentence;
    ComputeSettings settings;
    QString tableName;
    bool cross = false;
    // Never null once computed; without layers when `status` is not ok (then it holds the tokens as
    // far as they got, for the chips).
    std::shared_ptr<const Trace<float>> trace;
    QStringList queryLabels, keyLabels; // token labels (keyLabels = queryLabels for self-attention)
    std::vector<uint8_t> queryUnknown, keyUnknown; // 1 = not in the table (a stand-in vector)
    int totalQueryTokens = 0, totalKeyTokens = 0;  // before the cut at the live limit
    std::set<int> paddedKeys;
    std::set<std::pair<int, int>> customMask;
    AttentionConfig config; // of every layer's attention
    QString modelLabel; // the model's part of every title ("identity projections", "post-norm, ReLU …")
    Status status;       // not ok: no layers, `message` explains
    QString message;     // for the views: why there is nothing to show ("" when there is)
    QString backendName, device;
    double computeMs = 0.0; // embedding + attention on the worker
    double totalMs = 0.0;   // request posted -> snapshot ready (set by the worker)
    // A model of its own (ComputeRequest::model): its facts (family empty otherwise), and its heads'
    // induction scores (layers x heads, attnviz/headroles.h), measured once per model on the
    // induction probe by the compute thread and shared by every snapshot of that model; null when
    // not measured (`inductionProblem` says why, if it failed).
    ModelInfo modelInfo;
    std::shared_ptr<const Mat<double>> induction;
    QString inductionProblem;
    // That model (null otherwise), for what a view computes on demand from the trace with a const
    // call that reads the trace only (Model::nextTokens: a hovered position's next tokens), on the
    // view's thread while the compute thread traces the next text.
    std::shared_ptr<const Model> model;
    // The window's edits (ComputeRequest::edits) whether applied or not: the trace is the edited
    // model's when trace->edited(), the clean model's when `editsShownClean`. cleanNext: a causal
    // model's edited trace only, the clean model's probability of every vocabulary id after the last
    // token (empty otherwise).
    std::vector<Intervention> edits;
    bool editsShownClean = false;
    std::vector<float> cleanNext;
    // With cleanNext: the clean model's trace of the same text, its stages kept (no attention
    // weights), for the Logit lens's and Direct logit attribution's deltas; null where the edited
    // trace itself keeps less than every stage (a long text).
    std::shared_ptr<const Trace<float>> cleanTrace;
    // An encoder-decoder model's snapshot: the attention its trace's layers are (AttentionKind,
    // model.h). The one computed is the decoder's (Self: the decoder's self-attention over its
    // tokens, the start token then the target; the trace keeps the encoder's and the cross
    // attentions in Trace::seq2seq); encoderView and crossView are the same result with the
    // encoder's self-attention (source × source) or the cross-attention (target rows × source
    // columns) as the trace's layers, for the views that draw one attention (seq2seqView).
    bool encoderDecoder = false;
    AttentionKind attentionKind = AttentionKind::Self;
    std::shared_ptr<const ComputeSnapshot> encoderView, crossView;
    QString target;          // what the decoder read after its start token (the generated text when generated)
    bool targetGenerated = false; // the target was empty: generated from the source
    int targetBeams = 1;          // with that many beams (1: greedy)

    // What the key side is read from, for axis titles: " (key/value sentence)" in cross-attention,
    // an encoder-decoder model's " (source)" or " (target)"; "" otherwise. querySide likewise.
    QString keySide() const
    {
        if (encoderDecoder)
            return attentionKind == AttentionKind::Self ? QStringLiteral(" (target)") : QStringLiteral(" (source)");
        return cross ? QStringLiteral(" (key/value sentence)") : QString();
    }
    QString querySide() const
    {
        if (encoderDecoder)
            return attentionKind == AttentionKind::Encoder ? QStringLiteral(" (source)") : QStringLiteral(" (target)");
        return QString();
    }

    // A text longer than every head's weights fit in the window's trace budget: the trace keeps q, k,
    // v and each row's log-sum-exp instead of the weights (Observe::weights false), and the views
    // read the weights where they look through `tiles` (live/longtext.h: longTextTiles).
    bool longText = false;
    int longTextFrom = 0; // the most tokens whose weights fit (past them a text is a long one)
    std::shared_ptr<LongTextTiles> tiles;
    // A window of a long text's positions (live/longtext.h: LongTextWindows): the trace is rows
    // [windowFirst, windowFirst + tq()) of a text of windowOf tokens, every layer's stages recomputed
    // for them (attnviz/positionwindow.h); windowOf 0: not a window.
    int windowFirst = 0, windowOf = 0;
    bool isWindow() const { return windowOf > 0; }

    bool fromModel() const { return !modelInfo.family.empty(); }
    bool causalLm() const { return fromModel() && modelInfo.causal; }
    bool maskedLm() const { return fromModel() && modelInfo.maskedLm; }
    bool hasResult() const { return status.ok() && trace && !trace->layers.empty() && tq() > 0; }
    int tq() const { return int(queryLabels.size()); }
    int tk() const { return int(keyLabels.size()); }
    bool truncated() const { return tq() < totalQueryTokens || tk() < totalKeyTokens; }
    int numLayers() const { return trace ? trace->numLayers() : 0; }
    // A layer of several: its input is a residual stream (views say so).
    bool deep() const { return numLayers() > 1; }
    // The layer shown for a selection (clamped; 0 when there are none).
    int layerIndex(int layer) const { return std::clamp(layer, 0, std::max(0, numLayers() - 1)); }
    const LayerTrace<float> &layer(int l) const { return trace->layers[size_t(layerIndex(l))]; }
    const AttentionResult<float> &attention(int l) const { return layer(l).attention; }
    // Why the views show fewer tokens than the text has: the model's reason (its positions), else
    // the live limit of the word-vector attention.
    QString cutReason() const
    {
        return trace && !trace->cutReason.empty()
            ? QString::fromStdString(trace->cutReason)
            : QStringLiteral("the live limit for %1 heads").arg(settings.numHeads);
    }
    const SequenceResult<float> &seq(int l) const { return attention(l).batch.front(); }
    // Weights shown for a head; -1 = the average over heads.
    const WeightMatrix<float> &weights(int l, int head) const { return trace->weights(layerIndex(l), head); }
    // What the layer's queries (and, in self-attention, keys) are made from: the token vectors, or
    // the residual stream entering a deeper layer.
    const Mat<float> &queryInput(int l) const { return layer(l).residualIn; }
    const Mat<float> &keyInput(int l) const
    {
        const LayerTrace<float> &t = layer(l);
        return t.keyIn.size() > 0 ? t.keyIn : t.residualIn;
    }
    // The layer's projections; null = identity, and for deeper layers (the views do not expand them).
    std::shared_ptr<const Projections<float>> projections(int l) const
    {
        return deep() ? nullptr : layer(l).projections.get();
    }
};

using SnapshotPtr = std::shared_ptr<const ComputeSnapshot>;

// An encoder-decoder snapshot as the views that draw one attention see it: the decoder's own for
// Self, else its encoderView or crossView; any other snapshot as it is.
SnapshotPtr seq2seqView(const SnapshotPtr &s, AttentionKind kind);
// The line a view shows for an encoder-decoder snapshot it cannot draw yet: `s` without a result,
// its message "<view>: not yet for encoder-decoder models".
SnapshotPtr seq2seqNotYet(const SnapshotPtr &s, const QString &view);
// "Encoder", "Decoder", "Cross" (the selector's names), and what each shows.
QString attentionKindName(AttentionKind kind);
QString attentionKindDescription(AttentionKind kind);


// Why a model cannot be edited (head ablation), in one line; empty when it can: real decoder-only and
// encoder-only checkpoints (Model::info's architecture) can, word vectors and encoder-decoder models
// cannot. `model` false: the word-vector attention.
QString editsRefusal(const ModelInfo &info, bool model);
// What a session file keeps of the Patching tab (views/patchingview.h; a session file's "patching").
struct PatchingSettings {
    QString corrupted, answer, wrong;
    PatchSweep sweep = PatchSweep::ResidPre;
    PatchMetric metric = PatchMetric::LogitDiff;
    PathReceiver receiver{1, 0, HeadInput::K}; // the path sweep's receiver head and input
    bool empty() const { return corrupted.isEmpty() && answer.isEmpty() && wrong.isEmpty(); }
    bool operator==(const PatchingSettings &o) const
    {
        return corrupted == o.corrupted && answer == o.answer && wrong == o.wrong && sweep == o.sweep && metric == o.metric &&
               receiver == o.receiver;
    }
};

// "L1 H2 zero, L0 H3 mean": the window's head ablations for people.
QString describeAblations(const std::vector<Intervention> &edits);

// "attnviz-en50 — 50,000 words, 50 dimensions": how the window names a table.
QString describeTable(const EmbeddingTable &t);


// One line naming the configuration of a layer, used as every figure's title.
QString describeConfig(const ComputeSnapshot &s, int layer, int head, HeadDisplay display);

QString scaleRuleName(ScaleRule r);
QString normalizationName(Normalization n);
QString maskName(MaskChoice m);

} // namespace attnviz::ui

Q_DECLARE_METATYPE(attnviz::ui::SnapshotPtr)
