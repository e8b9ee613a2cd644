// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/rowview.h"

#include "live/longtext.h"

#include "style/plotstyle.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

// The masked keys: a low hatched stub on the baseline with "masked" written up from it (a bar as
// tall as the chart read as a weight, taller than the real ones), drawn as QCPBars draws them (one
// antialiased polygon each, the same pixels) but in horizontal bands of kBand pixels: the raster
// engine hands every fill or outline of 96 or more spans to a thread pool and waits for it, and
// a bar per key as tall as the chart made that hundreds of thread hand-offs a keystroke on a long
// text. Clipped to a band, each bar stays below that.
class MaskedKeysLayer : public QCPLayerable {
public:
    static constexpr int kBand = 24;      // pixels: <= 3 spans per row (two edges, the inside) x 24 < 96
    static constexpr double kWidth = 0.8; // in keys, as the weights' bars

    MaskedKeysLayer(QCustomPlot *plot)
        : QCPLayerable(plot, QStringLiteral("main"))
    {
    }

    std::vector<uint8_t> masked; // per key
    // The stub of key j in pixels (empty when j is not masked): 0.4 of a text line high, far below
    // any bar a weight would need to be noticed; on a short chart (a folded-down dock) no more than
    // 6 % of its height.
    QRectF barRect(int j) const
    {
        if (j < 0 || j >= int(masked.size()) || !masked[size_t(j)])
            return {};
        const QCPAxis *x = parentPlot()->xAxis, *y = parentPlot()->yAxis;
        const double line = std::max(4.0, QFontMetricsF(x->tickLabelFont()).height() * 0.4);
        const double h = std::max(2.0, std::min(line, 0.06 * y->axisRect()->height()));
        return QRectF(QPointF(x->coordToPixel(j - kWidth / 2), y->coordToPixel(0) - h),
                      QPointF(x->coordToPixel(j + kWidth / 2), y->coordToPixel(0)))
            .normalized();
    }

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override
    {
        applyAntialiasingHint(p, antialiased(), QCP::aePlottables);
    }
    QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }

    void draw(QCPPainter *p) override
    {
        const QCPAxis *x = parentPlot()->xAxis;
        const int n = int(masked.size());
        if (n == 0)
            return;
        p->setPen(QPen(QColor(120, 120, 120)));
        p->setBrush(maskHatchBrush());
        const int lo = std::max(0, int(std::floor(x->range().lower))), hi = std::min(n - 1, int(std::ceil(x->range().upper)));
        std::vector<QPolygonF> bars;
        for (int j = lo; j <= hi; ++j)
            if (masked[size_t(j)])
                bars.push_back(QPolygonF(barRect(j)));
        if (bars.empty())
            return;
        const QRect area = clipRect().translated(0, -1); // as QCPLayer::draw clips a layerable
        const QRectF span = bars.front().boundingRect().adjusted(0, -2, 0, 2);
        const int y0 = std::max(area.top(), int(std::floor(span.top()))), y1 = std::min(area.bottom(), int(std::ceil(span.bottom())));
        const bool aa = p->antialiasing();
        for (int band = y0; band <= y1; band += kBand) {
            // in the layer's coordinates, as QCPLayer::draw set the first clip: before the half-pixel
            // shift QCPPainter makes for antialiasing
            p->setAntialiasing(false);
            p->setClipRect(QRect(area.left(), band, area.width(), std::min(kBand, y1 - band + 1)));
            p->setAntialiasing(aa);
            for (const QPolygonF &bar : bars)
                p->drawPolygon(bar);
        }
        p->setClipRect(area);
        // "masked", written upwards from each stub while the keys are wide enough for a line of text
        // and the axis high enough for the word (a short dock would cut it at the axis' top: the
        // title's "hatched: masked keys" says it then)
        const QFont font = x->tickLabelFont();
        const QFontMetricsF fm(font);
        const double above = span.top() - area.top();
        if (std::abs(x->coordToPixel(1) - x->coordToPixel(0)) >= fm.height()
            && above >= fm.horizontalAdvance(QStringLiteral("masked")) + 3) {
            p->setFont(font);
            p->setPen(parentPlot()->xAxis->tickLabelColor());
            for (const QPolygonF &bar : bars) {
                const QRectF r = bar.boundingRect();
                p->save();
                p->translate(r.center().x() + fm.ascent() / 2 - fm.descent(), r.top() - 3);
                p->rotate(-90);
                p->drawText(QPointF(0, 0), QStringLiteral("masked"));
                p->restore();
            }
        }
    }
};

QRectF RowView::maskedBarRect(int key) const { return m_masked->barRect(key); }

