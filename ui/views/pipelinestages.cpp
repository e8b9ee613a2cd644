// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline's stage table (kStageSpecs) and each stage's functions: StageFill's make a stage's
// matrix, title and caption; Explanation's write the arithmetic behind a clicked cell; the related*
// functions outline where that cell came from and what it feeds. The widget is pipelineview.cpp.
#include "views/pipelinestages.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attnviz::ui {

using Kind = StageKind;

namespace {

constexpr int kMaxTerms = 12; // terms written out in a sum before "…"

QString tr(const char *text, const char *disambiguation = nullptr, int n = -1)
{
    return PipelineView::tr(text, disambiguation, n);
}

QString num(double v) { return stageNumber(v); }

QString esc(const QString &s) { return s.toHtmlEscaped(); }

QString shape(Eigen::Index r, Eigen::Index c) { return QStringLiteral("%1 × %2").arg(r).arg(c); }

// "a×b + c×d + …": the first kMaxTerms products of a sum, then how many are left out.
template <typename F>
QString termList(int n, F term)
{
    QStringList t;
    for (int k = 0; k < n && k < kMaxTerms; ++k)
        t << term(k);
    QString s = t.join(QStringLiteral(" + "));
    if (n > kMaxTerms)
        s += QStringLiteral(" + … (%1 more terms)").arg(n - kMaxTerms);
    return s;
}

// A sliding-window layer's extra mask, said after the causal one (Mistral, Gemma, Qwen's window layers).
QString slidingWindowNote(const Architecture &a, int layer)
{
    const int w = layer >= 0 && layer < int(a.window.size()) ? a.window[size_t(layer)] : 0;
    return w > 0 ? QCoreApplication::translate("PipelineView", " This layer slides a window of %1 tokens: keys %1 or "
                                                               "more tokens back are hatched too.").arg(w)
                 : QString();
}

// A real checkpoint whose blocks normalize the residual stream before attention (GPT-2, Llama, Gemma).
bool preNorm(const ComputeSnapshot &s)
{
    return s.modelInfo.architecture.layers > 0 && s.modelInfo.architecture.placement != NormPlacement::Post;
}

// An encoder-decoder model's attention (encoder, decoder self- or cross-attention) as the stages
// name it, and whether its scores add T5's relative position bias (a T5's encoder and decoder
// self-attention, a T5 encoder alone's; cross-attention adds none).
bool seq2seqCross(const ComputeSnapshot &s) { return s.encoderDecoder && s.attentionKind == AttentionKind::Cross; }
bool t5Positions(const ComputeSnapshot &s)
{
    return s.fromModel() && s.modelInfo.architecture.positions == PositionKind::RelativeBuckets;
}
bool relativeBias(const ComputeSnapshot &s) { return t5Positions(s) && !seq2seqCross(s); }
// An encoder's attention: an encoder-decoder model's Encoder, or a model that is an encoder alone.
bool encoderSide(const ComputeSnapshot &s) { return !s.encoderDecoder || s.attentionKind == AttentionKind::Encoder; }
QString stackName(const ComputeSnapshot &s)
{
    return encoderSide(s) ? QCoreApplication::translate("PipelineView", "encoder")
                          : QCoreApplication::translate("PipelineView", "decoder");
}

// The norm before the projections, as the formulas name it.
QString normName(const ComputeSnapshot &s)
{
    return s.modelInfo.architecture.norm == NormKind::LayerNorm ? QStringLiteral("LN₁") : QStringLiteral("RMSNorm₁");
}

// What turns q and k after the projection: "rotary positions", "the per-head norm and rotary positions".
QString turnWords(const ComputeSnapshot &s)
{
    const Architecture &a = s.modelInfo.architecture;
    const bool rotary = a.positions == PositionKind::Rotary;
    if (a.qkNorm)
        return rotary ? tr("the per-head norm and rotary positions") : tr("the per-head norm");
    return tr("rotary positions");
}

// The norm before a pre-norm block's MLP, as the formulas name it.
QString mlpNormName(const ComputeSnapshot &s)
{
    return s.modelInfo.architecture.norm == NormKind::LayerNorm ? QStringLiteral("LN₂") : QStringLiteral("RMSNorm₂");
}

// The gate's activation as a name ("SiLU") and as the stage titles write it applied to G.
QString activationName(Activation a)
{
    switch (a) {
    case Activation::Silu: return QStringLiteral("SiLU");
    case Activation::GeluTanh: return QStringLiteral("GELU");
    case Activation::GeluErf: return QStringLiteral("GELU");
    case Activation::Relu: return QStringLiteral("ReLU");
    }
    return QString();
}
QString activationFormula(Activation a)
{
    switch (a) {
    case Activation::Silu: return QStringLiteral("SiLU(G) = G·σ(G)");
    case Activation::GeluTanh: return QStringLiteral("GELU_tanh(G)");
    case Activation::GeluErf: return QStringLiteral("GELU(G)");
    case Activation::Relu: return QStringLiteral("max(G, 0)");
    }
    return QString();
}

// One stage's content being made: the context unpacked into the names every stage function uses.
// A stage's function is a member: it sets st (name, title, caption, matrix, labels).
struct StageFill {
    const StageContext &cx;
    StageContent &st;
    const Kind kind = st.kind;
    const ComputeSnapshot *s = cx.snapshot;
    const bool ok = s && s->hasResult();
    const int layer = cx.layer;
    const int h = cx.head;
    const int dh = ok ? s->attention(layer).dHead : 0;
    const int H = ok ? s->attention(layer).numHeads : 0;
    const QString headSuffix = H > 1 ? QStringLiteral("_%1").arg(h) : QString(), &hs = headSuffix;
    const QString headWord = H > 1 ? tr(" of head %1").arg(h) : QString();
    const bool cross = ok && s->cross;
    const bool stack = ok && s->deep();
    const std::shared_ptr<const Projections<float>> proj = ok ? s->projections(layer) : nullptr;
    const ComputeSettings c = ok ? effectiveSettings(*s) : ComputeSettings();
    const bool model = ok && s->fromModel();
    const double scale = cx.scale;
    const Mat<float> *raw = cx.raw, *scaledScores = cx.scaled, *maskedScores = cx.masked, *bias = cx.bias;
    const bool seq2seq = ok && s->encoderDecoder;
    const bool scoresDerived = cx.scoresDerived;
    const QStringList *queryLabels = cx.queryLabels, *keyLabels = cx.keyLabels;

    // the shown head's columns of a per-head matrix
    void headCols(const Mat<float> &m)
    {
        if (m.cols() >= (h + 1) * dh)
            st.owned = m.middleCols(h * dh, dh);
        st.matrix = &st.owned;
    }
    void scoresMissing()
    {
        st.message = tr("Not derived at this size: %1 × %2 scores per head (over %L3 cells). The live "
                        "computation keeps no score matrices; the weights stage below is exact.")
                         .arg(s->tq())
                         .arg(s->tk())
                         .arg(PipelineView::kMaxDerivedCells);
    }

    void input();
    void keyInput();
    void projected(); // Q, K and V
    void turned();    // Q and K rotated (or normalized per head)
    void rawScores();
    void scaled();
    void positionBias();
    void masked();
    void weights();
    void context();
    void concat();
    void output();
    void mlp(); // the gated MLP's four stages
};

// The arithmetic behind one clicked cell (i, j) of a stage, written into `out` as HTML paragraphs:
// the context unpacked, and what the explanations share (sums written out, dot products, why a key
// is masked). A stage's explanation is a member.
struct Explanation {
    using Cols = decltype(std::declval<const Mat<float> &>().middleCols(0, 0));

    const StageContext &cx;
    const Kind kind;
    const int i, j;
    const ComputeSnapshot &s = *cx.snapshot;
    const int layer = cx.layer;
    const QStringList *queryLabels = cx.queryLabels, *keyLabels = cx.keyLabels;
    const SequenceResult<float> &r = s.seq(layer);
    const ComputeSettings c = effectiveSettings(s);
    const int h = cx.head, dh = s.attention(layer).dHead, H = s.attention(layer).numHeads;
    const QString qTok = esc(queryLabels->value(i)), kTok = esc(keyLabels->value(j));
    const QString head = H > 1 ? QStringLiteral(", head %1").arg(h) : QString();
    const bool masked = r.mask.size() && i < r.mask.rows() && j < r.mask.cols() && r.mask(i, j);
    const Cols qh = r.q.middleCols(h * dh, dh);
    const Cols kh = r.k.middleCols(h * dh, dh);
    const Cols vh = r.v.middleCols(h * dh, dh);
    QString out = QString();

