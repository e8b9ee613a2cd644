// SPDX-License-Identifier: GPL-3.0-or-later
// All heads side by side (see headgridview.h): the panels, their pages and zoom, a long text's maps.
#include "views/headgridview.h"

#include "live/longtext.h"
#include "live/longtextmaps.h"

#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/mapregion.h"
#include "views/plotzoom.h"

#include <qcustomplot.h>

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

#include <cmath>

namespace attnviz::ui {

HeadGridView::HeadGridView(QWidget *parent)
    : DeferredView(parent)
    , m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    // the pages of heads, when they do not all fit at a readable size
    m_pager = new QWidget(this);
    m_pager->setObjectName(QStringLiteral("headPager"));
    auto *bar = new QHBoxLayout(m_pager);
    bar->setContentsMargins(6, 2, 6, 2);
    m_prev = new QToolButton(m_pager);
    m_prev->setObjectName(QStringLiteral("headPagePrevious"));
    m_prev->setArrowType(Qt::LeftArrow);
    m_prev->setToolTip(tr("The heads before"));
    m_next = new QToolButton(m_pager);
    m_next->setObjectName(QStringLiteral("headPageNext"));
    m_next->setArrowType(Qt::RightArrow);
    m_next->setToolTip(tr("The next heads"));
    m_pageLabel = new QLabel(m_pager);
    m_pageLabel->setObjectName(QStringLiteral("headPageLabel"));
    bar->addWidget(m_prev);
    bar->addWidget(m_pageLabel);
    bar->addWidget(m_next);
    bar->addStretch(1);
    m_pager->setVisible(false);
    connect(m_prev, &QToolButton::clicked, this, [this] { setPage(page() - 1); });
    connect(m_next, &QToolButton::clicked, this, [this] { setPage(page() + 1); });
    layout->addWidget(m_pager);
    // a view too short for one row of readable panels scrolls instead of squeezing them
    m_scroll = new QScrollArea(this);
    m_scroll->setObjectName(QStringLiteral("headGridScroll"));
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidgetResizable(true);
    m_scroll->setWidget(m_plot);
    layout->addWidget(m_scroll, 1);
    m_plot->setObjectName(QStringLiteral("headGridPlot"));
    m_plot->plotLayout()->clear();
    m_plot->plotLayout()->setMargins(QMargins(6, 0, 0, 6));
    m_title = new QCPTextElement(m_plot, QStringLiteral("All heads"), QFont(font().family(), 10, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_grid = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, m_grid);
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->axis()->setLabel(QStringLiteral("weight"));
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.01);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.01);
    m_scale->setGradient(weightsGradient());

    // a long text's maps: asked for once the panels stop moving, computed off the GUI thread
    m_longMaps = new LongTextMaps(this);
    connect(m_longMaps, &LongTextMaps::ready, this, &HeadGridView::showHeadMap);
    m_mapTimer = new QTimer(this);
    m_mapTimer->setSingleShot(true);
    m_mapTimer->setInterval(40);
    connect(m_mapTimer, &QTimer::timeout, this, &HeadGridView::startMaps);
    m_meanAction = new QAction(tr("Long text: pool the maps by the mean (else the max)"), m_plot);
    m_meanAction->setObjectName(QStringLiteral("gridMeanPoolingAction"));
    m_meanAction->setCheckable(true);
    m_meanAction->setToolTip(tr("Each cell of a long text's maps holds the largest weight it covers, or with this "
                                "on their mean"));
    m_meanAction->setVisible(false);
    connect(m_meanAction, &QAction::toggled, this, [this](bool on) { setPooling(on ? Pooling::Mean : Pooling::Max); });

    m_plot->setMouseTracking(true);
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent *e) {
        QCPAxisRect *r = m_plot->axisRectAt(e->pos());
        const auto it = std::find(m_rects.begin(), m_rects.end(), r);
        if (!r || it == m_rects.end() || !m_snapshot || !m_snapshot->hasResult()) {
            QToolTip::hideText();
            return;
        }
        const int head = headOfPanel(int(it - m_rects.begin()));
        const int k = int(std::lround(r->axis(QCPAxis::atBottom)->pixelToCoord(e->pos().x())));
        const int q = int(std::lround(r->axis(QCPAxis::atLeft)->pixelToCoord(e->pos().y())));
        const QString text = hoverText(head, q, k);
        if (!text.isEmpty())
            QToolTip::showText(m_plot->mapToGlobal(e->pos()), text, m_plot);
    });
    // query labels on the first column's panels, key labels under the lowest panel of each column
    relabelAfterLayout(m_plot, this, [this] {
        bool changed = false;
        int queryStep = 1, keyStep = 1;
        for (size_t n = 0; n < m_rects.size(); n += size_t(std::max(1, m_cols))) {
            changed |= labelTokenAxis(m_rects[n]->axis(QCPAxis::atLeft), m_labels, 8);
            queryStep = std::max(queryStep, tokenAxisLabelStep(m_rects[n]->axis(QCPAxis::atLeft)));
        }
        for (size_t n = 0; n < m_rects.size(); ++n)
            if (n + size_t(std::max(1, m_cols)) >= m_rects.size()) {
                changed |= labelTokenAxis(m_rects[n]->axis(QCPAxis::atBottom), m_keyLabels, 8);
                keyStep = std::max(keyStep, tokenAxisLabelStep(m_rects[n]->axis(QCPAxis::atBottom)));
            }
        // thinned labels are said once, in the title: a rotated note along each small panel ran past
        // it into the rows above and below
        // one line with the block means: the title of a long text took five lines above small panels
        QStringList thinned;
        if (!m_poolNote.isEmpty())
            thinned << m_poolNote;
        if (queryStep > 1 && queryStep == keyStep)
            thinned << QStringLiteral("1 in %1 labels shown").arg(queryStep);
        else if (queryStep > 1 || keyStep > 1)
            thinned << QStringLiteral("1 in %1 query, 1 in %2 key labels shown").arg(queryStep).arg(keyStep);
        m_thinNote = thinned.isEmpty() ? QString()
                                       : thinned.join(QStringLiteral(" · "))
                + QStringLiteral(" · drag a rectangle to zoom");
        if (const QString t = titleText(); t != m_title->text()) {
            m_title->setText(t);
            changed = true;
        }
        // the first column also holds the query labels: it gets that much more width, so that every
        // panel's cells are as wide as the others' (they were narrower in the first column)
        // (and the last row holds the key labels: the same for the rows' heights)
        const int rows = m_grid->rowCount(), cols = m_grid->columnCount();
        auto equalize = [](const QList<int> &outerMargins, double space, const QList<double> &now, QList<double> &f) {
            double inner = space;
            for (int m : outerMargins)
                inner -= m;
            inner /= outerMargins.size();
            if (inner <= 10)
                return false;
            f.clear();
            for (int m : outerMargins)
                f << inner + m;
            bool same = now.size() == f.size();
            for (int k = 0; same && k < f.size(); ++k)
                same = std::abs(now[k] / now[0] - f[k] / f[0]) < 0.005;
            return !same;
        };
        if (cols > 1 && int(m_rects.size()) >= cols) {
            QList<int> margins;
            for (int c = 0; c < cols; ++c)
                margins << m_rects[size_t(c)]->margins().left() + m_rects[size_t(c)]->margins().right();
            QList<double> f;
            if (equalize(margins, m_grid->rect().width() - (cols - 1) * m_grid->columnSpacing(), m_grid->columnStretchFactors(), f)) {
                m_grid->setColumnStretchFactors(f);
                changed = true;
            }
        }
        if (rows > 1 && int(m_rects.size()) > (rows - 1) * cols) {
            QList<int> margins;
            for (int r = 0; r < rows; ++r)
                margins << m_rects[size_t(r * cols)]->margins().top() + m_rects[size_t(r * cols)]->margins().bottom();
            QList<double> f;
            if (equalize(margins, m_grid->rect().height() - (rows - 1) * m_grid->rowSpacing(), m_grid->rowStretchFactors(), f)) {
                m_grid->setRowStretchFactors(f);
                changed = true;
            }
        }
        return changed;
    });
    // a long text's panels moved, zoomed or resized: their maps at the new region and pixels (after
    // the labels above have settled the layout)
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        if (m_tiles && !serves(m_mapKey, mapKey()) && !m_mapTimer->isActive())
            m_mapTimer->start();
    });
    // drag a rectangle on any panel: every panel shows that region; Shift+drag pans, the wheel zooms
    m_zoom = new PlotZoom(m_plot, [this] {
        const int tq = m_snapshot && m_snapshot->hasResult() ? m_snapshot->tq() : 1;
        const int tk = m_snapshot && m_snapshot->hasResult() ? m_snapshot->tk() : 1;
        for (QCPAxisRect *r : m_rects) {
            r->axis(QCPAxis::atBottom)->setRange(-0.5, tk - 0.5);
            r->axis(QCPAxis::atLeft)->setRange(-0.5, tq - 0.5);
        }
    }, PlotZoom::Options{true, 1.0, true});
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent *e) { m_plot->setProperty("attnvizPressPos", e->pos()); });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent *e) {
        if ((e->pos() - m_plot->property("attnvizPressPos").toPoint()).manhattanLength() > 4)
            return; // a zoom or a pan, not a click
        QCPAxisRect *r = m_plot->axisRectAt(e->pos());
        for (size_t n = 0; n < m_rects.size(); ++n)
            if (m_rects[n] == r)
                emit headOpened(-1, headOfPanel(int(n)));
    });
    m_plot->addAction(m_meanAction); // after the zoom's: its context menu lists this last
    rebuild();
}