RowView::RowView(QWidget *parent)
    : DeferredView(parent)
    , m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("rowPlot"));
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), 10, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    m_plot->xAxis->setTickLabelRotation(-60);
    m_plot->xAxis->grid()->setVisible(false);
    m_plot->xAxis->setSubTicks(false);
    m_plot->xAxis->setLabel(QStringLiteral("key"));
    m_plot->yAxis->setLabel(QStringLiteral("weight"));
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create()); // its step follows the height
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);

    m_masked = new MaskedKeysLayer(m_plot); // under the weights' bars
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.8);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(QColor(33, 144, 141));

    m_message = new QCPItemText(m_plot);
    m_message->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_message->position->setCoords(0.5, 0.4);
    m_message->setPositionAlignment(Qt::AlignCenter);
    m_message->setPadding(QMargins(10, 6, 10, 6));
    m_message->setBrush(QBrush(QColor(255, 255, 255, 230)));
    m_message->setPen(QPen(QColor(150, 150, 150)));
    m_message->setVisible(false);

    relabelAfterLayout(m_plot, this, [this] {
        // a short dock (a 1280 × 720 window gives it a fifth of its height): the query line of the
        // title alone and shorter key labels, so that the bars keep room to be read
        m_compact = m_plot->height() < 14 * QFontMetricsF(m_plot->yAxis->tickLabelFont()).height();
        bool changed = false;
        if (const double rotation = m_compact ? -90 : -60; m_plot->xAxis->tickLabelRotation() != rotation) {
            m_plot->xAxis->setTickLabelRotation(rotation);
            changed = true;
        }
        // tighter still (larger text in a quarter of a 720-pixel window): three letters a key, no
        // "key" under them (the dock's title says what the bars are), the title on one elided line
        // (and wherever the short dock's layout would leave the bars less than four lines: larger
        // text's key labels took 150 of 200 px there)
        const double lineNow = QFontMetricsF(m_plot->yAxis->tickLabelFont()).height();
        const bool tight = m_plot->height() < std::max(9 * lineNow, m_compactMargins + 4 * lineNow);
        // (compared with the title the token axis was given, not with the one it shows: a thinned
        // axis adds "1 in N shown" to it, and the two choices would undo each other every pass)
        const QVariant given = m_plot->xAxis->property("attnvizBaseLabel");
        const QString keyNow = given.isValid() ? given.toString() : m_plot->xAxis->label();
        if (const QString keyTitle = tight ? QString() : QStringLiteral("key"); keyNow != keyTitle
                                                                                && (tight || keyNow.isEmpty())) {
            m_plot->xAxis->setLabel(keyTitle);
            changed = true;
        }
        changed = labelTokenAxis(m_plot->xAxis, m_labels, tight ? 3 : m_compact ? 5 : 14) || changed;
        QString title = m_compact ? m_fullTitle.section(QLatin1Char('\n'), 0, 0) : m_fullTitle;
        if (tight)
            title = QFontMetricsF(m_title->font()).elidedText(title, Qt::ElideRight, std::max(40, m_plot->width() - 16));
        if (title != m_shownTitle) {
            m_shownTitle = title;
            m_title->setText(title);
            changed = true;
        }
        // room above the tallest bar for its value label, and no more weight ticks
        // than the height holds at the current text size
        const double H = m_plot->axisRect()->height();
        // the short dock's margins, for the choice above: measured on a layout drawn with the short
        // dock's labels (one that changed in this pass was laid out with the previous choice's, and
        // longer labels taken for its margins would make it tight for good)
        if (m_compact && !tight && H > 0 && !changed) {
            const int margins = m_plot->viewport().height() - int(H);
            if (margins != m_compactMargins) {
                m_compactMargins = margins;
                changed = m_plot->height() < margins + 4 * lineNow; // tighter still
            }
        }
        // the bars get at least four lines of the text size beside the title and key labels (the
        // dock grows with larger text instead of squeezing the chart; five held the window taller
        // than a 1280 × 720 screen)
        const double line = QFontMetricsF(m_plot->yAxis->tickLabelFont()).height();
        // Measured on the viewport the axis rect was laid out in, not on the widget's height: a
        // hidden dock's plot is resized without being laid out again (its axis rect stays as it
        // was), and a minimum taken from its height would grow it by four lines per replot without
        // bound (the window with it). Never negative: a plot not laid out yet (the command line's, before
        // its resize) has an axis rect taller than itself.
        // At most a fifth of the window's height: the view above keeps the rest (the window gives
        // the dock a quarter of a short window, title included; the chart lays out in less).
        const int needed = std::min(window()->height() / 5,
                                    std::max(0, int(std::ceil(m_plot->viewport().height() - H + 4 * line))));
        if (H > 0 && m_plot->isVisible() && std::abs(m_plot->minimumHeight() - needed) > line)
            m_plot->setMinimumHeight(needed); // a larger minimum resizes the plot, which replots it
        if (H > 0) {
            // the smallest 1-2-5 step that keeps the labels 1.3 lines apart, at most 4 of them
            auto fixed = qSharedPointerDynamicCast<QCPAxisTickerFixed>(m_plot->yAxis->ticker());
            const double span = m_plot->yAxis->range().size();
            const double raw = span * std::max(1.3 * line / H, 0.25);
            const double mag = std::pow(10.0, std::floor(std::log10(raw)));
            double step = 10 * mag;
            for (double k : {1.0, 2.0, 5.0, 10.0})
                if (k * mag >= raw) {
                    step = k * mag;
                    break;
                }
            if (fixed && std::isfinite(step) && step > 0 && std::abs(fixed->tickStep() - step) > 1e-12) {
                fixed->setTickStep(step);
                changed = true;
            }
            double hi = 0;
            for (double v : std::as_const(m_values))
                if (std::isfinite(v))
                    hi = std::max(hi, v);
            double room = 0;
            for (QCPItemText *t : std::as_const(m_valueLabels))
                room = std::max(room, QFontMetricsF(t->font()).height() + 6);
            const QCPRange r = m_plot->yAxis->range();
            const double f = std::min(0.6, room / H);
            if (hi > 0 && f > 0) {
                const double upper = std::max(hi * 1.12, (hi - r.lower * f) / (1 - f));
                if (std::abs(upper - r.upper) > 1e-6 * std::max(1.0, hi)) {
                    m_plot->yAxis->setRangeUpper(upper);
                    changed = true;
                }
            }
        }
        return changed;
    });
    rebuild();
}