    void line(const QString &t) { out += QStringLiteral("<p>") + t + QStringLiteral("</p>"); }
    void mono(const QString &t)
    {
        out += QStringLiteral("<p style=\"font-family: '%1', monospace\">").arg(cx.monoFamily) + t + QStringLiteral("</p>");
    }
    // T5's relative position bias at (qi, kj) of the shown head (0 where the attention adds none)
    double bias(int qi, int kj) const
    {
        const Mat<float> *b = cx.bias;
        return b && qi < b->rows() && kj < b->cols() ? double((*b)(qi, kj)) : 0.0;
    }
    bool biased() const { return cx.bias && cx.bias->size() > 0; }
    double dot(int qi, int kj) const
    {
        double sum = 0;
        for (int d = 0; d < dh; ++d)
            sum += double(qh(qi, d)) * double(kh(kj, d));
        return sum;
    }
    QString dotTerms(int qi, int kj) const
    {
        return termList(dh, [&](int d) { return QStringLiteral("%1×%2").arg(num(qh(qi, d)), num(kh(kj, d))); });
    }
    QString scaleText() const
    {
        switch (c.scaleRule) {
        case ScaleRule::InvSqrtDHead: return QStringLiteral("1/√%1 = %2").arg(dh).arg(num(s.attention(layer).scale));
        case ScaleRule::InvSqrtDModel: return QStringLiteral("1/√%1 = %2").arg(s.attention(layer).dModel).arg(num(s.attention(layer).scale));
        case ScaleRule::None: return QStringLiteral("1 (no scaling)");
        case ScaleRule::Temperature:
            return QStringLiteral("1/(%1·√%2) = %3").arg(c.temperature, 0, 'g', 3).arg(dh).arg(num(s.attention(layer).scale));
        case ScaleRule::Explicit: return num(s.attention(layer).scale);
        }
        return QString();
    }
    QString maskReason(int qi, int kj) const
    {
        QStringList why;
        if ((c.mask == MaskChoice::Causal || c.mask == MaskChoice::CausalPadding) && kj > qi)
            why << QStringLiteral("causal: key %1 comes after query %2").arg(kj).arg(qi);
        if ((c.mask == MaskChoice::Padding || c.mask == MaskChoice::CausalPadding) && s.paddedKeys.count(kj))
            why << QStringLiteral("key %1 is padding").arg(kj);
        if (c.mask == MaskChoice::Custom && s.customMask.count({qi, kj}))
            why << QStringLiteral("masked by hand");
        return why.isEmpty() ? QStringLiteral("masked") : why.join(QStringLiteral("; "));
    }
    // Q, K or V[i, j] of the shown head: the input row through its projection
    void project(const char *letter, const Mat<float> &x, const Mat<float> &result, const Linear<float> *lin);

