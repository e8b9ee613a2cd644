// SPDX-License-Identifier: GPL-3.0-or-later
// A long text's map as an axis rect shows it (AttentionTiles::pooled): the region of the t_q x t_k
// weights in view, the map's size for it, and the numbers of a map that has come down to single
// cells. The Weights tab's map and Compare's maps follow zoom through these, so both refine alike.
#pragma once

#include "attnviz/types.h"

#include <QRect>
#include <QString>

#include <functional>

class QCPAxisRect;
class QCPColorMap;
class QCPPainter;

namespace attnviz::ui {

struct MapRegion {
    QRect region; // x keys, y queries, in cells
    int outRows = 1, outCols = 1;
    // Every output cell one weight: the map holds the weights themselves.
    bool single() const { return outRows == region.height() && outCols == region.width(); }
};

// The cells of a tq x tk matrix any part of which lies inside `rect`'s axes' ranges (cell j spans
// j ± 0.5), and the map's size: at most `maxCells` a side, and with `perPixel` about one cell a pixel
// of the rect.
MapRegion visibleMapRegion(const QCPAxisRect *rect, int tq, int tk, int maxCells, bool perPixel);

// The numbers of `cells` (the weights of `region` of a tq x tk matrix, one per cell) in the cells of
// `rect` in view, each as `text` writes it, in a colour readable on `map`'s colour there, in the
// largest font up to `capPx` and `share` of a cell's height whose widest number fits a cell (none
// where none fits).
void paintRegionNumbers(QCPPainter *p, QCPAxisRect *rect, QCPColorMap *map, const Mat<float> &cells,
                        const QRect &region, int tq, int tk, double capPx, double share,
                        const std::function<QString(float)> &text);

} // namespace attnviz::ui
