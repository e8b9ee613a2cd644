// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/residualview.h"

#include "live/longtext.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <cmath>

namespace attnviz::ui {

namespace {

QCPAxisRect *heatRect(QCustomPlot *plot)
{
    auto *r = new QCPAxisRect(plot, true);
    for (QCPAxis *a : r->axes())
        a->grid()->setVisible(false);
    r->axis(QCPAxis::atLeft)->setRangeReversed(true);
    r->axis(QCPAxis::atBottom)->setSubTicks(false);
    return r;
}

QCPColorScale *colourScale(QCustomPlot *plot, const QString &label, const QCPColorGradient &g)
{
    auto *s = new QCPColorScale(plot);
    s->setType(QCPAxis::atRight);
    s->setBarWidth(10);
    s->axis()->setLabel(label);
    s->setGradient(g);
    fitValueTicks(s->axis()); // ~40 px high in the window at 1280 × 720: its two ends only
    return s;
}

QCPItemRect *rowFrame(QCustomPlot *plot, QCPAxisRect *r)
{
    auto *f = new QCPItemRect(plot);
    f->setClipAxisRect(r);
    f->topLeft->setAxes(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
    f->bottomRight->setAxes(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
    f->setPen(QPen(QColor(220, 30, 30), 2));
    f->setBrush(Qt::NoBrush);
    return f;
}

// Stage labels: "in", then the layer after which the stream is taken.
void labelStages(QCPAxis *a, int stages)
{
    QSharedPointer<QCPAxisTickerText> t(new QCPAxisTickerText);
    const int step = stages > 25 ? 4 : stages > 13 ? 2 : 1;
    for (int s = 0; s < stages; s += step)
        t->addTick(s, s == 0 ? QStringLiteral("in") : QString::number(s - 1));
    a->setTicker(t);
}

} // namespace

ResidualView::ResidualView(QWidget *parent) : DeferredView(parent), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("residualPlot"));
    m_plot->plotLayout()->clear();
    m_title = new QCPTextElement(m_plot, QStringLiteral("Residual stream"), QFont(font().family(), 10, QFont::Bold));
    // the title's lines wrapped to the plot's width (the second was cut at its end); where they
    // would take more than a fifth of a short plot (the window at 1280 × 720), its first line
    // elided, the whole title in the tooltip
    relabelAfterLayout(m_plot, this, [this] {
        const QString t = m_titleText.isEmpty() ? m_title->text() : fittedTitle(m_plot, m_title, m_titleText, m_titleShare, &m_titleElided);
        if (t == m_title->text())
            return false;
        m_title->setText(t);
        return true;
    });
    titleTooltip(m_plot, m_title, [this] { return m_titleElided ? m_titleText : QString(); });
    m_plot->plotLayout()->addElement(0, 0, m_title);

