// SPDX-License-Identifier: GPL-3.0-or-later
// The right-click menu of a head on a layers × heads grid (HeadRolesView for a model, LayerGridView
// for the word-vector stack): ablate the head to zero or to its mean over the text, restore it,
// restore every head. The entries ask through the view's signals (the window keeps the edits);
// for a model that cannot be edited they are disabled with the reason as tooltip. Also the marks
// the grids draw on an ablated head.
#pragma once

#include "live/livetypes.h"

#include <QList>
#include <QString>

class QAction;
class QObject;

namespace attnviz::ui {

class View;

// `selected`: (layer, head) is the window's selected head, whose entries name the Edit menu's
// shortcuts (Ctrl+K, Ctrl+Shift+K).
QList<QAction *> headAblationActions(View *view, const SnapshotPtr &snapshot, int layer, int head, bool selected,
                                     QObject *parent);
// The snapshot's ablation of (layer, head): "zero", "mean", or "" when it has none.
QString ablationOf(const ComputeSnapshot &snapshot, int layer, int head);

} // namespace attnviz::ui
