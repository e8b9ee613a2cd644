// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/mapregion.h"

#include "style/cellpaint.h"
#include "style/legibility.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

MapRegion visibleMapRegion(const QCPAxisRect *rect, int tq, int tk, int maxCells, bool perPixel)
{
    MapRegion m;
    tq = std::max(1, tq);
    tk = std::max(1, tk);
    const QCPRange xr = rect->axis(QCPAxis::atBottom)->range(), yr = rect->axis(QCPAxis::atLeft)->range();
    constexpr double eps = 1e-6;
    const int c0 = std::clamp(int(std::floor(xr.lower - 0.5 + eps)) + 1, 0, tk - 1);
    const int c1 = std::clamp(int(std::ceil(xr.upper + 0.5 - eps)) - 1, c0, tk - 1);
    const int r0 = std::clamp(int(std::floor(std::min(yr.lower, yr.upper) - 0.5 + eps)) + 1, 0, tq - 1);
    const int r1 = std::clamp(int(std::ceil(std::max(yr.lower, yr.upper) + 0.5 - eps)) - 1, r0, tq - 1);
    const int R = r1 - r0 + 1, C = c1 - c0 + 1;
    const QRect px = rect->rect();
    m.region = QRect(c0, r0, C, R);
    m.outRows = std::clamp(perPixel ? std::max(1, px.height()) : R, 1, std::min(R, maxCells));
    m.outCols = std::clamp(perPixel ? std::max(1, px.width()) : C, 1, std::min(C, maxCells));
    return m;
}

void paintRegionNumbers(QCPPainter *p, QCPAxisRect *rect, QCPColorMap *map, const Mat<float> &cells,
                        const QRect &region, int tq, int tk, double capPx, double share,
                        const std::function<QString(float)> &text)
{
    if (cells.rows() != region.height() || cells.cols() != region.width())
        return;
    CellRange shown = visibleCells(rect, tq, tk);
    shown.i0 = std::max(shown.i0, region.top());
    shown.i1 = std::min(shown.i1, region.bottom());
    shown.j0 = std::max(shown.j0, region.left());
    shown.j1 = std::min(shown.j1, region.right());
    // the widest number shown ("3.1e-4" where a weight is too small for two decimals)
    QString widest = text(0.0f);
    for (int i = shown.i0; i <= shown.i1; ++i)
        for (int j = shown.j0; j <= shown.j1; ++j)
            if (const QString t = text(cells(i - region.top(), j - region.left())); t.size() > widest.size())
                widest = t;
    const QRectF one = cellPixels(rect, 0, 0, 0, 0);
    if (const auto f = cellNumberFont(rect->parentPlot(), p->font(), one.size(), widest, std::min(capPx, one.height() * share)))
        paintCellNumbers(
            p, rect, map,
            std::function<float(int, int)>([&](int i, int j) { return cells(i - region.top(), j - region.left()); }),
            shown, *f, text, nullptr);
}

} // namespace attnviz::ui