HeadGridView::~HeadGridView() = default;

int HeadGridView::headOfPanel(int panel) const
{
    const int heads = m_panels - 1;
    return m_first + panel >= heads ? -1 : m_first + panel;
}

int HeadGridView::pageCount() const
{
    return m_perPage > 0 && m_panels > 0 ? (m_panels + m_perPage - 1) / m_perPage : 1;
}

int HeadGridView::page() const { return m_perPage > 0 ? m_first / m_perPage : 0; }

void HeadGridView::setPage(int page)
{
    page = std::clamp(page, 0, pageCount() - 1);
    if (m_perPage <= 0 || page * m_perPage == m_first)
        return;
    m_first = page * m_perPage;
    rebuild();
}

QRect HeadGridView::panelRect(int panel) const
{
    if (panel < 0 || panel >= int(m_rects.size()))
        return {};
    const QRect r = m_rects[size_t(panel)]->rect();
    return QRect(m_plot->mapTo(this, r.topLeft()), r.size());
}

HeadGridView::PageGrid HeadGridView::pageGrid(int panels) const
{
    // the plot's own margins, from the text size: the query labels and the colour scale beside the
    // panels; the title (three lines of its own font), the key labels (rotated) and each panel's
    // "head N" above and below them
    const int line = QFontMetrics(m_plot->font()).height();
    const int titleLine = QFontMetrics(m_title->font()).height();
    const int labels = 6 * line; // the key labels' band under a panel, rotated
    const int overW = 13 * line + 16, overH = 3 * titleLine + labels + 12;
    const int colW = kMinPanelPx + 10, rowH = kMinPanelPx + 2 * line + 6;
    PageGrid g;
    g.minSize = QSize(overW + colW, overH + rowH);
    const QSize room = m_scroll->viewport()->size();
    if (panels <= 1 || !isVisible() || room.width() < 50) {
        g.perPage = std::max(panels, 1);
        g.cols = g.perPage;
        g.rows = 1;
        return g;
    }
    g.cols = std::max(1, (room.width() - overW) / colW);
    g.rows = std::max(1, (room.height() - overH) / rowH);
    g.perPage = std::clamp(g.cols * g.rows, 1, panels);
    return g;
}