    void input(); // X and X_kv
    void q();
    void k();
    void v();
    void turned(); // Q and K rotated
    void scores(); // raw, scaled and masked
    void weights();
    void context();
    void concat();
    void output();
    void mlp(); // the gated MLP's four stages
};

// ---- each stage's matrix, title and caption ------------------------------------------------

void StageFill::input()
{
    st.name = stack ? tr("Residual stream") : tr("Input X");
    if (seq2seq) {
        const bool crossAtt = s->attentionKind == AttentionKind::Cross;
        const int l = s->layerIndex(layer);
        st.matrix = &s->queryInput(layer);
        st.title = (crossAtt ? tr("X = decoder stream after block %1's self-attention").arg(l)
                             : tr("X = %1 stream into block %2").arg(stackName(*s)).arg(l))
            + QStringLiteral("   ") + shape(s->tq(), s->queryInput(layer).cols());
        st.caption = (crossAtt ? tr("One row per target token: the decoder's stream after this block's self-attention. "
                                    "The queries come from it.")
                      : l == 0 ? tr("One row per %1 token: its embedding entering block 0.").arg(s->attentionKind == AttentionKind::Encoder ? tr("source") : tr("target"))
                               : tr("One row per token: the %1's residual stream entering this block.").arg(stackName(*s)))
            + (preNorm(*s) ? tr(" The model normalizes it (%1) before the projections.").arg(normName(*s)) : QString());
        return;
    }
    if (ok) {
        st.matrix = &s->queryInput(layer);
        st.title = (stack ? tr("X = residual stream into layer %1").arg(s->layerIndex(layer)) : tr("X = token embeddings"))
            + QStringLiteral("   ") + shape(s->tq(), s->queryInput(layer).cols());
    }
    st.caption = model ? (s->layerIndex(layer) == 0
                              ? (t5Positions(*s) ? tr("One row per token: its embedding, entering layer 0 (T5 adds no position "
                                                      "vector: positions enter as a bias on the scores).")
                                                 : tr("One row per token: its embedding plus its position's, entering layer 0."))
                                                       : tr("One row per token: the residual stream entering this layer."))
                           + (preNorm(*s) ? tr(" The model normalizes it (%1) before the projections.").arg(normName(*s)) : QString())
        : cross ? tr("One row per query token: its word vector. Queries come from this sentence.")
                : tr("One row per token: its word vector. Queries, keys and values all start here.");
}

void StageFill::keyInput()
{
    st.name = tr("Key/value input");
    if (ok) {
        st.matrix = &s->keyInput(layer);
        st.title = tr("X_kv = key/value sentence") + QStringLiteral("   ") + shape(s->tk(), s->keyInput(layer).cols());
    }
    st.rows = keyLabels;
    st.yAxis = tr("key");
    st.caption = tr("Cross-attention: keys and values come from the second sentence.");
    if (seq2seq) {
        st.name = tr("Encoder output");
        st.title = tr("H_enc = the encoder's final states") + QStringLiteral("   ") + shape(s->tk(), s->keyInput(layer).cols());
        st.caption = tr("Cross-attention: keys and values come from the encoder's output over the source (after its "
                        "final norm), the same for every decoder block; the queries from the target.");
    }
}

void StageFill::projected()
{
    const char *letter = kind == Kind::Q ? "Q" : kind == Kind::K ? "K" : "V";
    const QString L = QString::fromLatin1(letter), l = L.toLower();
    // grouped-query attention: K and V are one key/value head's, shared by a group of query heads
    const AttentionResult<float> *att = ok ? &s->attention(layer) : nullptr;
    const bool grouped = att && kind != Kind::Q && att->kvHeads > 0 && att->kvHeads < att->numHeads;
    const int kv = grouped ? att->kvHeadOf(h) : h, group = grouped ? att->numHeads / att->kvHeads : 1;
    st.name = L + (grouped ? tr(" of key/value head %1 (query heads %2–%3)").arg(kv).arg(kv * group).arg((kv + 1) * group - 1)
                           : headWord);
    const QString hs = grouped ? QStringLiteral("_kv%1").arg(kv) : headSuffix;
    if (kind != Kind::Q) {
        st.rows = keyLabels;
        st.yAxis = tr("key");
    }
    if (ok) {
        const SequenceResult<float> &r = s->seq(layer);
        const bool turned = r.qPre.size() != 0; // Q and K as projected; the rotated stages follow
        headCols(kind == Kind::Q ? (turned ? r.qPre : r.q) : kind == Kind::K ? (turned ? r.kPre : r.k) : r.v);
        const Linear<float> *lin = !proj ? nullptr : kind == Kind::Q ? &proj->q : kind == Kind::K ? &proj->k : &proj->v;
        const QString x = kind != Kind::Q && cross ? QStringLiteral("X_kv") : QStringLiteral("X");
        QString f;
        if (seq2seq) {
            const std::shared_ptr<const Projections<float>> own = s->layer(layer).projections.get(); // `proj` is null: deep
            const Linear<float> *ownLin = !own ? nullptr : kind == Kind::Q ? &own->q : kind == Kind::K ? &own->k : &own->v;
            const QString in = kind != Kind::Q && seq2seqCross(*s) ? QStringLiteral("H_enc")
                : preNorm(*s) ? normName(*s) + QStringLiteral("(X)") : QStringLiteral("X");
            f = QStringLiteral("%1%2 = %3·W_%4ᵀ%5").arg(L, hs, in, l, ownLin && ownLin->hasBias() ? QStringLiteral(" + b_") + l : QString());
        } else if (model)
            f = QStringLiteral("%1%2 = %3·W_%4ᵀ + b_%4").arg(L, hs, preNorm(*s) ? normName(*s) + QStringLiteral("(X)") : QStringLiteral("X"), l);
        else if (stack)
            f = QStringLiteral("%1%2 = LN(X)·W_%3ᵀ").arg(L, hs, l);
        else if (!lin || lin->isIdentity())
            f = H > 1 ? QStringLiteral("%1%2 = %3[:, %4…%5]").arg(L, hs, x).arg(h * dh).arg((h + 1) * dh - 1)
                      : QStringLiteral("%1 = %2 (identity)").arg(L, x);
        else
            f = QStringLiteral("%1%2 = %3·W_%4ᵀ%5").arg(L, hs, x, l, lin->hasBias() ? QStringLiteral(" + b_") + l : QString());
        st.title = f + QStringLiteral("   ") + shape(st.owned.rows(), st.owned.cols());
    }
    st.caption = kind == Kind::Q   ? tr("Queries: what each token is looking for.")
        : kind == Kind::K          ? tr("Keys: what each token offers to be found by.")
                                      : tr("Values: what each token passes on when attended to.");
    if (ok && (!proj || (kind == Kind::Q ? proj->q : kind == Kind::K ? proj->k : proj->v).isIdentity()) && !stack)
        st.caption += tr(" Identity projection: a slice of X itself.");
    if (grouped)
        st.caption += tr(" Grouped-query attention: %1 key/value heads for %2 query heads, shown once per "
                         "group: key/value head %3 serves query heads %4–%5, so they all read these same %6.")
                          .arg(att->kvHeads)
                          .arg(att->numHeads)
                          .arg(kv)
                          .arg(kv * group)
                          .arg((kv + 1) * group - 1)
                          .arg(kind == Kind::K ? tr("keys") : tr("values"));
    if (ok && kind != Kind::V && s->seq(layer).qPre.size())
        st.caption += tr(" As projected, before %1: the next stages show them after.").arg(turnWords(*s));
}

void StageFill::turned()
{
    const bool q = kind == Kind::QRotated;
    const AttentionResult<float> *att = ok ? &s->attention(layer) : nullptr;
    const bool grouped = att && !q && att->kvHeads > 0 && att->kvHeads < att->numHeads;
    const int kv = grouped ? att->kvHeadOf(h) : h;
    const bool rotary = ok && s->modelInfo.architecture.positions == PositionKind::Rotary;
    const QString L = q ? QStringLiteral("Q") : QStringLiteral("K");
    st.name = (rotary ? tr("%1 rotated").arg(L) : tr("%1 normalized").arg(L))
        + (grouped ? tr(" of key/value head %1").arg(kv) : headWord);
    if (!q) {
        st.rows = keyLabels;
        st.yAxis = tr("key");
    }
    if (ok) {
        const SequenceResult<float> &r = s->seq(layer);
        headCols(q ? r.q : r.k);
        const QString sub = grouped ? QStringLiteral("_kv%1").arg(kv) : hs;
        const Architecture &arch = s->modelInfo.architecture;
        QString f = L + sub;
        if (arch.qkNorm)
            f = QStringLiteral("RMSNorm(") + f + QStringLiteral(")");
        if (rotary)
            f = QStringLiteral("RoPE(") + f + QStringLiteral(", position)");
        st.title = QStringLiteral("%1%2 = %3   %4").arg(L, sub, f, shape(st.owned.rows(), st.owned.cols()));
    }
    st.caption = (q ? tr("Queries") : tr("Keys")) + QStringLiteral(" ") + tr("after %1.").arg(ok ? turnWords(*s) : QString());
    if (ok && s->modelInfo.architecture.positions == PositionKind::Rotary)
        st.caption += tr(" Each pair of dimensions is turned by an angle that grows with the token's position, so "
                         "q·k depends on how far apart two tokens are. The scores read these.");
}

void StageFill::rawScores()
{
    st.name = tr("Raw scores");
    st.cols = keyLabels;
    st.xAxis = tr("key");
    if (ok) {
        const AttentionResult<float> &att = s->attention(layer);
        const QString ks = att.kvHeads > 0 && att.kvHeads < att.numHeads ? QStringLiteral("_kv%1").arg(att.kvHeadOf(h)) : hs;
        st.title = QStringLiteral("S = Q%1·K%2ᵀ   %3").arg(hs, ks, shape(s->tq(), s->tk()));
        if (scoresDerived)
            st.matrix = raw;
        else
            scoresMissing();
    }
    st.caption = tr("Dot product of each query row with each key row, before any scaling: "
                    "large when they point the same way.");
}

void StageFill::scaled()
{
    st.name = tr("Scaled scores");
    st.cols = keyLabels;
    st.xAxis = tr("key");
    if (ok) {
        QString f;
        const Architecture &arch = s->modelInfo.architecture;
        const bool ownScale = model && !seq2seq && !t5Positions(*s) && arch.attentionScale > 0;
        switch (ownScale ? ScaleRule::Explicit : c.scaleRule) {
        case ScaleRule::InvSqrtDHead: f = QStringLiteral("S' = S / √%1  (× %2)").arg(dh).arg(num(scale)); break;
        case ScaleRule::InvSqrtDModel:
            f = QStringLiteral("S' = S / √d_model = S / √%1  (× %2)").arg(s->attention(layer).dModel).arg(num(scale));
            break;
        case ScaleRule::None: f = QStringLiteral("S' = S  (no scaling, × 1)"); break;
        case ScaleRule::Temperature:
            f = QStringLiteral("S' = S / (T·√%1), T = %2  (× %3)").arg(dh).arg(c.temperature, 0, 'g', 3).arg(num(scale));
            break;
        case ScaleRule::Explicit:
            f = ownScale ? QStringLiteral("S' = S / √query_pre_attn_scalar = S / √%1  (× %2)")
                               .arg(1.0 / (arch.attentionScale * arch.attentionScale), 0, 'g', 6)
                               .arg(num(scale))
                         : QStringLiteral("S' = S × %1").arg(num(scale));
            break;
        }
        if (s->attention(layer).softcap > 0)
            f += QStringLiteral(", then %1·tanh(S' / %1)").arg(s->attention(layer).softcap, 0, 'g', 4);
        st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
        if (scoresDerived)
            st.matrix = scaledScores;
        else
            scoresMissing();
    }
    st.caption = ok && t5Positions(*s) && c.scaleRule == ScaleRule::None
        ? tr("T5 does not divide q·k by √d_head: its initialisation folds that factor into W_q, so the scores "
             "go on as they are.")
        : c.scaleRule == ScaleRule::None
        ? tr("No scaling is configured: the scores go to the normalization as they are.")
        : tr("Scaled so that the scores do not grow with the vector width (%1).").arg(scaleRuleName(c.scaleRule));
}

void StageFill::positionBias()
{
    st.name = tr("Position bias") + headWord;
    st.cols = keyLabels;
    st.xAxis = tr("key");
    if (ok) {
        const bool encoder = encoderSide(*s);
        st.title = QStringLiteral("B%1[i, j] = bias(bucket(j − i))   %2").arg(hs, shape(s->tq(), s->tk()));
        if (bias && bias->size())
            st.matrix = bias;
        else if (!scoresDerived)
            scoresMissing();
        else
            st.message = tr("The trace kept no scores: the bias is not recoverable from Q and K.");
        st.caption = tr("T5 adds one learned number per head to each score, chosen by the distance j − i put in "
                        "one of %1 buckets (exact near, logarithmic far, up to %2 tokens); block 0 of the %3 holds the "
                        "table and every block reuses it.")
                         .arg(s->modelInfo.architecture.relative.buckets)
                         .arg(s->modelInfo.architecture.relative.maxDistance)
                         .arg(stackName(*s))
            + (encoder ? tr(" The encoder's buckets tell before from after.")
                       : tr(" The decoder's buckets count only backwards (later keys are masked anyway)."));
    }
}

void StageFill::masked()
{
    st.name = tr("Masked scores");
    st.cols = keyLabels;
    st.xAxis = tr("key");
    st.hatch = true;
    if (ok) {
        const bool any = s->seq(layer).mask.size() > 0;
        const Normalization n = c.normalization;
        QString f;
        const bool biased = bias && bias->size();
        if (!any)
            f = biased ? QStringLiteral("no mask: S'_m = S' + B") : QStringLiteral("no mask: S'_m = S'");
        else if (n == Normalization::Softmax && c.maskMethod == MaskMethod::NegInf)
            f = biased ? QStringLiteral("S'_m = S' + B, −∞ where masked") : QStringLiteral("S'_m = S', −∞ where masked");
        else if (n == Normalization::Softmax)
            f = QStringLiteral("mask M: softmax, × (1 − M), renormalize");
        else
            f = QStringLiteral("S'_m = S', 0 where masked");
        st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
        if (scoresDerived)
            st.matrix = maskedScores;
        else
            scoresMissing();
        st.caption = seq2seq && any
            ? tr("Hatched keys are later target tokens: the decoder lets each token see only itself and what came "
                 "before.")
            : seq2seq && seq2seqCross(*s) ? tr("Mask: none. Every target token sees the whole source.")
            : seq2seq ? tr("Mask: none. The encoder reads the whole source both ways.")
            : model && any && s->modelInfo.causal
            ? tr("Hatched keys are later tokens: a causal model (%1) lets each token see only itself and "
                 "what came before.").arg(QString::fromStdString(s->modelInfo.name))
                  + slidingWindowNote(s->modelInfo.architecture, layer)
            : !any ? tr("Mask: none (%1). Every query sees every key.").arg(maskName(c.mask))
            : n == Normalization::Softmax && c.maskMethod == MaskMethod::MultiplyRenormalize
            ? tr("Hatched keys (%1) are zeroed after the softmax and the rest rescaled to sum to 1.").arg(maskName(c.mask))
            : tr("Hatched keys (%1) are hidden from the query: they will get weight 0.").arg(maskName(c.mask));
    }
}

void StageFill::weights()
{
    st.name = tr("Attention weights");
    st.cols = keyLabels;
    st.xAxis = tr("key");
    st.hatch = true;
    st.signedScale = false;
    if (ok) {
        const WeightMatrix<float> &w = s->weights(layer, h);
        QString f;
        switch (c.normalization) {
        case Normalization::Softmax:
            f = c.maskMethod == MaskMethod::MultiplyRenormalize && s->seq(layer).mask.size()
                ? QStringLiteral("A = renorm(softmax(S') · (1 − M))")
                : QStringLiteral("A = softmax(S'_m)  (each row)");
            break;
        case Normalization::Sum: f = QStringLiteral("A = S'_m / row sum"); break;
        case Normalization::Cosine: f = QStringLiteral("A = cos(q_i, k_j)"); break;
        }
        if (c.dropout > 0)
            f = QStringLiteral("A = dropout_%1(%2)").arg(c.dropout, 0, 'g', 3).arg(f.mid(4));
        st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
        if (w.rows() == s->tq() && w.cols() == s->tk()) {
            st.owned = w.toDense();
            st.matrix = &st.owned;
        } else {
            st.message = tr("The backend did not read these weights back (only the displayed heads are, at "
                            "this size).");
        }
        QString cap = c.normalization == Normalization::Softmax
            ? (c.dropout > 0 ? tr("Before dropout each row sums to 1: how much query i listens to key j.")
                             : tr("Each row sums to 1: how much query i listens to key j."))
            : c.normalization == Normalization::Sum ? tr("Each row divided by its sum (no exponentials).")
                                                    : tr("Cosine similarity of q_i and k_j, not normalized.");
        if (c.dropout > 0)
            cap += tr(" After dropout (p = %1, seed %2): dropped weights are 0, the kept ones × 1/(1−p), so a "
                      "row no longer sums to 1.")
                       .arg(c.dropout, 0, 'g', 3)
                       .arg(c.dropoutSeed);
        if (!s->seq(layer).fullyMaskedRows.empty())
            cap += tr(" %n row(s) have every key masked: NaN, as in PyTorch.", "", int(s->seq(layer).fullyMaskedRows.size()));
        if (s->isWindow() && s->windowFirst > 0)
            cap = tr("Each row's weights on the keys of positions %L1–%L2: exact, but a row sums to 1 only over every "
                     "key of the text.")
                      .arg(s->windowFirst)
                      .arg(s->windowFirst + s->tk() - 1);
        st.caption = cap;
    }
}

void StageFill::context()
{
    st.name = tr("Context") + headWord;
    if (ok) {
        headCols(s->seq(layer).context);
        st.title = QStringLiteral("C%1 = A·V%1   %2").arg(hs, shape(st.owned.rows(), st.owned.cols()));
    }
    st.caption = tr("Each query's new vector: the values mixed by that query's weights.");
}

void StageFill::concat()
{
    st.name = tr("Concatenated heads");
    if (ok) {
        st.matrix = &s->seq(layer).context;
        st.title = (H > 1 ? QStringLiteral("concat(C_0 … C_%1)").arg(H - 1) : QStringLiteral("concat(C) = C"))
            + QStringLiteral("   %1 × %2·%3").arg(s->tq()).arg(H).arg(dh);
    }
    st.caption = H > 1 && dh == 1 ? tr("The %1 heads' contexts side by side (head h takes column h).").arg(H)
        : H > 1 ? tr("The %1 heads' contexts side by side (head h takes columns h·%2 … h·%2+%3).")
                      .arg(H)
                      .arg(dh)
                      .arg(dh - 1)
                : tr("One head: the concatenation is that head's context.");
}

void StageFill::output()
{
    st.name = tr("Output");
    if (ok) {
        st.matrix = &s->seq(layer).output;
        const bool identity = !stack && (!proj || proj->o.isIdentity());
        st.title = (identity ? QStringLiteral("no W_o: O = concat")
                             : QStringLiteral("O = concat·W_oᵀ%1").arg(!stack && proj->o.hasBias() ? QStringLiteral(" + b_o") : QString()))
            + QStringLiteral("   ") + shape(s->seq(layer).output.rows(), s->seq(layer).output.cols());
        st.caption = identity ? tr("Identity output projection: the output is the concatenation.")
                              : tr("The output projection mixes the heads back into d_out = %1 numbers per token.")
                                    .arg(s->seq(layer).output.cols());
    }
}

void StageFill::mlp()
{
    const Architecture *arch = model ? &s->modelInfo.architecture : nullptr;
    const QString act = arch ? activationName(arch->activation) : QStringLiteral("act");
    switch (kind) {
    case Kind::MlpGate: st.name = tr("MLP gate"); break;
    case Kind::MlpActivated: st.name = tr("Gate after %1").arg(act); break;
    case Kind::MlpUp: st.name = tr("MLP up"); break;
    default: st.name = tr("Gate times up"); break;
    }
    st.yAxis = tr("token");
    st.xAxis = tr("neuron");
    st.cols = cx.neuronLabels;
    const LayerTrace<float> *lt = arch ? &s->layer(layer) : nullptr;
    const std::vector<int> *neurons = cx.neurons;
    const bool kept = lt && lt->mlpPre.size() && neurons && !neurons->empty();
    const int dff = kept ? int(lt->mlpPre.cols()) : arch ? arch->dFeedForward : 0;
    const int shown = kept ? int(neurons->size()) : 0;
    if (arch) {
        const QString x = mlpNormName(*s) + QStringLiteral("(X′)");
        const auto bias = [arch](const char *w) { return arch->mlpBias ? QStringLiteral(" + b_") + QLatin1String(w) : QString(); };
        QString f;
        switch (kind) {
        case Kind::MlpGate: f = QStringLiteral("G = %1·W_gateᵀ%2").arg(x, bias("gate")); break;
        case Kind::MlpActivated: f = QStringLiteral("A = ") + activationFormula(arch->activation); break;
        case Kind::MlpUp: f = QStringLiteral("U = %1·W_upᵀ%2").arg(x, bias("up")); break;
        default: f = QStringLiteral("H = %1(G) ⊙ U").arg(arch->activation == Activation::Relu ? QStringLiteral("ReLU") : act); break;
        }
        st.title = f + QStringLiteral("   ") + shape(s->tq(), dff);
        if (kept && shown < dff)
            st.title += tr("  (%1 of %2 neurons shown)").arg(shown).arg(dff);
    }
    switch (kind) {
    case Kind::MlpGate:
        st.caption = tr("The MLP's gate: each token's stream after attention, normalized, times W_gate: one number "
                        "per neuron.");
        if (kept)
            st.caption += shown < dff ? tr(" Shown: the %1 most active of %L2 neurons over this text, strongest first "
                                           "(the same ones in the next three stages).")
                                            .arg(shown)
                                            .arg(dff)
                                      : tr(" All %1 neurons are shown.").arg(dff);
        break;
    case Kind::MlpActivated:
        st.caption = arch && arch->activation == Activation::Relu
            ? tr("The gate through ReLU: 0 for a negative gate, the gate itself otherwise.")
            : tr("The gate through %1: about 0 for a negative gate, about the gate itself for a large one, so it "
                 "opens or shuts each neuron for each token.")
                  .arg(arch && arch->activation == Activation::GeluTanh ? tr("GELU (tanh approximation)") : act);
        break;
    case Kind::MlpUp:
        st.caption = tr("The MLP's up projection: the same normalized row times W_up. The activated gate scales it, "
                        "cell by cell.");
        break;
    default:
        st.caption = arch ? tr("What each neuron passes on: the activated gate times up, cell by cell. W_down maps a "
                               "token's %L1 numbers back to d_model = %2, added to the residual stream.")
                                .arg(dff)
                                .arg(arch->dModel)
                          : tr("What each neuron passes on: the activated gate times up, cell by cell.");
        break;
    }
    if (!ok)
        return;
    if (!kept) {
        st.message = s->isWindow() ? tr("Not yet on a long text: its window of positions keeps no MLP products.")
                                   : tr("This trace kept no MLP products: the window asks for them while the Pipeline tab is "
                                        "shown, and the next trace brings them.");
        return;
    }
    const int t = std::min(s->tq(), int(lt->mlpPre.rows()));
    st.owned.resize(t, shown);
    const Activation a = arch->activation;
    for (int c = 0; c < shown; ++c) {
        const int n = (*neurons)[size_t(c)];
        for (int r = 0; r < t; ++r) {
            const double g = lt->mlpPre(r, n), u = lt->mlpPreLinear(r, n);
            double v = g;
            switch (kind) {
            case Kind::MlpGate: v = g; break;
            case Kind::MlpActivated: v = mlpActivation(a, g); break;
            case Kind::MlpUp: v = u; break;
            default: v = mlpActivation(a, g) * u; break;
            }
            st.owned(r, c) = float(v);
        }
    }
    st.matrix = &st.owned;
}

// ---- each stage's explanation of a clicked cell ---------------------------------------------

void Explanation::project(const char *letter, const Mat<float> &x, const Mat<float> &result, const Linear<float> *lin)
{
    const int g = h * dh + j;
    const QString L = QString::fromLatin1(letter);
    line(QStringLiteral("<b>%1[%2, %3]%4</b> = %5").arg(L).arg(i).arg(j).arg(head, num(result(i, g))));
    const std::shared_ptr<const Projections<float>> P = s.fromModel() ? s.layer(layer).projections.get() : nullptr;
    if (P) {
        // Grouped-query attention: K and V come from the head's key/value head; rotary models
        // show the projection before q/k norm and rotation.
        const AttentionResult<float> &att = s.attention(layer);
        const int kv = att.kvHeadOf(h);
        const int gw = letter[0] == 'Q' ? g : kv * dh + j;
        if (letter[0] != 'Q' && att.kvHeads > 0 && att.kvHeads < att.numHeads)
            line(QStringLiteral("Head %1 reads key/value head %2, which heads %3–%4 share.")
                     .arg(h)
                     .arg(kv)
                     .arg(kv * (att.numHeads / att.kvHeads))
                     .arg((kv + 1) * (att.numHeads / att.kvHeads) - 1));
        const Mat<float> &turned = letter[0] == 'Q' ? r.q : r.k;
        if (letter[0] != 'V' && r.qPre.size() && i < turned.rows() && g < turned.cols())
            line(QStringLiteral("After %1 (the next stages) it is %2.").arg(turnWords(s)).arg(num(turned(i, g))));
        const Linear<float> &W = letter[0] == 'Q' ? P->q : letter[0] == 'K' ? P->k : P->v;
        const Mat<float> &xin = s.layer(layer).attentionIn;
        line(QStringLiteral("x_%1 = %2 (row %1, %3 numbers); %4[%1, %5] = x_%1 · row %6 of W_%7 + b_%7[%6]:")
                 .arg(i)
                 .arg(preNorm(s) ? normName(s) + QStringLiteral(" of the residual stream") : QStringLiteral("the residual stream"))
                 .arg(xin.cols())
                 .arg(L)
                 .arg(g)
                 .arg(gw)
                 .arg(L.toLower()));
        double sum = 0;
        for (int k = 0; k < xin.cols(); ++k)
            sum += double(xin(i, k)) * double(W.W(gw, k));
        mono(termList(int(xin.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(xin(i, k)), num(W.W(gw, k))); })
             + QStringLiteral(" = ") + num(sum));
        if (W.hasBias())
            mono(QStringLiteral("+ b_%1[%2] = %3 + %4 = <b>%5</b>").arg(L.toLower()).arg(gw).arg(num(sum), num(W.b(gw)), num(sum + W.b(gw))));
        return;
    }
    if (s.deep()) {
        line(QStringLiteral("Stack layer %1: computed from the layer-normalized residual stream with the layer's "
                            "W_%2; this view does not expand stack layers' projections.")
                 .arg(s.layerIndex(layer))
                 .arg(L.toLower()));
        return;
    }
    if (!lin || lin->isIdentity()) {
        line(QStringLiteral("Identity projection: %1 = X, so this is column %2 of row %3 of X: %4.")
                 .arg(L)
                 .arg(g)
                 .arg(i)
                 .arg(num(x(i, g))));
        return;
    }
    double sum = 0;
    for (int k = 0; k < x.cols(); ++k)
        sum += double(x(i, k)) * double(lin->W(g, k));
    line(QStringLiteral("x_%1 · (row %2 of W_%3) = Σ_k x_%1,k · W_%3[%2, k]:").arg(i).arg(g).arg(L.toLower()));
    mono(termList(int(x.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(x(i, k)), num(lin->W(g, k))); })
         + QStringLiteral(" = ") + num(sum));
    if (lin->hasBias())
        mono(QStringLiteral("+ b_%1[%2] = %3 + %4 = %5")
                 .arg(L.toLower())
                 .arg(g)
                 .arg(num(sum), num(lin->b(g)), num(sum + lin->b(g))));
}

