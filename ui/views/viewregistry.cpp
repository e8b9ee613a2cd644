// SPDX-License-Identifier: GPL-3.0-or-later
// The registry's lines: one per view, in tab order (see viewregistry.h for what each field means).
#include "views/viewregistry.h"

#include "views/alignmentview.h"
#include "views/compareview.h"
#include "views/dlaview.h"
#include "views/embeddingview.h"
#include "views/headgridview.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "views/linesview.h"
#include "views/logitlensview.h"
#include "views/patchingview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "views/residualview.h"
#include "views/rolloutview.h"
#include "views/rowview.h"

#include <QCoreApplication>

namespace attnviz::ui {

namespace {

template <typename V>
View *make(const ViewContext &, QWidget *parent)
{
    return new V(parent);
}

// When a tab is listed: a stack's or a model's several layers, a model's heads.
bool stackViews(const ComputeSnapshot &s, const ViewScope &scope) { return scope.stack || (s.deep() && !s.fromModel()); }
bool deepViews(const ComputeSnapshot &s, const ViewScope &scope) { return s.deep() || scope.stack; }
bool deepTrace(const ComputeSnapshot &s, const ViewScope &) { return s.deep(); }
bool modelTrace(const ComputeSnapshot &s, const ViewScope &) { return s.fromModel(); }
bool languageModel(const ComputeSnapshot &s, const ViewScope &) { return s.causalLm() || s.maskedLm(); }
bool causalModel(const ComputeSnapshot &s, const ViewScope &) { return s.causalLm(); }
bool encoderDecoderTrace(const ComputeSnapshot &s, const ViewScope &) { return s.encoderDecoder; }
bool deepScope(const ViewScope &scope) { return scope.deep(); }
bool encoderDecoderScope(const ViewScope &scope) { return scope.encoderDecoder; }
bool modelScope(const ViewScope &scope) { return scope.model; }

} // namespace

const std::vector<ViewSpec> &viewRegistry()
{
    using P = ViewPlace;
    using R = ViewReads;
    // id, title, tooltip, place, exportable, factory, listed for a snapshot, listed ahead of one,
    // the layers it reads (default: any), whether it reads a gated MLP's products (default: no)
    static const std::vector<ViewSpec> views = {
        {QStringLiteral("weights"), QT_TR_NOOP("Weights"), "", P::Tab, true, make<HeatmapView>, nullptr, nullptr, R::SelectedLayer},
        {QStringLiteral("grid"), QT_TR_NOOP("Heads"), QT_TR_NOOP("All heads side by side"), P::Tab, true, make<HeadGridView>, nullptr, nullptr, R::SelectedLayer},
        {QStringLiteral("embeddings"), QT_TR_NOOP("Embeddings"), QT_TR_NOOP("Contextual embeddings"), P::Tab, true,
         make<EmbeddingView>, nullptr, nullptr, R::SelectedLayer},
        {QStringLiteral("row"), QT_TR_NOOP("Selected query"), "", P::Dock, true, make<RowView>, nullptr, nullptr, R::SelectedLayer},
        {QStringLiteral("lines"), QT_TR_NOOP("Lines"), "", P::Tab, true, make<LinesView>, nullptr, nullptr, R::SelectedLayer},
        {QStringLiteral("pipeline"), QT_TR_NOOP("Pipeline"), "", P::Tab, false, make<PipelineView>, nullptr, nullptr, R::SelectedLayer,
         true},
        {QStringLiteral("layers"), QT_TR_NOOP("Layers"), QT_TR_NOOP("Layers × heads"), P::Tab, false,
         make<LayerGridView>, stackViews, deepScope},
        {QStringLiteral("residual"), QT_TR_NOOP("Residual"), QT_TR_NOOP("Residual stream"), P::Tab, false,
         make<ResidualView>, deepViews, deepScope},
        {QStringLiteral("headRoles"), QT_TR_NOOP("Layers"), QT_TR_NOOP("Layers × heads, with each head's role"), P::Tab,
         false, make<HeadRolesView>, modelTrace, modelScope},
        {QStringLiteral("rollout"), QT_TR_NOOP("Rollout"), "", P::Tab, false, make<RolloutView>, deepTrace, deepScope},
        {QStringLiteral("lens"), QT_TR_NOOP("Lens"), QT_TR_NOOP("Logit lens: what each layer would predict"), P::Tab, true,
         make<LogitLensView>, languageModel, modelScope},
        {QStringLiteral("dla"), QT_TR_NOOP("DLA"), QT_TR_NOOP("Direct logit attribution: what each head and MLP adds to a token's logit"), P::Tab,
         true, make<DlaView>, causalModel, modelScope},
        // an encoder-decoder model's cross-attention by word; for other models it says so in one line
        {QStringLiteral("alignment"), QT_TR_NOOP("Alignment"),
         QT_TR_NOOP("Word alignment: which source words each target word attends to in cross-attention"), P::Tab, true,
         make<AlignmentView>, encoderDecoderTrace, encoderDecoderScope},
        {QStringLiteral("compare"), QT_TR_NOOP("Compare"), "", P::Tab, false,
         [](const ViewContext &c, QWidget *parent) -> View * { return new CompareView(c.session, parent); }, nullptr,
         nullptr},
        // listed always: for a model it cannot patch it says why in one line. Not `export --view`
        // (a sweep is run from the tab); File ▸ Export current view writes its heatmap
        {QStringLiteral("patching"), QT_TR_NOOP("Patching"),
         QT_TR_NOOP("Activation patching: a clean prompt's activations patched into a corrupted one, cell by cell"), P::Tab,
         false, [](const ViewContext &c, QWidget *parent) -> View * { return new PatchingView(c.session, parent); }, nullptr,
         nullptr, R::NoLayer},
        {QStringLiteral("predictions"), QT_TR_NOOP("Predictions"), "", P::Dock, false, make<PredictionsView>,
         languageModel, nullptr, R::NoLayer},
    };
    return views;
}

const ViewSpec *findViewSpec(const QString &id)
{
    for (const ViewSpec &v : viewRegistry())
        if (v.id == id)
            return &v;
    return nullptr;
}

QStringList tabViewIds()
{
    QStringList ids;
    for (const ViewSpec &v : viewRegistry())
        if (v.place == ViewPlace::Tab)
            ids << v.id;
    return ids;
}

QStringList exportViewIds()
{
    QStringList ids;
    for (const ViewSpec &v : viewRegistry())
        if (v.exportable)
            ids << v.id;
    return ids;
}

QString idChoices(const QStringList &ids)
{
    if (ids.size() < 2)
        return ids.join(QString());
    return ids.mid(0, ids.size() - 1).join(QStringLiteral(", ")) + QStringLiteral(" or ") + ids.last();
}

} // namespace attnviz::ui
