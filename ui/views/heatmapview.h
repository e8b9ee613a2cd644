// SPDX-License-Identifier: GPL-3.0-or-later
// The attention-weight heatmap: query tokens down, key tokens across, a colour scale, hover
// tooltips, optional numbers in the cells, zoom (a dragged rectangle, the wheel; PlotZoom) and pan
// (Shift+drag), masked cells hatched.
// Clicking a row selects that query; in custom-mask mode clicking a cell masks or unmasks it.
// A long text's trace keeps no weights (ComputeSnapshot::longText): the view draws a map of the
// visible region at about the plot's pixel resolution, each cell the max (or, on a switch in the
// context menu, the mean) of the weights it covers, computed from q and k (AttentionTiles), and
// computes it again as the view zooms or pans, down to single cells with their exact weights.
// A span of keys marked elsewhere (a needle probe's needle, "Use selection as span" on the Layers
// tab) is outlined as a band of columns over every query row, named in the title.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include "attnviz/attentiontiles.h"

#include <QRect>
#include <QRectF>
#include <QWidget>

#include <memory>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCPItemText;
class QMouseEvent;
class QAction;
class QTimer;

namespace attnviz::ui {

class HeatmapOverlay;
class PlotZoom;

class HeatmapView : public DeferredView {
    Q_OBJECT
public:
    // Beyond this many tokens per side the colour map is block-averaged (hover still shows exact
    // weights): the map image stays about screen-sized and an update stays cheap.
    static constexpr int kMaxDisplayCells = 1024;

    explicit HeatmapView(QWidget *parent = nullptr);
    ~HeatmapView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // head -1 = the average over heads.
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;
    void setHeadDisplay(HeadDisplay display) override;
    void setShowNumbers(bool show);
    void setCustomMaskEditing(bool on);
    void resetZoom();
    // Shows only these cells (x: keys, y: queries), as a dragged rectangle would.
    void zoomToCells(const QRect &cells);
    PlotZoom *zoom() const { return m_zoom; }

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    // What is drawn, for tests and export: the matrix (NaN where undefined) and the axis labels.
    const WeightMatrix<float> *shownMatrix() const;
    QStringList queryLabels() const { return m_queryLabels; }
    QStringList keyLabels() const { return m_keyLabels; }
    double cellValue(int query, int key) const; // from the plotted colour-map data (its block when pooled)
    int poolFactor() const { return m_pool; }
    QString message() const;                    // the explanation shown instead of a heatmap, if any
    QString hoverText(int query, int key) const;
    bool cellAt(const QPoint &widgetPos, int &query, int &key) const;
    QPoint cellCenter(int query, int key) const; // widget coordinates

    // A long text's map: the cells drawn (rows: queries), the region of the matrix they cover (x:
    // keys, y: queries, in cells), and how each cell pools the weights it covers. Empty otherwise.
    const Mat<float> &mapCells() const { return m_mapCells; }
    QRect mapRegion() const { return m_mapRegion; }
    Pooling pooling() const { return m_pooling; }
    void setPooling(Pooling pooling);
    QAction *meanPoolingAction() const { return m_meanAction; }
    // Keys [begin, end) outlined over every query row, named `what` in the title ("the needle");
    // begin >= end: none.
    void setMarkedKeys(int begin, int end, const QString &what);
    QPair<int, int> markedKeys() const { return {m_markBegin, m_markEnd}; }
    // The band drawn, in plot coordinates (x keys, y queries; cell j spans j ± 0.5), clipped to the
    // text; null where none is drawn (no span, or a span past the text's keys).
    QRectF markedBand() const;
    // A weight as a cell shows it: two decimals, or two significant digits where that reads "0.00"
    // (3.1e-4), so that a small weight of a long text is never drawn as zero.
    static QString cellNumberText(float v);
    // Whether a zoom or pan waits for its map (computed once the view stops moving, off the GUI
    // thread where it is large); refreshMap computes it now, on this thread.
    bool mapPending() const;
    void refreshMap();
    // Above this many multiply-adds (cells x d_head x heads; 5e7 unless set) a map is computed on a
    // pool thread.
    void setMapWorkOnThread(double work) { m_mapWorkOnThread = work; }

signals:
    void cellToggled(int query, int key);
    // The query row under the mouse changed (-1: none).
    void queryHovered(int query);

protected:
    bool event(QEvent *e) override;

private:
    void rebuild() override;
    void updateTitle();
    // The explanation instead of a map (no weights to draw), and a replot.
    void showMessage(const QString &text);
    void onPress(QMouseEvent *e);
    void onRelease(QMouseEvent *e);
    void onMove(QMouseEvent *e);
    // The cell (a, b) of the drawn map that covers (query, key), with the keys (x) and rows (y) it
    // covers; false outside the map.
    bool mapCellAt(int query, int key, int &a, int &b, QRect &covered) const;
    // A long text's map of what the axes show: the region (x keys, y queries), the cells it is
    // pooled into, the head, and the work it takes.
    struct MapRequest {
        QRect region;
        int outRows = 1, outCols = 1, head = -1;
        Pooling pooling = Pooling::Max;
        double work = 0;
    };
    MapRequest mapRequest() const;
    void showMap(const MapRequest &r, Mat<float> cells);
    void startMap(); // on this thread where small, else on a pool thread (the newest request wins)

    SnapshotPtr m_snapshot;
    std::shared_ptr<const AttentionTiles<float>> m_tiles; // a long text's, of the shown layer
    Mat<float> m_mapCells;
    QRect m_mapRegion;
    Pooling m_pooling = Pooling::Max;
    QAction *m_meanAction = nullptr;
    QTimer *m_mapTimer = nullptr;
    quint64 m_mapGeneration = 0; // the map requested last; an older one computed is dropped
    bool m_mapComputing = false;
    double m_mapWorkOnThread = 5e7;

    int m_markBegin = 0, m_markEnd = 0; // the marked keys (none where begin >= end)
    QString m_markName;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0, m_query = 0;
    HeadDisplay m_display = HeadDisplay::One;
    bool m_customEditing = false;
    int m_pool = 1;
    int m_hoveredQuery = -1;
    QStringList m_queryLabels, m_keyLabels;
    QPoint m_pressPos;
    QCustomPlot *m_plot = nullptr;
    QCPColorMap *m_map = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPTextElement *m_title = nullptr;
    QString m_scaleLabel; // the colour bar's whole title
    QString m_titleText; // the whole title; drawn on one elided line where its lines would crowd the map
    bool m_titleElided = false; // so drawn (its tooltip then gives the whole; a title only re-wrapped has none)
    QCPItemText *m_message = nullptr;
    HeatmapOverlay *m_overlay = nullptr;
    PlotZoom *m_zoom = nullptr;
};

} // namespace attnviz::ui
