// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/heatmapview.h"
#include "views/mapregion.h"

#include "views/normweighting.h"

#include "live/longtext.h"

#include "style/cellpaint.h"
#include "style/legibility.h"

#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/plotzoom.h"

#include <qcustomplot.h>

#include <QAction>
#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz::ui {

// The most of the plot's height the title may take on several lines (else one elided line).
constexpr double kHeatmapTitleShare = 0.2;

// Draws on top of the colour map: hatching over masked cells, the selected query row's outline,
// the marked keys' band and the numbers in the cells when they fit.
class HeatmapOverlay : public QCPLayerable {
public:
    HeatmapOverlay(QCustomPlot *plot, QCPAxisRect *rect, QCPColorMap *map)
        : QCPLayerable(plot, QStringLiteral("main"))
        , m_rect(rect)
        , m_map(map)
    {
    }

    SnapshotPtr snapshot;
    int layer = 0;
    const WeightMatrix<float> *matrix = nullptr;
    // a long text's map where it shows single cells: the weights of `region` (x keys, y queries)
    const Mat<float> *cells = nullptr;
    QRect region;
    int query = -1;
    bool numbers = false;
    QRectF band; // the marked keys' columns in plot coordinates; null: none

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override { applyAntialiasingHint(p, false, QCP::aeOther); }
    QRect clipRect() const override { return m_rect->rect(); }

    void draw(QCPPainter *p) override
    {
        if (snapshot && snapshot->hasResult() && snapshot->longText)
            return drawLongText(p);
        if (!snapshot || !snapshot->hasResult() || !matrix)
            return;
        const int tq = int(matrix->rows()), tk = int(matrix->cols());
        const CellRange cells = visibleCells(m_rect, tq, tk);
        const BoolMat &mask = snapshot->seq(layer).mask;
        if (mask.size() > 0)
            paintMaskedCells(p, m_rect, mask, cells);
        if (!numbers)
            parentPlot()->setProperty("attnvizCellNumberPx", 0);
        if (numbers) {
            const QRectF one = cellPixels(m_rect, 0, 0, 0, 0);
            // up to 10 pt (13 px), never below the readable minimum (18 px presenting): legibility.h
            if (const auto f = cellNumberFont(parentPlot(), p->font(), one.size(), QStringLiteral("0.00"),
                                              std::min(13.0, one.height() * 0.43)))
                paintCellNumbers(
                    p, m_rect, m_map, *matrix, cells, *f,
                    [](float v) { return std::isfinite(v) ? QString::number(double(v), 'f', 2) : QStringLiteral("NaN"); },
                    [&](int i, int j) { // masked: the hatching says it
                        return mask.size() > 0 && mask(i, j) && std::isfinite((*matrix)(i, j));
                    });
        }
        drawBand(p);
        if (query >= 0 && query < tq)
            // presenting, thick enough to see from the back of the room
            paintOutline(p, cellPixels(m_rect, query, 0, query, tk - 1), QColor(220, 30, 30),
                         presentationLegibility() ? 4 : 1.5, presentationLegibility() ? 8 : 3);
    }

private:
    void drawLongText(QCPPainter *p)
    {
        const int tq = snapshot->tq(), tk = snapshot->tk();
        if (!numbers)
            parentPlot()->setProperty("attnvizCellNumberPx", 0);
        if (numbers && cells)
            paintRegionNumbers(p, m_rect, m_map, *cells, region, tq, tk, 13.0, 0.43,
                               [](float v) { return HeatmapView::cellNumberText(v); });
        drawBand(p);
        if (query >= 0 && query < tq)
            paintOutline(p, cellPixels(m_rect, query, 0, query, tk - 1), QColor(220, 30, 30),
                         presentationLegibility() ? 4 : 1.5, presentationLegibility() ? 8 : 3);
    }

