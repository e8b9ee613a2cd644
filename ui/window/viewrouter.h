// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshot routing: makes every view of the registry (views/viewregistry.h), puts the tabs in the
// window's tab widget, and hands each snapshot, selection and head display to every view; lists a
// view's tab (or shows its dock) while the view applies; routes what a view asks for (a query, a
// head, a head opened on the weights) to the session, and a head ablation to the window. Views
// subscribe through the registry: the window names none of them here. The norm-weighted switch lives here too: while it is on, the
// attention views get the norm-weighted snapshot (views/normweighting.h) instead of the weights.
// What the shown views read (the registry's ViewReads) is what the window asks a GPU to bring back;
// a view is handed a snapshot (and a selection) only where the snapshot holds what it reads, and
// otherwise keeps the one it has until a trace that does arrives. Whether a shown view reads a gated
// MLP's products (the registry's readsMlp) is what the window asks the core to keep.
#pragma once

#include "live/livetypes.h"
#include "views/view.h"

#include <QHash>
#include <QObject>

#include <vector>

class QAction;
class QDockWidget;
class QTabWidget;

namespace attnviz::ui {

class LiveSession;
class LongTextWindows;
struct ViewSpec;

class ViewRouter : public QObject {
    Q_OBJECT
public:
    // Makes every registered view (tabs added to `tabs`, dock views parented to `window` until the
    // window puts them in a dock with setDock).
    ViewRouter(LiveSession *session, QTabWidget *tabs, QWidget *window);

    View *view(const QString &id) const; // null for an id the registry does not have
    template <typename V>
    V *view(const QString &id) const { return static_cast<V *>(view(id)); }
    const std::vector<View *> &views() const { return m_order; }
    // The dock that holds a dock view; its visibility then follows the view's appliesTo.
    void setDock(const QString &id, QDockWidget *dock);

    // Every view gets the snapshot and the selection; the tabs are listed for it (`scope`: what the
    // window computes with). `listTabs` false keeps them as they are (an error, or a late result
    // of the model used before).
    void setSnapshot(const SnapshotPtr &s, const ViewScope &scope, bool listTabs);
    void setSelection(int layer, int head, int query);
    void setHeadDisplay(HeadDisplay display);
    // The norm-weighted switch (View menu): checkable, disabled with a tooltip saying why where the
    // snapshot has no values to weigh. The window hands its snapshot out again when it flips.
    QAction *normWeightedAction() const { return m_normAction; }
    bool normWeighted() const;
    void setNormWeighted(bool on);
    // What the current tab and the shown docks read at `layer` (Observe: everything, or that layer).
    Observe needed(int layer) const;
    // Whether the current tab or a shown dock reads a gated MLP's products (TraceRequest::keepMlp).
    bool neededMlp() const;
    // Lists the tabs ahead of a result (a model opened, a setting changed).
    void listAhead(const ViewScope &scope);

    // Tabs by id (the registry's ids).
    bool showView(const QString &id); // false for an unknown or unlisted tab
    QString currentViewId() const;
    QWidget *viewWidget(const QString &id) const; // the weights view for an unknown id
    void showTab(QWidget *page, bool visible);    // setTabVisible, only when it changes
    // What view `id` is handed of `s`: `s` itself, or for an encoder-decoder model the attention the
    // session's selector names (the attention views), the decoder's with all three attentions
    // (predictions, alignment), or a snapshot that
    // says "not yet for encoder-decoder models" (the others).
    // A long text's lens, attribution and residual stream: the window of positions around the
    // selected row (LongTextWindows), or a line saying it is being computed.
    SnapshotPtr snapshotFor(const SnapshotPtr &s, const QString &id) const;

signals:
    // A dock view's dock was shown or hidden because its view began or stopped applying.
    void dockListed(QDockWidget *dock);
    // A view asked to ablate or restore a head (View's signals): the window's edits.
    void headAblationRequested(int layer, int head, bool mean);
    void headRestoreRequested(int layer, int head);

private:
    void openHead(int layer, int head);
    // Whether `s` holds what view i reads at `layer` (a snapshot without a result always does).
    bool holds(const SnapshotPtr &s, size_t i, int layer) const;
    bool shown(size_t i) const; // view i is the current tab or in a shown dock
    // view i (a long text's lens, attribution, residual stream) handed its window and the selection in it
    void handWindow(size_t i, int layer, int head, int query);
    // around `query`; a long text's window not computed yet is asked for only where `ask`
    SnapshotPtr snapshotFor(const SnapshotPtr &s, const QString &id, int query, bool ask) const;

    LiveSession *m_session;
    QTabWidget *m_tabs;
    std::vector<View *> m_order;             // registry order
    std::vector<const ViewSpec *> m_specs;   // the same order
    std::vector<SnapshotPtr> m_held;         // the snapshot each view was last handed (the same order)
    std::vector<SnapshotPtr> m_given;        // what it was handed of it (snapshotFor: a window, a line)
    LongTextWindows *m_windows = nullptr;    // a long text's windows of positions
    QHash<QString, View *> m_byId;
    QHash<QString, QDockWidget *> m_docks;
    QAction *m_normAction = nullptr;
};

} // namespace attnviz::ui