void HeadGridView::resizeEvent(QResizeEvent *e)
{
    QWidget::resizeEvent(e);
    if (m_panels > 0 && pageGrid(m_panels).perPage != m_perPage && !deferred())
        rebuild();
}

QPoint HeadGridView::panelCenter(int panel) const
{
    if (panel < 0 || panel >= int(m_rects.size()))
        return {};
    return m_plot->mapTo(this, m_rects[size_t(panel)]->rect().center());
}

QString HeadGridView::title() const { return m_title->text(); }

QString HeadGridView::titleText() const
{
    const QString t = m_thinNote.isEmpty() ? m_baseTitle : m_baseTitle + QLatin1Char('\n') + m_thinNote;
    // the title's column: the plot less the colour scale's (its lines were cut at both ends there)
    const int width = m_plot->width() - (m_scale->visible() ? m_scale->outerRect().width() : 0) - 16;
    return width > 100 ? wrapText(t, m_title->font(), width) : t;
}

void HeadGridView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    m_longMaps->cancel(); // the maps of the text before are not drawn, even while another tab is shown
    m_mapTimer->stop();
    rebuild();
}

void HeadGridView::showEvent(QShowEvent *e)
{
    DeferredView::showEvent(e);
    if (m_tiles) // the maps stopped while another tab was shown
        m_mapTimer->start();
}

