// SPDX-License-Identifier: GPL-3.0-or-later
// Painting over a token × token colour map (cell centres on integer coordinates, x = column,
// y = row): the pixel rectangle of a block of cells, the cells in view, masked cells, the numbers in
// the cells and outlines. Shared by the overlays of the weights heatmap, the pipeline's stages and
// the Compare tab.
#pragma once

#include "attnviz/types.h"

#include <qcustomplot.h>

#include <functional>

namespace attnviz::ui {

struct CellRange {
    int i0 = 0, i1 = -1, j0 = 0, j1 = -1; // rows i0..i1, columns j0..j1 (inclusive)
};

// Pixels covered by rows r0..r1 and columns c0..c1.
QRectF cellPixels(const QCPAxisRect *rect, int r0, int c0, int r1, int c1);
// The cells of a (rows × cols) matrix inside the axes' ranges.
CellRange visibleCells(const QCPAxisRect *rect, int rows, int cols);
// Masked cells: a light fill (so that "masked" never reads as "weight 0") under hatching, each
// row's runs of masked cells drawn as one rectangle.
void paintMaskedCells(QCPPainter *p, const QCPAxisRect *rect, const BoolMat &mask, const CellRange &cells);
// The value of each cell, in a colour readable on the cell's colour in `map`, in font `f`;
// `skip(i, j)` leaves a cell out (masked cells, whose hatching says it).
void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const Mat<float> &m,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip);
void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const WeightMatrix<float> &m,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip);
// The same with each cell's value from `value(i, j)` (weights computed where they are drawn).
void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const std::function<float(int, int)> &value,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip);
// A rectangle outlined in `colour` over a wider white halo, readable on any cell colour.
void paintOutline(QCPPainter *p, const QRectF &r, const QColor &colour, double width, double halo,
                  Qt::PenStyle style = Qt::SolidLine);

} // namespace attnviz::ui
