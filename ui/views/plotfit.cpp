// SPDX-License-Identifier: GPL-3.0-or-later
// Value ticks spaced by the pixels their axis has, and titles that elide with a tooltip (plotfit.h).
#include "views/plotfit.h"

#include "style/plotstyle.h"

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QPointer>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {

// QCPAxisTicker rounds the step to the nearest readable value, which may be smaller than asked
// for (3.4 → 2.5): on a short axis that puts labels on top of each other. This one rounds up,
// from the room the axis had at the last layout (the plot relayouts when that changes).
class SpacedTicker : public QCPAxisTicker {
public:
    SpacedTicker(QCPAxis *axis, double spacing) : m_axis(axis), m_spacing(spacing) {}

protected:
    double getTickStep(const QCPRange &range) override
    {
        const bool vertical = m_axis->orientation() == Qt::Vertical;
        const QFontMetricsF fm(m_axis->tickLabelFont());
        const double length = lengthNow();
        m_usedLength = length;
        const double label = vertical ? fm.height() : fm.horizontalAdvance(QStringLiteral("−0.000"));
        const int intervals = length > 0 ? std::max(1, int(length / (m_spacing * label))) : 5;
        // steps `spacing` lines apart are aimed at; down to 3/4 of that is still clear of each other
        const double exact = 0.75 * range.size() / std::min(intervals, 5);
        m_endsOnly = intervals == 1;
        if (!(exact > 0) || !std::isfinite(exact))
            return 1.0;
        const double magnitude = std::pow(10.0, std::floor(std::log10(exact)));
        double step = 10 * magnitude;
        for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
            if (m * magnitude >= exact * (1 - 1e-9)) {
                step = m * magnitude;
                break;
            }
        // a step that leaves one tick on the range (just "0") tells less than its two ends
        if (std::floor(range.upper / step + 1e-9) - std::ceil(range.lower / step - 1e-9) < 1)
            m_endsOnly = true;
        return step;
    }

public:
    double lengthNow() const
    {
        return m_axis->orientation() == Qt::Vertical ? m_axis->axisRect()->height() : m_axis->axisRect()->width();
    }
    // the ticks were made for another length than the axis has now
    bool stale() const { return lengthNow() != m_usedLength; }

protected:
    // room for one interval: the range's two ends, rounded inwards to two significant digits (a
    // single readable step would often leave just "0" on the scale)
    QVector<double> createTickVector(double tickStep, const QCPRange &range) override
    {
        if (!m_endsOnly)
            return QCPAxisTicker::createTickVector(tickStep, range);
        const double big = std::max(std::abs(range.lower), std::abs(range.upper));
        if (!(big > 0) || !std::isfinite(big))
            return {range.lower};
        const double unit = std::pow(10.0, std::floor(std::log10(big)) - 1);
        const double lo = std::ceil(range.lower / unit - 1e-9) * unit, hi = std::floor(range.upper / unit + 1e-9) * unit;
        return lo < hi ? QVector<double>{lo, hi} : QVector<double>{lo};
    }

private:
    QCPAxis *m_axis;
    double m_spacing;
    double m_usedLength = -1;
    bool m_endsOnly = false;
};

class TitleTip : public QObject {
public:
    TitleTip(QCustomPlot *plot, QCPTextElement *title, std::function<QString()> full)
        : QObject(plot), m_title(title), m_full(std::move(full))
    {
        plot->installEventFilter(this);
    }

protected:
    bool eventFilter(QObject *o, QEvent *e) override
    {
        if (e->type() != QEvent::ToolTip)
            return false;
        auto *help = static_cast<QHelpEvent *>(e);
        if (!m_title->visible() || !m_title->outerRect().contains(help->pos()))
            return false;
        const QString text = m_full();
        if (text.isEmpty())
            return false;
        QToolTip::showText(help->globalPos(), text, static_cast<QWidget *>(o), m_title->outerRect());
        return true;
    }

private:
    QCPTextElement *m_title;
    std::function<QString()> m_full;
};

} // namespace

void fitValueTicks(QCPAxis *axis, double spacing)
{
    auto ticker = QSharedPointer<SpacedTicker>::create(axis, spacing);
    axis->setTicker(ticker);
    // ticks are made before the layout: where the layout changed the axis's length, once more
    const QPointer<QCPAxis> guard(axis);
    relabelAfterLayout(axis->parentPlot(), axis->parentPlot(), [guard, weak = ticker.toWeakRef()] {
        const QSharedPointer<SpacedTicker> t = weak.toStrongRef();
        return guard && t && guard->ticker() == t && t->stale();
    });
}

QString fittedTitle(QCustomPlot *plot, QCPTextElement *title, const QString &full, double maxShare, bool *elided)
{
    if (title->property(kTitleHeldProperty).toBool()) // an export draws its own fitting of it
        return title->text();
    title->setProperty(kFullTitleProperty, full);
    const double width = plot->width() - 16;
    const QString wrapped = wrapText(full, title->font(), width);
    const QFontMetricsF fm(title->font());
    const double tall = fm.lineSpacing() * (wrapped.count(QLatin1Char('\n')) + 1) + 8;
    const bool fits = tall <= maxShare * plot->height();
    if (elided)
        *elided = !fits;
    if (fits)
        return wrapped;
    return fm.elidedText(full.section(QLatin1Char('\n'), 0, 0), Qt::ElideRight, width);
}

void titleTooltip(QCustomPlot *plot, QCPTextElement *title, std::function<QString()> full)
{
    new TitleTip(plot, title, std::move(full));
}

} // namespace attnviz::ui
