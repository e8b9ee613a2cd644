// SPDX-License-Identifier: GPL-3.0-or-later
// All heads as small multiples, plus the head average, on one shared colour scale.
// Clicking a panel selects that head (or the average). Long inputs are block-averaged to at most
// kMaxCells per side per panel (the title says so).
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPMarginGroup;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCPLayoutGrid;

namespace attnviz::ui {

class HeadGridView : public DeferredView {
    Q_OBJECT
public:
    static constexpr int kMaxCells = 160;

    explicit HeadGridView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query);

    QCustomPlot *plot() const { return m_plot; }
    int panelCount() const { return int(m_rects.size()); }
    // Panel index -> head (-1 for the average); and the panel's centre in widget coordinates.
    int headOfPanel(int panel) const;
    QPoint panelCenter(int panel) const;
    QString title() const;

signals:
    void headSelected(int head);

protected:

private:
    void rebuild() override;
    void highlight();
    // The title as drawn: the view's own lines and the thinned labels' note, wrapped to the plot.
    QString titleText() const;

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0;
    int m_cols = 1;
    std::vector<QCPMarginGroup *> m_marginGroups; // one per row (bottom) and per column (left)
    QStringList m_labels, m_keyLabels;
    QString m_baseTitle; // the title before the note and the wrapping
    QString m_thinNote;  // "1 in 2 query labels shown: …" (empty while every label is drawn)
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPLayoutGrid *m_grid = nullptr;
    QCPColorScale *m_scale = nullptr;
    std::vector<QCPAxisRect *> m_rects;
    std::vector<QCPColorMap *> m_maps;
};

} // namespace attnviz::ui