void HeadGridView::hideEvent(QHideEvent *e)
{
    // another tab shown: its own work gets the cores (the maps computed stay, the rest follow on return)
    m_longMaps->cancel();
    m_mapTimer->stop();
    DeferredView::hideEvent(e);
}

QString HeadGridView::hoverText(int head, int q, int k) const
{
    if (!m_snapshot || !m_snapshot->hasResult() || q < 0 || k < 0 || q >= m_snapshot->tq() || k >= m_snapshot->tk())
        return {};
    const QString who = head < 0 ? QStringLiteral("average") : QStringLiteral("head %1").arg(head);
    const QString where = QStringLiteral("query %1 “%2” → key %3 “%4”")
                              .arg(q)
                              .arg(m_snapshot->queryLabels.value(q))
                              .arg(k)
                              .arg(m_snapshot->keyLabels.value(k));
    if (m_tiles) { // a long text: the weight computed from q and k, and what the panel's cell pools
        const float v = m_tiles->tile(head, q, q + 1, k, k + 1)(0, 0);
        QString text = QStringLiteral("%1\n%2\nweight %3").arg(who, where).arg(double(v), 0, 'f', 4);
        if (m_tiles->masked(q, k))
            text += tr(" (masked)");
        const Mat<float> &cells = mapCells(head);
        if (cells.size() > 0 && m_mapRegion.contains(k, q)) {
            int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
            const int a = pooledCell(q, m_mapRegion.top(), m_mapRegion.height(), int(cells.rows()), q0, q1);
            const int b = pooledCell(k, m_mapRegion.left(), m_mapRegion.width(), int(cells.cols()), k0, k1);
            if (q1 > q0 || k1 > k0)
                text += tr("\nits cell of the map: the %1 of %2 × %3 weights (queries %4–%5, keys %6–%7): %8")
                            .arg(m_pooling == Pooling::Max ? tr("max") : tr("mean"))
                            .arg(q1 - q0 + 1)
                            .arg(k1 - k0 + 1)
                            .arg(q0)
                            .arg(q1)
                            .arg(k0)
                            .arg(k1)
                            .arg(double(cells(a, b)), 0, 'f', 4);
        }
        return text;
    }
    const float v = m_snapshot->weights(m_layer, head)(q, k);
    return QStringLiteral("%1\n%2\n%3")
        .arg(who, where,
             std::isfinite(v) ? QStringLiteral("weight %1").arg(double(v), 0, 'f', 4)
                              : QStringLiteral("weight undefined: every key masked"));
}

void HeadGridView::setPooling(Pooling pooling)
{
    if (pooling == m_pooling)
        return;
    m_pooling = pooling;
    m_meanAction->setChecked(pooling == Pooling::Mean);
    if (m_tiles)
        m_mapTimer->start();
}

const Mat<float> &HeadGridView::mapCells(int head) const
{
    static const Mat<float> none;
    const size_t i = size_t(head + 1);
    return head >= -1 && i < m_headCells.size() ? m_headCells[i] : none;
}

