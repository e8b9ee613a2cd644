// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/headgridview.h"

#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/plotzoom.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
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
        if (q < 0 || k < 0 || q >= m_snapshot->tq() || k >= m_snapshot->tk())
            return;
        const float v = m_snapshot->weights(m_layer, head)(q, k);
        QToolTip::showText(m_plot->mapToGlobal(e->pos()),
                           QStringLiteral("%1\nquery %2 “%3” → key %4 “%5”\n%6")
                               .arg(head < 0 ? QStringLiteral("average") : QStringLiteral("head %1").arg(head))
                               .arg(q)
                               .arg(m_snapshot->queryLabels.at(int(q)))
                               .arg(k)
                               .arg(m_snapshot->keyLabels.at(int(k)))
                               .arg(std::isfinite(v) ? QStringLiteral("weight %1").arg(double(v), 0, 'f', 4)
                                                     : QStringLiteral("weight undefined: every key masked")),
                           m_plot);
    });
    // query labels on the first column's panels, key labels under the lowest panel of each column
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
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
        replotToSettle(m_plot, changed);
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
    rebuild();
}

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
    // panels; the title (three lines), the key labels (rotated) and each panel's "head N" above and
    // below them
    const int line = QFontMetrics(m_plot->font()).height();
    const int overW = 13 * line + 16, overH = 9 * line + 12;
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
    rebuild();
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
    const bool ok = m_snapshot && m_snapshot->hasResult();
    const int heads = ok ? int(m_snapshot->seq(m_layer).weights.size()) : 0;
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
        m_baseTitle = m_snapshot ? QStringLiteral("All heads\n") + wrapText(m_snapshot->message, 90) : QStringLiteral("All heads");
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
    for (int head = -1; head < all - 1; ++head) {
        const WeightMatrix<float> &w = m_snapshot->weights(m_layer, head);
        for (Eigen::Index k = 0; k < w.storedSize(); ++k) // the cells not stored are 0: no change to hi, lo
            if (std::isfinite(w.data()[k])) {
                hi = std::max(hi, double(w.data()[k]));
                if (m_snapshot->settings.normalization != Normalization::Softmax)
                    lo = std::min(lo, double(w.data()[k]));
            }
    }
    for (int n = 0; n < panels; ++n) {
        const int head = headOfPanel(n);
        const WeightMatrix<float> &w = m_snapshot->weights(m_layer, head);
        m_maps[size_t(n)]->setData(colorMapData(w, &m_snapshot->seq(m_layer).mask, kMaxCells), false);
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
    const QCPRange range = lo >= 0 && fixedWeightScale() && hi <= 1.0 + 1e-6 ? QCPRange(0.0, 1.0)
                                                                             : QCPRange(lo, hi > lo ? hi : lo + 1);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(QStringLiteral("weight"), range));
    QString t = QStringLiteral("All heads — ") + describeConfig(*m_snapshot, m_layer, -1, HeadDisplay::All);
    const int pool = (std::max(tq, tk) + kMaxCells - 1) / kMaxCells; // as colorMapData chooses it
    m_poolNote = pool > 1 ? QStringLiteral("%1 tokens as means of %2 × %2 blocks").arg(std::max(tq, tk)).arg(pool) : QString();
    if (!m_snapshot->seq(m_layer).fullyMaskedRows.empty())
        t += QStringLiteral("\nGrey rows: every key masked, no weights (NaN).");
    else if (m_snapshot->seq(m_layer).mask.size() > 0)
        t += QStringLiteral("\nGrey cells: masked.");
    m_baseTitle = t;
    m_title->setText(titleText());
    highlight();
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
