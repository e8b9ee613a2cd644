// SPDX-License-Identifier: GPL-3.0-or-later
// The interface every view implements: it takes a snapshot and a selection, says whether it applies
// to what the window computes, names the plot an export writes, and asks for a selection through
// its signals (the window routes them to the session). The window talks to views only through
// this class and the registry (viewregistry.h); a view never reaches for the window.
#pragma once

#include "live/livetypes.h"

#include <QWidget>

class QCustomPlot;

namespace attnviz::ui {

// What the window computes with, ahead of a result: a session or --tab may name a view before the
// first snapshot arrives, so whether its tab is listed is known from this too.
struct ViewScope {
    bool model = false;   // a model folder (or attnviz-tiny) rather than the word vectors
    int modelLayers = 0;  // the model's layers (0 for the word vectors)
    bool stack = false;   // the word vectors' stack of blocks is on (depth 2 or more)
    bool encoderDecoder = false; // the model is an encoder-decoder one (T5, BART, Marian)
    bool deep() const { return model ? modelLayers > 1 : stack; }
};

class View : public QWidget {
    Q_OBJECT
public:
    using QWidget::QWidget;

    virtual void setSnapshot(SnapshotPtr snapshot) { Q_UNUSED(snapshot); }
    // The layer (clamped to the trace's), the head (-1: the average of heads), the query.
    virtual void setSelection(int layer, int head, int query) { Q_UNUSED(layer); Q_UNUSED(head); Q_UNUSED(query); }
    virtual void setHeadDisplay(HeadDisplay display) { Q_UNUSED(display); }
    // The figure File ▸ Export current view and `attnviz export --view` write (null: none).
    virtual QCustomPlot *plot() const { return nullptr; }

signals:
    void querySelected(int query);                            // select this query
    void headSelected(int head);                              // select this head, the view stays
    void headOpened(int layer, int head);                     // show this head (layer -1: the shown one) on the weights
    void headDisplayRequested(attnviz::ui::HeadDisplay display); // one head, their average or all
    // Head ablation (the window keeps the edits): ablate (layer, head) to zero or to its mean over
    // the text; restore it (layer -1: every head).
    void headAblationRequested(int layer, int head, bool mean);
    void headRestoreRequested(int layer, int head);
};

} // namespace attnviz::ui