bool HeadGridView::mapsPending() const { return m_tiles && (m_mapTimer->isActive() || m_longMaps->running()); }

HeadGridView::MapKey HeadGridView::mapKey() const
{
    MapKey key;
    if (!m_tiles || m_rects.empty())
        return key;
    // the cells any part of which the panels show, as the Weights map (only the region: the map's
    // size below is the panels' own)
    const QCPAxisRect *r = m_rects.front();
    const QRect region = visibleMapRegion(r, m_tiles->rows(), m_tiles->cols(), 1, false).region;
    const int R = region.height(), C = region.width();
    // about one cell a pixel of the panel (kMaxCells a side before the panels are laid out)
    const QRect px = r->rect();
    key.tiles = m_tiles.get();
    key.region = region;
    key.outRows = std::clamp(px.height() >= 8 ? px.height() : kMaxCells, 1, R);
    key.outCols = std::clamp(px.width() >= 8 ? px.width() : kMaxCells, 1, C);
    key.pooling = m_pooling;
    return key;
}

bool HeadGridView::serves(const MapKey &a, const MapKey &b)
{
    auto near = [](int x, int y) { return std::abs(x - y) <= std::max(2, y / 8); };
    return a.tiles && a.tiles == b.tiles && a.region == b.region && a.pooling == b.pooling
        && near(a.outRows, b.outRows) && near(a.outCols, b.outCols);
}

