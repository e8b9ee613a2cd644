// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/layergridview.h"

#include "style/plotstyle.h"
#include "views/headablationmenu.h"
#include "views/plotzoom.h"
#include "live/stackcompute.h"

#include <qcustomplot.h>

#include <QAction>
#include <QMenu>
#include <QVBoxLayout>

#include <cmath>

namespace attnviz::ui {

namespace {

constexpr double kStride = 1.15; // a thumbnail is 1 x 1 plot units, then a gap

// Block average of a (t, t) matrix down to `n` cells per side over [x0, x0 + 1] x [y0, y0 + 1].
// Masked cells are left out; a block with nothing left (all masked, or NaN) is NaN and drawn grey.
QCPColorMapData *tile(const WeightMatrix<float> &w, const BoolMat &mask, int n, double x0, double y0)
{
    const int tq = int(w.rows()), tk = int(w.cols());
    const int fq = (tq + n - 1) / n, fk = (tk + n - 1) / n;
    const int nq = (tq + fq - 1) / fq, nk = (tk + fk - 1) / fk;
    const double hk = 0.5 / nk, hq = 0.5 / nq;
    auto *d = new QCPColorMapData(nk, nq, QCPRange(x0 + hk, x0 + 1 - hk), QCPRange(y0 + hq, y0 + 1 - hq));
    for (int a = 0; a < nq; ++a)
        for (int b = 0; b < nk; ++b) {
            double sum = 0;
            int cnt = 0;
            for (int i = a * fq; i < std::min(tq, (a + 1) * fq); ++i)
                for (int j = b * fk; j < std::min(tk, (b + 1) * fk); ++j) {
                    const float v = w(i, j);
                    if (std::isfinite(v) && (mask.size() == 0 || !mask(i, j))) {
                        sum += v;
                        ++cnt;
                    }
                }
            d->setCell(b, a, cnt ? sum / cnt : std::nan(""));
        }
    return d;
}

} // namespace

LayerGridView::LayerGridView(QWidget *parent) : DeferredView(parent), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("layerGridPlot"));
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QStringLiteral("Layers × heads"), QFont(font().family(), 10, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->axis()->setLabel(QStringLiteral("weight"));
    m_scale->setGradient(weightsGradient());
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.01);
    auto *group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);

    QCPAxisRect *r = m_plot->axisRect();
    r->axis(QCPAxis::atTop)->setVisible(true);
    r->axis(QCPAxis::atBottom)->setVisible(false);
    r->axis(QCPAxis::atLeft)->setRangeReversed(true);
    for (QCPAxis *a : {r->axis(QCPAxis::atTop), r->axis(QCPAxis::atLeft)}) {
        a->grid()->setVisible(false);
        a->setBasePen(Qt::NoPen);
        a->setTickPen(Qt::NoPen);
        a->setSubTicks(false);
    }
    r->axis(QCPAxis::atTop)->setLabel(QStringLiteral("head"));
    r->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("layer"));

    m_frame = new QCPItemRect(m_plot);
    m_frame->setPen(QPen(QColor(220, 30, 30), 3));
    m_frame->setBrush(Qt::NoBrush);
    m_frame->setClipToAxisRect(false);
    m_frame->setVisible(false);

    // Near-square thumbnails, centred: the whole grid ("home") is known once the layout is; a
    // dragged rectangle zooms into some thumbnails (PlotZoom), Shift+drag pans, double-click or Home
    // shows every thumbnail again
    auto fit = [this] {
        const QRect r = m_plot->axisRect()->rect();
        if (m_layers == 0 || r.width() <= 0 || r.height() <= 0)
            return;
        const double pad = 0.08;
        const double w = m_heads * kStride - kStride + 1 + 2 * pad, h = m_layers * kStride - kStride + 1 + 2 * pad;
        // plot units per pixel; a thumbnail may be at most 1.6 times wider than tall, or taller than wide
        const double sx = w / r.width(), sy = h / r.height();
        const double ys = std::max(sy, sx / 1.6), xs = std::max(sx, ys / 1.6);
        const double cx = w / 2 - pad, cy = h / 2 - pad;
        m_plot->xAxis2->setRange(cx - xs * r.width() / 2, cx + xs * r.width() / 2);
        m_plot->yAxis->setRange(cy - ys * r.height() / 2, cy + ys * r.height() / 2);
    };
    r->setRangeZoomAxes(m_plot->xAxis2, m_plot->yAxis);
    r->setRangeDragAxes(m_plot->xAxis2, m_plot->yAxis);
    m_zoom = new PlotZoom(m_plot, fit, PlotZoom::Options{true, 0.0, false});
    connect(m_zoom, &PlotZoom::zoomChanged, this, [this](bool z) { m_frame->setClipToAxisRect(z); });
    connect(m_plot, &QCustomPlot::afterLayout, this, [this, fit] {
        if (m_zoom->isZoomed())
            return;
        const QCPRange x = m_plot->xAxis2->range(), y = m_plot->yAxis->range();
        fit();
        if (x != m_plot->xAxis2->range() || y != m_plot->yAxis->range())
            m_zoom->reset(); // (the same ranges again, remembered as the whole grid)
    });
    // a thumbnail's own menu (head ablation), then the zoom's Reset view, which every point offers
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint &at) {
        QMenu menu(this);
        int l = -1, h = -1;
        if (thumbnailAt(m_plot->mapTo(this, at), l, h)) {
            menu.addActions(headActions(l, h, &menu));
            menu.addSeparator();
        }
        menu.addAction(m_zoom->resetAction());
        menu.exec(m_plot->mapToGlobal(at));
    });
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent *e) { m_pressPos = e->pos(); });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent *e) {
        if ((e->pos() - m_pressPos).manhattanLength() > 4)
            return; // a zoom or a pan, not a click
        if (e->button() != Qt::LeftButton)
            return; // the right button opens the menu
        int l = -1, h = -1;
        if (thumbnailAt(m_plot->mapTo(this, e->pos()), l, h))
            emit headOpened(l, h);
    });
    rebuild();
}

