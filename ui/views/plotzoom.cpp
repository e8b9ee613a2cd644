// SPDX-License-Identifier: GPL-3.0-or-later
// PlotZoom: QCustomPlot's selection rectangle (srmCustom, so that the region snaps to whole cells),
// its range drag (Shift) and wheel zoom, and a reset to the view's own "whole matrix".
#include "views/plotzoom.h"

#include <qcustomplot.h>

#include <QAction>

#include <cmath>

namespace attnviz::ui {

namespace {
QList<QCPAxis *> zoomAxes(QCPAxisRect *r)
{
    QList<QCPAxis *> axes = r->rangeZoomAxes(Qt::Horizontal) + r->rangeZoomAxes(Qt::Vertical);
    axes.removeAll(nullptr);
    return axes;
}

// [lo, hi] widened to the edges of the cells (of size `cell`, centred on its multiples) it touches.
QCPRange snapped(QCPRange r, double cell)
{
    r.normalize();
    if (cell <= 0)
        return r;
    const double lo = (std::floor(r.lower / cell + 0.5) - 0.5) * cell;
    const double hi = (std::ceil(r.upper / cell - 0.5) + 0.5) * cell;
    return QCPRange(lo, std::max(hi, lo + cell));
}
} // namespace

PlotZoom::PlotZoom(QCustomPlot *plot, std::function<void()> home, Options options)
    : QObject(plot)
    , m_plot(plot)
    , m_home(std::move(home))
    , m_options(options)
{
    setObjectName(QStringLiteral("plotZoom"));
    QCP::Interactions i = plot->interactions() | QCP::iRangeDrag;
    i.setFlag(QCP::iRangeZoom, options.wheel);
    plot->setInteractions(i);
    plot->setSelectionRectMode(QCP::srmCustom);
    if (QCPSelectionRect *sel = plot->selectionRect()) {
        sel->setPen(QPen(QColor(0, 110, 220), 1.5, Qt::DashLine));
        sel->setBrush(QColor(0, 110, 220, 40));
        connect(sel, &QCPSelectionRect::accepted, this, [this](const QRect &r, QMouseEvent *) { zoomToPixels(r); });
    }
    // a plain drag draws the rectangle; Shift+drag (and the other buttons) pan as before
    connect(plot, &QCustomPlot::mousePress, this, [this](QMouseEvent *e) {
        const bool rect = e->button() == Qt::LeftButton && !(e->modifiers() & Qt::ShiftModifier);
        m_plot->setSelectionRectMode(rect ? QCP::srmCustom : QCP::srmNone);
    });
    connect(plot, &QCustomPlot::mouseRelease, this, [this] { m_plot->setSelectionRectMode(QCP::srmCustom); });
    connect(plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent *e) {
        if (e->button() == Qt::LeftButton)
            reset();
    });
    m_reset = new QAction(tr("Reset view"), plot);
    m_reset->setObjectName(QStringLiteral("resetViewAction"));
    m_reset->setShortcut(QKeySequence(Qt::Key_Home));
    m_reset->setShortcutContext(Qt::WidgetShortcut); // the plot clicked last: one view at a time
    m_reset->setToolTip(tr("Show the whole matrix again (double-click, Home)"));
    connect(m_reset, &QAction::triggered, this, &PlotZoom::reset);
    plot->addAction(m_reset);
    plot->setContextMenuPolicy(Qt::ActionsContextMenu);
    if (plot->focusPolicy() == Qt::NoFocus)
        plot->setFocusPolicy(Qt::ClickFocus);
    // linked panels follow the one the wheel or a drag changed; and the view says when it zooms
    connect(plot, &QCustomPlot::beforeReplot, this, [this] {
        if (!m_options.linkPanels)
            return;
        for (QCPAxisRect *r : zoomableRects())
            for (QCPAxis *a : zoomAxes(r))
                if (!a->property("attnvizZoomLinked").toBool()) {
                    a->setProperty("attnvizZoomLinked", true);
                    connect(a, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this, r] { link(r); });
                }
    });
    connect(plot, &QCustomPlot::afterReplot, this, [this] {
        const bool z = isZoomed();
        if (z != m_wasZoomed) {
            m_wasZoomed = z;
            emit zoomChanged(z);
        }
    });
}

