// SPDX-License-Identifier: GPL-3.0-or-later
// The numbers of the contextual-embeddings view: each cell's value over a colour map of
// narrow vectors (d ≤ kMaxNumberedDims) with the selected query's row outlined, and each bar's value
// beside the bar (inside it where the panel has no room).
#pragma once

#include "attnviz/types.h"

#include <qcustomplot.h>

namespace attnviz::ui {

// Wider vectors than this get no numbers in their cells (hover and export still have them).
constexpr int kMaxNumberedDims = 16;

// Draws over one axis rect, clipped to it, without antialiasing its lines.
class RectOverlay : public QCPLayerable {
public:
    RectOverlay(QCustomPlot *plot, QCPAxisRect *rect);

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override;
    QRect clipRect() const override;
    QCPAxisRect *m_rect;
};

class MatrixNumbersOverlay : public RectOverlay {
public:
    MatrixNumbersOverlay(QCustomPlot *plot, QCPAxisRect *rect, QCPColorMap *map);

    const Mat<float> *matrix = nullptr; // null: nothing drawn
    int row = -1;                       // outlined; -1 none

protected:
    void draw(QCPPainter *p) override;

private:
    QCPColorMap *m_map;
};

class BarValuesOverlay : public RectOverlay {
public:
    using RectOverlay::RectOverlay;

    // The bars whose values are written; their key axis is the rect's left (one bar per row).
    QList<QCPBars *> bars;

protected:
    void draw(QCPPainter *p) override;
};

} // namespace attnviz::ui