bool LayerGridView::thumbnailAt(const QPoint &pos, int &layer, int &head) const
{
    const QPoint p = m_plot->mapFrom(this, pos);
    if (m_layers == 0 || m_plot->axisRectAt(p) != m_plot->axisRect())
        return false;
    const double x = m_plot->xAxis2->pixelToCoord(p.x()) / kStride;
    const double y = m_plot->yAxis->pixelToCoord(p.y()) / kStride;
    const int h = int(std::floor(x)), l = int(std::floor(y));
    if (h < 0 || h >= m_heads || l < 0 || l >= m_layers || (x - h) * kStride > 1 || (y - l) * kStride > 1)
        return false; // a gap
    layer = l;
    head = h;
    return true;
}

QList<QAction *> LayerGridView::headActions(int layer, int head, QObject *parent)
{
    QList<QAction *> out = headAblationActions(this, m_snapshot, layer, head, highlighted() == qMakePair(layer, head), parent);
    auto *sep = new QAction(parent);
    sep->setSeparator(true);
    out << sep << m_zoom->resetAction();
    return out;
}

QString LayerGridView::title() const
{
    return m_title->text();
}

double LayerGridView::cellValue(int layer, int head, int row, int col) const
{
    if (layer < 0 || layer >= m_layers || head < 0 || head >= m_heads)
        return std::nan("");
    QCPColorMapData *d = m_maps[size_t(layer * m_heads + head)]->data();
    if (row < 0 || col < 0 || row >= d->valueSize() || col >= d->keySize())
        return std::nan("");
    return d->cell(col, row);
}

QPoint LayerGridView::thumbnailCenter(int layer, int head) const
{
    const double x = m_plot->xAxis2->coordToPixel(head * kStride + 0.5);
    const double y = m_plot->yAxis->coordToPixel(layer * kStride + 0.5);
    return m_plot->mapTo(this, QPoint(int(std::lround(x)), int(std::lround(y))));
}