void Explanation::input()
{
    const bool key = kind == Kind::KeyInput;
    const Mat<float> &x = key ? s.keyInput(layer) : s.queryInput(layer);
    const QString tok = esc(key ? keyLabels->value(i) : queryLabels->value(i));
    line(QStringLiteral("<b>%1[%2, %3]</b> = %4").arg(key ? QStringLiteral("X_kv") : QStringLiteral("X")).arg(i).arg(j).arg(num(x(i, j))));
    if (s.deep())
        line(QStringLiteral("Component %1 of token %2 “%3” in the residual stream entering layer %4.").arg(j).arg(i).arg(tok).arg(s.layerIndex(layer)));
    else if (const std::vector<uint8_t> &u = key ? s.keyUnknown : s.queryUnknown; size_t(i) < u.size() && u[size_t(i)])
        line(QStringLiteral("Token %1 “%2” is not in the table %3: component %4 of its deterministic stand-in vector.")
                 .arg(i).arg(tok, esc(s.tableName)).arg(j));
    else
        line(QStringLiteral("Component %1 of the word vector of token %2 “%3” (table %4).").arg(j).arg(i).arg(tok, esc(s.tableName)));
}

void Explanation::q()
{
    const auto P = s.projections(layer); // held while the explanation reads it
    project("Q", s.queryInput(layer), r.qPre.size() ? r.qPre : r.q, P ? &P->q : nullptr);
}

