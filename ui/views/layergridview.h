// SPDX-License-Identifier: GPL-3.0-or-later
// BertViz's "model view": every layer x every head of a transformer stack as thumbnails, rows =
// layers, columns = heads, on one shared colour scale. Clicking a thumbnail selects that layer and
// head (the main views then show it). Long inputs are block-averaged to at most kMaxCells per side
// per thumbnail (the title says so). In single-layer mode (depth 1) it explains how to get a stack.
// A thumbnail's right-click menu has the head-ablation entries (views/headablationmenu.h), disabled
// with the reason: the word-vector stack cannot be edited (a model's grid is HeadRolesView).
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QAction;
class QCPItemRect;
class QCPTextElement;

namespace attnviz::ui {

class PlotZoom;

class LayerGridView : public DeferredView {
    Q_OBJECT
public:
    static constexpr int kMaxCells = 64;

    explicit LayerGridView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The head shown in the main views (-1: the average); the layer comes with the snapshot.
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;

    QCustomPlot *plot() const override { return m_plot; }
    PlotZoom *zoom() const { return m_zoom; }
    QString title() const;
    int layerCount() const { return m_layers; }
    int headCount() const { return m_heads; }
    int thumbnailCount() const { return int(m_maps.size()); }
    // Cells per side of each thumbnail (= tokens unless block-averaged).
    int cellsPerSide() const { return m_cells; }
    // What thumbnail (layer, head) draws in its cell (query row, key column) of the pooled grid.
    double cellValue(int layer, int head, int row, int col) const;
    // The thumbnail's centre in widget coordinates (for clicks).
    QPoint thumbnailCenter(int layer, int head) const;
    // The highlighted thumbnail, (-1, -1) if none.
    QPair<int, int> highlighted() const { return {m_selLayer, m_selHead}; }
    // The right-click menu's entries for thumbnail (layer, head): the head-ablation entries, then
    // Reset view.
    QList<QAction *> headActions(int layer, int head, QObject *parent);
    // The thumbnail under a widget position; false over a gap or outside the grid.
    bool thumbnailAt(const QPoint &pos, int &layer, int &head) const;

protected:

private:
    void rebuild() override;
    void highlight();

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0;
    int m_layers = 0, m_heads = 0, m_cells = 0;
    int m_selLayer = -1, m_selHead = -1;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPItemRect *m_frame = nullptr;
    PlotZoom *m_zoom = nullptr;
    QPoint m_pressPos;
    int m_zoomShape = -1; // layers × 1000 + heads the zoom was for
    std::vector<QCPColorMap *> m_maps; // layer-major
};

} // namespace attnviz::ui
