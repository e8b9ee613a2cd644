// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/livecompute.h"

#include "live/longtext.h"
#include "live/seq2seqcompute.h"

#include "attnviz/attention.h"
#include "attnviz/backend.h"
#include "attnviz/fileio.h"
#include "attnviz/headroles.h"
#include "attnviz/headslices.h"
#include "attnviz/memorybudget.h"
#include "attnviz/projections.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <cmath>

namespace attnviz::ui {

bool ComputeSettings::operator==(const ComputeSettings &o) const
{
    return numHeads == o.numHeads && dHead == o.dHead && scaleRule == o.scaleRule && temperature == o.temperature
        && normalization == o.normalization && mask == o.mask && maskMethod == o.maskMethod
        && projection == o.projection && projectionSeed == o.projectionSeed && initScheme == o.initScheme
        && drawOrder == o.drawOrder && outWidth == o.outWidth
        && loadedProjections == o.loadedProjections && dropout == o.dropout && dropoutSeed == o.dropoutSeed
        && backend == o.backend && stack == o.stack;
}

QString describeTable(const EmbeddingTable &t)
{
    return QObject::tr("%1 — %L2 words, %3 dimensions")
        .arg(QString::fromStdString(t.source()))
        .arg(t.size())
        .arg(t.dim());
}

QString editsRefusal(const ModelInfo &info, bool model)
{
    if (!model || info.architecture.layers == 0)
        return QObject::tr("head ablation edits a model checkpoint's forward (a model folder); the word-vector "
                           "attention has no heads to ablate");
    if (info.architecture.encoderDecoder)
        return QObject::tr("head ablation in encoder-decoder models (%1) is not computed yet")
            .arg(QString::fromStdString(info.family));
    return QString();
}

QString describeAblations(const std::vector<Intervention> &edits)
{
    QStringList parts;
    for (const Intervention &e : edits)
        if (e.kind == EditKind::Value) // a patch (the Patching tab's): the source is the clean prompt
            parts << QString::fromStdString(describeEdit(e)).replace(QRegularExpression(QStringLiteral(" value$")),
                                                                     QStringLiteral(" patched from the clean prompt"));
        else
            parts << (e.hook == HookPoint::AttnZ && e.head >= 0 && e.positions.empty()
                          ? QStringLiteral("L%1 H%2 %3").arg(e.layer).arg(e.head).arg(QLatin1String(editKindName(e.kind)))
                          : QString::fromStdString(describeEdit(e)));
    return parts.join(QStringLiteral(", "));
}

QString scaleRuleName(ScaleRule r)
{
    switch (r) {
    case ScaleRule::InvSqrtDHead: return QStringLiteral("1/√d_head");
    case ScaleRule::InvSqrtDModel: return QStringLiteral("1/√d_model");
    case ScaleRule::None: return QStringLiteral("no scaling");
    case ScaleRule::Temperature: return QStringLiteral("1/(T·√d_head)");
    case ScaleRule::Explicit: return QStringLiteral("explicit");
    }
    return {};
}

QString normalizationName(Normalization n)
{
    switch (n) {
    case Normalization::Softmax: return QStringLiteral("softmax");
    case Normalization::Sum: return QStringLiteral("sum");
    case Normalization::Cosine: return QStringLiteral("cosine");
    }
    return {};
}

QString maskName(MaskChoice m)
{
    switch (m) {
    case MaskChoice::None: return QStringLiteral("no mask");
    case MaskChoice::Causal: return QStringLiteral("causal");
    case MaskChoice::Padding: return QStringLiteral("padding");
    case MaskChoice::CausalPadding: return QStringLiteral("causal + padding");
    case MaskChoice::Custom: return QStringLiteral("custom mask");
    }
    return {};
}

QString describeConfig(const ComputeSnapshot &s, int layer, int head, HeadDisplay display)
{
    const ComputeSettings &c = s.settings;
    QStringList parts;
    if (display == HeadDisplay::All)
        parts << (c.numHeads == 1 ? QStringLiteral("the one head") : QStringLiteral("all %1 heads").arg(c.numHeads));
    else if (head < 0 || display == HeadDisplay::Average)
        parts << (c.numHeads == 1 ? QStringLiteral("the one head") : QStringLiteral("average of %1 heads").arg(c.numHeads));
    else
        parts << QStringLiteral("head %1 of %2").arg(head).arg(c.numHeads);
    const AttentionResult<float> *r = s.hasResult() ? &s.attention(layer) : nullptr;
    if (r && r->dHead > 0)
        parts << QStringLiteral("d_model %1, d_head %2").arg(r->dModel).arg(r->dHead);
    QString scale = scaleRuleName(c.scaleRule);
    if (c.scaleRule == ScaleRule::Temperature)
        scale += QStringLiteral(", T=%1").arg(c.temperature, 0, 'g', 3);
    parts << scale << normalizationName(c.normalization);
    QString mask = maskName(c.mask);
    if ((c.mask == MaskChoice::Causal || c.mask == MaskChoice::CausalPadding) && c.normalization == Normalization::Softmax)
        mask += c.maskMethod == MaskMethod::NegInf ? QStringLiteral(" (−∞)") : QStringLiteral(" (renormalize)");
    parts << mask;
    if (s.deep())
        parts << QStringLiteral("layer %1 of %2").arg(s.layerIndex(layer)).arg(s.numLayers());
    parts << s.modelLabel;
    if (c.dropout > 0)
        parts << QStringLiteral("dropout %1 (seed %2)").arg(c.dropout, 0, 'g', 3).arg(c.dropoutSeed);
    if (s.cross)
        parts << QStringLiteral("cross-attention");
    return parts.join(QStringLiteral(" · "));
}

namespace {

// The largest trace the CPU keeps whole in the window (see its use below): 512 MB, or
// ATTNVIZ_WHOLE_TRACE_MB (the tests make every trace a large one with 0).
uint64_t wholeTraceBytes()
{
    bool set = false;
    const int mb = qEnvironmentVariableIntValue("ATTNVIZ_WHOLE_TRACE_MB", &set);
    return uint64_t(set && mb >= 0 ? mb : 512) << 20;
}

// Whether a model's attention weights can all be recomputed from q, k and each row's log-sum-exp
// (AttentionTiles): a real checkpoint's softmax, decoder-only or encoder-only.
bool recomputesWeights(const ModelInfo &info)
{
    return info.layers > 0 && !info.architecture.encoderDecoder && info.family != "word-vectors" && info.family != "stack";
}

QString projectionLabel(const ComputeSettings &c)
{
    switch (c.projection) {
    case ProjectionMode::Identity: return QStringLiteral("identity projections");
    case ProjectionMode::Random: return QStringLiteral("random projections, seed %1").arg(c.projectionSeed);
    case ProjectionMode::File: return QStringLiteral("projections from %1").arg(c.projectionSource);
    }
    return {};
}

ProjectionSource projectionSource(ProjectionMode m)
{
    return m == ProjectionMode::Random ? ProjectionSource::Random
        : m == ProjectionMode::File    ? ProjectionSource::Loaded
                                       : ProjectionSource::Identity;
}

} // namespace

uint64_t windowTraceBudget()
{
    bool set = false;
    const int kb = qEnvironmentVariableIntValue("ATTNVIZ_TRACE_BUDGET_KB", &set);
    return set && kb > 0 ? uint64_t(kb) << 10 : memoryBudget() / 4;
}

WordVectorSettings wordVectorSettings(const ComputeSettings &s)
{
    WordVectorSettings w;
    w.numHeads = s.numHeads;
    w.dHead = s.dHead;
    w.scaleRule = s.scaleRule;
    w.temperature = s.temperature;
    w.normalization = s.normalization;
    w.maskMethod = s.maskMethod;
    w.causal = s.mask == MaskChoice::Causal || s.mask == MaskChoice::CausalPadding;
    w.padding = s.mask == MaskChoice::Padding || s.mask == MaskChoice::CausalPadding;
    w.customMask = s.mask == MaskChoice::Custom;
    w.projection = projectionSource(s.projection);
    w.projectionSeed = s.projectionSeed;
    w.initScheme = s.initScheme;
    w.drawOrder = s.drawOrder;
    w.outWidth = s.outWidth;
    w.loadedProjections = s.loadedProjections;
    w.dropout = s.dropout;
    w.dropoutSeed = s.dropoutSeed;
    return w;
}

QString headsProblem(int dModel, int heads, int dHead, ProjectionMode mode)
{
    return QString::fromStdString(attnviz::headsProblem(dModel, heads, dHead, projectionSource(mode)));
}

QString unequalHeadsNote(int dModel, int heads, int dHead, ProjectionMode mode)
{
    if (dModel <= 0 || heads <= 0 || dModel % heads == 0 || (mode != ProjectionMode::Identity && dHead > 0))
        return {};
    const int dh = autoHeadWidth(dModel, heads);
    if (mode == ProjectionMode::Identity) {
        QStringList w;
        for (int x : identitySliceWidths(dModel, heads))
            w << QString::number(x);
        return QStringLiteral("%1 heads do not divide d_model %2: each head takes its own slice of the embedding "
                              "(%3 columns), padded with zeros to d_head %4; W_o puts the slices back in place.")
            .arg(heads)
            .arg(dModel)
            .arg(w.join(QStringLiteral(", ")))
            .arg(dh);
    }
    return QStringLiteral("%1 heads do not divide d_model %2: d_head = ⌈%2 / %1⌉ = %3 (set d_head to choose "
                          "another width).")
        .arg(heads)
        .arg(dModel)
        .arg(dh);
}

LiveModels::LiveModels(Backend *backend)
    : m_layer(backend)
    , m_stack(backend)
{
}

void LiveModels::setBackend(Backend *backend)
{
    m_layer.setBackend(backend);
    m_stack.setBackend(backend);
}

Model &LiveModels::modelFor(const ComputeRequest &req, QString &label)
{
    const ComputeSettings &s = req.settings;
    if (req.model) { // a model of its own (File > Open model): its name labels it
        label = QString::fromStdString(req.model->info().name);
        return *req.model;
    }
    if (!s.stack.enabled()) {
        m_layer.setTable(req.table);
        m_layer.setSettings(wordVectorSettings(s));
        label = projectionLabel(s);
        return m_layer;
    }
    m_stack.setTable(req.table);
    m_stack.setSettings(wordVectorSettings(s));
    m_stack.setStack(stackModelSettings(s.stack));
    label = describeStack(s.stack);
    return m_stack;
}

std::shared_ptr<Trace<float>> LiveModels::traceFor(const ComputeRequest &req,
                                                   std::shared_ptr<const Trace<float>> &newest)
{
    newest.reset();
    if (!req.model) {
        m_traced = nullptr;
        m_traces.clear();
        return std::make_shared<Trace<float>>();
    }
    if (m_traced != req.model.get()) {
        m_traced = req.model.get();
        m_traces.clear();
    }
    std::shared_ptr<Trace<float>> out;
    // use_count 1: only this list holds it (no snapshot, no view), so it can be written again
    for (size_t i = 0; i < m_traces.size() && !out; ++i)
        if (m_traces[i].use_count() == 1) {
            out = m_traces[i];
            m_traces.erase(m_traces.begin() + std::ptrdiff_t(i));
        }
    if (!out) // every earlier trace is on screen: start from a copy of the newest (its prefix is kept)
        out = m_traces.empty() ? std::make_shared<Trace<float>>() : std::make_shared<Trace<float>>(*m_traces.front());
    else if (!m_traces.empty()) // the one before: the newest (on screen, only read) may share more
        newest = m_traces.front();
    m_traces.insert(m_traces.begin(), out);
    if (m_traces.size() > 2)
        m_traces.pop_back();
    return out;
}

std::shared_ptr<const Mat<double>> LiveModels::inductionFor(const std::shared_ptr<Model> &model, QString &problem)
{
    const bool same = !m_inductionModel.owner_before(model) && !model.owner_before(m_inductionModel) && !m_inductionModel.expired();
    if (!same) {
        m_inductionModel = model;
        m_induction.reset();
        m_inductionProblem.clear();
        const ModelInfo info = model->info();
        int length = 50;
        if (info.maxPositions > 0)
            length = std::min(length, (info.maxPositions - 2) / 2);
        if (length < 2) {
            m_inductionProblem = QStringLiteral("%1 reads too few positions for the induction probe").arg(QString::fromStdString(info.name));
        } else {
            const InductionProbe probe = inductionProbe(info, *model, length);
            TraceRequest req;
            req.ids = probe.ids;
            req.keepScores = false;
            req.topK = 1;
            Trace<float> tr;
            if (Status st = model->trace(req, tr); st)
                m_induction = std::make_shared<const Mat<double>>(inductionScores(tr, probe.offset, probe.length));
            else
                m_inductionProblem = QString::fromStdString(st.message);
        }
    }
    problem = m_inductionProblem;
    return m_induction;
}

std::shared_ptr<ComputeSnapshot> computeSnapshot(const ComputeRequest &req, Backend &backend, LiveModels &models)
{
    if (encoderDecoderRequest(req)) {
        auto snap = seq2seqSnapshot(req);
        snap->keySentence = req.keySentence;
        if (req.table)
            snap->tableName = QString::fromStdString(req.table->source());
        return snap;
    }
    QElapsedTimer timer;
    timer.start();
    auto snap = std::make_shared<ComputeSnapshot>();
    snap->generation = req.generation;
    snap->sentence = req.sentence;
    snap->keySentence = req.keySentence;
    snap->settings = req.settings;
    if (req.model) { // the titles describe what the model did, not the word-vector controls
        const ModelInfo info = req.model->info();
        ComputeSettings &c = snap->settings;
        c.numHeads = std::max(1, info.heads);
        // a T5 encoder alone multiplies q·k by nothing (its 1/√d_kv lives in W_q's initialisation)
        c.scaleRule = info.architecture.positions == PositionKind::RelativeBuckets ? ScaleRule::None : ScaleRule::InvSqrtDHead;
        c.normalization = Normalization::Softmax;
        c.maskMethod = MaskMethod::NegInf;
        c.dropout = 0.0;
        const bool padding = c.mask == MaskChoice::Padding || c.mask == MaskChoice::CausalPadding;
        if (info.causal)
            c.mask = padding ? MaskChoice::CausalPadding : MaskChoice::Causal;
        else if (c.mask == MaskChoice::Causal || c.mask == MaskChoice::CausalPadding)
            c.mask = padding ? MaskChoice::Padding : MaskChoice::None;
    }
    snap->paddedKeys = req.paddedKeys;
    snap->customMask = req.customMask;
    // a key/value sentence is the word vectors' (a model's heads attend within its own text)
    snap->cross = !req.model && !req.keySentence.trimmed().isEmpty();
    if (req.table)
        snap->tableName = QString::fromStdString(req.table->source());
    snap->config = attentionConfig(wordVectorSettings(req.settings), req.table ? req.table->dim() : 0);

    TraceRequest tr;
    tr.text = req.sentence.toStdString();
    if (snap->cross)
        tr.keyText = req.keySentence.toStdString();
    const MaskChoice mask = req.settings.mask;
    // a model of its own takes the user's masks only when the mask control asks for them (its own
    // mask, causal or padding, is its business); the word-vector models read the settings
    if (!req.model || mask == MaskChoice::Padding || mask == MaskChoice::CausalPadding)
        tr.paddedKeys.assign(req.paddedKeys.begin(), req.paddedKeys.end());
    if (!req.model || mask == MaskChoice::Custom)
        tr.maskedCells.assign(req.customMask.begin(), req.customMask.end());
    tr.maxTokens = req.maxTokens;
    tr.cancel = req.cancel;
    tr.progress = req.progress;
    tr.keepMlp = req.keepMlp;
    // a T5 encoder alone: its relative position bias is in the scores and nowhere else (the pipeline
    // shows it); a long text is then cut, not read through tiles recomputed from q and k
    tr.keepScores = req.model && req.model->info().architecture.positions == PositionKind::RelativeBuckets;
    // A causal model's LM head runs at the last position only (the predictions dock's list): a
    // hovered position is computed by the dock itself (Model::nextTokens on the snapshot's trace),
    // not at every position of every text (a third of GPT-2 small's work at 128 tokens).
    tr.allPredictions = false;
    // a real model computes on the backend's GPU where it has one, which brings back what the shown
    // views read (the layers grid any layer, the weights the selected one); the trace names the
    // device that computed it and what it holds
    std::string notOnDevice;
    tr.device = req.model ? backend.forwardDevice(&notOnDevice) : nullptr;
    tr.observe = req.observe;
    if (req.model && !req.editsShownClean)
        tr.edits = req.edits; // computed whole on the CPU; the trace's deviceNote says so where a GPU was asked
    models.setBackend(&backend);
    QString stackLabel;
    Model &model = models.modelFor(req, stackLabel);
    std::shared_ptr<const Trace<float>> newest;
    std::shared_ptr<Trace<float>> trace = models.traceFor(req, newest);
    tr.prefixFrom = newest.get();
    // the clean trace a speculative ablation starts from stands in for the newest one (its size, its
    // unedited layers), so that it computes what the press over that trace would
    const Trace<float> *onScreen = newest ? newest.get() : req.model ? models.uneditedHint().get() : nullptr;
    // A model's trace is held twice (the one on screen and the next), and the views copy what they
    // show (a heatmap holds a head's weights as doubles): each trace gets a quarter of the memory
    // budget, and a text longer than that holds is cut here, before anything is allocated, with
    // the reason on screen (memorybudget.h).
    // Past what every head's weights fit, a CPU trace of a softmax model keeps instead q, k, v and
    // each row's log-sum-exp (linear in the text; 16-bit where the model's weights are) and the views
    // compute the weights where they look (live/longtext.h): the text is cut only where that exceeds
    // the budget.
    const uint64_t traceBudget = windowTraceBudget();
    int budgetTokens = 0, weightsTokens = 0;
    bool longText = false;
    if (req.model) {
        const ModelInfo info = req.model->info();
        budgetTokens = weightsTokens = std::max(1, tokensWithin(info, traceBudget, sizeof(float), tr.keepScores, 0, tr.keepMlp));
        if (req.longTexts && !tr.device && !tr.keepScores && recomputesWeights(info) &&
            (info.maxPositions <= 0 || weightsTokens < info.maxPositions)) {
            int tokens = int(std::min<size_t>(tr.text.size() + 2, 1 << 30)); // at most a token a byte, and the model's own
            if (tokens > weightsTokens) { // counted where the bytes say it may be long
                std::vector<TraceToken> pieces;
                if (req.model->tokenize(tr.text, pieces))
                    tokens = int(pieces.size());
            }
            if (tokens > weightsTokens) {
                longText = true;
                tr.observe = req.observe;
                tr.observe.weights = false;
                tr.observe.stages = false;
                tr.observe.sixteenBit = sixteenBitKept(info);
                budgetTokens = std::max(1, tokensWithin(info, traceBudget, sizeof(float), false, 0, tr.keepMlp, false,
                                                        false, tr.observe.sixteenBit));
            }
        }
        if (info.maxPositions <= 0 || budgetTokens < info.maxPositions)
            tr.maxTokens = tr.maxTokens > 0 ? std::min(tr.maxTokens, budgetTokens) : budgetTokens;
        else
            budgetTokens = 0; // every position fits
        // On the CPU a trace keeps every stage of every layer while that is small, so that choosing
        // another layer or tab recomputes nothing; a larger one keeps, as a GPU brings back, the
        // weights and stages of the layers the views read (and every layer's keys and values): at
        // 1,024 tokens of SmolLM2 with one layer shown, 0.7 GB at its peak rather than 2.5 GB. The
        // size is the trace on screen's (typing changes it little).
        const int estimate = onScreen ? int(onScreen->tokens.size()) + 1 : int(tr.text.size());
        if (!longText && !tr.device && traceBytes(info, estimate, sizeof(float), tr.keepScores, 0, tr.keepMlp) <= wholeTraceBytes())
            tr.observe = Observe();
    }
    // Edits over the clean trace on screen (an ablation toggled on, the text unchanged): the layers
    // before the first edited one are its own, copied; the model checks that it is this request's
    // trace without the edits (tokens, masks, stages) and computes everything otherwise.
    if (!tr.edits.empty() && onScreen && onScreen->edits.empty())
        tr.unedited = onScreen;
    Status st = model.trace(tr, *trace);
    if (st.ok() && longText) // every layer's weights must be readable from what it kept, else cut as before
        for (int l = 0; l < trace->numLayers() && longText; ++l)
            if (!AttentionTiles<float>::recomputable(*trace, l)) {
                longText = false;
                budgetTokens = weightsTokens;
                tr.maxTokens = req.maxTokens > 0 ? std::min(req.maxTokens, budgetTokens) : budgetTokens;
                tr.observe = req.observe;
                tr.prefixFrom = nullptr;
                tr.unedited = nullptr;
                st = model.trace(tr, *trace);
            }
    if (st.ok() && req.model && tr.paddedKeys.empty() && tr.maskedCells.empty()) {
        // weights that overflow float32 (finite in the file) make NaN attention: said, not drawn
        // (a row the user masks whole is NaN on purpose, and drawn as such)
        for (const LayerTrace<float> &layer : trace->layers)
            for (const WeightMatrix<float> &w : layer.attention.batch.front().weights)
                if (st.ok() && !Eigen::Map<const Eigen::ArrayXf>(w.data(), w.storedSize()).allFinite())
                    st = Status::error(StatusCode::NonFinite,
                                       req.model->info().name + ": the attention weights are not finite (NaN or Inf): the "
                                                                "model's weights overflow float32 on this text");
    }
    if (st.ok() && req.model && !tr.edits.empty() && req.model->info().causal) {
        // the clean model's next-token probabilities after the last token, for the deltas beside the
        // edited ones: a trace kept apart (its prefix reused while typing), every id's probability
        std::shared_ptr<const Trace<float>> cleanNewest;
        const std::shared_ptr<Trace<float>> cleanTrace = models.cleanTraceFor(*req.model, cleanNewest);
        Trace<float> &clean = *cleanTrace;
        TraceRequest c = tr;
        c.edits.clear();
        c.device = nullptr;
        c.prefixFrom = cleanNewest.get();
        c.keepMlp = false;
        // the stages too where the edited trace keeps them all: the lens and attribution read them
        const bool stages = tr.observe.everything();
        c.observe = Observe();
        c.observe.stages = stages;
        c.observe.weights = false;
        c.topK = std::max(1, req.model->info().vocabulary);
        if (Status cs = model.trace(c, clean); cs && !clean.predictions.next.empty()) {
            models.cleanTraced(cleanTrace);
            snap->cleanNext.assign(size_t(c.topK), 0.0f);
            for (const TokenProb &p : clean.predictions.next.back())
                if (p.id >= 0 && p.id < c.topK)
                    snap->cleanNext[size_t(p.id)] = float(p.p);
            if (stages) // held, not copied: the next edited trace computes the clean one into the other
                snap->cleanTrace = cleanTrace;
        } else {
            st = cs.ok() ? Status::error(StatusCode::Unavailable, "the clean model predicted nothing") : cs;
        }
    }
    snap->edits = req.edits;
    snap->editsShownClean = req.editsShownClean;
    if (st.ok() && longText && budgetTokens > 0 && int(trace->tokens.size()) >= budgetTokens && trace->cut())
        trace->cutReason = "a long text's trace of " + req.model->info().name + " keeps q, k and v of every token" +
                           (tr.observe.sixteenBit ? " in 16 bits" : "") + " and computes the weights where a view looks: " +
                           describeCount(budgetTokens) + " tokens fit in the " + describeBytes(traceBudget) +
                           " the window gives one; the text has " + describeCount(trace->totalTokens) + ", the rest is cut";
    else if (st.ok() && budgetTokens > 0 && int(trace->tokens.size()) >= budgetTokens && trace->cut())
        trace->cutReason = "a trace of " + req.model->info().name + " keeps every head's weights for every pair of tokens: " +
                           describeCount(budgetTokens) + " tokens fit in the " + describeBytes(traceBudget) +
                           " the window gives one; the text has " + describeCount(trace->totalTokens) + ", the rest is cut";
    snap->computeMs = double(timer.nsecsElapsed()) / 1e6;
    snap->backendName = QString::fromStdString(backend.name()); // what computed this one (a fallback names the CPU)
    snap->device = QString::fromStdString(backend.device());
    if (req.model) { // a model's trace says what computed it, and why the CPU did where a GPU was asked for
        snap->backendName = QString::fromStdString(trace->device.empty() ? std::string("cpu") : trace->device);
        std::string device = trace->deviceNote;
        if (device.empty())
            device = cpuDeviceName() + (notOnDevice.empty() ? std::string() : " — " + notOnDevice + "; computed on the CPU");
        snap->device = QString::fromStdString(device);
    }

    // Labels: the tokens (also without layers, for the chips), the model's part of the titles.
    auto labels = [](const std::vector<TraceToken> &tokens, QStringList &text, std::vector<uint8_t> &unknown) {
        text.reserve(int(tokens.size()));
        unknown.resize(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            text << QString::fromStdString(tokens[i].display);
            unknown[i] = tokens[i].unknown ? 1 : 0;
        }
    };
    labels(trace->tokens, snap->queryLabels, snap->queryUnknown);
    if (snap->cross) {
        labels(trace->keyTokens, snap->keyLabels, snap->keyUnknown);
    } else {
        snap->keyLabels = snap->queryLabels;
        snap->keyUnknown = snap->queryUnknown;
    }
    snap->totalQueryTokens = trace->totalTokens;
    snap->totalKeyTokens = trace->totalKeyTokens;
    // a failed stack is titled as the single layer was (the settings' projections)
    snap->modelLabel = st.ok() || req.model ? stackLabel : projectionLabel(req.settings);
    if (!st.ok()) {
        trace->layers.clear();
        snap->status = st;
        snap->message = QString::fromStdString(st.message);
    }
    if (req.model) {
        snap->model = req.model;
        snap->modelInfo = req.model->info();
        if (st.ok())
            snap->induction = models.inductionFor(req.model, snap->inductionProblem);
    }
    if (st.ok() && longText) {
        snap->longText = true;
        snap->longTextFrom = weightsTokens;
        snap->tiles = std::make_shared<LongTextTiles>(trace);
    }
    snap->trace = std::move(trace);
    return snap;
}

namespace {

bool readMatrix(const QJsonValue &v, Mat<float> &m, QString &error, const QString &field)
{
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isArray()) {
        error = field + QStringLiteral(": expected an array of rows");
        return false;
    }
    const QJsonArray rows = v.toArray();
    const int r = int(rows.size());
    const int c = r > 0 && rows.at(0).isArray() ? int(rows.at(0).toArray().size()) : 0;
    if (r == 0 || c == 0) {
        error = field + QStringLiteral(": empty matrix");
        return false;
    }
    m.resize(r, c);
    for (int i = 0; i < r; ++i) {
        const QJsonArray row = rows.at(i).toArray();
        if (row.size() != c) {
            error = field + QStringLiteral(": row %1 has %2 numbers, expected %3").arg(i).arg(row.size()).arg(c);
            return false;
        }
        for (int j = 0; j < c; ++j) {
            if (!row.at(j).isDouble()) {
                error = field + QStringLiteral(": [%1][%2] is not a number").arg(i).arg(j);
                return false;
            }
            m(i, j) = float(row.at(j).toDouble());
        }
    }
    return true;
}

bool readVector(const QJsonValue &v, Vec<float> &b, QString &error, const QString &field)
{
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isArray()) {
        error = field + QStringLiteral(": expected an array of numbers");
        return false;
    }
    const QJsonArray a = v.toArray();
    b.resize(a.size());
    for (int i = 0; i < a.size(); ++i) {
        if (!a.at(i).isDouble()) {
            error = field + QStringLiteral(": [%1] is not a number").arg(i);
            return false;
        }
        b(i) = float(a.at(i).toDouble());
    }
    return true;
}

} // namespace