void HeadGridView::startMaps()
{
    m_mapTimer->stop();
    if (!m_tiles || m_rects.empty() || !isVisible())
        return; // asked again when shown
    MapKey key = mapKey();
    if (serves(m_mapKey, key))
        key = m_mapKey;
    else { // another region, resolution or pooling: the maps drawn stay until theirs come
        m_headCells.assign(size_t(m_tiles->numHeads() + 1), Mat<float>());
        m_mapKey = key;
        m_mapRegion = key.region;
    }
    // the page's heads without their map, the selected one first
    std::vector<int> heads;
    for (int n = 0; n < int(m_rects.size()); ++n)
        if (const int head = headOfPanel(n); mapCells(head).size() == 0)
            heads.insert(head == m_head ? heads.begin() : heads.end(), head);
    LongTextMaps::Request r{m_tiles, heads, key.region, key.outRows, key.outCols, key.pooling};
    if (heads.empty())
        m_longMaps->cancel();
    else if (!m_longMaps->running() || !(m_longMaps->request() == r))
        m_longMaps->start(std::move(r));
    m_baseTitle = m_titleHead + longTextLine();
    m_title->setText(titleText());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadGridView::showHeadMap(int head, const Mat<float> &cells)
{
    if (!m_tiles || size_t(head + 1) >= m_headCells.size())
        return;
    m_headCells[size_t(head + 1)] = cells;
    drawLongTextPanels();
    m_baseTitle = m_titleHead + longTextLine();
    m_title->setText(titleText());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadGridView::drawLongTextPanels()
{
    // one colour scale for every head computed, by the Weights map's rule (0 to the largest cell, or
    // fixed 0–1): it settles as the heads come in
    float hi = 0;
    for (const Mat<float> &c : m_headCells)
        for (Eigen::Index k = 0; k < c.size(); ++k)
            if (std::isfinite(c.data()[k]))
                hi = std::max(hi, c.data()[k]);
    const qulonglong tiles = qulonglong(quintptr(m_tiles.get()));
    for (size_t n = 0; n < m_rects.size(); ++n) {
        const int head = headOfPanel(int(n));
        QCPColorMap *map = m_maps[n];
        const Mat<float> &cells = mapCells(head);
        if (cells.size() > 0) {
            map->setData(pooledMapData(cells, m_mapRegion), false);
            map->setProperty("attnvizHead", head);
            map->setProperty("attnvizTiles", tiles);
            map->setVisible(true);
        } else if (map->property("attnvizTiles").toULongLong() != tiles || map->property("attnvizHead") != QVariant(head)) {
            map->setVisible(false); // nothing of this head and layer drawn yet
        }
        const QString name = head < 0 ? QStringLiteral("average") : QStringLiteral("head %1").arg(head);
        m_rects[n]->axis(QCPAxis::atTop)->setLabel(cells.size() > 0 ? name : name + QStringLiteral(" · computing…"));
    }
    QCPColorGradient gradient;
    const QCPRange range = weightsRange(0.0, double(hi), gradient);
    m_scale->setGradient(gradient);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(QStringLiteral("weight"), range));
}

QString HeadGridView::longTextLine() const
{
    if (!m_tiles || !m_snapshot || !m_snapshot->hasResult())
        return {};
    int ready = 0;
    for (int n = 0; n < int(m_rects.size()); ++n)
        ready += mapCells(headOfPanel(n)).size() > 0;
    const QRect g = m_mapRegion;
    const int outR = m_mapKey.outRows, outC = m_mapKey.outCols;
    QString t;
    if (!g.isValid() || outR <= 0 || outC <= 0)
        t = tr("\nLong text (%L1 tokens): each panel a map computed from q and k.").arg(m_snapshot->tq());
    else if (outR == g.height() && outC == g.width())
        t = tr("\nLong text (%L1 tokens): each weight computed from q and k.").arg(m_snapshot->tq());
    else
        t = tr("\nLong text (%L1 tokens): each cell the %2 of about %3 × %4 weights, computed from q and k; "
               "zoom in for single cells.")
                .arg(m_snapshot->tq())
                .arg(m_pooling == Pooling::Max ? tr("largest") : tr("mean"))
                .arg((g.height() + outR - 1) / outR)
                .arg((g.width() + outC - 1) / outC);
    if (ready < int(m_rects.size()))
        t += tr(" Computing: %1 of %2 panels drawn…").arg(ready).arg(m_rects.size());
    return t;
}

void HeadGridView::setSelection(int layer, int head, int)
{
    const int panel = head < 0 ? m_panels - 1 : head; // the selected head's page
    if (head != m_head && m_perPage > 0 && m_perPage < m_panels && panel / m_perPage != page()) {
        m_head = head;
        m_first = panel / m_perPage * m_perPage;
        m_layer = layer;
        rebuild();
        return;
    }
    m_head = head;
    if (layer != m_layer) {
        m_layer = layer;
        rebuild();
        return;
    }
    highlight();
    if (!deferred()) // another tab: drawn when shown
        m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadGridView::rebuild()
{
    if (deferred())
        return;
    // a long text's trace keeps no weights: each panel is a map computed from the layer's tiles
    const bool longText = m_snapshot && m_snapshot->hasResult() && m_snapshot->longText;
    const std::shared_ptr<const AttentionTiles<float>> tiles = longText ? longTextTiles(*m_snapshot, m_layer) : nullptr;
    if (tiles != m_tiles) { // another text or layer: nothing computed before is drawn
        m_longMaps->cancel();
        m_mapTimer->stop();
        m_tiles = tiles;
        m_headCells.assign(m_tiles ? size_t(m_tiles->numHeads() + 1) : 0, Mat<float>());
        m_mapKey = MapKey();
        m_mapRegion = QRect();
    }
    m_meanAction->setVisible(longText);
    const bool ok = m_snapshot && m_snapshot->hasResult() && (!longText || m_tiles);
    const int heads = !ok ? 0 : m_tiles ? m_tiles->numHeads() : int(m_snapshot->seq(m_layer).weights.size());
    const int all = ok ? heads + 1 : 0;
    m_panels = all;
    const PageGrid grid = pageGrid(all);
    m_perPage = grid.perPage;
    m_plot->setMinimumSize(grid.minSize);
    m_first = m_perPage > 0 ? std::clamp(m_first / m_perPage * m_perPage, 0, std::max(0, all - 1) / m_perPage * m_perPage) : 0;
    const int panels = std::min(m_perPage, all - m_first);
    // near-square, within the rows that fit (paged: as many columns as fit)
    int wantCols = std::max(1, int(std::ceil(std::sqrt(panels * 1.4))));
    wantCols = std::max(wantCols, (panels + grid.rows - 1) / grid.rows);
    wantCols = std::clamp(wantCols, 1, std::max(1, std::min(panels, grid.cols)));
    bool remade = false;
    if (panels != int(m_rects.size()) || wantCols != m_cols) {
        remade = true;
        for (QCPColorMap *m : m_maps)
            m_plot->removePlottable(m);
        m_maps.clear();
        m_rects.clear();
        m_grid->clear();
        m_grid->simplify();
        const int cols = wantCols;
        m_cols = cols;
        for (QCPMarginGroup *g : m_marginGroups)
            delete g;
        m_marginGroups.clear();
        const int gridRows = (panels + cols - 1) / cols;
        for (int g = 0; g < gridRows + cols; ++g)
            m_marginGroups.push_back(new QCPMarginGroup(m_plot));
        for (int n = 0; n < panels; ++n) {
            auto *r = new QCPAxisRect(m_plot, true);
            r->setupFullAxesBox(false);
            for (QCPAxis *a : r->axes()) {
                a->setTicks(false);
                a->setTickLabels(false);
                a->grid()->setVisible(false);
            }
            r->axis(QCPAxis::atLeft)->setRangeReversed(true);
            r->axis(QCPAxis::atRight)->setRangeReversed(true);
            r->setMinimumMargins(QMargins(2, 2, 2, 2));
            // every panel's bottom margin is automatic: a margin group sets only automatic sides,
            // and a panel beside the key labels was taller than its neighbours
            r->setAutoMargins(QCP::msTop | QCP::msBottom);
            if (n + cols >= panels) { // the lowest panel of its column: the keys
                QCPAxis *b = r->axis(QCPAxis::atBottom);
                b->setTicker(QSharedPointer<QCPAxisTickerText>::create());
                b->setTicks(true);
                b->setSubTicks(false);
                b->setTickLabels(true);
                b->setTickLabelRotation(-60);
                b->setProperty("attnvizThinNoteElsewhere", true);
            }
            if (n % cols == 0) {
                r->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<QCPAxisTickerText>::create());
                r->axis(QCPAxis::atLeft)->setTicks(true); // for the labels; the ticks themselves have no length
                r->axis(QCPAxis::atLeft)->setTickLength(0, 0);
                r->axis(QCPAxis::atLeft)->setSubTicks(false);
                r->axis(QCPAxis::atLeft)->setTickLabels(true);
                r->axis(QCPAxis::atLeft)->setProperty("attnvizThinNoteElsewhere", true);
                r->setAutoMargins(r->autoMargins() | QCP::msLeft);
            }
            // panels of a row share their bottom margin, of a column their left one: equal sizes
            r->setMarginGroup(QCP::msBottom, m_marginGroups[size_t(n / cols)]);
            r->setMarginGroup(QCP::msLeft, m_marginGroups[size_t(gridRows + n % cols)]);
            m_grid->addElement(n / cols, n % cols, r);
            auto *map = new QCPColorMap(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
            map->setInterpolate(false);
            map->setAntialiased(false);
            map->setGradient(weightsGradient());
            map->setColorScale(m_scale);
            m_rects.push_back(r);
            m_maps.push_back(map);
        }
    }
    if (!ok) {
        const QString why = longText ? tr("Layer %1's weights cannot be computed from what this long text's trace kept")
                                           .arg(m_snapshot->layerIndex(m_layer))
                                     : m_snapshot ? m_snapshot->message : QString();
        m_baseTitle = m_snapshot ? QStringLiteral("All heads\n") + wrapText(why, 90) : QStringLiteral("All heads");
        m_thinNote.clear();
        m_poolNote.clear();
        m_title->setText(titleText());
        m_scale->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    m_scale->setVisible(true);
    const int tq = m_snapshot->tq(), tk = m_snapshot->tk();
    m_labels = m_snapshot->queryLabels;
    m_keyLabels = m_snapshot->keyLabels;
    // one colour scale for every head, on every page
    double hi = 0, lo = 0;
    for (int head = -1; head < all - 1 && !m_tiles; ++head) {
        const WeightMatrix<float> &w = m_snapshot->weights(m_layer, head);
        for (Eigen::Index k = 0; k < w.storedSize(); ++k) // the cells not stored are 0: no change to hi, lo
            if (std::isfinite(w.data()[k])) {
                hi = std::max(hi, double(w.data()[k]));
                if (m_snapshot->settings.normalization != Normalization::Softmax)
                    lo = std::min(lo, double(w.data()[k]));
            }
    }
    for (int n = 0; n < panels && !m_tiles; ++n) {
        const int head = headOfPanel(n);
        const WeightMatrix<float> &w = m_snapshot->weights(m_layer, head);
        m_maps[size_t(n)]->setData(colorMapData(w, &m_snapshot->seq(m_layer).mask, kMaxCells), false);
        m_maps[size_t(n)]->setVisible(true); // a long text's panel waiting for its map was hidden
        QCPAxisRect *r = m_rects[size_t(n)];
        r->axis(QCPAxis::atTop)->setLabel(head < 0 ? QStringLiteral("average") : QStringLiteral("head %1").arg(head));
    }
    // new panels or another length of text: the whole matrix; otherwise the region looked at stays
    if (remade || tq != m_zoomTokens || !m_zoom->isZoomed())
        m_zoom->reset();
    m_zoomTokens = tq;
    m_pager->setVisible(all > m_perPage);
    if (all > m_perPage) {
        const int last = m_first + panels - 1, heads = all - 1;
        QString shown = last < heads || m_first < heads
            ? (std::min(last, heads - 1) > m_first ? tr("heads %1–%2").arg(m_first).arg(std::min(last, heads - 1))
                                                     : tr("head %1").arg(m_first))
            : QString();
        if (last >= heads)
            shown += shown.isEmpty() ? tr("the average") : tr(" and the average");
        m_pageLabel->setText(tr("%1 of %2 heads · page %3 of %4").arg(shown).arg(heads).arg(page() + 1).arg(pageCount()));
        m_prev->setEnabled(page() > 0);
        m_next->setEnabled(page() + 1 < pageCount());
    }
    if (m_tiles) {
        drawLongTextPanels(); // the maps computed so far, the scale over them
    } else {
        m_scale->setGradient(weightsGradient());
        const QCPRange range = lo >= 0 && fixedWeightScale() && hi <= 1.0 + 1e-6 ? QCPRange(0.0, 1.0)
                                                                                 : QCPRange(lo, hi > lo ? hi : lo + 1);
        m_scale->setDataRange(range);
        m_scale->axis()->setLabel(weightScaleLabel(QStringLiteral("weight"), range));
    }
    QString t = QStringLiteral("All heads — ") + describeConfig(*m_snapshot, m_layer, -1, HeadDisplay::All);
    const int pool = (std::max(tq, tk) + kMaxCells - 1) / kMaxCells; // as colorMapData chooses it
    m_poolNote = pool > 1 && !m_tiles ? QStringLiteral("%1 tokens as means of %2 × %2 blocks").arg(std::max(tq, tk)).arg(pool)
                                      : QString();
    if (!m_snapshot->seq(m_layer).fullyMaskedRows.empty())
        t += QStringLiteral("\nGrey rows: every key masked, no weights (NaN).");
    else if (m_snapshot->seq(m_layer).mask.size() > 0)
        t += QStringLiteral("\nGrey cells: masked.");
    m_titleHead = t;
    m_baseTitle = t + longTextLine();
    m_title->setText(titleText());
    highlight();
    if (m_tiles) // the page's maps, once the panels are laid out
        m_mapTimer->start();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadGridView::highlight()
{
    for (size_t n = 0; n < m_rects.size(); ++n) {
        const bool sel = headOfPanel(int(n)) == m_head;
        for (QCPAxis *a : m_rects[n]->axes()) {
            a->setBasePen(sel ? QPen(QColor(220, 30, 30), 3) : QPen(QColor(120, 120, 120), 1));
            a->setLabelColor(sel ? QColor(220, 30, 30) : QColor(0, 0, 0));
        }
    }
}

} // namespace attnviz::ui