void Explanation::k()
{
    const auto P = s.projections(layer); // held while the explanation reads it
    project("K", s.keyInput(layer), r.kPre.size() ? r.kPre : r.k, P ? &P->k : nullptr);
}

void Explanation::turned()
{
    // rotate_half: dimension j < dims / 2 pairs with j + dims / 2, turned by i · θ_(j mod dims / 2)
    const bool q = kind == Kind::QRotated;
    const Mat<float> &pre = q ? r.qPre : r.kPre, &post = q ? r.q : r.k;
    const int g = h * dh + j;
    const QString L = q ? QStringLiteral("Q") : QStringLiteral("K");
    line(QStringLiteral("<b>%1 rotated[%2, %3]%4</b> = %5").arg(L).arg(i).arg(j).arg(head, num(post(i, g))));
    const Architecture &arch = s.modelInfo.architecture;
    const Rope &rope = arch.ropeOf(s.layerIndex(layer));
    const int half = rope.dims / 2;
    if (arch.qkNorm) {
        line(QStringLiteral("As projected it was %1; %2 first normalizes the head's %3 numbers, then turns them.")
                 .arg(num(pre(i, g)))
                 .arg(turnWords(s))
                 .arg(dh));
    } else if (arch.positions == PositionKind::Rotary && j < rope.dims && half > 0) {
        const RopeTable table = ropeTable(rope, int(post.rows()));
        const int k = j % half, partner = j < half ? j + half : j - half;
        const double angle = double(i) * table.invFreq[size_t(k)];
        const double a = pre(i, g), b = pre(i, h * dh + partner);
        line(QStringLiteral("Token %1 turns the pair of dimensions (%2, %3) by %1 × θ_%4 = %1 × %5 = %6 rad:")
                 .arg(i).arg(std::min(j, partner)).arg(std::max(j, partner)).arg(k).arg(num(table.invFreq[size_t(k)])).arg(num(angle)));
        const double c = std::cos(angle) * table.attentionScaling, sn = std::sin(angle) * table.attentionScaling;
        mono(j < half ? QStringLiteral("%1 × cos − %2 × sin = %1 × %3 − %2 × %4 = %5")
                            .arg(num(a), num(b), num(c), num(sn), num(a * c - b * sn))
                      : QStringLiteral("%1 × cos + %2 × sin = %1 × %3 + %2 × %4 = %5")
                            .arg(num(a), num(b), num(c), num(sn), num(a * c + b * sn)));
    } else {
        line(QStringLiteral("Dimension %1 is beyond the %2 rotated ones: unchanged, %3.").arg(j).arg(rope.dims).arg(num(pre(i, g))));
    }
}

void Explanation::scores()
{
    const double raw = dot(i, j);
    const double scaled = raw * s.attention(layer).scale;
    line(QStringLiteral("<b>%1[%2, %3]</b>: query %2 “%4” · key %3 “%5”%6")
             .arg(kind == Kind::RawScores ? QStringLiteral("S") : kind == Kind::Scaled ? QStringLiteral("S'")
                  : kind == Kind::PositionBias ? QStringLiteral("B") : QStringLiteral("S'_m"))
             .arg(i)
             .arg(j)
             .arg(qTok, kTok, head));
    line(QStringLiteral("S = q_%1 · k_%2 = Σ_c q_%1,c · k_%2,c:").arg(i).arg(j));
    mono(dotTerms(i, j) + QStringLiteral(" = <b>") + num(raw) + QStringLiteral("</b>"));
    if (kind != Kind::RawScores) {
        line(QStringLiteral("Scaled: S' = S × %1:").arg(scaleText()));
        mono(QStringLiteral("%1 × %2 = <b>%3</b>").arg(num(raw), num(s.attention(layer).scale), num(scaled)));
    }
    const bool withBias = biased() && (kind == Kind::PositionBias || kind == Kind::Masked);
    if (withBias) {
        const Architecture &a = s.modelInfo.architecture;
        const int bucket = a.relative.bucket(j - i, encoderSide(s));
        line(QStringLiteral("Position bias: key %1 is %2 query %3 (j − i = %4), bucket %5 of %6; this head's "
                            "learned bias there:")
                 .arg(j)
                 .arg(j == i ? QStringLiteral("the same token as") : j > i ? QStringLiteral("%1 after").arg(j - i) : QStringLiteral("%1 before").arg(i - j))
                 .arg(i)
                 .arg(j - i)
                 .arg(bucket)
                 .arg(a.relative.buckets));
        mono(QStringLiteral("B = <b>%1</b>; S' + B = %2 + %1 = <b>%3</b>").arg(num(bias(i, j)), num(scaled), num(scaled + bias(i, j))));
    }
    if (kind == Kind::Masked) {
        if (!masked)
            line(QStringLiteral("Not masked: S'_m = %1 = %2.").arg(withBias ? QStringLiteral("S' + B") : QStringLiteral("S'"))
                     .arg(num(withBias ? scaled + bias(i, j) : scaled)));
        else if (c.normalization == Normalization::Softmax && c.maskMethod == MaskMethod::NegInf)
            line(QStringLiteral("<b>Masked</b> (%1): S'_m = −∞, so exp gives 0 and the weight is 0.").arg(maskReason(i, j)));
        else if (c.normalization == Normalization::Softmax)
            line(QStringLiteral("<b>Masked</b> (%1): kept here; the softmax runs over every key, then this "
                                "key's probability is multiplied by 0 and the row renormalized.")
                     .arg(maskReason(i, j)));
        else
            line(QStringLiteral("<b>Masked</b> (%1): S'_m = 0, and the key is left out of the row's sum.").arg(maskReason(i, j)));
    }
}

