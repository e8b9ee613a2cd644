// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model's snapshot (T5, BART, mBART, Marian): the source traced with its target
// (teacher-forced, or generated first where the target is empty: greedy or the window's beams), and the snapshot's three
// attentions as snapshots of their own for the views that draw one attention (seq2seqView).
#include "live/seq2seqcompute.h"

#include "attnviz/backend.h"
#include "attnviz/encoderdecoder.h"

#include <QElapsedTimer>
#include <QObject>

#include <algorithm>

namespace attnviz::ui {

namespace {

void labelsOf(const std::vector<TraceToken> &tokens, QStringList &text, std::vector<uint8_t> &unknown)
{
    text.clear();
    text.reserve(int(tokens.size()));
    unknown.assign(tokens.size(), 0);
    for (size_t i = 0; i < tokens.size(); ++i) {
        text << QString::fromStdString(tokens[i].display);
        unknown[i] = tokens[i].unknown ? 1 : 0;
    }
}

// The decoder's snapshot `d` with one of the other attentions as its trace's layers.
std::shared_ptr<ComputeSnapshot> viewOf(const ComputeSnapshot &d, AttentionKind kind)
{
    auto v = std::make_shared<ComputeSnapshot>(d);
    v->encoderView.reset();
    v->crossView.reset();
    v->attentionKind = kind;
    const Trace<float> &full = *d.trace;
    auto t = std::make_shared<Trace<float>>();
    t->tokens = full.queriesOf(kind);
    if (kind == AttentionKind::Cross)
        t->keyTokens = full.seq2seq.sourceTokens;
    t->totalTokens = int(t->tokens.size());
    t->totalKeyTokens = int(t->keys().size());
    t->layers = full.attentions(kind);
    t->embeddings = kind == AttentionKind::Encoder ? full.seq2seq.sourceEmbeddings : full.embeddings;
    t->input = kind == AttentionKind::Encoder ? full.seq2seq.sourceEmbeddings : full.input;
    if (kind == AttentionKind::Cross)
        t->keyEmbeddings = full.seq2seq.encoderFinal;
    t->final = kind == AttentionKind::Encoder ? full.seq2seq.encoderFinal : full.final;
    t->device = full.device;
    t->deviceNote = full.deviceNote;
    t->producer = 0; // never continued by the model
    v->cross = kind == AttentionKind::Cross;
    labelsOf(t->tokens, v->queryLabels, v->queryUnknown);
    labelsOf(t->keys(), v->keyLabels, v->keyUnknown);
    v->totalQueryTokens = t->totalTokens;
    v->totalKeyTokens = t->totalKeyTokens;
    v->settings.mask = MaskChoice::None; // the encoder reads the whole source, the decoder's queries all of it
    // describeConfig says "cross-attention" of a cross snapshot itself
    v->modelLabel = d.modelLabel + QStringLiteral(" · ")
        + (kind == AttentionKind::Cross ? QObject::tr("target rows × source columns") : attentionKindDescription(kind));
    v->trace = std::move(t);
    return v;
}

} // namespace

QString attentionKindName(AttentionKind kind)
{
    switch (kind) {
    case AttentionKind::Encoder: return QObject::tr("Encoder");
    case AttentionKind::Self: return QObject::tr("Decoder");
    case AttentionKind::Cross: return QObject::tr("Cross");
    }
    return {};
}

QString attentionKindDescription(AttentionKind kind)
{
    switch (kind) {
    case AttentionKind::Encoder: return QObject::tr("encoder self-attention (source × source)");
    case AttentionKind::Self: return QObject::tr("decoder self-attention (target × target, causal)");
    case AttentionKind::Cross: return QObject::tr("cross-attention (target rows × source columns)");
    }
    return {};
}

SnapshotPtr seq2seqView(const SnapshotPtr &s, AttentionKind kind)
{
    if (!s || !s->encoderDecoder)
        return s;
    if (kind == AttentionKind::Encoder && s->encoderView)
        return s->encoderView;
    if (kind == AttentionKind::Cross && s->crossView)
        return s->crossView;
    return s;
}

SnapshotPtr seq2seqNotYet(const SnapshotPtr &s, const QString &view)
{
    if (!s || !s->encoderDecoder || !s->hasResult())
        return s;
    auto v = std::make_shared<ComputeSnapshot>(*s);
    v->encoderView.reset();
    v->crossView.reset();
    v->message = QObject::tr("%1: not yet for encoder-decoder models").arg(view);
    v->status = Status::error(StatusCode::Unavailable, v->message.toStdString());
    auto t = std::make_shared<Trace<float>>();
    t->tokens = s->trace->tokens;
    t->totalTokens = s->trace->totalTokens;
    v->trace = std::move(t);
    return v;
}

bool encoderDecoderRequest(const ComputeRequest &req)
{
    return req.model && req.model->info().architecture.encoderDecoder;
}

std::shared_ptr<ComputeSnapshot> seq2seqSnapshot(const ComputeRequest &req)
{
    QElapsedTimer timer;
    timer.start();
    auto snap = std::make_shared<ComputeSnapshot>();
    snap->generation = req.generation;
    snap->sentence = req.sentence;
    snap->settings = req.settings;
    const ModelInfo info = req.model->info();
    ComputeSettings &c = snap->settings;
    c.numHeads = std::max(1, info.heads);
    // T5 multiplies q·k by nothing (its 1/sqrt(d_kv) lives in W_q's initialisation); BART and Marian by 1/sqrt(d_head)
    c.scaleRule = info.architecture.attentionScale == 1.0 ? ScaleRule::None : ScaleRule::InvSqrtDHead;
    c.normalization = Normalization::Softmax;
    c.maskMethod = MaskMethod::NegInf;
    c.mask = MaskChoice::Causal; // the decoder's self-attention, which this snapshot's layers are
    c.dropout = 0.0;
    snap->encoderDecoder = true;
    snap->model = req.model;
    snap->modelInfo = info;
    snap->modelLabel = QString::fromStdString(info.name);
    snap->backendName = QStringLiteral("cpu");
    snap->device = QString::fromStdString(cpuDeviceName());
    snap->inductionProblem = QObject::tr("head roles: not yet for encoder-decoder models");

    Model &model = *req.model;
    TraceRequest tr;
    tr.text = req.sentence.toStdString();
    tr.cancel = req.cancel;
    tr.allPredictions = true; // the Predictions dock's list at every decoder position
    // T5's relative position bias is added to the scores and cannot be recovered from q and k: the
    // pipeline's bias stage reads the scores kept (H × t² a layer; the other families derive theirs)
    tr.keepScores = info.architecture.positions == PositionKind::RelativeBuckets;
    auto trace = std::make_shared<Trace<float>>();
    Status st;
    if (req.target.trimmed().isEmpty() && !req.sentence.trimmed().isEmpty()) {
        // the folder's settings (max_length, its processors) with the window's beams, as `attnviz
        // generate --beams N`: the kept beam's target is traced, its cross-attention rows those of its steps
        Seq2SeqGenerateOptions opt;
        opt.beams = std::clamp(req.beams, 1, 4);
        snap->targetBeams = opt.beams;
        Seq2SeqGeneration g;
        st = generateTarget(model, tr, opt, g);
        if (st.ok()) {
            tr.targetIds = g.ids;
            snap->targetGenerated = true;
            snap->target = QString::fromStdString(g.text);
        }
    } else {
        tr.target = req.target.toStdString();
        snap->target = req.target;
    }
    if (req.cancel && req.cancel->load())
        st = Status::error(StatusCode::Cancelled, "cancelled");
    if (st.ok())
        st = model.trace(tr, *trace);
    snap->computeMs = double(timer.nsecsElapsed()) / 1e6;
    labelsOf(trace->tokens, snap->queryLabels, snap->queryUnknown);
    snap->keyLabels = snap->queryLabels;
    snap->keyUnknown = snap->queryUnknown;
    snap->totalQueryTokens = snap->totalKeyTokens = int(trace->tokens.size());
    if (!st.ok()) {
        trace->layers.clear();
        snap->status = st;
        snap->message = QString::fromStdString(st.message);
        snap->trace = std::move(trace);
        return snap;
    }
    snap->trace = std::move(trace);
    snap->encoderView = viewOf(*snap, AttentionKind::Encoder);
    snap->crossView = viewOf(*snap, AttentionKind::Cross);
    return snap;
}

} // namespace attnviz::ui