    auto *row = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, row);
    m_normRect = heatRect(m_plot);
    m_cosRect = heatRect(m_plot);
    m_normScale = colourScale(m_plot, QStringLiteral("‖x‖"), weightsGradient());
    m_cosScale = colourScale(m_plot, QStringLiteral("cos(x, x_in)"), divergingGradient());
    m_cosScale->setDataRange(QCPRange(-1, 1));
    row->addElement(0, 0, m_normRect);
    row->addElement(0, 1, m_normScale);
    row->addElement(0, 2, m_cosRect);
    row->addElement(0, 3, m_cosScale);
    row->setColumnStretchFactors({1.0, 0.04, 1.0, 0.04});
    auto *group = new QCPMarginGroup(m_plot);
    for (QCPLayoutElement *e :
         std::initializer_list<QCPLayoutElement *>{m_normRect, m_cosRect, m_normScale, m_cosScale})
        e->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_cosRect->axis(QCPAxis::atLeft)->setTickLabels(false);
    for (QCPAxisRect *r : {m_normRect, m_cosRect}) {
        r->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("after layer"));
        r->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    }
    m_normMap = new QCPColorMap(m_normRect->axis(QCPAxis::atBottom), m_normRect->axis(QCPAxis::atLeft));
    m_cosMap = new QCPColorMap(m_cosRect->axis(QCPAxis::atBottom), m_cosRect->axis(QCPAxis::atLeft));
    m_normMap->setColorScale(m_normScale);
    m_cosMap->setColorScale(m_cosScale);
    for (QCPColorMap *m : {m_normMap, m_cosMap})
        m->setInterpolate(false);
    m_normSel = rowFrame(m_plot, m_normRect);
    m_cosSel = rowFrame(m_plot, m_cosRect);

    m_lineRect = new QCPAxisRect(m_plot, true);
    m_plot->plotLayout()->addElement(2, 0, m_lineRect);
    m_plot->plotLayout()->setRowStretchFactors({0.01, 1.0, 0.6});
    m_lineRect->axis(QCPAxis::atRight)->setVisible(true);
    m_lineRect->axis(QCPAxis::atRight)->setTickLabels(true);
    m_lineRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("after layer"));
    m_lineRect->axis(QCPAxis::atBottom)->setSubTicks(false);
    m_lineRect->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("‖x‖"));
    m_lineRect->axis(QCPAxis::atRight)->setLabel(QStringLiteral("cosine"));
    m_lineRect->axis(QCPAxis::atRight)->setRange(-1.05, 1.05);
    // as many ticks as the curves' height has room for (~60 px in the window at 1280 × 720)
    fitValueTicks(m_lineRect->axis(QCPAxis::atLeft));
    fitValueTicks(m_lineRect->axis(QCPAxis::atRight));
    m_normLine = new QCPGraph(m_lineRect->axis(QCPAxis::atBottom), m_lineRect->axis(QCPAxis::atLeft));
    m_normLine->setPen(QPen(QColor(70, 110, 170), 2));
    m_normLine->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    m_normLine->setName(QStringLiteral("norm (left axis)"));
    m_cosLine = new QCPGraph(m_lineRect->axis(QCPAxis::atBottom), m_lineRect->axis(QCPAxis::atRight));
    m_cosLine->setPen(QPen(QColor(200, 80, 40), 2, Qt::DashLine));
    m_cosLine->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, 6));
    m_cosLine->setName(QStringLiteral("cosine to input (right axis)"));
    m_lineRect->insetLayout()->addElement(new QCPLegend, Qt::AlignBottom | Qt::AlignRight);
    auto *legend = qobject_cast<QCPLegend *>(m_lineRect->insetLayout()->elementAt(0));
    legend->setBrush(QColor(255, 255, 255, 220));
    legend->addItem(new QCPPlottableLegendItem(legend, m_normLine));
    legend->addItem(new QCPPlottableLegendItem(legend, m_cosLine));
    auto *lineGroup = new QCPMarginGroup(m_plot); // the curves line up with the norm heatmap
    m_lineRect->setMarginGroup(QCP::msLeft, lineGroup);
    m_normRect->setMarginGroup(QCP::msLeft, lineGroup);

    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        // a long text's window of positions is labelled with the text's positions
        const int first = m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0;
        m_normRect->axis(QCPAxis::atLeft)->setProperty("attnvizPositionOffset", first);
        m_cosRect->axis(QCPAxis::atLeft)->setProperty("attnvizPositionOffset", first);
        labelTokenAxis(m_normRect->axis(QCPAxis::atLeft), m_labels);
        labelTokenAxis(m_cosRect->axis(QCPAxis::atLeft), m_labels);
    });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent *e) {
        QCPAxisRect *r = m_plot->axisRectAt(e->pos());
        if (m_tokens == 0 || (r != m_normRect && r != m_cosRect))
            return;
        const int q = int(std::lround(r->axis(QCPAxis::atLeft)->pixelToCoord(e->pos().y())));
        if (q >= 0 && q < m_tokens)
            emit querySelected(q);
    });
    rebuild();
}

QString ResidualView::title() const
{
    return m_title->text();
}

double ResidualView::normAt(int stage, int token) const
{
    if (stage < 0 || stage >= m_stages || token < 0 || token >= m_tokens)
        return std::nan("");
    return m_normMap->data()->cell(stage, token);
}

double ResidualView::cosineAt(int stage, int token) const
{
    if (stage < 0 || stage >= m_stages || token < 0 || token >= m_tokens)
        return std::nan("");
    return m_cosMap->data()->cell(stage, token);
}

