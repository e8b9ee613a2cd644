// SPDX-License-Identifier: GPL-3.0-or-later
// The registry of views: one line per view (viewregistry.cpp) with its stable id, its title, where
// the window puts it, when its tab is listed, whether `attnviz export --view` writes it, the
// function that makes it, and which layers of a trace it reads. The window's tabs and docks, session files (view.tab), `--tab` and
// `export --view` all take their ids from here. A new view is its class plus one line there.
#pragma once

#include <QString>
#include <QStringList>

#include <functional>
#include <vector>

class QWidget;

namespace attnviz::ui {

class LiveSession;
class View;
struct ComputeSnapshot;
struct ViewScope;

// What a view's factory may take: the window's session (null where there is none: `attnviz export`).
struct ViewContext {
    LiveSession *session = nullptr;
};

// Which layers of a model's trace a view reads. A GPU computes every layer anyway, but brings back
// only what the shown views read (TraceRequest::observe): a view reading the selected layer lets a
// trace of 16 layers come back with one.
enum class ViewReads {
    Everything,    // any layer at any time (the layers grid, rollout, the lens ...)
    SelectedLayer, // the selected layer's weights and stages (and the streams every trace holds)
    NoLayer        // only the final stream and the predictions
};

enum class ViewPlace {
    Tab, // a tab of the window's views
    Dock // a dock of its own (the selected query's row, the predictions)
};

struct ViewSpec {
    // Stable: session files, `--tab`, `export --view`; the view widget's object name is id + "View".
    QString id;
    const char *title = "";   // the tab's or the dock's title (translated by the window)
    const char *toolTip = ""; // the tab's tooltip ("": none)
    ViewPlace place = ViewPlace::Tab;
    bool exportable = false; // `attnviz export --view id` and the figure export write its plot()
    std::function<View *(const ViewContext &, QWidget *parent)> make;
    // Whether its tab is listed for a snapshot (a result, or an empty text); null: always.
    bool (*appliesTo)(const ComputeSnapshot &, const ViewScope &) = nullptr;
    // Whether it is listed ahead of a result (a model opened, a setting changed), so that a
    // session or --tab can name it; null: always.
    bool (*appliesAhead)(const ViewScope &) = nullptr;
    ViewReads reads = ViewReads::Everything;
};

// Every view, in the order of the window's tabs (docks where their line is).
const std::vector<ViewSpec> &viewRegistry();
// The view with this id; null for none.
const ViewSpec *findViewSpec(const QString &id);
// The ids of the tabs (session files' view.tab, --tab), in tab order.
QStringList tabViewIds();
// The ids `attnviz export --view` takes, in registry order.
QStringList exportViewIds();
// "a, b or c" of a list of ids, for messages.
QString idChoices(const QStringList &ids);

} // namespace attnviz::ui
