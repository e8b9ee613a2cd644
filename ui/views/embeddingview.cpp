// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/embeddingview.h"

#include "live/longtext.h"

#include "style/plotstyle.h"
#include "views/embeddingnumbers.h"
#include "views/plotfit.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz::ui {

namespace {

QCPAxisRect *makeRect(QCustomPlot *plot, const QString &title)
{
    auto *r = new QCPAxisRect(plot, true);
    r->axis(QCPAxis::atLeft)->setRangeReversed(true);
    r->axis(QCPAxis::atLeft)->grid()->setVisible(false);
    r->axis(QCPAxis::atBottom)->grid()->setVisible(false);
    r->axis(QCPAxis::atTop)->setVisible(true);
    r->axis(QCPAxis::atTop)->setTicks(false);
    r->axis(QCPAxis::atTop)->setTickLabels(false);
    r->axis(QCPAxis::atTop)->setLabel(title);
    return r;
}

} // namespace

EmbeddingView::EmbeddingView(QWidget *parent)
    : DeferredView(parent)
    , m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("embeddingPlot"));
    m_plot->plotLayout()->clear();
    m_title = new QCPTextElement(m_plot, QStringLiteral("Contextual embeddings"), QFont(font().family(), 10, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    auto *row = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, row);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.01);

    m_inRect = makeRect(m_plot, QStringLiteral("input embedding x_i"));
    m_outRect = makeRect(m_plot, QStringLiteral("contextual embedding (output) y_i"));
    m_normRect = makeRect(m_plot, QStringLiteral("|y_i − x_i|"));
    m_cosRect = makeRect(m_plot, QStringLiteral("cos(y_i, x_i)"));
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->axis()->setLabel(QStringLiteral("value"));
    m_scale->setGradient(divergingGradient());
    fitValueTicks(m_scale->axis()); // a long text leaves the scale ~80 px in the window at 1280 × 720
    row->addElement(0, 0, m_inRect);
    row->addElement(0, 1, m_outRect);
    row->addElement(0, 2, m_scale);
    row->addElement(0, 3, m_normRect);
    row->addElement(0, 4, m_cosRect);
    row->setColumnStretchFactors({1.0, 1.0, 0.05, 0.45, 0.45});
    auto *group = new QCPMarginGroup(m_plot);
    for (QCPAxisRect *r : {m_inRect, m_outRect, m_normRect, m_cosRect})
        r->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    for (QCPAxisRect *r : {m_outRect, m_normRect, m_cosRect})
        r->axis(QCPAxis::atLeft)->setTickLabels(false);
    m_inRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("dimension"));
    m_outRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("dimension"));
    m_inRect->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    for (QCPAxisRect *r : {m_normRect, m_cosRect})
        r->axis(QCPAxis::atBottom)->ticker()->setTickCount(3);
    // the dimension axes tick at whole dimensions only: 0, 1, 2 for three, never −0.5 … 2.5
    for (QCPAxisRect *r : {m_inRect, m_outRect}) {
        auto dims = QSharedPointer<QCPAxisTickerFixed>::create();
        dims->setTickStep(1);
        dims->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        dims->setTickCount(6);
        r->axis(QCPAxis::atBottom)->setTicker(dims);
        r->axis(QCPAxis::atBottom)->setSubTicks(false);
        r->axis(QCPAxis::atBottom)->setNumberFormat(QStringLiteral("f"));
        r->axis(QCPAxis::atBottom)->setNumberPrecision(0);
    }

    m_inMap = new QCPColorMap(m_inRect->axis(QCPAxis::atBottom), m_inRect->axis(QCPAxis::atLeft));
    m_outMap = new QCPColorMap(m_outRect->axis(QCPAxis::atBottom), m_outRect->axis(QCPAxis::atLeft));
    for (QCPColorMap *m : {m_inMap, m_outMap}) {
        m->setInterpolate(false);
        m->setAntialiased(false);
        m->setColorScale(m_scale);
    }
    auto bars = [](QCPAxisRect *r, const QColor &c) {
        auto *b = new QCPBars(r->axis(QCPAxis::atLeft), r->axis(QCPAxis::atBottom));
        b->setWidth(0.8);
        b->setPen(Qt::NoPen);
        b->setBrush(c);
        return b;
    };
    m_normBars = bars(m_normRect, QColor(70, 110, 170));
    m_normSel = bars(m_normRect, QColor(220, 30, 30));
    m_cosBars = bars(m_cosRect, QColor(70, 150, 110));
    m_cosSel = bars(m_cosRect, QColor(220, 30, 30));
    m_inNumbers = new MatrixNumbersOverlay(m_plot, m_inRect, m_inMap);
    m_outNumbers = new MatrixNumbersOverlay(m_plot, m_outRect, m_outMap);
    m_normValues = new BarValuesOverlay(m_plot, m_normRect);
    m_normValues->bars = {m_normSel, m_normBars};
    m_cosValues = new BarValuesOverlay(m_plot, m_cosRect);
    m_cosValues->bars = {m_cosSel, m_cosBars};

    // labels are chosen once the layout is known; a change (resize, zoom) costs one more replot
    relabelAfterLayout(m_plot, this, [this] {
        // a long text's window of positions: its tokens numbered as the text's
        m_inRect->axis(QCPAxis::atLeft)->setProperty("attnvizPositionOffset",
                                                     m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0);
        bool changed = labelTokenAxis(m_inRect->axis(QCPAxis::atLeft), m_labels);
        // as many dimension ticks as fit a label's width apart ("0 20406080100120" ran together
        // in a narrow panel at presentation sizes)
        // (the narrow |y − x| and cosine panels too: "-1-0.500.51")
        for (QCPAxisRect *r : {m_inRect, m_outRect, m_normRect, m_cosRect}) {
            QCPAxis *x = r->axis(QCPAxis::atBottom);
            const QSharedPointer<QCPAxisTicker> ticks = x->ticker();
            if (!ticks || r->width() <= 0)
                continue;
            const bool dims = !qSharedPointerDynamicCast<QCPAxisTickerFixed>(ticks).isNull();
            const QString widest = dims ? QString::number(std::max(1, int(std::ceil(x->range().upper))))
                                        : QStringLiteral("−0.5");
            const double label = QFontMetricsF(x->tickLabelFont()).horizontalAdvance(widest + QStringLiteral("00"));
            const int count = std::clamp(int(r->width() / std::max(1.0, label)) - 1, 1, 6);
            if (ticks->tickCount() != count) {
                ticks->setTickCount(count);
                changed = true;
            }
            // each panel's title no wider than its panel (the two matrices' titles ran together)
            QCPAxis *top = r->axis(QCPAxis::atTop);
            const QString full = top->property("attnvizFullTitle").toString().isEmpty() ? top->label()
                                                                                         : top->property("attnvizFullTitle").toString();
            top->setProperty("attnvizFullTitle", full);
            const QString shown = QFontMetricsF(top->labelFont()).elidedText(full, Qt::ElideRight, r->width() - 4);
            if (shown != top->label()) {
                top->setLabel(shown);
                changed = true;
            }
        }
        return changed;
    });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent *e) {
        QCPAxisRect *r = m_plot->axisRectAt(e->pos());
        if (!r || !m_snapshot || !m_snapshot->hasResult())
            return;
        const int q = int(std::lround(r->axis(QCPAxis::atLeft)->pixelToCoord(e->pos().y())));
        if (q >= 0 && q < m_snapshot->tq())
            emit querySelected(q);
    });
    rebuild();
}