QVector<double> ResidualView::selectedNorms() const
{
    QVector<double> v;
    for (auto it = m_normLine->data()->constBegin(); it != m_normLine->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

QVector<double> ResidualView::selectedCosines() const
{
    QVector<double> v;
    for (auto it = m_cosLine->data()->constBegin(); it != m_cosLine->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

void ResidualView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void ResidualView::setSelection(int layer, int, int query)
{
    m_layer = layer; // every layer is drawn; the layer does not change the view
    m_query = query;
    if (deferred())
        return;
    updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ResidualView::rebuild()
{
    if (deferred())
        return;
    const bool ok = m_snapshot && m_snapshot->hasResult() && m_snapshot->deep();
    if (!ok) {
        QString why;
        if (!m_snapshot)
            why = QStringLiteral("Computing…");
        else if (!m_snapshot->hasResult())
            why = m_snapshot->message;
        else
            why = QStringLiteral("Single attention layer (depth 1): there is no residual stream. Set the depth to 2 "
                                 "or more under “Transformer stack”.");
        // nothing else to show: the message may take the whole plot
        m_titleText = QStringLiteral("Residual stream\n") + why;
        m_titleShare = 1.0;
        m_title->setText(fittedTitle(m_plot, m_title, m_titleText, m_titleShare, &m_titleElided));
        m_stages = m_tokens = 0;
        m_labels.clear();
        m_metrics = {};
        m_normMap->data()->clear();
        m_cosMap->data()->clear();
        m_normLine->data()->clear();
        m_cosLine->data()->clear();
        m_normSel->setVisible(false);
        m_cosSel->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    m_metrics = residualMetrics(*m_snapshot->trace);
    m_stages = int(m_metrics.norms.rows());
    m_tokens = int(m_metrics.norms.cols());
    m_labels.clear();
    m_labels = m_snapshot->queryLabels;
    double hi = 0;
    for (QCPColorMap *map : {m_normMap, m_cosMap}) {
        const Mat<double> &m = map == m_normMap ? m_metrics.norms : m_metrics.cosines;
        auto *d =
            new QCPColorMapData(m_stages, m_tokens, QCPRange(0, m_stages - 1), QCPRange(0, std::max(0, m_tokens - 1)));
        for (int s = 0; s < m_stages; ++s)
            for (int i = 0; i < m_tokens; ++i) {
                d->setCell(s, i, m(s, i));
                if (map == m_normMap && std::isfinite(m(s, i)))
                    hi = std::max(hi, m(s, i));
            }
        map->setData(d, false);
    }
    m_normScale->setDataRange(QCPRange(0, hi > 0 ? hi : 1));
    for (QCPAxisRect *r : {m_normRect, m_cosRect}) {
        r->axis(QCPAxis::atBottom)->setRange(-0.5, m_stages - 0.5);
        r->axis(QCPAxis::atLeft)->setRange(-0.5, m_tokens - 0.5);
        labelStages(r->axis(QCPAxis::atBottom), m_stages);
    }
    labelStages(m_lineRect->axis(QCPAxis::atBottom), m_stages);
    m_lineRect->axis(QCPAxis::atBottom)->setRange(-0.3, m_stages - 0.7);
    QString title =
        QStringLiteral("Residual stream — %1 layers · %2").arg(m_snapshot->numLayers()).arg(m_snapshot->modelLabel);
    // what the two maps show is said here, not above each map: the norm map is a few columns wide,
    // and its title ran into the cosine map's
    title += QStringLiteral("\nLeft: each token's norm ‖x‖; right: its cosine to its input vector. “in” = token vector + "
                            "position (what layer 0 reads); then the stream after each block.");
    m_titleText = title = withWindowNote(*m_snapshot, title);
    m_titleShare = 0.2;
    m_title->setText(fittedTitle(m_plot, m_title, title, m_titleShare, &m_titleElided));
    updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ResidualView::updateSelected()
{
    const bool ok = m_tokens > 0 && m_query >= 0 && m_query < m_tokens;
    m_normSel->setVisible(ok);
    m_cosSel->setVisible(ok);
    m_normLine->data()->clear();
    m_cosLine->data()->clear();
    if (!ok)
        return;
    for (QCPItemRect *f : {m_normSel, m_cosSel}) {
        f->topLeft->setCoords(-0.5, m_query - 0.5);
        f->bottomRight->setCoords(m_stages - 0.5, m_query + 0.5);
    }
    double hi = 0;
    for (int s = 0; s < m_stages; ++s) {
        m_normLine->addData(s, m_metrics.norms(s, m_query));
        m_cosLine->addData(s, m_metrics.cosines(s, m_query));
        if (std::isfinite(m_metrics.norms(s, m_query)))
            hi = std::max(hi, m_metrics.norms(s, m_query));
    }
    m_lineRect->axis(QCPAxis::atLeft)->setRange(0, hi > 0 ? hi * 1.1 : 1);
    m_lineRect->axis(QCPAxis::atBottom)
        ->setLabel(QStringLiteral("after layer — token %1 “%2”")
                       .arg(m_query + (m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0))
                       .arg(m_labels.value(m_query)));
}

} // namespace attnviz::ui
