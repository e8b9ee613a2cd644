// SPDX-License-Identifier: GPL-3.0-or-later
// Attention rollout (Abnar & Zuidema 2020) as a token × token heatmap: row i, column j = how much
// token i's state after layer L draws on input token j, with each layer's head-averaged attention
// mixed half-and-half with the identity (the residual connection), rows renormalised and multiplied
// through layers 0…L (attnviz/headroles.h). The layer L follows the window's layer, or is chosen
// here; one sentence under the map says what it shows. Texts past kSyncTokens are computed off the
// GUI thread. A long text (its weights computed where a view looks) shows the selected query's row
// only, streamed through AttentionTiles off the GUI thread (attnviz/rolloutrow.h) with its progress
// in the title, computed anew (the one before cancelled) when another query, layer or text is chosen.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QFutureWatcher>

#include <atomic>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QLabel;
class QSpinBox;

namespace attnviz::ui {

class PlotZoom;

class RolloutView : public DeferredView {
    Q_OBJECT
public:
    // Texts up to this many tokens are rolled out at once on the GUI thread; longer ones (t³ per
    // layer) on a worker thread.
    static constexpr int kSyncTokens = 256;

    explicit RolloutView(QWidget *parent = nullptr);
    ~RolloutView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // The window's layer: the rollout shown runs up to it; the query: the row a long text's shows.
    void setSelection(int layer, int head, int query) override;
    void setRolloutLayer(int layer);
    int rolloutLayer() const { return m_layer; }

    QCustomPlot *plot() const override { return m_plot; }
    PlotZoom *zoom() const { return m_zoom; }
    QString title() const;
    QString explanation() const;
    static QString explanationFor(bool normWeighted); // the line under the plot, for the weights or ||a v W_O||
    bool ready() const { return !m_rollout.empty() || !m_row.empty(); }
    // A long text's: the query whose row is shown (or being computed), -1 for a short text's matrix.
    int rowQuery() const { return m_rowQuery; }
    bool rowPending() const { return m_rowRunning; }
    // R_L(query, key) as computed (NaN when not ready or outside; a long text's: its one row).
    double value(int query, int key) const;
    // What the colour map holds at (query, key) (its block when pooled).
    double cellValue(int query, int key) const;

private:
    void rebuild() override;
    void showRollout();
    void showRow(); // a long text's one row
    // A long text's row of `query` up to layer `layer`, off the GUI thread (the one computing cancelled).
    void startRow(const SnapshotPtr &s, int query, int layer);
    void cancelRow();

    SnapshotPtr m_snapshot;
    SnapshotPtr m_computedFor;
    std::vector<Mat<double>> m_rollout;
    QFutureWatcher<std::vector<Mat<double>>> *m_watcher = nullptr;
    SnapshotPtr m_pending;
    int m_layer = 0;
    QSpinBox *m_layerBox = nullptr;
    QLabel *m_explain = nullptr;
    QCustomPlot *m_plot = nullptr;
    QCPColorMap *m_map = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPTextElement *m_title = nullptr;
    PlotZoom *m_zoom = nullptr;
    int m_zoomTokens = -1; // the rows of the rollout the zoom was for
    // a long text's row: the selected query (-1: the last), what is shown, what is being computed
    int m_query = -1;
    std::vector<double> m_row;
    int m_rowQuery = -1, m_rowLayer = -1;
    bool m_rowRunning = false;
    SnapshotPtr m_rowAsked; // the snapshot of the row being computed
    int m_askedQuery = -1, m_askedLayer = -1;
    QString m_rowFailed;
    quint64 m_rowGen = 0;
    std::shared_ptr<std::atomic<bool>> m_rowCancel;
};

} // namespace attnviz::ui