void Explanation::weights()
{
    const WeightMatrix<float> &w = s.weights(layer, h);
    const int tk = int(w.cols());
    line(QStringLiteral("<b>A[%1, %2]</b> = %3: how much query %1 “%4” attends to key %2 “%5”%6")
             .arg(i).arg(j).arg(num(w(i, j))).arg(qTok, kTok, head));
    const bool fully = std::find(r.fullyMaskedRows.begin(), r.fullyMaskedRows.end(), i) != r.fullyMaskedRows.end();
    if (fully) {
        line(QStringLiteral("Every key of query %1 is masked: no weights exist. The policy (as PyTorch) makes "
                            "the whole row NaN, and so its context and output rows.")
                 .arg(i));
        return;
    }
    if (s.isWindow() && s.windowFirst > 0 && i < r.lse.rows() && h < r.lse.cols()) // the row's sum reaches before the window
        line(QStringLiteral("A long text's window: the sum below is over positions %L1–%L2 only. The weight shown is "
                            "exp(S'_m[%3, %4] − LSE), where LSE = %5 is the log of the sum over every key of the text.")
                 .arg(s.windowFirst)
                 .arg(s.windowFirst + tk - 1)
                 .arg(i)
                 .arg(j)
                 .arg(num(r.lse(i, h))));
    std::vector<double> sc(static_cast<size_t>(tk));
    for (int k = 0; k < tk; ++k)
        sc[size_t(k)] = dot(i, k) * s.attention(layer).scale + bias(i, k);
    auto isMasked = [&](int k) { return r.mask.size() && r.mask(i, k); };
    if (masked && !(c.normalization == Normalization::Softmax && c.maskMethod == MaskMethod::MultiplyRenormalize))
        line(QStringLiteral("<b>Masked</b> (%1): weight 0.").arg(maskReason(i, j)));
    if (c.normalization == Normalization::Cosine) {
        double qn = 0, kn = 0;
        for (int d = 0; d < dh; ++d) {
            qn += double(qh(i, d)) * qh(i, d);
            kn += double(kh(j, d)) * kh(j, d);
        }
        qn = std::sqrt(qn);
        kn = std::sqrt(kn);
        if (!masked) {
            line(QStringLiteral("Cosine: A = (q_%1 · k_%2) / (|q_%1| |k_%2|):").arg(i).arg(j));
            mono(QStringLiteral("%1 / (%2 × %3) = <b>%4</b>").arg(num(dot(i, j)), num(qn), num(kn), num(qn * kn > 0 ? dot(i, j) / (qn * kn) : 0)));
        }
    } else if (c.normalization == Normalization::Sum) {
        double sum = 0;
        for (int k = 0; k < tk; ++k)
            if (!isMasked(k))
                sum += sc[size_t(k)];
        line(QStringLiteral("Row %1's scaled scores (masked → 0, left out):").arg(i));
        mono(termList(tk, [&](int k) { return isMasked(k) ? QStringLiteral("(masked)") : num(sc[size_t(k)]); })
             + QStringLiteral(" = ") + num(sum));
        if (!masked)
            mono(QStringLiteral("A = S'_%1,%2 / row sum = %3 / %4 = <b>%5</b>").arg(i).arg(j).arg(num(sc[size_t(j)]), num(sum), num(sc[size_t(j)] / sum)));
    } else {
        const bool renorm = c.maskMethod == MaskMethod::MultiplyRenormalize && r.mask.size();
        double mx = -std::numeric_limits<double>::infinity();
        for (int k = 0; k < tk; ++k)
            if (renorm || !isMasked(k))
                mx = std::max(mx, sc[size_t(k)]);
        std::vector<double> e(static_cast<size_t>(tk));
        double z = 0;
        for (int k = 0; k < tk; ++k) {
            e[size_t(k)] = renorm || !isMasked(k) ? std::exp(sc[size_t(k)] - mx) : 0.0;
            z += e[size_t(k)];
        }
        line(QStringLiteral("Row %1's scaled scores%3 S'%2:").arg(i).arg(renorm ? QString() : QStringLiteral("_m"))
                 .arg(biased() ? QStringLiteral(" plus the position bias") : QString()));
        mono(termList(tk, [&](int k) { return !renorm && isMasked(k) ? QStringLiteral("−∞") : num(sc[size_t(k)]); }).replace(QStringLiteral(" + "), QStringLiteral(", ")));
        line(QStringLiteral("Softmax, stable form: subtract the row max m = %1, exponentiate:").arg(num(mx)));
        mono(termList(tk, [&](int k) { return num(e[size_t(k)]); }) + QStringLiteral(" = Z = ") + num(z));
        if (!renorm) {
            if (!masked)
                mono(QStringLiteral("A = exp(S'_%1,%2 − m) / Z = %3 / %4 = <b>%5</b>").arg(i).arg(j).arg(num(e[size_t(j)]), num(z), num(e[size_t(j)] / z)));
        } else {
            double kept = 0;
            for (int k = 0; k < tk; ++k)
                if (!isMasked(k))
                    kept += e[size_t(k)] / z;
            line(QStringLiteral("Multiply-renormalize: p = exp/Z; masked keys × 0; the kept p sum to %1.").arg(num(kept)));
            if (masked)
                line(QStringLiteral("<b>Masked</b> (%1): p × 0 = weight 0.").arg(maskReason(i, j)));
            else
                mono(QStringLiteral("A = p / %1 = %2 / %1 = <b>%3</b>").arg(num(kept), num(e[size_t(j)] / z), num(e[size_t(j)] / z / kept)));
        }
    }
    // the whole row as drawn (and as the lessons quote it): cells too small for four decimals,
    // or for any number at 18 px in presentation mode, show it here
    mono(QStringLiteral("A[%1, :] = ").arg(i)
         + termList(tk, [&](int k) { return num(w(i, k)); }).replace(QStringLiteral(" + "), QStringLiteral(", ")));
    if (c.dropout > 0 && size_t(h) < r.weightsPreDropout.size()) {
        const float pre = r.weightsPreDropout[size_t(h)](i, j);
        const bool dropped = w(i, j) == 0.0f && pre != 0.0f;
        line(dropped ? QStringLiteral("Dropout (p = %1): this weight was <b>dropped</b> → 0 (it was %2).").arg(c.dropout, 0, 'g', 3).arg(num(pre))
                     : QStringLiteral("Dropout (p = %1): kept, × 1/(1−p): %2 × %3 = <b>%4</b>.")
                           .arg(c.dropout, 0, 'g', 3)
                           .arg(num(pre), num(1.0 / (1.0 - c.dropout)), num(w(i, j))));
    }
    if (dh <= 16) { // what the row becomes: its context, the values mixed by these weights
        QStringList ctx;
        for (int d = 0; d < dh; ++d)
            ctx << num(r.context(i, h * dh + d));
        line(QStringLiteral("Row %1's weights mix the rows of V into its context C%2[%1] = [%3].")
                 .arg(i)
                 .arg(H > 1 ? QStringLiteral("_%1").arg(h) : QString(), ctx.join(QStringLiteral(", "))));
    }
}

void Explanation::context()
{
    const WeightMatrix<float> &w = s.weights(layer, h);
    const int tk = int(w.cols());
    double sum = 0;
    for (int k = 0; k < tk; ++k)
        sum += double(w(i, k)) * double(vh(k, j));
    line(QStringLiteral("<b>C[%1, %2]</b>%3 = %4: query %1 “%5”, value column %2")
             .arg(i).arg(j).arg(head, num(r.context(i, h * dh + j))).arg(qTok));
    line(QStringLiteral("Σ_j A_%1,j · V_j,%2 (weights of row %1 × column %2 of V):").arg(i).arg(j));
    mono(termList(tk, [&](int k) { return QStringLiteral("%1×%2").arg(num(w(i, k)), num(vh(k, j))); }) + QStringLiteral(" = <b>")
         + num(sum) + QStringLiteral("</b>"));
    if (s.isWindow() && s.windowFirst > 0) // a long text's window: its keys are the last of the row's
        line(QStringLiteral("These are the keys of positions %L1–%L2 only; the %L3 keys before them add the rest, %4.")
                 .arg(s.windowFirst)
                 .arg(s.windowFirst + tk - 1)
                 .arg(s.windowFirst)
                 .arg(num(double(r.context(i, h * dh + j)) - sum)));
}

void Explanation::concat()
{
    const int hh = j / std::max(1, dh);
    line(QStringLiteral("<b>concat[%1, %2]</b> = %3").arg(i).arg(j).arg(num(r.context(i, j))));
    line(QStringLiteral("Column %1 is column %2 of head %3's context C_%3 (row %4 “%5”).%6")
             .arg(j).arg(j - hh * dh).arg(hh).arg(i).arg(qTok)
             .arg(hh == h ? QStringLiteral(" That is the context stage shown here.") : QString()));
}

