// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshot routing: the registry's views made, fed and listed (see viewrouter.h).
#include "window/viewrouter.h"

#include "live/livesession.h"
#include "live/longtext.h"
#include "views/normweighting.h"
#include "views/viewregistry.h"

#include <QAction>

#include <QCoreApplication>
#include <QDockWidget>
#include <QTabWidget>

namespace attnviz::ui {

namespace {
QString translated(const char *text) { return QCoreApplication::translate("attnviz::ui::MainWindow", text); }

// The views that draw attention weights: with the switch on they draw ||a_ij v_j W_O^h|| instead.
bool drawsWeights(const QString &id)
{
    static const QStringList ids{QStringLiteral("weights"), QStringLiteral("grid"), QStringLiteral("row"),
                                 QStringLiteral("lines"), QStringLiteral("layers"), QStringLiteral("headRoles"),
                                 QStringLiteral("rollout")};
    return ids.contains(id);
}

// Those of them that draw a long text's weights norm-weighted (through its weighted tiles): the maps,
// the selected query's row, the lines, the rollout's row and the Layers tab's readings of each head
// (taken on each query's shares, as on a short text).
bool drawsLongTextWeights(const QString &id)
{
    static const QStringList ids{QStringLiteral("weights"), QStringLiteral("grid"), QStringLiteral("row"),
                                 QStringLiteral("lines"), QStringLiteral("rollout"), QStringLiteral("headRoles")};
    return ids.contains(id);
}

// The views that draw an encoder-decoder model's encoder, decoder or cross attention (the
// session's attentionKind); predictions, the lens and attribution read the decoder's; the others say
// "not yet".
bool drawsSeq2seq(const QString &id)
{
    static const QStringList ids{QStringLiteral("weights"), QStringLiteral("grid"), QStringLiteral("row"),
                                 QStringLiteral("lines"), QStringLiteral("layers"), QStringLiteral("headRoles"),
                                 QStringLiteral("pipeline")};
    return ids.contains(id);
}
// The views that read a long text through a window of positions around the selected row, every
// layer's stages recomputed for it (LongTextWindows); the pipeline's weights are those of the
// window's keys.
bool readsWindow(const QString &id)
{
    static const QStringList ids{QStringLiteral("lens"), QStringLiteral("dla"), QStringLiteral("residual"),
                                 QStringLiteral("pipeline"), QStringLiteral("embeddings")};
    return ids.contains(id);
}

// What a view that cannot read a long text yet would need (longTextNotYet's line); empty for the
// views that read one (the weights and all heads through AttentionTiles, the selected query's row,
// the predictions, the Patching tab's own runs, the Layers tab's readings of each head, the Lines
// view's one query row, the rollout's row of the selected query, Compare's pooled maps of two long
// texts of one length; the lens, attribution, the residual
// stream, the pipeline and the contextual embeddings read a window: readsWindow).
QString longTextNeeds(const QString &id)
{
    static const QStringList reads{QStringLiteral("weights"), QStringLiteral("grid"), QStringLiteral("row"),
                                   QStringLiteral("predictions"), QStringLiteral("patching"), QStringLiteral("headRoles"),
                                   QStringLiteral("lines"), QStringLiteral("rollout"), QStringLiteral("compare")};
    if (reads.contains(id))
        return {};
    if (id == QLatin1String("layers"))
        return translated(QT_TR_NOOP("every head's full weights"));
    return translated(QT_TR_NOOP("the full weights"));
}
} // namespace

SnapshotPtr ViewRouter::snapshotFor(const SnapshotPtr &s, const QString &id) const
{
    return snapshotFor(s, id, m_session->selectedQuery(), true);
}

SnapshotPtr ViewRouter::snapshotFor(const SnapshotPtr &s, const QString &id, int query, bool ask) const
{
    if (s && s->longText && readsWindow(id) && s->hasResult()) {
        if (SnapshotPtr w = m_windows->windowFor(s, query, ask))
            return w;
        const ViewSpec *spec = findViewSpec(id);
        return m_windows->pending(s, query, spec ? translated(spec->title) : id);
    }
    if (s && s->longText) {
        const QString needs = longTextNeeds(id);
        if (needs.isEmpty())
            return s;
        const ViewSpec *spec = findViewSpec(id);
        return longTextNotYet(s, spec ? translated(spec->title) : id, needs);
    }
    if (!s || !s->encoderDecoder)
        return s;
    if (drawsSeq2seq(id))
        return seq2seqView(s, m_session->attentionKind());
    // the decoder's; all three attentions; the decoder's stages (self-attention, cross-attention, MLP)
    if (id == QLatin1String("predictions") || id == QLatin1String("alignment") || id == QLatin1String("lens") ||
        id == QLatin1String("dla"))
        return s;
    const ViewSpec *spec = findViewSpec(id);
    return seq2seqNotYet(s, spec ? translated(spec->title) : id);
}

ViewRouter::ViewRouter(LiveSession *session, QTabWidget *tabs, QWidget *window)
    : QObject(window)
    , m_session(session)
    , m_tabs(tabs)
{
    m_windows = new LongTextWindows(this);
    const auto again = [this] { // a window computed, or a tab shown that reads one: only its views
        const int layer = m_session->selectedLayer(), head = m_session->shownHead(), query = m_session->selectedQuery();
        for (size_t i = 0; i < m_held.size(); ++i)
            if (m_held[i] && m_held[i]->longText && readsWindow(m_specs[i]->id))
                handWindow(i, layer, head, query);
    };
    connect(m_windows, &LongTextWindows::ready, this, again);
    connect(m_tabs, &QTabWidget::currentChanged, this, again);
    const ViewContext context{session};
    for (const ViewSpec &spec : viewRegistry()) {
        View *v = spec.make(context, window);
        v->setObjectName(spec.id + QLatin1String("View")); // stable: presets, sessions and tests find views by it
        m_order.push_back(v);
        m_specs.push_back(&spec);
        m_byId.insert(spec.id, v);
        if (spec.place == ViewPlace::Tab) {
            const int i = m_tabs->addTab(v, translated(spec.title));
            if (*spec.toolTip)
                m_tabs->setTabToolTip(i, translated(spec.toolTip));
            if (spec.appliesAhead) // listed once the window computes with what it needs
                showTab(v, false);
        }
        const size_t index = m_order.size() - 1;
        connect(v, &View::querySelected, this, [this, index](int query) { // a window's row is the text's
            const SnapshotPtr &given = index < m_given.size() ? m_given[index] : SnapshotPtr();
            m_session->setSelectedQuery(query >= 0 && given && given->isWindow() ? query + given->windowFirst : query);
        });
        connect(v, &View::headSelected, session, &LiveSession::setSelectedHead);
        connect(v, &View::headDisplayRequested, session, &LiveSession::setHeadDisplay);
        connect(v, &View::headOpened, this, &ViewRouter::openHead);
        connect(v, &View::headAblationRequested, this, &ViewRouter::headAblationRequested);
        connect(v, &View::headRestoreRequested, this, &ViewRouter::headRestoreRequested);
    }
    m_normAction = new QAction(translated(QT_TR_NOOP("&Norm-weighted attention ‖α·v·W_O‖")), this);
    m_normAction->setObjectName(QStringLiteral("normWeightedAction"));
    m_normAction->setCheckable(true);
    m_normAction->setToolTip(normWeightingExplanation());
    m_normAction->setStatusTip(normWeightingExplanation());
}

bool ViewRouter::normWeighted() const { return m_normAction->isChecked(); }

void ViewRouter::setNormWeighted(bool on) { m_normAction->setChecked(on); }

View *ViewRouter::view(const QString &id) const { return m_byId.value(id); }

void ViewRouter::setDock(const QString &id, QDockWidget *dock) { m_docks.insert(id, dock); }

void ViewRouter::openHead(int layer, int head)
{
    // a thumbnail of the stack's or a model's grid, or a panel of all heads (layer -1: the shown one)
    if (layer >= 0)
        m_session->setSelectedLayer(layer);
    m_session->setSelectedHead(head);
    if (m_session->headDisplay() == HeadDisplay::All)
        m_session->setHeadDisplay(head < 0 ? HeadDisplay::Average : HeadDisplay::One);
    m_tabs->setCurrentWidget(view(QStringLiteral("weights")));
}

void ViewRouter::setSnapshot(const SnapshotPtr &s, const ViewScope &scope, bool listTabs)
{
    QString why;
    const bool result = s && s->hasResult();
    // weighed only while the switch is on; off, whether it could be is seen from the kept values
    // an encoder-decoder model's attention views weigh the attention its selector names
    const bool seq2seq = s && s->encoderDecoder;
    const bool longText = s && s->longText;
    const SnapshotPtr drawn = seq2seq ? seq2seqView(s, m_session->attentionKind()) : s;
    const SnapshotPtr weighted = result && normWeighted() ? normWeightedSnapshot(drawn, &why) : nullptr;
    bool available = weighted != nullptr;
    if (result && !normWeighted()) {
        available = true;
        for (int l = 0; l < drawn->numLayers() && available; ++l)
            // a layer left on the GPU: no view draws it from this trace
            available = (!longText && !drawn->trace->observed.layer(l)) || keepsValues(*drawn->trace, l);
        why = translated(QT_TR_NOOP("this trace kept no value vectors"));
    }
    if (result) { // an error or an empty text keeps the switch as it was; on, it stays uncheckable
        m_normAction->setEnabled(available || normWeighted());
        m_normAction->setToolTip(available ? normWeightingExplanation()
                                           : translated(QT_TR_NOOP("Not for this text: %1")).arg(why));
    }
    const bool on = weighted != nullptr;
    m_held.resize(m_order.size());
    m_given.resize(m_order.size());
    const int layer = m_session->selectedLayer();
    for (size_t i = 0; i < m_order.size(); ++i)
        if (holds(s, i, layer)) {
            m_held[i] = s;
            // a long text's window is computed for a shown view only (the others ask once shown)
            const QString &id = m_specs[i]->id;
            if (longText) // a long text's weighted snapshot is routed as its own (a view that cannot read it says so)
                m_given[i] = snapshotFor(on && drawsLongTextWeights(id) ? weighted : s, id, m_session->selectedQuery(), shown(i));
            else
                m_given[i] = on && drawsWeights(id) && (!seq2seq || drawsSeq2seq(id))
                                 ? weighted
                                 : snapshotFor(s, id, m_session->selectedQuery(), shown(i));
            m_order[i]->setSnapshot(m_given[i]);
        }
    for (size_t i = 0; i < m_order.size(); ++i) {
        const ViewSpec &spec = *m_specs[i];
        if (!spec.appliesTo)
            continue;
        const bool applies = spec.appliesTo(*s, scope);
        if (spec.place == ViewPlace::Tab) {
            if (listTabs)
                showTab(m_order[i], applies);
        } else if (QDockWidget *dock = m_docks.value(spec.id); dock && dock->property("applies").toBool() != applies) {
            dock->setProperty("applies", applies);
            dock->setVisible(applies);
            emit dockListed(dock);
        }
    }
}

void ViewRouter::setSelection(int layer, int head, int query)
{
    m_held.resize(m_order.size());
    m_given.resize(m_order.size());
    for (size_t i = 0; i < m_order.size(); ++i) {
        if (m_held[i] && !holds(m_held[i], i, layer)) // it comes with the trace that holds the layer
            continue;
        if (m_held[i] && m_held[i]->longText && readsWindow(m_specs[i]->id))
            handWindow(i, layer, head, query);
        else
            m_order[i]->setSelection(layer, head, query);
    }
}

void ViewRouter::handWindow(size_t i, int layer, int head, int query)
{
    // a long text's window follows the selected row: the one holding it, or one computed anew
    const SnapshotPtr w = snapshotFor(m_held[i], m_specs[i]->id, query, shown(i));
    if (w != m_given[i]) {
        m_given[i] = w;
        m_order[i]->setSnapshot(w);
    }
    m_order[i]->setSelection(layer, head, w && w->isWindow() && query >= 0 ? query - w->windowFirst : query);
}

bool ViewRouter::holds(const SnapshotPtr &s, size_t i, int layer) const
{
    if (!s || !s->hasResult() || !s->trace || s->longText) // a long text's: every layer's q and k (or a line)
        return true;
    const Observe &held = s->trace->observed;
    switch (m_specs[i]->reads) {
    case ViewReads::Everything: return held.everything();
    case ViewReads::SelectedLayer: return held.covers(Observe{{s->layerIndex(layer)}, {}, true});
    case ViewReads::NoLayer: return true;
    }
    return true;
}

bool ViewRouter::shown(size_t i) const
{
    return m_specs[i]->place == ViewPlace::Tab ? m_tabs->currentWidget() == m_order[i]
                                               : m_docks.value(m_specs[i]->id) && m_docks.value(m_specs[i]->id)->isVisible();
}

bool ViewRouter::neededMlp() const
{
    for (size_t i = 0; i < m_order.size(); ++i)
        if (m_specs[i]->readsMlp && shown(i))
            return true;
    return false;
}

Observe ViewRouter::needed(int layer) const
{
    bool any = false;
    for (size_t i = 0; i < m_order.size(); ++i) {
        if (!shown(i))
            continue;
        if (m_specs[i]->reads == ViewReads::Everything)
            return Observe();
        any = any || m_specs[i]->reads == ViewReads::SelectedLayer;
    }
    Observe o;
    o.layers = {any ? std::max(0, layer) : 0};
    return o;
}

void ViewRouter::setHeadDisplay(HeadDisplay display)
{
    for (View *v : m_order)
        v->setHeadDisplay(display);
}

void ViewRouter::listAhead(const ViewScope &scope)
{
    for (size_t i = 0; i < m_order.size(); ++i)
        if (m_specs[i]->place == ViewPlace::Tab && m_specs[i]->appliesAhead)
            showTab(m_order[i], m_specs[i]->appliesAhead(scope));
}

void ViewRouter::showTab(QWidget *page, bool visible)
{
    // QTabWidget::setTabVisible lays the tabs out again and repaints the whole tab widget even when
    // nothing changes: called on every snapshot, that was a full repaint of the views per keystroke
    const int index = m_tabs->indexOf(page);
    if (index >= 0 && m_tabs->isTabVisible(index) != visible)
        m_tabs->setTabVisible(index, visible);
}

QWidget *ViewRouter::viewWidget(const QString &id) const
{
    const ViewSpec *spec = findViewSpec(id);
    if (spec && spec->place == ViewPlace::Tab)
        return view(id);
    return view(QStringLiteral("weights"));
}

bool ViewRouter::showView(const QString &id)
{
    const ViewSpec *spec = findViewSpec(id);
    const int i = spec && spec->place == ViewPlace::Tab ? m_tabs->indexOf(view(id)) : -1;
    if (i >= 0 && m_tabs->isTabVisible(i)) {
        m_tabs->setCurrentIndex(i);
        return true;
    }
    // The stack's and a model's tab of one name (Layers: `layers`, `headRoles`) are never shown
    // together: the one asked for while hidden is the other
    for (size_t k = 0; spec && k < m_specs.size(); ++k) {
        const int j = m_tabs->indexOf(m_order[k]);
        if (m_specs[k] != spec && m_specs[k]->place == ViewPlace::Tab && qstrcmp(m_specs[k]->title, spec->title) == 0 &&
            j >= 0 && m_tabs->isTabVisible(j)) {
            m_tabs->setCurrentIndex(j);
            return true;
        }
    }
    return false;
}

QString ViewRouter::currentViewId() const
{
    QString name = m_tabs->currentWidget() ? m_tabs->currentWidget()->objectName() : QString();
    return name.endsWith(QLatin1String("View")) ? name.chopped(4) : name;
}

} // namespace attnviz::ui