QString RowView::title() const { return m_fullTitle; }

int RowView::readableHeight() const
{
    // as the tight layout of relabelAfterLayout draws it: three letters a key, rotated upright
    // (a thinned axis puts the position before them), no "key" under them, the title on one line
    const QFontMetricsF tick(m_plot->xAxis->tickLabelFont());
    double keys = 0;
    for (const QString &label : std::as_const(m_labels))
        keys = std::max(keys, tick.horizontalAdvance(elide(label, 3)));
    if (m_labels.size() * tick.height() > std::max(1, m_plot->axisRect()->width()))
        keys += tick.horizontalAdvance(QString::number(m_labels.size()) + QLatin1Char(' '));
    const double title = QFontMetricsF(m_title->font()).height() + m_title->margins().top() + m_title->margins().bottom();
    // the axes' paddings and tick labels' half lines at the ends of the value axis
    const QCPAxis *x = m_plot->xAxis;
    const double pads = x->padding() + x->tickLabelPadding() + x->tickLengthOut() + tick.height();
    return int(std::ceil(title + keys + pads + 4 * QFontMetricsF(m_plot->yAxis->tickLabelFont()).height()));
}

void RowView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void RowView::setSelection(int layer, int head, int query)
{
    if (layer == m_layer && head == m_head && query == m_query)
        return; // (the window passes the selection after every snapshot: rebuilt already)
    m_layer = layer;
    m_head = head;
    m_query = query;
    rebuild();
}

void RowView::setHeadDisplay(HeadDisplay display)
{
    m_display = display;
    rebuild();
}

void RowView::changeEvent(QEvent *e)
{
    DeferredView::changeEvent(e);
    if (e->type() == QEvent::FontChange) {
        m_compactMargins = 0; // measured at the old text size: the tight choice is made again
        rebuild();
    }
}

