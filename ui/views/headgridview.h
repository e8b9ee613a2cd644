// SPDX-License-Identifier: GPL-3.0-or-later
// All heads as small multiples, plus the head average, on one shared colour scale.
// Clicking a panel selects that head (or the average). Long inputs are block-averaged to at most
// kMaxCells per side per panel (the title says so). Every panel keeps at least kMinPanelPx per side:
// when the heads do not fit so, they are shown a page at a time (◀ ▶ above the plot, the selected
// head's page first). Drag a rectangle on any panel to zoom every panel to it (PlotZoom).
// A long text's trace keeps no weights (ComputeSnapshot::longText): each panel of the page shown is
// a map of the region the panels show at about the panel's pixels, each cell the max (or, on the
// Weights tab's switch, the mean) of the weights it covers, computed from q and k (AttentionTiles)
// one head after another off the GUI thread (LongTextMaps): the panels fill as their heads are ready,
// on one colour scale, and another text, layer, page, zoom or switch stops the heads not yet begun.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include "attnviz/attentiontiles.h"

#include <QWidget>

#include <memory>
#include <vector>

class QCustomPlot;
class QCPMarginGroup;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCPLayoutGrid;
class QLabel;
class QScrollArea;
class QAction;
class QTimer;
class QToolButton;

namespace attnviz::ui {

class PlotZoom;
class LongTextMaps;

class HeadGridView : public DeferredView {
    Q_OBJECT
public:
    static constexpr int kMaxCells = 160;
    // The least width and height of a panel's cells area, in pixels (at 256 tokens the panels were
    // 170 × 50 px slivers).
    static constexpr int kMinPanelPx = 120;

    explicit HeadGridView(QWidget *parent = nullptr);
    ~HeadGridView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;

    QCustomPlot *plot() const override { return m_plot; }
    // The panels drawn (this page's).
    int panelCount() const { return int(m_rects.size()); }
    // Panel index (on this page) -> head (-1 for the average); and the panel's centre in widget coordinates.
    int headOfPanel(int panel) const;
    // Pages of heads (1 when every head fits), the one shown, and turning them.
    int pageCount() const;
    int page() const;
    void setPage(int page);
    QRect panelRect(int panel) const; // the panel's cells area, in widget coordinates
    PlotZoom *zoom() const { return m_zoom; }
    QPoint panelCenter(int panel) const;
    QString title() const;
    // The tooltip of cell (query, key) of head `head`'s panel (-1: the average); empty outside.
    QString hoverText(int head, int query, int key) const;

    // A long text's maps: how a cell pools the weights it covers (kept in step with the Weights
    // tab's switch by the window), the cells of head `head`'s panel (-1: the average; rows:
    // queries; empty until computed), the region they cover (x keys, y queries, in cells), and
    // whether a panel of the page shown still waits for its map.
    Pooling pooling() const { return m_pooling; }
    void setPooling(Pooling pooling);
    QAction *meanPoolingAction() const { return m_meanAction; }
    const Mat<float> &mapCells(int head) const;
    QRect mapRegion() const { return m_mapRegion; }
    bool mapsPending() const;

protected:
    void resizeEvent(QResizeEvent *e) override;
    void showEvent(QShowEvent *e) override;
    void hideEvent(QHideEvent *e) override;

private:
    // How many panels fit at kMinPanelPx in the view's present size (all of them before it has one):
    // per page, in columns and rows; and the plot's least size for one panel.
    struct PageGrid {
        int perPage = 1, cols = 1, rows = 1;
        QSize minSize;
    };
    PageGrid pageGrid(int panels) const;
    void rebuild() override;
    void highlight();
    // The title as drawn: the view's own lines and the thinned labels' note, wrapped to the plot.
    QString titleText() const;
    // A long text's: the maps the page shown needs (those of the heads not computed at the present
    // region and resolution), asked of m_longMaps; one head's map drawn; the title's long-text line.
    struct MapKey {
        const void *tiles = nullptr;
        QRect region;
        int outRows = 0, outCols = 0;
        Pooling pooling = Pooling::Max;
        bool operator==(const MapKey &o) const
        {
            return tiles == o.tiles && region == o.region && outRows == o.outRows && outCols == o.outCols
                && pooling == o.pooling;
        }
    };
    MapKey mapKey() const; // what the panels show now
    // Whether maps computed for `a` serve `b`: the same region and pooling, the resolution within an
    // eighth (a title that gains a line moves the panels by a few pixels: not worth a new map).
    static bool serves(const MapKey &a, const MapKey &b);
    void startMaps();
    void showHeadMap(int head, const Mat<float> &cells);
    void drawLongTextPanels(); // every panel of the page from the maps computed, the colour scale
    QString longTextLine() const;

    SnapshotPtr m_snapshot;
    std::shared_ptr<const AttentionTiles<float>> m_tiles; // a long text's, of the shown layer
    LongTextMaps *m_longMaps = nullptr;
    QTimer *m_mapTimer = nullptr; // a map request once the panels stop moving or resizing
    MapKey m_mapKey;               // what m_headCells were computed for
    std::vector<Mat<float>> m_headCells; // per head + 1 (the average first); empty: not computed
    QRect m_mapRegion;
    Pooling m_pooling = Pooling::Max;
    QAction *m_meanAction = nullptr;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0;
    int m_cols = 1;
    int m_first = 0;   // the first panel of the page shown (panels: heads 0…, then the average)
    int m_perPage = 0; // panels per page (0: every panel)
    int m_panels = 0;  // every panel, all pages
    int m_zoomTokens = -1;
    QWidget *m_pager = nullptr;
    QScrollArea *m_scroll = nullptr;
    QToolButton *m_prev = nullptr, *m_next = nullptr;
    QLabel *m_pageLabel = nullptr;
    PlotZoom *m_zoom = nullptr;
    std::vector<QCPMarginGroup *> m_marginGroups; // one per row (bottom) and per column (left)
    QStringList m_labels, m_keyLabels;
    QString m_baseTitle; // the title before the note and the wrapping
    QString m_titleHead; // a long text's: the base title less its line on the maps
    QString m_poolNote;  // "266 tokens as means of 2 × 2 blocks" (empty: every token its cell)
    QString m_thinNote;  // "1 in 2 query labels shown: …" (empty while every label is drawn)
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPLayoutGrid *m_grid = nullptr;
    QCPColorScale *m_scale = nullptr;
    std::vector<QCPAxisRect *> m_rects;
    std::vector<QCPColorMap *> m_maps;
};

} // namespace attnviz::ui
