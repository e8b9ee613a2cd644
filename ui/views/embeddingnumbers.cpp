// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/embeddingnumbers.h"

#include "style/cellpaint.h"
#include "style/legibility.h"
#include "style/plotstyle.h"

#include <algorithm>
#include <cmath>

#include <QSet>

namespace attnviz::ui {

RectOverlay::RectOverlay(QCustomPlot *plot, QCPAxisRect *rect)
    : QCPLayerable(plot, QStringLiteral("main")), m_rect(rect)
{
}

void RectOverlay::applyDefaultAntialiasingHint(QCPPainter *p) const
{
    applyAntialiasingHint(p, false, QCP::aeOther);
}

QRect RectOverlay::clipRect() const
{
    return m_rect->rect();
}

MatrixNumbersOverlay::MatrixNumbersOverlay(QCustomPlot *plot, QCPAxisRect *rect, QCPColorMap *map)
    : RectOverlay(plot, rect), m_map(map)
{
}

void MatrixNumbersOverlay::draw(QCPPainter *p)
{
    if (!matrix || matrix->size() == 0 || !m_map->visible())
        return;
    const int rows = int(matrix->rows()), cols = int(matrix->cols());
    if (cols <= kMaxNumberedDims) {
        const QSizeF cell = cellPixels(m_rect, 0, 0, 0, 0).size();
        // four decimals (as the lessons quote them) where they fit in a font as large as two
        auto f = cellNumberFont(parentPlot(), p->font(), cell, QStringLiteral("−0.00"),
                                std::min(13.0, cell.height() * 0.45));
        const auto f4 = f ? cellNumberFont(parentPlot(), p->font(), cell, QStringLiteral("−0.0000"),
                                           std::min(13.0, cell.height() * 0.45))
                          : std::optional<QFont>();
        const bool four = f4 && QFontInfo(*f4).pixelSize() >= QFontInfo(*f).pixelSize();
        if (f) {
            parentPlot()->setProperty("attnvizCellNumberPx", QFontInfo(*f).pixelSize());
            paintCellNumbers(p, m_rect, m_map, *matrix, visibleCells(m_rect, rows, cols), four ? *f4 : *f,
                             [four](float v) {
                                 return std::isfinite(v) ? QString::number(double(v), 'f', four ? 4 : 2)
                                                         : QStringLiteral("NaN");
                             },
                             {});
        }
    }
    if (row >= 0 && row < rows)
        paintOutline(p, cellPixels(m_rect, row, 0, row, cols - 1), QColor(220, 30, 30), 2, 3.5);
}

void BarValuesOverlay::draw(QCPPainter *p)
{
    QCPAxis *keys = m_rect->axis(QCPAxis::atLeft), *values = m_rect->axis(QCPAxis::atBottom);
    const double rowPx = std::abs(keys->coordToPixel(1) - keys->coordToPixel(0));
    QFont f = p->font();
    f.setPixelSize(std::max(minimumNumberPixels(), int(std::min(13.0, rowPx * 0.6))));
    const QFontMetricsF fm(f);
    if (fm.height() > rowPx + 1)
        return; // rows too thin for a value each: hover and export have them
    p->setFont(f);
    const QRect r = m_rect->rect();
    const QColor bg = parentPlot()->property("attnviz.background").value<QColor>(); // AppearanceManager's
    QSet<int> written; // the selected query's bar lies over its row's bar: one value per row
    for (QCPBars *b : bars) {
        if (!b->visible())
            continue;
        for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) {
            if (!std::isfinite(it->value) || written.contains(int(it->key)))
                continue;
            written.insert(int(it->key));
            const QString text = QString::number(it->value, 'f', 2);
            const double y = keys->coordToPixel(it->key), x0 = values->coordToPixel(0),
                         x1 = values->coordToPixel(it->value);
            const double w = fm.horizontalAdvance(text) + 4;
            const bool right = x1 >= x0;
            QRectF box(right ? x1 + 2 : x1 - 2 - w, y - fm.height() / 2, w, fm.height());
            QColor colour = textOn(bg.isValid() ? bg : QColor(Qt::white));
            if (box.left() < r.left() || box.right() > r.right()) { // no room beside it: inside the bar's end
                box.moveLeft(right ? x1 - 2 - w : x1 + 2);
                colour = textOn(b->brush().color());
            }
            p->setPen(colour);
            p->drawText(box, Qt::AlignCenter, text);
        }
    }
}

} // namespace attnviz::ui