PlotZoom *PlotZoom::of(const QCustomPlot *plot)
{
    return plot ? plot->findChild<PlotZoom *>(QStringLiteral("plotZoom"), Qt::FindDirectChildrenOnly) : nullptr;
}

QList<QCPAxisRect *> PlotZoom::zoomableRects() const
{
    // the axis rects that draw something (a colour scale's own rect is not among the plot's)
    QList<QCPAxisRect *> out;
    for (QCPAxisRect *r : m_plot->axisRects())
        if (!r->plottables().isEmpty() && !zoomAxes(r).isEmpty())
            out << r;
    return out;
}

void PlotZoom::reset()
{
    m_linking = true;
    if (m_home)
        m_home();
    m_linking = false;
    m_homeRanges.clear();
    for (QCPAxisRect *r : zoomableRects())
        for (QCPAxis *a : zoomAxes(r))
            m_homeRanges << qMakePair(a->range().lower, a->range().upper);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool PlotZoom::isZoomed() const
{
    int k = 0;
    for (QCPAxisRect *r : zoomableRects())
        for (QCPAxis *a : zoomAxes(r)) {
            if (k >= m_homeRanges.size())
                return false; // panels made since the last reset show their whole matrix
            const auto &h = m_homeRanges[k++];
            const double tol = 1e-9 * std::max(1.0, std::abs(h.second - h.first));
            if (std::abs(a->range().lower - h.first) > tol || std::abs(a->range().upper - h.second) > tol)
                return true;
        }
    return false;
}

void PlotZoom::zoomToPixels(const QRect &pixels)
{
    QCPAxisRect *r = m_plot->axisRectAt(pixels.center());
    if (!r || !zoomableRects().contains(r) || pixels.width() < 4 || pixels.height() < 4)
        return m_plot->replot(QCustomPlot::rpQueuedReplot); // (the rectangle disappears)
    QCPAxis *x = r->rangeZoomAxis(Qt::Horizontal), *y = r->rangeZoomAxis(Qt::Vertical);
    if (!x || !y)
        return;
    const QRectF coords(QPointF(x->pixelToCoord(pixels.left()), y->pixelToCoord(pixels.top())),
                        QPointF(x->pixelToCoord(pixels.right()), y->pixelToCoord(pixels.bottom())));
    zoomTo(coords.normalized(), r);
}

void PlotZoom::zoomTo(const QRectF &coords, QCPAxisRect *rect)
{
    if (m_homeRanges.isEmpty())
        reset(); // what "not zoomed" is, before the first zoom
    const QList<QCPAxisRect *> rects = zoomableRects();
    if (!rect)
        rect = rects.value(0);
    if (!rect)
        return;
    QCPAxis *x = rect->rangeZoomAxis(Qt::Horizontal), *y = rect->rangeZoomAxis(Qt::Vertical);
    if (!x || !y)
        return;
    x->setRange(snapped(QCPRange(coords.left(), coords.right()), m_options.cell));
    y->setRange(snapped(QCPRange(coords.top(), coords.bottom()), m_options.cell));
    link(rect);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void PlotZoom::link(QCPAxisRect *from)
{
    if (!m_options.linkPanels || m_linking)
        return;
    m_linking = true;
    QCPAxis *x = from->rangeZoomAxis(Qt::Horizontal), *y = from->rangeZoomAxis(Qt::Vertical);
    for (QCPAxisRect *r : zoomableRects()) {
        if (r == from)
            continue;
        if (QCPAxis *a = r->rangeZoomAxis(Qt::Horizontal); a && x)
            a->setRange(x->range());
        if (QCPAxis *a = r->rangeZoomAxis(Qt::Vertical); a && y)
            a->setRange(y->range());
    }
    m_linking = false;
}

} // namespace attnviz::ui
