// SPDX-License-Identifier: GPL-3.0-or-later
#include "style/cellpaint.h"

#include "style/plotstyle.h"

#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

QRectF cellPixels(const QCPAxisRect *rect, int r0, int c0, int r1, int c1)
{
    const QCPAxis *x = rect->axis(QCPAxis::atBottom);
    const QCPAxis *y = rect->axis(QCPAxis::atLeft);
    const double xa = x->coordToPixel(c0 - 0.5), xb = x->coordToPixel(c1 + 0.5);
    const double ya = y->coordToPixel(r0 - 0.5), yb = y->coordToPixel(r1 + 0.5);
    return QRectF(QPointF(std::min(xa, xb), std::min(ya, yb)), QPointF(std::max(xa, xb), std::max(ya, yb)));
}

CellRange visibleCells(const QCPAxisRect *rect, int rows, int cols)
{
    const QCPRange xr = rect->axis(QCPAxis::atBottom)->range();
    const QCPRange yr = rect->axis(QCPAxis::atLeft)->range();
    CellRange c;
    c.i0 = std::max(0, int(std::floor(std::min(yr.lower, yr.upper) - 0.5)));
    c.i1 = std::min(rows - 1, int(std::ceil(std::max(yr.lower, yr.upper) + 0.5)));
    c.j0 = std::max(0, int(std::floor(xr.lower - 0.5)));
    c.j1 = std::min(cols - 1, int(std::ceil(xr.upper + 0.5)));
    return c;
}

void paintMaskedCells(QCPPainter *p, const QCPAxisRect *rect, const BoolMat &mask, const CellRange &cells)
{
    // one shape for every masked cell, filled once per brush: rows drawn as rectangles of their own
    // met at edges that vector renderers (SVG, PDF) anti-alias twice, a faint seam between rows
    QPainterPath area;
    area.setFillRule(Qt::WindingFill); // the rows' rectangles add up (odd-even lost some of them)
    for (int i = cells.i0; i <= cells.i1; ++i) {
        int j = cells.j0;
        while (j <= cells.j1) {
            if (!mask(i, j)) {
                ++j;
                continue;
            }
            int e = j;
            while (e + 1 <= cells.j1 && mask(i, e + 1))
                ++e;
            area.addRect(cellPixels(rect, i, j, i, e));
            j = e + 1;
        }
    }
    if (area.isEmpty())
        return;
    area = area.simplified(); // the union's outline: no inner edges left
    p->setPen(Qt::NoPen);
    for (const QBrush &brush : {QBrush(maskFillColor()), maskHatchBrush()}) {
        p->setBrush(brush);
        p->drawPath(area);
    }
}

namespace {

template <typename M>
void paintCellNumbersOf(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const M &m, const CellRange &cells,
                        const QFont &f, const std::function<QString(float)> &text,
                        const std::function<bool(int, int)> &skip)
{
    p->setFont(f);
    for (int i = cells.i0; i <= cells.i1; ++i)
        for (int j = cells.j0; j <= cells.j1; ++j) {
            if (skip && skip(i, j))
                continue;
            const float v = m(i, j);
            const QColor bg = std::isfinite(v) ? map->gradient().color(v, map->dataRange()) : nanColor();
            p->setPen(contrastingText(bg));
            p->drawText(cellPixels(rect, i, j, i, j), Qt::AlignCenter, text(v));
        }
}

} // namespace

void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const Mat<float> &m,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip)
{
    paintCellNumbersOf(p, rect, map, m, cells, f, text, skip);
}

void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const WeightMatrix<float> &m,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip)
{
    paintCellNumbersOf(p, rect, map, m, cells, f, text, skip);
}

void paintCellNumbers(QCPPainter *p, const QCPAxisRect *rect, QCPColorMap *map, const std::function<float(int, int)> &value,
                      const CellRange &cells, const QFont &f, const std::function<QString(float)> &text,
                      const std::function<bool(int, int)> &skip)
{
    paintCellNumbersOf(p, rect, map, value, cells, f, text, skip);
}

void paintOutline(QCPPainter *p, const QRectF &r, const QColor &colour, double width, double halo, Qt::PenStyle style)
{
    p->setBrush(Qt::NoBrush);
    p->setPen(QPen(QColor(255, 255, 255), halo));
    p->drawRect(r);
    p->setPen(QPen(colour, width, style));
    p->drawRect(r);
}

} // namespace attnviz::ui
