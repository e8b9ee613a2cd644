// SPDX-License-Identifier: GPL-3.0-or-later
// Zoom to a region on a heatmap plot, the same way in every view: drag a rectangle to zoom to it
// (whole cells), Shift+drag to pan, the wheel to zoom around the pointer (where the view allows
// it); double-click, Home (the plot focused) or the context menu's "Reset view" show the whole
// matrix again. The view keeps what "the whole matrix" is: the `home` function sets its ranges.
// Exports draw the plot as it is, so a zoomed view exports the zoomed range.
#pragma once

#include <QObject>
#include <QRectF>

#include <functional>

class QAction;
class QCustomPlot;
class QCPAxisRect;

namespace attnviz::ui {

class PlotZoom : public QObject {
    Q_OBJECT
public:
    struct Options {
        bool wheel = true;        // false where the wheel scrolls the page (the pipeline's stages)
        double cell = 1.0;        // a dragged rectangle snaps to multiples of this (0: no snapping)
        bool linkPanels = false;  // every axis rect of the plot shows the same range (All heads)
    };
    // `home` sets every zoomable axis to the whole matrix (it is called by reset()).
    PlotZoom(QCustomPlot *plot, std::function<void()> home, Options options);
    PlotZoom(QCustomPlot *plot, std::function<void()> home) : PlotZoom(plot, std::move(home), Options{}) {}

    // The whole matrix again, and that range remembered as "not zoomed".
    void reset();
    // Shows the region `coords` (x: columns, y: rows, in axis coordinates) of `rect` (nullptr: the
    // plot's first axis rect, or every panel where they are linked).
    void zoomTo(const QRectF &coords, QCPAxisRect *rect = nullptr);
    bool isZoomed() const;
    QAction *resetAction() const { return m_reset; }

    // The zoom installed on `plot`, if any.
    static PlotZoom *of(const QCustomPlot *plot);

signals:
    void zoomChanged(bool zoomed);

private:
    void zoomToPixels(const QRect &pixels);
    void link(QCPAxisRect *from);
    QList<QCPAxisRect *> zoomableRects() const;

    QCustomPlot *m_plot;
    std::function<void()> m_home;
    Options m_options;
    QAction *m_reset = nullptr;
    QList<QPair<double, double>> m_homeRanges; // each zoomable axis's range after home(), in order
    bool m_linking = false;
    bool m_wasZoomed = false;
};

} // namespace attnviz::ui