    // The marked keys: a band of columns over every row, at least a few pixels wide where the map
    // pools many keys into a pixel, outlined over a white halo (readable on every colour map).
    void drawBand(QCPPainter *p)
    {
        if (band.isNull())
            return;
        const QCPAxis *x = m_rect->axis(QCPAxis::atBottom), *y = m_rect->axis(QCPAxis::atLeft);
        const double xa = x->coordToPixel(band.left()), xb = x->coordToPixel(band.right());
        const double ya = y->coordToPixel(band.top()), yb = y->coordToPixel(band.bottom());
        QRectF r(QPointF(std::min(xa, xb), std::min(ya, yb)), QPointF(std::max(xa, xb), std::max(ya, yb)));
        const bool presenting = presentationLegibility();
        const double least = presenting ? 10 : 6;
        if (r.width() < least)
            r.adjust(-(least - r.width()) / 2, 0, (least - r.width()) / 2, 0);
        p->setPen(Qt::NoPen);
        p->setBrush(QColor(255, 255, 255, 40)); // a light veil: the band reads as one even where its cells are dark
        p->drawRect(r);
        paintOutline(p, r, QColor(0, 190, 255), presenting ? 4 : 2, presenting ? 8 : 4, Qt::DashLine);
    }

    QCPAxisRect *m_rect;
    QCPColorMap *m_map;
};

HeatmapView::HeatmapView(QWidget *parent)
    : DeferredView(parent)
    , m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("heatmapPlot"));
    m_plot->setMouseTracking(true);

    QCPAxisRect *rect = m_plot->axisRect();
    const TokenHeatmap h = makeTokenHeatmap(m_plot, QStringLiteral("key"), QStringLiteral("query"), QStringLiteral("weight"),
                                            QFont(font().family(), 10, QFont::Bold));
    m_map = h.map;
    m_scale = h.scale;
    m_title = h.title;

    m_message = new QCPItemText(m_plot);
    m_message->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_message->position->setCoords(0.5, 0.5);
    m_message->setPositionAlignment(Qt::AlignCenter);
    m_message->setClipToAxisRect(true);
    m_message->setPadding(QMargins(12, 8, 12, 8));
    m_message->setBrush(QBrush(QColor(255, 255, 255, 230)));
    m_message->setPen(QPen(QColor(150, 150, 150)));
    m_message->setVisible(false);

    m_overlay = new HeatmapOverlay(m_plot, rect, m_map);

    // labels are chosen once the layout is known; a change (new text, resize, zoom) lays the plot out
    // again within the same replot
    relabelAfterLayout(m_plot, this, [this] {
        // The map keeps most of a short plot (1280 × 720 with larger text, whose key labels do not
        // shrink below the text scale's smallest): the title goes to one elided line past a fifth
        // of the height, and the key labels, drawn at −60°, are shortened until they take at most a
        // fifth of it too (the whole token on hover).
        const QString shown = fittedTitle(m_plot, m_title, m_titleText, kHeatmapTitleShare, &m_titleElided);
        const bool title = shown != m_title->text();
        if (title)
            m_title->setText(shown);
        const QFontMetricsF fm(m_plot->xAxis->tickLabelFont());
        int keyChars = 14;
        for (; keyChars > 4; keyChars -= 2) {
            double widest = 0;
            for (const QString &label : std::as_const(m_keyLabels))
                widest = std::max(widest, fm.horizontalAdvance(elide(label, keyChars)));
            if (widest * 0.87 + fm.height() * 0.5 <= 0.2 * m_plot->height())
                break;
        }
        // the colour bar's title along its height: what it measures and its scale, else what it measures
        QString scaleLabel = m_scaleLabel;
        const QFontMetricsF sfm(m_scale->axis()->labelFont());
        const double along = m_scale->axis()->axisRect()->height() - 4;
        if (along > 20 && sfm.horizontalAdvance(scaleLabel) > along)
            scaleLabel = sfm.elidedText(m_scaleLabel.section(QStringLiteral(" · "), 0, 0), Qt::ElideRight, along);
        const bool scale = scaleLabel != m_scale->axis()->label();
        if (scale)
            m_scale->axis()->setLabel(scaleLabel);
        const bool x = labelTokenAxis(m_plot->xAxis, m_keyLabels, keyChars);
        const bool y = labelTokenAxis(m_plot->yAxis, m_queryLabels, 14, m_query); // the selected row keeps its label
        return title || scale || x || y;
    });
    titleTooltip(m_plot, m_title, [this] { return m_titleElided ? m_titleText : QString(); });
    connect(m_plot, &QCustomPlot::mousePress, this, &HeatmapView::onPress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &HeatmapView::onRelease);
    connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapView::onMove);
    // drag a rectangle to zoom, Shift+drag to pan, the wheel; double-click or Home: the whole matrix
    m_zoom = new PlotZoom(m_plot, [this] {
        const int tq = m_snapshot && m_snapshot->hasResult() ? m_snapshot->tq() : 1;
        const int tk = m_snapshot && m_snapshot->hasResult() ? m_snapshot->tk() : 1;
        m_plot->xAxis->setRange(-0.5, tk - 0.5);
        m_plot->yAxis->setRange(-0.5, tq - 0.5);
    });
    // a long text's map: computed again for the new region once a zoom or pan stops moving
    m_mapTimer = new QTimer(this);
    m_mapTimer->setSingleShot(true);
    m_mapTimer->setInterval(40);
    connect(m_mapTimer, &QTimer::timeout, this, &HeatmapView::startMap);
    for (QCPAxis *axis : {m_plot->xAxis, m_plot->yAxis})
        connect(axis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
            if (m_tiles)
                m_mapTimer->start();
        });
    m_meanAction = new QAction(tr("Long text: pool the map by the mean (else the max)"), m_plot);
    m_meanAction->setObjectName(QStringLiteral("meanPoolingAction"));
    m_meanAction->setCheckable(true);
    m_meanAction->setToolTip(tr("Each cell of a long text's map holds the largest weight it covers, or with this "
                                "on their mean"));
    m_meanAction->setVisible(false);
    connect(m_meanAction, &QAction::toggled, this, [this](bool on) { setPooling(on ? Pooling::Mean : Pooling::Max); });
    m_plot->addAction(m_meanAction);
    rebuild();
}