void Explanation::output()
{
    line(QStringLiteral("<b>O[%1, %2]</b> = %3: output of query %1 “%4”").arg(i).arg(j).arg(num(r.output(i, j))).arg(qTok));
    if (s.deep()) {
        line(QStringLiteral("Stack layer %1: concat row %2 · row %3 of the layer's W_o + b_o (not expanded here).").arg(s.layerIndex(layer)).arg(i).arg(j));
        return;
    }
    const auto P = s.projections(layer); // held while the explanation reads it
    const Linear<float> *o = P ? &P->o : nullptr;
    if (!o || o->isIdentity()) {
        line(QStringLiteral("No W_o (identity): output = concatenation, so O[%1, %2] = concat[%1, %2] = %3.")
                 .arg(i).arg(j).arg(num(r.context(i, j))));
        return;
    }
    double sum = 0;
    for (int k = 0; k < r.context.cols(); ++k)
        sum += double(r.context(i, k)) * double(o->W(j, k));
    line(QStringLiteral("concat row %1 · row %2 of W_o:").arg(i).arg(j));
    mono(termList(int(r.context.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(r.context(i, k)), num(o->W(j, k))); })
         + QStringLiteral(" = ") + num(sum));
    if (o->hasBias())
        mono(QStringLiteral("+ b_o[%1] = %2 + %3 = <b>%4</b>").arg(j).arg(num(sum), num(o->b(j)), num(sum + o->b(j))));
}

void Explanation::v()
{
    const auto P = s.projections(layer); // held while the explanation reads it
    project("V", s.keyInput(layer), r.v, P ? &P->v : nullptr);
}


void Explanation::mlp()
{
    const LayerTrace<float> &lt = s.layer(layer);
    const Architecture &a = s.modelInfo.architecture;
    const int n = cx.neurons && j < int(cx.neurons->size()) ? (*cx.neurons)[size_t(j)] : j;
    const double g = lt.mlpPre(i, n), u = lt.mlpPreLinear(i, n);
    const double act = mlpActivation(a.activation, g), hv = act * u;
    const QString name = activationName(a.activation);
    // (one arg() call: a token's text may itself hold "%3")
    const QString where = QStringLiteral("token %1 “%2”, neuron %3").arg(QString::number(i), qTok, QString::number(n));
    const QString x = QStringLiteral("x_%1 is row %1 of the residual stream after this layer's attention, "
                                     "normalized (%2), %3 numbers")
                          .arg(i)
                          .arg(mlpNormName(s))
                          .arg(a.dModel);
    // act(g) with its arithmetic
    auto activation = [&] {
        switch (a.activation) {
        case Activation::Silu:
            mono(QStringLiteral("SiLU(g) = g / (1 + e^(−g)) = %1 / (1 + %2) = <b>%3</b>")
                     .arg(num(g), num(std::exp(-g)), num(act)));
            break;
        case Activation::GeluTanh: {
            const double inner = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
            mono(QStringLiteral("GELU_tanh(g) = 0.5·g·(1 + tanh(√(2/π)·(g + 0.044715·g³)))"));
            mono(QStringLiteral("= 0.5 × %1 × (1 + tanh(%2)) = 0.5 × %1 × %3 = <b>%4</b>")
                     .arg(num(g), num(inner), num(1.0 + std::tanh(inner)), num(act)));
            break;
        }
        case Activation::GeluErf:
            mono(QStringLiteral("GELU(g) = 0.5·g·(1 + erf(g/√2)) = 0.5 × %1 × %2 = <b>%3</b>")
                     .arg(num(g), num(1.0 + std::erf(g / std::sqrt(2.0))), num(act)));
            break;
        case Activation::Relu: mono(QStringLiteral("ReLU(g) = max(g, 0) = <b>%1</b>").arg(num(act))); break;
        }
    };
    // H[i, n] = act × u, the number the clicked cell feeds (or is)
    auto product = [&] {
        mono(QStringLiteral("H[%1, %2] = %3 × %4 = <b>%5</b>").arg(i).arg(n).arg(num(act), num(u), num(hv)));
    };
    // G or U[i, n]: x_i times a row of W_gate or W_up, kept by the trace as TransformerLens' hook
    auto projected = [&](const QString &letter, const QString &w, const char *hook, double v) {
        line(QStringLiteral("<b>%1[%2, %3]</b> = %4: %5").arg(letter).arg(i).arg(n).arg(num(v)).arg(where));
        line(QStringLiteral("%1[%2, %3] = x_%2 · row %3 of W_%4%5; %6. The trace keeps the product (TransformerLens' "
                            "%7); W_%4 is the model's (%8 rows of %9).")
                 .arg(letter).arg(i).arg(n)
                 .arg(w)
                 .arg(a.mlpBias ? QStringLiteral(" + b_%1[%2]").arg(w).arg(n) : QString())
                 .arg(x)
                 .arg(QLatin1String(hook))
                 .arg(lt.mlpPre.cols())
                 .arg(a.dModel));
    };
    switch (kind) {
    case Kind::MlpGate:
        projected(QStringLiteral("G"), QStringLiteral("gate"), "hook_pre", g);
        line(QStringLiteral("It opens or shuts the neuron: %1(g), then times U[%2, %3] = %4:").arg(name).arg(i).arg(n).arg(num(u)));
        activation();
        product();
        break;
    case Kind::MlpActivated:
        line(QStringLiteral("<b>%1(G)[%2, %3]</b> = %4: %5").arg(name).arg(i).arg(n).arg(num(act)).arg(where));
        line(QStringLiteral("The gate G[%1, %2] = g = %3 through %4:").arg(i).arg(n).arg(num(g)).arg(name));
        activation();
        line(QStringLiteral("It scales U[%1, %2] = %3:").arg(i).arg(n).arg(num(u)));
        product();
        break;
    case Kind::MlpUp:
        projected(QStringLiteral("U"), QStringLiteral("up"), "hook_pre_linear", u);
        line(QStringLiteral("The activated gate %1(G[%2, %3]) = %4 scales it:").arg(name).arg(i).arg(n).arg(num(act)));
        product();
        break;
    default:
        line(QStringLiteral("<b>H[%1, %2]</b> = %3: %4").arg(i).arg(n).arg(num(hv)).arg(where));
        line(QStringLiteral("H = %1(G) ⊙ U: the gate G[%2, %3] = g = %4 through %1,").arg(name).arg(i).arg(n).arg(num(g)));
        activation();
        line(QStringLiteral("times the up projection U[%1, %2] = %3:").arg(i).arg(n).arg(num(u)));
        mono(QStringLiteral("%1 × %2 = <b>%3</b>").arg(num(act), num(u), num(hv)));
        line(QStringLiteral("Row %1 of H (%2 numbers) times W_downᵀ is the MLP's output for this token, added to the "
                            "residual stream.")
                 .arg(i)
                 .arg(lt.mlpPre.cols()));
        break;
    }
    // the neuron over the whole text: where it fires most
    double peak = 0;
    int at = 0;
    for (int r = 0; r < lt.mlpPre.rows(); ++r) {
        const double v = std::abs(mlpActivation(a.activation, lt.mlpPre(r, n)) * lt.mlpPreLinear(r, n));
        if (v > peak) {
            peak = v;
            at = r;
        }
    }
    const bool ranked = cx.neurons && int(cx.neurons->size()) < lt.mlpPre.cols();
    line(QStringLiteral("Neuron %1%2 fires most at token %3 “%4”: |H| = %5.")
             .arg(QString::number(n),
                  ranked ? QStringLiteral(", number %1 of the %2 most active over this text,").arg(j + 1).arg(cx.neurons->size())
                         : QString(),
                  QString::number(at), esc(queryLabels->value(at)), num(peak)));
}

// ---- where a clicked cell came from and what it feeds ----------------------------------------

void relatedInput(const StageContext &cx, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::Q, row, row);
    if (!cx.snapshot->cross) {
        m.rows(Kind::K, row, row);
        m.rows(Kind::V, row, row);
    }
}
void relatedKeyInput(const StageContext &, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::K, row, row);
    m.rows(Kind::V, row, row);
}
void relatedQ(const StageContext &, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::Input, row, row);
    m.rows(Kind::QRotated, row, row);
    m.rows(Kind::RawScores, row, row);
}
void relatedK(const StageContext &cx, Kind, int row, int, StageMarks &m)
{
    m.rows(cx.snapshot->cross ? Kind::KeyInput : Kind::Input, row, row);
    m.rows(Kind::KRotated, row, row);
    m.cols(Kind::RawScores, row, row);
}
void relatedV(const StageContext &cx, Kind, int row, int col, StageMarks &m)
{
    m.rows(cx.snapshot->cross ? Kind::KeyInput : Kind::Input, row, row);
    m.cols(Kind::Context, col, col);
}
void relatedQRotated(const StageContext &, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::Q, row, row);
    m.rows(Kind::RawScores, row, row);
}
void relatedKRotated(const StageContext &, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::K, row, row);
    m.cols(Kind::RawScores, row, row);
}
// a score or weight (i, j): query i's rows, key j's rows, the same cell of every score stage
void relatedScores(const StageContext &, Kind kind, int row, int col, StageMarks &m)
{
    m.rows(Kind::Q, row, row);
    m.rows(Kind::K, col, col);
    m.rows(Kind::QRotated, row, row);
    m.rows(Kind::KRotated, col, col);
    for (Kind o : {Kind::RawScores, Kind::Scaled, Kind::PositionBias, Kind::Masked, Kind::Weights})
        m.cell(o, row, col);
    if (kind == Kind::Weights)
        m.rows(Kind::Context, row, row);
}
void relatedContext(const StageContext &cx, Kind, int row, int col, StageMarks &m)
{
    const int dh = cx.snapshot->attention(cx.layer).dHead;
    m.rows(Kind::Weights, row, row);
    m.cols(Kind::V, col, col);
    m.cell(Kind::Concat, row, cx.head * dh + col);
}
void relatedConcat(const StageContext &cx, Kind, int row, int col, StageMarks &m)
{
    const int dh = cx.snapshot->attention(cx.layer).dHead;
    if (col / std::max(1, dh) == cx.head)
        m.cell(Kind::Context, row, col - cx.head * dh);
    m.rows(Kind::Output, row, row);
}
void relatedOutput(const StageContext &, Kind, int row, int, StageMarks &m)
{
    m.rows(Kind::Concat, row, row);
    m.rows(Kind::MlpGate, row, row); // added to the stream, normalized, it is what the MLP reads
    m.rows(Kind::MlpUp, row, row);
}
// a cell of the MLP: the same token and neuron in the stages it comes from or feeds; the gate and up
// read the stream the attention's output row was added to
void relatedMlp(const StageContext &, Kind kind, int row, int col, StageMarks &m)
{
    switch (kind) {
    case Kind::MlpGate:
        m.rows(Kind::Output, row, row);
        m.cell(Kind::MlpActivated, row, col);
        m.cell(Kind::MlpProduct, row, col);
        break;
    case Kind::MlpActivated:
        m.cell(Kind::MlpGate, row, col);
        m.cell(Kind::MlpProduct, row, col);
        break;
    case Kind::MlpUp:
        m.rows(Kind::Output, row, row);
        m.cell(Kind::MlpProduct, row, col);
        break;
    default:
        for (Kind o : {Kind::MlpGate, Kind::MlpActivated, Kind::MlpUp})
            m.cell(o, row, col);
        break;
    }
}