void LayerGridView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void LayerGridView::setSelection(int layer, int head, int)
{
    m_head = head;
    if (layer != m_layer) {
        m_layer = layer;
        rebuild();
        return;
    }
    if (deferred())
        return;
    highlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LayerGridView::rebuild()
{
    if (deferred())
        return;
    const bool ok = m_snapshot && m_snapshot->hasResult() && m_snapshot->deep();
    const Trace<float> *stack = ok ? m_snapshot->trace.get() : nullptr;
    const int layers = ok ? int(stack->layers.size()) : 0;
    const int heads = ok ? int(stack->layers.front().attention.batch.front().weights.size()) : 0;
    if (layers * heads != int(m_maps.size())) {
        for (QCPColorMap *m : m_maps)
            m_plot->removePlottable(m);
        m_maps.clear();
        for (int n = 0; n < layers * heads; ++n) {
            auto *map = new QCPColorMap(m_plot->xAxis2, m_plot->yAxis);
            map->setInterpolate(false);
            map->setGradient(weightsGradient());
            map->setColorScale(m_scale);
            m_maps.push_back(map);
        }
    }
    m_layers = layers;
    m_heads = heads;
    if (!ok) {
        QString why;
        if (!m_snapshot)
            why = QStringLiteral("Computing…");
        else if (!m_snapshot->hasResult())
            why = m_snapshot->message;
        else
            why = QStringLiteral("Single attention layer (depth 1). Set the depth to 2 or more under “Transformer "
                                 "stack” to see every layer × every head.");
        m_title->setText(QStringLiteral("Layers × heads\n") + why);
        m_scale->setVisible(false);
        m_plot->xAxis2->setTickLabels(false);
        m_plot->yAxis->setTickLabels(false);
        m_plot->xAxis2->setLabel(QString());
        m_plot->yAxis->setLabel(QString());
        m_frame->setVisible(false);
        m_cells = 0;
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const int t = m_snapshot->tq();
    m_cells = std::min(t, kMaxCells);
    double hi = 0, lo = 0;
    const bool signedWeights = m_snapshot->settings.normalization != Normalization::Softmax;
    for (int l = 0; l < layers; ++l) {
        const SequenceResult<float> &seq = stack->layers[size_t(l)].attention.batch.front();
        for (int h = 0; h < heads; ++h) {
            const WeightMatrix<float> &w = seq.weights[size_t(h)];
            m_maps[size_t(l * heads + h)]->setData(tile(w, seq.mask, kMaxCells, h * kStride, l * kStride), false);
            for (Eigen::Index k = 0; k < w.storedSize(); ++k) { // the cells not stored are 0: no change to hi, lo
                const float v = w.data()[k];
                if (std::isfinite(v)) {
                    hi = std::max(hi, double(v));
                    if (signedWeights)
                        lo = std::min(lo, double(v));
                }
            }
        }
    }
    m_cells = m_maps.empty() ? 0 : m_maps.front()->data()->keySize();
    m_scale->setVisible(true);
    const QCPRange range = lo >= 0 && fixedWeightScale() && hi <= 1.0 + 1e-6 ? QCPRange(0.0, 1.0)
                                                                             : QCPRange(lo, hi > lo ? hi : lo + 1);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(QStringLiteral("weight"), range));
    auto labels = [](QCPAxis *a, int n, const QString &fmt) {
        QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
        for (int i = 0; i < n; ++i)
            tk->addTick(i * kStride + 0.5, fmt.arg(i));
        a->setTicker(tk);
        a->setTickLabels(true);
    };
    labels(m_plot->xAxis2, heads, QStringLiteral("%1"));
    labels(m_plot->yAxis, layers, QStringLiteral("%1"));
    if (layers * 1000 + heads != m_zoomShape) { // another model: every thumbnail again
        m_zoomShape = layers * 1000 + heads;
        m_zoom->reset();
    }
    // grouped-query attention: the first head of each key/value group names its group
    const AttentionResult<float> &att0 = stack->layers.front().attention;
    const bool grouped = att0.kvHeads > 0 && att0.kvHeads < heads;
    if (grouped) {
        QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
        const int g = heads / att0.kvHeads;
        for (int h = 0; h < heads; ++h)
            tk->addTick(h * kStride + 0.5, h % g == 0 ? QStringLiteral("%1\nkv %2").arg(h).arg(h / g) : QString::number(h));
        m_plot->xAxis2->setTicker(tk);
    }
    m_plot->xAxis2->setLabel(QStringLiteral("head"));
    m_plot->yAxis->setLabel(QStringLiteral("layer"));
    QString title = (grouped ? QStringLiteral("Layers × heads — %1 layers, %2 query heads sharing %3 key/value heads · ")
                                   .arg(layers)
                                   .arg(heads)
                                   .arg(att0.kvHeads)
                             : QStringLiteral("Layers × heads — %1 layers, %2 heads · ").arg(layers).arg(heads)) +
                    describeConfig(*m_snapshot, m_layer, -1, HeadDisplay::All);
    if (t > kMaxCells)
        title += QStringLiteral("\nEach thumbnail block-averages %1 tokens to %2 cells per side.").arg(t).arg(m_cells);
    if (!stack->layers.front().attention.batch.front().fullyMaskedRows.empty())
        title += QStringLiteral("\nGrey rows: every key masked, no weights (NaN).");
    else if (stack->layers.front().attention.batch.front().mask.size() > 0)
        title += QStringLiteral("\nGrey cells: masked.");
    title += QStringLiteral("\nClick a thumbnail to open that layer and head in the Weights view.");
    m_title->setText(title);
    highlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LayerGridView::highlight()
{
    const bool ok = m_layers > 0 && m_snapshot && m_head >= 0 && m_head < m_heads;
    m_selLayer = ok ? m_snapshot->layerIndex(m_layer) : -1;
    m_selHead = ok ? m_head : -1;
    m_frame->setVisible(ok);
    if (!ok)
        return;
    const double pad = 0.05;
    m_frame->topLeft->setCoords(m_selHead * kStride - pad, m_selLayer * kStride - pad);
    m_frame->bottomRight->setCoords(m_selHead * kStride + 1 + pad, m_selLayer * kStride + 1 + pad);
    m_frame->topLeft->setAxes(m_plot->xAxis2, m_plot->yAxis);
    m_frame->bottomRight->setAxes(m_plot->xAxis2, m_plot->yAxis);
}

} // namespace attnviz::ui