void RowView::rebuild()
{
    if (deferred())
        return;
    for (QCPItemText *t : std::as_const(m_valueLabels))
        m_plot->removeItem(t);
    m_valueLabels.clear();
    m_labels.clear();
    m_values.clear();
    const bool ok = m_snapshot && m_snapshot->hasResult() && m_query >= 0 && m_query < m_snapshot->tq();
    if (!ok) {
        m_bars->data()->clear();
        m_masked->masked.clear();
        m_fullTitle = m_shownTitle = QStringLiteral("Selected query");
        m_title->setText(m_fullTitle);
        m_message->setText(wrapText(m_snapshot ? m_snapshot->message : QStringLiteral("Computing…"), 90));
        m_message->setVisible(!m_message->text().isEmpty());
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    // a long text's row is computed from q and k (its trace keeps no weights): one row of tiles
    const std::shared_ptr<const AttentionTiles<float>> tiles =
        m_snapshot->longText ? longTextTiles(*m_snapshot, m_layer) : nullptr;
    if (m_snapshot->longText && !tiles) {
        m_bars->data()->clear();
        m_masked->masked.clear();
        m_fullTitle = m_shownTitle = QStringLiteral("Selected query");
        m_title->setText(m_fullTitle);
        m_message->setText(wrapText(tr("Layer %1's weights cannot be computed from what this long text's trace kept")
                                        .arg(m_snapshot->layerIndex(m_layer)),
                                    90));
        m_message->setVisible(true);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const WeightMatrix<float> *stored = tiles ? nullptr : &m_snapshot->weights(m_layer, m_head);
    const int tk = tiles ? tiles->cols() : int(stored->cols());
    Mat<float> row;
    if (tiles)
        row = tiles->tile(m_head < 0 || m_head >= tiles->numHeads() ? -1 : m_head, m_query, m_query + 1, 0, tk);
    auto weight = [&](int j) { return tiles ? row(0, j) : (*stored)(m_query, j); };
    m_labels = m_snapshot->keyLabels;
    const QString qname = m_snapshot->queryLabels.at(int(m_query));
    const BoolMat &storedMask = m_snapshot->seq(m_layer).mask;
    auto maskedAt = [&](int j) { return tiles ? tiles->masked(m_query, j) : storedMask.size() > 0 && storedMask(m_query, j); };
    QVector<double> keys(tk);
    int maskedKeys = 0;
    m_masked->masked.assign(size_t(tk), 0);
    m_values.resize(tk);
    double hi = 0, lo = 0;
    for (int j = 0; j < tk; ++j) {
        keys[j] = j;
        m_values[j] = double(weight(j));
        if (std::isfinite(m_values[j])) {
            hi = std::max(hi, m_values[j]);
            lo = std::min(lo, m_values[j]);
        }
    }
    if (hi <= lo)
        hi = lo + 1;
    for (int j = 0; j < tk; ++j)
        if (maskedAt(j)) {
            m_masked->masked[size_t(j)] = 1;
            ++maskedKeys;
        }
    const bool fully = std::find(m_snapshot->seq(m_layer).fullyMaskedRows.begin(), m_snapshot->seq(m_layer).fullyMaskedRows.end(),
                                 m_query)
        != m_snapshot->seq(m_layer).fullyMaskedRows.end();
    m_bars->setData(keys, m_values, true);
    m_message->setVisible(fully);
    if (fully)
        m_message->setText(QStringLiteral("Every key is masked for “%1”: there are no weights to show (NaN).").arg(qname));
    const QString head = m_head < 0 || m_display == HeadDisplay::Average ? QStringLiteral("average of heads")
                                                                          : QStringLiteral("head %1").arg(m_head);
    m_fullTitle = QStringLiteral("Query %1 “%2” attends to — %3%4")
                      .arg(m_query)
                      .arg(qname)
                      .arg(head)
                      .arg(maskedKeys == 0 ? QString() : QStringLiteral(" (hatched: masked keys)"))
                  + QLatin1Char('\n') + describeConfig(*m_snapshot, m_layer, m_head, m_display == HeadDisplay::All ? HeadDisplay::One : m_display);
    m_shownTitle = m_compact ? m_fullTitle.section(QLatin1Char('\n'), 0, 0) : m_fullTitle;
    m_title->setText(m_shownTitle);
    m_plot->xAxis->setRange(-0.6, tk - 0.4);
    m_plot->yAxis->setRange(std::min(0.0, lo * 1.1), hi * 1.12);
    if (tk <= 40) {
        QFont f = font();
        f.setPointSizeF(f.pointSizeF() * (tk <= 16 ? 0.85 : 0.7)); // follows the text size (presentation)
        // as many decimals (4, 3 or 2) as fit between two bars: a lesson quoting 0.998 finds 0.998,
        // not 1.00
        const double perBar = m_plot->axisRect()->width() / std::max(1.0, tk + 0.2);
        int decimals = 2;
        for (int d = 4; d > 2; --d)
            if (QFontMetricsF(f).horizontalAdvance(QStringLiteral("0.") + QString(d, QLatin1Char('0'))) <= perBar * 0.95) {
                decimals = d;
                break;
            }
        for (int j = 0; j < tk; ++j) {
            if (!std::isfinite(m_values[j]) || maskedAt(j))
                continue;
            auto *t = new QCPItemText(m_plot);
            t->position->setCoords(j, std::max(0.0, m_values[j]));
            t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
            t->setText(QString::number(m_values[j], 'f', decimals));
            t->setFont(f);
            m_valueLabels << t;
        }
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace attnviz::ui