QString EmbeddingView::title() const { return m_title->text(); }

void EmbeddingView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void EmbeddingView::setSelection(int layer, int, int query)
{
    if (layer == m_layer && query == m_query)
        return; // (the window passes the selection after every snapshot: rebuilt already)
    m_layer = layer;
    m_query = query;
    rebuild();
}

void EmbeddingView::rebuild()
{
    if (deferred())
        return;
    m_labels.clear();
    m_norms.clear();
    m_cosines.clear();
    const bool ok = m_snapshot && m_snapshot->hasResult();
    m_inNumbers->matrix = nullptr;
    m_outNumbers->matrix = nullptr;
    for (QCPAbstractPlottable *p : std::initializer_list<QCPAbstractPlottable *>{m_inMap, m_outMap, m_normBars, m_cosBars, m_normSel, m_cosSel})
        p->setVisible(ok);
    m_scale->setVisible(ok);
    if (!ok) {
        m_title->setText(QStringLiteral("Contextual embeddings\n")
                         + wrapText(m_snapshot ? m_snapshot->message : QStringLiteral("Computing…"), 90));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const Mat<float> &x = m_snapshot->queryInput(m_layer);
    const Mat<float> &y = m_snapshot->seq(m_layer).output;
    const int t = int(x.rows());
    m_labels = m_snapshot->queryLabels;
    m_inMap->setData(colorMapData(x, nullptr, std::numeric_limits<int>::max()), false);
    m_outMap->setData(colorMapData(y, nullptr, std::numeric_limits<int>::max()), false);
    m_inNumbers->matrix = &x;
    m_outNumbers->matrix = &y;
    m_inNumbers->row = m_outNumbers->row = m_query;
    double m = 0;
    for (Eigen::Index k = 0; k < x.size(); ++k)
        m = std::max(m, double(std::abs(x.data()[k])));
    for (Eigen::Index k = 0; k < y.size(); ++k)
        if (std::isfinite(y.data()[k]))
            m = std::max(m, double(std::abs(y.data()[k])));
    if (m <= 0)
        m = 1;
    m_scale->setDataRange(QCPRange(-m, m));

    QVector<double> selNormKey, selNorm, selCosKey, selCos;
    m_norms.resize(t);
    m_cosines.resize(t);
    double maxNorm = 0;
    for (int i = 0; i < t; ++i) {
        const bool comparable = y.cols() == x.cols() && y.row(i).allFinite();
        if (comparable) {
            const auto xi = x.row(i).cast<double>(), yi = y.row(i).cast<double>();
            m_norms[i] = (yi - xi).norm();
            const double den = xi.norm() * yi.norm();
            m_cosines[i] = den > 0 ? xi.dot(yi) / den : std::nan("");
        } else {
            m_norms[i] = std::nan("");
            m_cosines[i] = std::nan("");
        }
        if (std::isfinite(m_norms[i]))
            maxNorm = std::max(maxNorm, m_norms[i]);
    }
    // only finite values become bars: QCPBars draws a NaN as a bar across the whole rect
    QVector<double> normKeys, normVals, cosKeys, cosVals;
    for (int i = 0; i < t; ++i) {
        if (std::isfinite(m_norms[i])) {
            normKeys << i;
            normVals << m_norms[i];
        }
        if (std::isfinite(m_cosines[i])) {
            cosKeys << i;
            cosVals << m_cosines[i];
        }
    }
    m_normBars->setData(normKeys, normVals, true);
    m_cosBars->setData(cosKeys, cosVals, true);
    if (m_query >= 0 && m_query < t && std::isfinite(m_norms[m_query])) {
        selNormKey << m_query;
        selNorm << m_norms[m_query];
    }
    if (m_query >= 0 && m_query < t && std::isfinite(m_cosines[m_query])) {
        selCosKey << m_query;
        selCos << m_cosines[m_query];
    }
    m_normSel->setData(selNormKey, selNorm, true);
    m_cosSel->setData(selCosKey, selCos, true);
    for (QCPAxisRect *r : {m_inRect, m_outRect, m_normRect, m_cosRect})
        r->axis(QCPAxis::atLeft)->setRange(-0.5, t - 0.5);
    m_inRect->axis(QCPAxis::atBottom)->setRange(-0.5, x.cols() - 0.5);
    m_outRect->axis(QCPAxis::atBottom)->setRange(-0.5, y.cols() - 0.5);
    m_normRect->axis(QCPAxis::atBottom)->setRange(0, maxNorm > 0 ? maxNorm * 1.05 : 1);
    m_cosRect->axis(QCPAxis::atBottom)->setRange(-1.02, 1.02);
    // y_i and x_i of different widths have no difference and no cosine: the two panels say why
    const bool comparable = y.cols() == x.cols();
    m_normRect->axis(QCPAxis::atBottom)->setLabel(
        comparable ? QString() : QStringLiteral("not defined:\nwidth %1 ≠ %2").arg(y.cols()).arg(x.cols()));
    m_cosRect->axis(QCPAxis::atBottom)->setLabel(
        comparable ? QString() : QStringLiteral("not defined:\nwidth %1 ≠ %2").arg(y.cols()).arg(x.cols()));
    for (QCPAxisRect *r : {m_normRect, m_cosRect}) // no scale under panels without bars
        r->axis(QCPAxis::atBottom)->setTickLabels(comparable);

    QString title = QStringLiteral("Contextual embeddings — ") + describeConfig(*m_snapshot, m_layer, -1, HeadDisplay::All);
    if (!m_snapshot->seq(m_layer).fullyMaskedRows.empty())
        title += QStringLiteral("\nRows whose every key is masked have no output (NaN, grey): no change is shown for them.");
    m_title->setText(withWindowNote(*m_snapshot, title)); // a long text's window names its positions
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace attnviz::ui