// ---- the table -------------------------------------------------------------------------------

bool crossAttention(const ComputeSnapshot &s, int) { return s.cross; }
// q and k turned by rotary positions (or normalized per head) after the projection
bool turnedQK(const ComputeSnapshot &s, int layer) { return s.seq(layer).qPre.size() != 0; }
// a model whose MLP is gated (SwiGLU, GeGLU): its stages are listed whether or not the trace kept the
// products (a trace that did not says so in their place)
// (an encoder-decoder model's views are of one attention sub-layer: their MLP is not shown)
bool gatedMlp(const ComputeSnapshot &s, int)
{
    return s.fromModel() && s.modelInfo.architecture.gatedMlp && !s.encoderDecoder;
}
bool positionBias(const ComputeSnapshot &s, int) { return relativeBias(s); }

// One row per stage, in the order the view shows them.
struct StageSpec {
    Kind kind;
    bool (*applies)(const ComputeSnapshot &s, int layer); // null: always
    void (StageFill::*fill)();
    void (Explanation::*explain)();
    void (*related)(const StageContext &cx, Kind kind, int row, int col, StageMarks &marks);
};
const StageSpec kStageSpecs[] = {
    {Kind::Input, nullptr, &StageFill::input, &Explanation::input, relatedInput},
    {Kind::KeyInput, crossAttention, &StageFill::keyInput, &Explanation::input, relatedKeyInput},
    {Kind::Q, nullptr, &StageFill::projected, &Explanation::q, relatedQ},
    {Kind::K, nullptr, &StageFill::projected, &Explanation::k, relatedK},
    {Kind::V, nullptr, &StageFill::projected, &Explanation::v, relatedV},
    {Kind::QRotated, turnedQK, &StageFill::turned, &Explanation::turned, relatedQRotated},
    {Kind::KRotated, turnedQK, &StageFill::turned, &Explanation::turned, relatedKRotated},
    {Kind::RawScores, nullptr, &StageFill::rawScores, &Explanation::scores, relatedScores},
    {Kind::Scaled, nullptr, &StageFill::scaled, &Explanation::scores, relatedScores},
    {Kind::PositionBias, positionBias, &StageFill::positionBias, &Explanation::scores, relatedScores},
    {Kind::Masked, nullptr, &StageFill::masked, &Explanation::scores, relatedScores},
    {Kind::Weights, nullptr, &StageFill::weights, &Explanation::weights, relatedScores},
    {Kind::Context, nullptr, &StageFill::context, &Explanation::context, relatedContext},
    {Kind::Concat, nullptr, &StageFill::concat, &Explanation::concat, relatedConcat},
    {Kind::Output, nullptr, &StageFill::output, &Explanation::output, relatedOutput},
    {Kind::MlpGate, gatedMlp, &StageFill::mlp, &Explanation::mlp, relatedMlp},
    {Kind::MlpActivated, gatedMlp, &StageFill::mlp, &Explanation::mlp, relatedMlp},
    {Kind::MlpUp, gatedMlp, &StageFill::mlp, &Explanation::mlp, relatedMlp},
    {Kind::MlpProduct, gatedMlp, &StageFill::mlp, &Explanation::mlp, relatedMlp},
};

const StageSpec *specOf(Kind kind)
{
    for (const StageSpec &spec : kStageSpecs)
        if (spec.kind == kind)
            return &spec;
    return nullptr;
}

} // namespace

QVector<StageKind> applicableStages(const ComputeSnapshot *snapshot, int layer)
{
    const bool ok = snapshot && snapshot->hasResult();
    QVector<Kind> kinds;
    for (const StageSpec &spec : kStageSpecs)
        if (!spec.applies || (ok && spec.applies(*snapshot, layer)))
            kinds << spec.kind;
    return kinds;
}

void fillStageContent(const StageContext &cx, StageContent &st)
{
    if (const StageSpec *spec = specOf(st.kind)) {
        StageFill f{cx, st};
        (f.*spec->fill)();
    }
}

QString explainStageCell(const StageContext &cx, StageKind kind, int row, int col)
{
    const StageSpec *spec = specOf(kind);
    if (!spec)
        return {};
    Explanation e{cx, kind, row, col};
    (e.*spec->explain)();
    if (cx.snapshot && cx.snapshot->isWindow() && cx.snapshot->windowFirst > 0) // a long text's window
        e.out = QStringLiteral("<p><i>%1</i></p>")
                    .arg(QCoreApplication::translate("PipelineView",
                                                     "Rows and key columns count from position %L1 of the text: row %L2 "
                                                     "is position %L3.")
                             .arg(cx.snapshot->windowFirst)
                             .arg(row)
                             .arg(cx.snapshot->windowFirst + row))
            + e.out;
    return e.out;
}

void markRelated(const StageContext &cx, StageKind kind, int row, int col, StageMarks &marks)
{
    marks.cell(kind, row, col);
    if (const StageSpec *spec = specOf(kind))
        spec->related(cx, kind, row, col, marks);
}

double mlpActivation(Activation a, double g)
{
    switch (a) {
    case Activation::Silu: return g / (1.0 + std::exp(-g));
    case Activation::GeluTanh: return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
    case Activation::GeluErf: return 0.5 * g * (1.0 + std::erf(g / std::sqrt(2.0)));
    case Activation::Relu: return std::max(g, 0.0);
    }
    return g;
}

std::vector<int> strongestNeurons(const ComputeSnapshot &s, int layer, int n)
{
    if (!s.hasResult() || n <= 0)
        return {};
    const LayerTrace<float> &lt = s.layer(layer);
    const Mat<float> &gate = lt.mlpPre, &up = lt.mlpPreLinear;
    if (gate.size() == 0 || gate.rows() != up.rows() || gate.cols() != up.cols())
        return {};
    std::vector<int> all(size_t(gate.cols()));
    std::iota(all.begin(), all.end(), 0);
    if (int(all.size()) <= n)
        return all;
    const Activation a = s.modelInfo.architecture.activation;
    std::vector<double> peak(all.size(), 0.0);
    for (Eigen::Index c = 0; c < gate.cols(); ++c)
        for (Eigen::Index r = 0; r < gate.rows(); ++r) {
            const double v = std::abs(mlpActivation(a, gate(r, c)) * up(r, c));
            if (v > peak[size_t(c)]) // NaN never wins
                peak[size_t(c)] = v;
        }
    std::partial_sort(all.begin(), all.begin() + n, all.end(), [&](int x, int y) {
        return peak[size_t(x)] != peak[size_t(y)] ? peak[size_t(x)] > peak[size_t(y)] : x < y;
    });
    all.resize(size_t(n));
    return all;
}

ComputeSettings effectiveSettings(const ComputeSnapshot &s)
{
    ComputeSettings c = s.settings;
    // word vectors: the controls'; an encoder-decoder model: its own rule, set with its snapshot
    // (T5 no scaling, the others 1/√d_head; causal in the decoder's self-attention only)
    if (!s.fromModel() || s.encoderDecoder)
        return c;
    c = ComputeSettings();
    if (t5Positions(s)) // a T5 encoder alone: q·k unscaled, as its encoder-decoder model's
        c.scaleRule = ScaleRule::None;
    const bool padded = !s.paddedKeys.empty();
    c.mask = s.modelInfo.causal ? (padded ? MaskChoice::CausalPadding : MaskChoice::Causal)
                                : (padded ? MaskChoice::Padding : MaskChoice::None);
    if (!s.customMask.empty())
        c.mask = MaskChoice::Custom;
    return c;
}

QString stageNumber(double v)
{
    if (std::isnan(v))
        return QStringLiteral("NaN");
    if (std::isinf(v))
        return v < 0 ? QStringLiteral("−∞") : QStringLiteral("∞");
    return QString::number(v, 'f', 4);
}

} // namespace attnviz::ui