HeatmapView::~HeatmapView() = default;

void HeatmapView::setPooling(Pooling pooling)
{
    if (pooling == m_pooling)
        return;
    m_pooling = pooling;
    m_meanAction->setChecked(pooling == Pooling::Mean);
    if (m_tiles) {
        startMap();
        updateTitle();
    }
}

void HeatmapView::setMarkedKeys(int begin, int end, const QString &what)
{
    if (end <= begin)
        begin = end = 0;
    if (begin == m_markBegin && end == m_markEnd && what == m_markName)
        return;
    m_markBegin = begin;
    m_markEnd = end;
    m_markName = what;
    m_overlay->band = markedBand();
    updateTitle();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QRectF HeatmapView::markedBand() const
{
    if (m_markEnd <= m_markBegin || !m_snapshot || !m_snapshot->hasResult())
        return {};
    const int tq = m_snapshot->tq(), tk = m_snapshot->tk();
    const int b = std::max(0, m_markBegin), e = std::min(tk, m_markEnd);
    if (e <= b || tq <= 0)
        return {};
    return QRectF(QPointF(b - 0.5, -0.5), QPointF(e - 0.5, tq - 0.5));
}

QString HeatmapView::cellNumberText(float v)
{
    if (!std::isfinite(v))
        return QStringLiteral("NaN");
    const QString fixed = QString::number(double(v), 'f', 2);
    if (v == 0 || (fixed != QLatin1String("0.00") && fixed != QLatin1String("-0.00")))
        return fixed;
    // 2 significant digits, the exponent without its padding: 3.1e-04 -> 3.1e-4
    QString t = QString::number(double(v), 'e', 1);
    const int e = int(t.indexOf(QLatin1Char('e')));
    if (e > 0) {
        int k = e + 2; // past "e-" (or "e+")
        while (k + 1 < t.size() && t.at(k) == QLatin1Char('0'))
            t.remove(k, 1);
    }
    return t;
}

bool HeatmapView::mapPending() const { return m_mapTimer->isActive() || m_mapComputing; }

void HeatmapView::refreshMap()
{
    m_mapTimer->stop();
    ++m_mapGeneration; // a map still computing elsewhere is not shown
    m_mapComputing = false;
    if (!m_tiles || !m_snapshot || !m_snapshot->hasResult())
        return;
    const MapRequest r = mapRequest();
    showMap(r, m_tiles->pooled(r.head, r.region.top(), r.region.bottom() + 1, r.region.left(), r.region.right() + 1,
                               r.outRows, r.outCols, r.pooling));
}

void HeatmapView::startMap()
{
    m_mapTimer->stop();
    if (!m_tiles || !m_snapshot || !m_snapshot->hasResult())
        return;
    const MapRequest r = mapRequest();
    if (r.work < m_mapWorkOnThread)
        return refreshMap();
    const quint64 generation = ++m_mapGeneration;
    m_mapComputing = true;
    QPointer<HeatmapView> self(this);
    // the tiles hold the trace alive; the result comes back on the GUI thread, to this view if it
    // still exists and asked for nothing newer
    QThreadPool::globalInstance()->start([self, tiles = m_tiles, r, generation] {
        Mat<float> cells = tiles->pooled(r.head, r.region.top(), r.region.bottom() + 1, r.region.left(),
                                         r.region.right() + 1, r.outRows, r.outCols, r.pooling);
        QMetaObject::invokeMethod(
            qApp,
            [self, tiles, r, generation, cells = std::move(cells)]() mutable {
                if (!self || self->m_mapGeneration != generation || self->m_tiles != tiles)
                    return;
                self->m_mapComputing = false;
                self->showMap(r, std::move(cells));
            },
            Qt::QueuedConnection);
    });
}

HeatmapView::MapRequest HeatmapView::mapRequest() const
{
    MapRequest r;
    // about one cell a pixel, at most kMaxDisplayCells a side
    const MapRegion m = visibleMapRegion(m_plot->axisRect(), m_tiles->rows(), m_tiles->cols(), kMaxDisplayCells, true);
    const int R = m.region.height(), C = m.region.width();
    r.head = m_head < 0 || m_head >= m_tiles->numHeads() ? -1 : m_head;
    r.region = m.region;
    r.outRows = m.outRows;
    r.outCols = m.outCols;
    r.pooling = m_pooling;
    const double dh = m_snapshot->attention(m_layer).dHead;
    r.work = double(R) * C * std::max(1.0, dh) * (r.head < 0 ? m_tiles->numHeads() : 1);
    return r;
}

void HeatmapView::showMap(const MapRequest &r, Mat<float> cells)
{
    m_mapCells = std::move(cells);
    m_mapRegion = r.region;
    const int R = r.region.height(), C = r.region.width();
    const int outR = int(m_mapCells.rows()), outC = int(m_mapCells.cols());
    float hi = 0;
    for (Eigen::Index i = 0; i < m_mapCells.size(); ++i)
        if (const float v = m_mapCells.data()[i]; std::isfinite(v))
            hi = std::max(hi, v);
    m_map->setData(pooledMapData(m_mapCells, r.region), false);
    QCPColorGradient gradient;
    const QCPRange range = weightsRange(0.0, double(hi), gradient);
    m_scale->setGradient(gradient);
    m_map->setDataRange(range);
    m_scaleLabel = weightScaleLabel(QStringLiteral("weight"), range);
    m_scale->axis()->setLabel(m_scaleLabel);
    const bool single = outR == R && outC == C;
    m_overlay->cells = single ? &m_mapCells : nullptr;
    m_overlay->region = m_mapRegion;
    updateTitle();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool HeatmapView::mapCellAt(int query, int key, int &a, int &b, QRect &covered) const
{
    if (!m_tiles || m_mapCells.size() == 0 || !m_mapRegion.contains(key, query))
        return false;
    int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
    a = pooledCell(query, m_mapRegion.top(), m_mapRegion.height(), int(m_mapCells.rows()), q0, q1);
    b = pooledCell(key, m_mapRegion.left(), m_mapRegion.width(), int(m_mapCells.cols()), k0, k1);
    covered = QRect(QPoint(k0, q0), QPoint(k1, q1));
    return true;
}

void HeatmapView::setSnapshot(SnapshotPtr snapshot)
{
    const bool sizeChanged = !m_snapshot || !snapshot || m_snapshot->tq() != snapshot->tq()
        || m_snapshot->tk() != snapshot->tk();
    m_snapshot = std::move(snapshot);
    if (m_snapshot && m_snapshot->longText && sizeChanged) { // the map is computed for the whole matrix
        m_tiles.reset();
        resetZoom();
        rebuild();
        return;
    }
    rebuild();
    if (sizeChanged)
        resetZoom();
}

void HeatmapView::setSelection(int layer, int head, int query)
{
    const bool headChanged = head != m_head || layer != m_layer;
    m_layer = layer;
    m_head = head;
    m_query = query;
    if (headChanged)
        rebuild();
    else {
        m_overlay->query = query;
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void HeatmapView::setHeadDisplay(HeadDisplay display)
{
    m_display = display;
    updateTitle();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::setShowNumbers(bool show)
{
    m_overlay->numbers = show;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::setCustomMaskEditing(bool on)
{
    m_customEditing = on;
    m_plot->setCursor(on ? Qt::PointingHandCursor : Qt::ArrowCursor);
}

void HeatmapView::resetZoom() { m_zoom->reset(); }

void HeatmapView::zoomToCells(const QRect &cells)
{
    m_zoom->zoomTo(QRectF(cells.left(), cells.top(), cells.width() - 1, cells.height() - 1));
}

const WeightMatrix<float> *HeatmapView::shownMatrix() const
{
    if (!m_snapshot || !m_snapshot->hasResult() || m_snapshot->longText)
        return nullptr;
    return &m_snapshot->weights(m_layer, m_head);
}

double HeatmapView::cellValue(int query, int key) const
{
    if (m_tiles) { // the map's cell that covers it
        int a = 0, b = 0;
        QRect covered;
        return mapCellAt(query, key, a, b, covered) ? double(m_mapCells(a, b)) : std::numeric_limits<double>::quiet_NaN();
    }
    return m_map->data()->cell(key / m_pool, query / m_pool);
}

QString HeatmapView::message() const
{
    // as one line: the view wraps it for display
    return m_message->visible() ? QString(m_message->text()).replace(QLatin1Char('\n'), QLatin1Char(' ')) : QString();
}

QString HeatmapView::title() const { return m_titleText; }

void HeatmapView::showMessage(const QString &text)
{
    m_map->data()->clear();
    m_map->setVisible(false);
    m_message->setText(wrapText(text));
    m_message->setVisible(true);
    m_scale->setVisible(false);
    updateTitle();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::updateTitle()
{
    if (!m_snapshot) {
        m_titleText = QStringLiteral("Attention weights");
        m_title->setText(m_titleText);
        return;
    }
    const bool normWeighted = isNormWeighted(*m_snapshot);
    QString config = describeConfig(*m_snapshot, m_layer, m_head, m_display == HeadDisplay::All ? HeadDisplay::One : m_display);
    if (normWeighted) // the heading says it: the model label's note would say it a second time
        config.remove(QStringLiteral(" · ") + normWeightedLabel());
    QString t = (normWeighted ? QStringLiteral("Norm-weighted attention ‖α·v·W_O‖ — ") : QStringLiteral("Attention weights — ")) + config;
    if (normWeighted)
        t += QLatin1Char('\n') + normWeightingCaption();
    if (m_snapshot->hasResult()) {
        const auto &rows = m_snapshot->seq(m_layer).fullyMaskedRows;
        if (!rows.empty()) {
            QStringList names;
            for (size_t n = 0; n < rows.size() && n < 6; ++n)
                names << QStringLiteral("%1 “%2”").arg(rows[n]).arg(m_queryLabels.value(rows[n]));
            if (rows.size() > 6)
                names << QStringLiteral("… (%1 rows)").arg(rows.size());
            t += QStringLiteral("\nEvery key is masked for query %1: no weights exist there (NaN, as in "
                                "PyTorch); those rows are drawn grey and hatched.")
                     .arg(names.join(QStringLiteral(", ")));
        }
        if (m_tiles && m_mapCells.size() > 0) {
            const int rows = m_mapRegion.height(), cols = m_mapRegion.width();
            if (m_mapCells.rows() == rows && m_mapCells.cols() == cols)
                t += tr("\nLong text (%L1 tokens): each weight computed from q and k where you look.").arg(m_snapshot->tq());
            else
                t += tr("\nLong text (%L1 tokens): each cell the %2 of about %3 × %4 weights, computed from q and k "
                        "where you look; zoom in for single cells.")
                         .arg(m_snapshot->tq())
                         .arg(m_pooling == Pooling::Max ? tr("largest") : tr("mean"))
                         .arg((rows + m_mapCells.rows() - 1) / m_mapCells.rows())
                         .arg((cols + m_mapCells.cols() - 1) / m_mapCells.cols());
        }
        if (m_pool > 1)
            t += QStringLiteral("\nEach cell shows the mean of %1 × %1 weights (%2 tokens); hover gives exact values.")
                     .arg(m_pool)
                     .arg(m_snapshot->tq());
        if (m_snapshot->truncated())
            t += QStringLiteral("\nShowing the first %1 of %2 tokens (%3).")
                     .arg(m_snapshot->tq())
                     .arg(m_snapshot->totalQueryTokens)
                     .arg(m_snapshot->cutReason());
    }
    if (!markedBand().isNull()) {
        const int e = std::min(m_markEnd, m_snapshot->tk());
        t += tr("\nDashed blue band: keys %L1–%L2, %3.").arg(m_markBegin).arg(e - 1).arg(m_markName);
    }
    m_titleText = t;
    m_title->setText(fittedTitle(m_plot, m_title, t, kHeatmapTitleShare, &m_titleElided));
}

void HeatmapView::rebuild()
{
    if (deferred())
        return;
    m_queryLabels.clear();
    m_keyLabels.clear();
    const bool ok = m_snapshot && m_snapshot->hasResult();
    if (ok) {
        m_queryLabels = m_snapshot->queryLabels;
        m_keyLabels = m_snapshot->keyLabels;
    }
    m_overlay->snapshot = m_snapshot;
    m_overlay->layer = m_layer;
    m_overlay->query = m_query;
    m_overlay->matrix = nullptr;
    m_overlay->cells = nullptr;
    m_overlay->band = markedBand();
    m_tiles.reset();
    ++m_mapGeneration; // a map still computing is of the snapshot before
    m_mapComputing = false;
    m_mapCells.resize(0, 0);
    m_mapRegion = QRect();
    m_meanAction->setVisible(ok && m_snapshot->longText);
    if (ok && m_snapshot->longText) {
        m_tiles = longTextTiles(*m_snapshot, m_layer);
        if (!m_tiles) {
            showMessage(tr("Layer %1's weights cannot be computed from what this long text's trace kept")
                            .arg(m_snapshot->layerIndex(m_layer)));
            return;
        }
        m_message->setVisible(false);
        m_map->setVisible(true);
        m_scale->setVisible(true);
        m_pool = 1;
        m_plot->xAxis->setLabel(QStringLiteral("key") + m_snapshot->keySide());
        startMap();
        return;
    }
    if (!ok) {
        showMessage(m_snapshot ? m_snapshot->message : QStringLiteral("Computing…"));
        return;
    }
    m_message->setVisible(false);
    m_map->setVisible(true);
    m_scale->setVisible(true);
    const WeightMatrix<float> &w = m_snapshot->weights(m_layer, m_head);
    m_overlay->matrix = &w;
    QCPColorMapData *data = colorMapData(w, nullptr, kMaxDisplayCells, &m_pool);
    double lo = 0, hi = 0;
    bool any = false;
    extendFiniteRange(w, lo, hi, any);
    m_map->setData(data, false);
    if (m_pool > 1) {
        // block means are smaller than the largest single weight: scale to what is drawn
        m_map->data()->recalculateDataBounds();
        const QCPRange b = m_map->data()->dataBounds();
        lo = std::min(lo, 0.0) < 0 ? b.lower : 0.0;
        hi = b.upper;
    }
    QCPColorGradient gradient;
    const QCPRange range = weightsRange(lo, hi, gradient); // signed weights (cosine…): diverging, centred on 0
    m_scale->setGradient(gradient);
    m_map->setDataRange(range);
    const Normalization n = m_snapshot->settings.normalization;
    m_scaleLabel = weightScaleLabel(isNormWeighted(*m_snapshot) ? QStringLiteral("‖α·v·W_O‖")
                                    : n == Normalization::Cosine    ? QStringLiteral("cosine weight")
                                                                    : QStringLiteral("weight"),
                                    range);
    m_scale->axis()->setLabel(m_scaleLabel);
    m_plot->xAxis->setLabel(QStringLiteral("key") + m_snapshot->keySide());
    updateTitle();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool HeatmapView::cellAt(const QPoint &pos, int &query, int &key) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return false;
    const QPoint p = m_plot->mapFrom(this, pos);
    if (!m_plot->axisRect()->rect().contains(p))
        return false;
    key = int(std::lround(m_plot->xAxis->pixelToCoord(p.x())));
    query = int(std::lround(m_plot->yAxis->pixelToCoord(p.y())));
    return query >= 0 && query < m_snapshot->tq() && key >= 0 && key < m_snapshot->tk();
}

QPoint HeatmapView::cellCenter(int query, int key) const
{
    const QPoint p(int(std::lround(m_plot->xAxis->coordToPixel(key))), int(std::lround(m_plot->yAxis->coordToPixel(query))));
    return m_plot->mapTo(this, p);
}

QString HeatmapView::hoverText(int query, int key) const
{
    if (m_tiles) { // a long text: the weight computed from q and k, and what the map's cell pools
        if (query < 0 || key < 0 || query >= m_tiles->rows() || key >= m_tiles->cols())
            return {};
        const int head = m_head < 0 || m_head >= m_tiles->numHeads() ? -1 : m_head;
        const float v = m_tiles->tile(head, query, query + 1, key, key + 1)(0, 0);
        QString text = tr("query %1 “%2” → key %3 “%4”\nweight %5")
                           .arg(query)
                           .arg(m_queryLabels.value(query))
                           .arg(key)
                           .arg(m_keyLabels.value(key))
                           .arg(double(v), 0, 'f', 4);
        if (m_tiles->masked(query, key))
            text += tr(" (masked)");
        int a = 0, b = 0;
        QRect covered;
        if (mapCellAt(query, key, a, b, covered) && (covered.width() > 1 || covered.height() > 1))
            text += tr("\nits cell of the map: the %1 of %2 × %3 weights (queries %4–%5, keys %6–%7): %8")
                        .arg(m_pooling == Pooling::Max ? tr("max") : tr("mean"))
                        .arg(covered.height())
                        .arg(covered.width())
                        .arg(covered.top())
                        .arg(covered.bottom())
                        .arg(covered.left())
                        .arg(covered.right())
                        .arg(double(m_mapCells(a, b)), 0, 'f', 4);
        return text;
    }
    const WeightMatrix<float> *w = shownMatrix();
    if (!w || query < 0 || key < 0 || query >= w->rows() || key >= w->cols())
        return {};
    const float v = (*w)(query, key);
    QString text = QStringLiteral("query %1 “%2” → key %3 “%4”\n")
                       .arg(query)
                       .arg(m_queryLabels.value(query))
                       .arg(key)
                       .arg(m_keyLabels.value(key));
    const BoolMat &mask = m_snapshot->seq(m_layer).mask;
    const bool masked = mask.size() > 0 && mask(query, key);
    if (!std::isfinite(v))
        text += QStringLiteral("weight undefined: every key of this query is masked");
    else
        text += (isNormWeighted(*m_snapshot) ? QStringLiteral("‖α·v·W_O‖ %1") : QStringLiteral("weight %1")).arg(double(v), 0, 'f', 4);
    if (masked && std::isfinite(v))
        text += QStringLiteral(" (masked)");
    if (isNormWeighted(*m_snapshot)) {
        // the key's value norm: the weight above is α times it
        QStringList norms;
        const int heads = m_snapshot->attention(m_layer).numHeads;
        for (int h = m_head < 0 ? 0 : m_head; h < (m_head < 0 ? heads : m_head + 1); ++h)
            norms << valueNormText(*m_snapshot, m_layer, h, key);
        norms.removeAll(QString());
        if (!norms.isEmpty())
            text += QLatin1Char('\n') + norms.join(QLatin1Char('\n'));
    }
    return text;
}

void HeatmapView::onPress(QMouseEvent *e) { m_pressPos = e->pos(); }

void HeatmapView::onRelease(QMouseEvent *e)
{
    if ((e->pos() - m_pressPos).manhattanLength() > 4 || e->button() != Qt::LeftButton)
        return; // a drag (pan), not a click
    int q = 0, k = 0;
    if (!cellAt(m_plot->mapTo(this, e->pos()), q, k))
        return;
    if (m_customEditing)
        emit cellToggled(q, k);
    else
        emit querySelected(q);
}

void HeatmapView::onMove(QMouseEvent *e)
{
    int q = 0, k = 0;
    const bool over = cellAt(m_plot->mapTo(this, e->pos()), q, k);
    if (!(e->buttons() & Qt::LeftButton) && over)
        QToolTip::showText(m_plot->mapToGlobal(e->pos()), hoverText(q, k), m_plot);
    else
        QToolTip::hideText();
    if ((over ? q : -1) != m_hoveredQuery) {
        m_hoveredQuery = over ? q : -1;
        emit queryHovered(m_hoveredQuery);
    }
}

bool HeatmapView::event(QEvent *e)
{
    if (e->type() == QEvent::PaletteChange)
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    if (e->type() == QEvent::Resize && m_tiles) // the map's resolution follows the plot's pixels
        m_mapTimer->start();
    return QWidget::event(e);
}

} // namespace attnviz::ui