Status loadProjectionsFile(const QString &path, Projections<float> &out)
{
    // a regular file of at most 64 MB (never /dev/zero, a FIFO or a device), checked as the core
    // checks its own JSON (nesting, duplicate keys, numbers beyond float64) before Qt parses it
    std::string bytes;
    if (Status st = readCheckedJsonFile(path.toStdString(), 64'000'000, bytes); !st)
        return st;
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(bytes), &pe);
    if (doc.isNull())
        return Status::error(StatusCode::ParseError,
                             (path + QStringLiteral(": offset %1: %2").arg(pe.offset).arg(pe.errorString())).toStdString());
    QJsonObject o = doc.object();
    if (o.contains(QStringLiteral("inputs")) && o.value(QStringLiteral("inputs")).isObject())
        o = o.value(QStringLiteral("inputs")).toObject(); // a case file
    Projections<float> p;
    QString error;
    const bool ok = readMatrix(o.value(QStringLiteral("W_q")), p.q.W, error, QStringLiteral("W_q"))
        && readVector(o.value(QStringLiteral("b_q")), p.q.b, error, QStringLiteral("b_q"))
        && readMatrix(o.value(QStringLiteral("W_k")), p.k.W, error, QStringLiteral("W_k"))
        && readVector(o.value(QStringLiteral("b_k")), p.k.b, error, QStringLiteral("b_k"))
        && readMatrix(o.value(QStringLiteral("W_v")), p.v.W, error, QStringLiteral("W_v"))
        && readVector(o.value(QStringLiteral("b_v")), p.v.b, error, QStringLiteral("b_v"))
        && readMatrix(o.value(QStringLiteral("W_o")), p.o.W, error, QStringLiteral("W_o"))
        && readVector(o.value(QStringLiteral("b_o")), p.o.b, error, QStringLiteral("b_o"));
    if (!ok)
        return Status::error(StatusCode::ParseError, (path + QStringLiteral(": ") + error).toStdString());
    if (p.q.isIdentity() && p.k.isIdentity() && p.v.isIdentity() && p.o.isIdentity())
        return Status::error(StatusCode::ParseError,
                             (path + QStringLiteral(": no W_q, W_k, W_v or W_o found")).toStdString());
    out = std::move(p);
    return {};
}

} // namespace attnviz::ui
