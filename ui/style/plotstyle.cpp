// SPDX-License-Identifier: GPL-3.0-or-later
#include "style/plotstyle.h"

#include "style/appearance.h"
#include "style/legibility.h"

#include <QCoreApplication>
#include <QEvent>
#include <QFontMetrics>

#include <algorithm>
#include <cstdint>
#include <cmath>

namespace attnviz::ui {

namespace {

QCPColorGradient gradient(std::initializer_list<std::pair<double, QColor>> stops)
{
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto &[at, colour] : stops)
        g.setColorStopAt(at, colour);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(nanColor());
    g.setLevelCount(256);
    return g;
}

} // namespace

// The colour maps are data: each sampled at 9 points from its published definition.
QCPColorGradient sequentialGradient(SequentialMap m)
{
    switch (m) {
    case SequentialMap::Cividis: // matplotlib cividis: blue to yellow, readable with any colour vision
        return gradient({{0.000, QColor(0, 34, 78)}, {0.125, QColor(18, 53, 112)}, {0.250, QColor(59, 73, 108)},
                         {0.375, QColor(87, 92, 109)}, {0.500, QColor(112, 113, 115)}, {0.625, QColor(138, 134, 120)},
                         {0.750, QColor(165, 156, 116)}, {0.875, QColor(195, 179, 105)}, {1.000, QColor(254, 232, 56)}});
    case SequentialMap::Magma:
        return gradient({{0.000, QColor(0, 0, 4)}, {0.125, QColor(28, 16, 68)}, {0.250, QColor(79, 18, 123)},
                         {0.375, QColor(129, 37, 129)}, {0.500, QColor(181, 54, 122)}, {0.625, QColor(229, 80, 100)},
                         {0.750, QColor(251, 135, 97)}, {0.875, QColor(254, 194, 135)}, {1.000, QColor(252, 253, 191)}});
    case SequentialMap::Greys: // white (0) to black (1): print and projectors
        return gradient({{0.0, QColor(255, 255, 255)}, {0.5, QColor(140, 140, 140)}, {1.0, QColor(0, 0, 0)}});
    case SequentialMap::Viridis:
        break;
    }
    return gradient({{0.000, QColor(68, 1, 84)}, {0.125, QColor(71, 44, 122)}, {0.250, QColor(59, 81, 139)},
                     {0.375, QColor(44, 113, 142)}, {0.500, QColor(33, 144, 141)}, {0.625, QColor(39, 173, 129)},
                     {0.750, QColor(92, 200, 99)}, {0.875, QColor(170, 220, 50)}, {1.000, QColor(253, 231, 37)}});
}

QCPColorGradient divergingGradient(DivergingMap m)
{
    if (m == DivergingMap::PurpleOrange) // ColorBrewer PuOr, colour-blind safe
        return gradient({{0.00, QColor(45, 0, 75)}, {0.15, QColor(84, 39, 136)}, {0.30, QColor(128, 115, 172)},
                         {0.42, QColor(178, 171, 210)}, {0.50, QColor(247, 247, 247)}, {0.58, QColor(253, 184, 99)},
                         {0.70, QColor(224, 130, 20)}, {0.85, QColor(179, 88, 6)}, {1.00, QColor(127, 59, 8)}});
    // ColorBrewer RdBu reversed: negative blue, zero white, positive red
    return gradient({{0.00, QColor(5, 48, 97)}, {0.15, QColor(33, 102, 172)}, {0.30, QColor(67, 147, 195)},
                     {0.42, QColor(146, 197, 222)}, {0.50, QColor(247, 247, 247)}, {0.58, QColor(244, 165, 130)},
                     {0.70, QColor(214, 96, 77)}, {0.85, QColor(178, 24, 43)}, {1.00, QColor(103, 0, 31)}});
}

QCPColorGradient weightsGradient() { return sequentialGradient(AppearanceManager::instance()->appearance().sequential); }

QCPColorGradient divergingGradient() { return divergingGradient(AppearanceManager::instance()->appearance().diverging); }

QCPRange weightsRange(double lo, double hi, QCPColorGradient &gradient)
{
    if (lo < 0) {
        const double m = std::max(std::abs(lo), std::abs(hi));
        gradient = divergingGradient();
        return QCPRange(-m, m > 0 ? m : 1.0);
    }
    gradient = weightsGradient();
    if (fixedWeightScale() && hi <= 1.0 + 1e-6)
        return QCPRange(0.0, 1.0);
    return QCPRange(0.0, hi > 0 ? hi : 1.0);
}

bool fixedWeightScale() { return AppearanceManager::instance()->appearance().fixedWeights; }

QString weightScaleLabel(const QString &base, const QCPRange &range)
{
    const bool symmetric = range.lower < 0;
    const bool fixed = fixedWeightScale() && std::abs(range.upper - 1.0) < 1e-9
        && (symmetric ? std::abs(range.lower + 1.0) < 1e-9 : range.lower == 0.0);
    if (fixed)
        return base + (symmetric ? QStringLiteral(" · fixed ±1") : QStringLiteral(" · fixed 0–1"));
    return base + (symmetric ? QStringLiteral(" · ± max (auto)") : QStringLiteral(" · 0 to max (auto)"));
}

namespace {

void extendFiniteRange(const float *values, Eigen::Index n, double &lo, double &hi, bool &any)
{
    for (Eigen::Index k = 0; k < n; ++k) {
        const float v = values[k];
        if (std::isfinite(v)) {
            lo = any ? std::min(lo, double(v)) : double(v);
            hi = any ? std::max(hi, double(v)) : double(v);
            any = true;
        }
    }
}

} // namespace

void extendFiniteRange(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> &m, double &lo,
                       double &hi, bool &any)
{
    extendFiniteRange(m.data(), m.size(), lo, hi, any);
}

void extendFiniteRange(const WeightMatrix<float> &m, double &lo, double &hi, bool &any)
{
    extendFiniteRange(m.data(), m.storedSize(), lo, hi, any);
    if (m.storedSize() < m.size()) { // the cells not stored: 0
        const float zero = 0.0f;
        extendFiniteRange(&zero, 1, lo, hi, any);
    }
}

QColor nanColor() { return QColor(205, 205, 205); }

// On a dark background (dark and high-contrast themes, presentation mode) masked cells are a dark
// grey under lighter hatching: a light fill was the brightest thing on the screen.
QColor maskFillColor() { return AppearanceManager::instance()->isDark() ? QColor(48, 48, 52) : QColor(236, 236, 236); }

QBrush maskHatchBrush()
{
    return QBrush(AppearanceManager::instance()->isDark() ? QColor(150, 150, 150, 150) : QColor(90, 90, 90, 150),
                  Qt::BDiagPattern);
}

QString elide(const QString &s, int maxChars)
{
    if (s.size() <= maxChars)
        return s;
    return s.left(std::max(1, maxChars - 1)) + QChar(0x2026);
}

namespace {

// QCustomPlot 2.1 keeps at most 16 tick labels per axis as cached pixmaps
// (QCPAxisPainterPrivate::mLabelCache, no setter); a token axis shows up to ~60, so every replot
// rendered each label into a new pixmap again. The members are protected: reached through
// pointers to members of derived classes (no instance of them is made).
struct AxisAccess : QCPAxis {
    static QCPAxisPainterPrivate *painter(QCPAxis *a) { return a->*(&AxisAccess::mAxisPainter); }
};
struct AxisPainterAccess : QCPAxisPainterPrivate {
    static void setLabelCacheSize(QCPAxisPainterPrivate *p, int labels)
    {
        (p->*(&AxisPainterAccess::mLabelCache)).setMaxCost(labels);
    }
};

} // namespace

void colourAxis(QCPAxis *axis, const QColor &colour)
{
    axis->setProperty("attnviz.ownColour", true);
    QPen pen = axis->basePen();
    pen.setColor(colour);
    axis->setBasePen(pen);
    pen = axis->tickPen();
    pen.setColor(colour);
    axis->setTickPen(pen);
    pen = axis->subTickPen();
    pen.setColor(colour);
    axis->setSubTickPen(pen);
    axis->setTickLabelColor(colour);
    axis->setLabelColor(colour);
}

bool labelTokenAxis(QCPAxis *axis, const QStringList &labels, int maxChars, int always)
{
    if (!axis->property("attnvizLabelCache").isValid()) {
        axis->setProperty("attnvizLabelCache", true);
        if (QCPAxisPainterPrivate *painter = AxisAccess::painter(axis))
            AxisPainterAccess::setLabelCacheSize(painter, 128); // ~1 MB of small pixmaps at most
    }
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
    if (!ticker) {
        ticker = QSharedPointer<QCPAxisTickerText>::create();
        axis->setTicker(ticker);
    }
    // ticks point outwards: inside the plot they touch the first cell's number ("-0.95")
    axis->setTickLength(0, axis->tickLengthOut() > 0 ? axis->tickLengthOut() : 4);
    axis->setSubTickLength(0, 0);
    // the view's own font and title, kept on first use: labels shrink from that font to the
    // smallest readable size before any label is dropped
    // (the theme's font when styled: AppearanceManager keeps attnvizBaseFont and applies
    // attnvizLabelPx, the pixel size chosen here)
    if (!axis->property("attnvizBaseFont").isValid())
        axis->setProperty("attnvizBaseFont", axis->tickLabelFont());
    // (a label the view set since the last call is the new title)
    if (!axis->property("attnvizBaseLabel").isValid() || axis->label() != axis->property("attnvizShownLabel").toString())
        axis->setProperty("attnvizBaseLabel", axis->label());
    const QFont base = axis->property("attnvizBaseFont").value<QFont>();
    const QString baseLabel = axis->property("attnvizBaseLabel").toString();
    const int n = int(labels.size());
    QMap<double, QString> ticks;
    QFont font = base;
    int step = 1;
    if (n > 0) {
        const QCPRange range = axis->range();
        const int lo = std::max(0, int(std::ceil(range.lower)));
        const int hi = std::min(n - 1, int(std::floor(range.upper)));
        const double pixels = axis->orientation() == Qt::Horizontal ? axis->axisRect()->width()
                                                                      : axis->axisRect()->height();
        const double perToken = pixels / std::max(1e-9, range.size());
        // rotated labels on a horizontal axis need a little more room than a line of text; upright
        // ones (a row's bar chart) their own width (at a line apart they ran into each other)
        const double factor = axis->orientation() == Qt::Horizontal ? 1.4 : 1.05;
        const bool upright = axis->orientation() == Qt::Horizontal && std::abs(axis->tickLabelRotation()) < 30;
        auto need = [&](const QFont &f) {
            const QFontMetricsF fm(f);
            if (!upright)
                return fm.height() * factor;
            double widest = 0;
            for (int i = lo; i <= hi; ++i)
                widest = std::max(widest, fm.horizontalAdvance(elide(labels.at(i), maxChars)));
            return widest + fm.height() * 0.6;
        };
        // the largest font from the view's down to minimumLabelPixels() in which one label per
        // token fits; the previous choice stays unless a larger one fits with room to spare, so
        // that the layout (which the font changes) settles
        const int basePx = std::max(1, QFontInfo(base).pixelSize());
        const int prevPx = axis->property("attnvizLabelPx").isValid() ? axis->property("attnvizLabelPx").toInt() : basePx;
        int chosen = 0;
        for (int px = std::max(basePx, minimumLabelPixels()); px >= minimumLabelPixels() && !chosen; --px) {
            QFont f = base;
            f.setPixelSize(px);
            const double room = px > prevPx ? 1.1 : 1.0;
            if (perToken >= need(f) * room)
                chosen = px;
        }
        font.setPixelSize(chosen ? chosen : minimumLabelPixels());
        if (!chosen) {
            // before the first layout the axis may have no pixels: never more than one step per label
            step = int(std::min(double(std::max(1, int(labels.size()))), std::ceil(need(font) / std::max(1e-9, perToken))));
            // round the step to 1, 2, 5, 10, 20, 50 ... so that the labels stay put while panning
            int nice = 1;
            while (nice < step) {
                if (nice * 2 >= step) { nice *= 2; break; }
                if (nice * 5 >= step) { nice *= 5; break; }
                nice *= 10;
            }
            step = std::max(1, nice);
        }
        // every step-th label from 0, or from the token that must keep its label (still fixed while panning)
        const int phase = always >= 0 && always < n ? always % step : 0;
        const int first = lo + ((phase - lo) % step + step) % step;
        for (int i = first; i <= hi; i += step) {
            QString text = elide(labels.at(i), maxChars);
            // a thinned axis names each label's index, unless the label is the index or the labels
            // are ids of their own (the pipeline's neurons: "0 25" read as two neurons); the index
            // in the whole text where the axis holds a window of it (the property
            // "attnvizPositionOffset": the window's first position)
            if (step > 1 && text != QString::number(i) && !axis->property("attnvizLabelsAreIds").toBool())
                text = QStringLiteral("%1 %2").arg(i + axis->property("attnvizPositionOffset").toInt()).arg(text);
            ticks.insert(i, text);
        }
    }
    // a dropped label is never silent: the axis title says how many are shown and how to see all
    QString label = baseLabel;
    if (step > 1 && !axis->property("attnvizThinNoteElsewhere").toBool()) {
        // a plot with a selection rectangle zooms to a dragged region (views/plotzoom.h)
        const bool drags = axis->parentPlot() && axis->parentPlot()->selectionRectMode() != QCP::srmNone;
        const bool zooms = axis->parentPlot() && axis->parentPlot()->interactions().testFlag(QCP::iRangeZoom);
        // a publication figure states the stride alone: nothing there can be zoomed
        const auto nth = [](int k) {
            const int tens = k % 100, ones = k % 10;
            const char *suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
            return QString::number(k) + QLatin1String(suffix);
        };
        const QString note = publicationFigure() ? QStringLiteral("every %1 token labelled").arg(nth(step))
                                                 : QStringLiteral("1 in %1 labels shown: %2")
                                                       .arg(step)
                                                       .arg(drags   ? QStringLiteral("drag a rectangle to zoom")
                                                            : zooms ? QStringLiteral("zoom in (wheel)")
                                                                    : QStringLiteral("widen or zoom the view"));
        const QString shortNote = publicationFigure() ? QStringLiteral("every %1 labelled").arg(nth(step))
                                                      : QStringLiteral("1 in %1 labels shown").arg(step);
        // the note on the title's line while it fits along the axis, else on a line of its own,
        // shortened, and at worst elided with "…": never cut at the plot's edge
        const QFontMetricsF fm(axis->labelFont());
        const double room = (axis->orientation() == Qt::Horizontal ? axis->axisRect()->width() : axis->axisRect()->height()) - 4;
        auto fits = [&](const QString &text) {
            for (const QString &line : text.split(QLatin1Char('\n')))
                if (fm.horizontalAdvance(line) > room)
                    return false;
            return true;
        };
        const QString lead = baseLabel.isEmpty() ? QString() : baseLabel;
        const QString shortestNote = QStringLiteral("1 in %1 shown").arg(step);
        const QString tersest = QStringLiteral("1 in %1").arg(step); // a short axis with larger text
        const QStringList tries = {lead.isEmpty() ? note : lead + QStringLiteral(" — ") + note,
                                   lead.isEmpty() ? note : lead + QLatin1Char('\n') + note,
                                   lead.isEmpty() ? shortNote : lead + QLatin1Char('\n') + shortNote,
                                   lead.isEmpty() ? shortestNote : lead + QLatin1Char('\n') + shortestNote,
                                   lead.isEmpty() ? tersest : lead + QLatin1Char('\n') + tersest};
        label.clear();
        for (const QString &t : tries)
            if (label.isEmpty() && fits(t))
                label = t;
        if (label.isEmpty() && room <= 0) // no room along the axis at all: its title alone
            label = lead.isEmpty() ? shortNote : lead;
        if (label.isEmpty()) {
            QStringList lines = tries.last().split(QLatin1Char('\n'));
            for (QString &line : lines)
                line = fm.elidedText(line, Qt::ElideRight, room);
            label = lines.join(QLatin1Char('\n'));
        }
    }
    {
        // a title longer than its axis is elided with "…", not cut where the plot ends
        const QFontMetricsF fm(axis->labelFont());
        const double room = (axis->orientation() == Qt::Horizontal ? axis->axisRect()->width() : axis->axisRect()->height()) - 4;
        if (room > 20) {
            QStringList lines = label.split(QLatin1Char('\n'));
            for (QString &line : lines)
                if (fm.horizontalAdvance(line) > room)
                    line = fm.elidedText(line, Qt::ElideRight, room);
            label = lines.join(QLatin1Char('\n'));
        }
    }
    axis->setProperty("attnvizShownLabel", label);
    axis->setProperty("attnvizLabelStep", step);
    axis->setProperty("attnvizLabelPx", QFontInfo(font).pixelSize());
    bool changed = false;
    if (axis->label() != label) {
        axis->setLabel(label);
        changed = true;
    }
    if (axis->tickLabelFont() != font) {
        axis->setTickLabelFont(font);
        changed = true;
    }
    if (ticker->ticks() != ticks) {
        ticker->setTicks(ticks);
        changed = true;
    }
    return changed;
}

int chosenLabelPixels(const QCPAxis *axis)
{
    return axis->property("attnvizLabelPx").toInt();
}

void setChosenLabelPixels(QCPAxis *axis, int pixels)
{
    axis->setProperty("attnvizLabelPx", pixels);
}

void relabelAfterLayout(QCustomPlot *plot, QObject *context, std::function<bool()> relabel)
{
    QObject::connect(plot, &QCustomPlot::afterLayout, context, [plot, relabel = std::move(relabel)] {
        for (int pass = 0; pass < 3; ++pass) {
            if (!relabel())
                return replotToSettle(plot, false);
            // what QCustomPlot::updateLayout does (protected there), without emitting afterLayout again;
            // a margin group (the colour scale's) measured from the margins it has now, else it only
            // grows: labels made smaller kept the larger labels' margin until the next restyle, and
            // the map was laid out one way before presentation mode and another after it
            resetGroupedMargins(plot);
            QCPLayoutGrid *layout = plot->plotLayout();
            layout->update(QCPLayoutElement::upPreparation);
            layout->update(QCPLayoutElement::upMargins);
            layout->update(QCPLayoutElement::upLayout);
        }
        replotToSettle(plot, relabel()); // still moving: settle in the next replot
    });
}

void replotToSettle(QCustomPlot *plot, bool changed)
{
    // The count is kept per plot and restarts with a replot that was not queued here (a new text,
    // size or setting), never because a second afterLayout handler of the same replot had nothing to
    // change (a settled colour scale beside flipping token labels restarted it after every layout,
    // and the two replotted each other for ever), nor by the clock.
    if (!plot->property("attnvizSettleHooked").toBool()) {
        plot->setProperty("attnvizSettleHooked", true);
        QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] {
            if (plot->property("attnvizSettlePending").toBool())
                plot->setProperty("attnvizSettlePending", false); // the replot queued below
            else
                plot->setProperty("attnvizSettling", 0);
        });
    }
    if (!changed || plot->property("attnvizSettlePending").toBool())
        return; // nothing to settle, or this replot already queued its settling one
    if (replotWhenShown(plot))
        return; // a hidden plot's labels settle in the replot that shows it
    const int queued = plot->property("attnvizSettling").toInt();
    if (queued >= kMaxSettlingReplots)
        return;
    plot->setProperty("attnvizSettling", queued + 1);
    plot->setProperty("attnvizSettlePending", true);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

namespace {

// A plot the shown window does not show (a hidden tab, dock or stage)
bool hiddenInShownWindow(QWidget *plot)
{
    QWidget *window = plot->window();
    return window != plot && window->isVisible() && !plot->isVisibleTo(window);
}

// Holds a hidden plot's replots until it is shown: a resize (QCustomPlot replots on every one) is
// taken as its new viewport when it is shown, and a plot marked by replotWhenShown replots then.
class ReplotOnShow : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        auto *plot = qobject_cast<QCustomPlot *>(watched);
        if (!plot)
            return false;
        if (event->type() == QEvent::Resize) {
            if (hiddenInShownWindow(plot)) {
                plot->setProperty("attnvizReplotOnShow", true);
                return true;
            }
            plot->setProperty("attnvizReplotOnShow", false); // a resize as it is shown replots it anyway
        }
        if (event->type() == QEvent::Show && plot->property("attnvizReplotOnShow").toBool()) {
            plot->setProperty("attnvizReplotOnShow", false);
            plot->setViewport(plot->rect());
            plot->replot(QCustomPlot::rpQueuedRefresh); // drawn now, painted with the frame
        }
        return false;
    }
};

void holdWhileHidden(QCustomPlot *plot)
{
    if (plot->property("attnvizShowHooked").toBool())
        return;
    plot->setProperty("attnvizShowHooked", true);
    static ReplotOnShow *filter = new ReplotOnShow(QCoreApplication::instance()); // one for every plot
    plot->installEventFilter(filter);
}

} // namespace

void replotOnlyWhenShown(QCustomPlot *plot) { holdWhileHidden(plot); }

void resetGroupedMargins(QCustomPlot *plot)
{
    // QCPLayoutElement::calculateAutoMargin returns the element's current margin; an axis rect
    // measures its axes instead
    for (QCPLayoutElement *e : plot->plotLayout()->elements(true)) {
        if (!e || qobject_cast<QCPAxisRect *>(e) || e->marginGroups().isEmpty())
            continue;
        QMargins m = e->margins();
        const QMargins least = e->minimumMargins();
        const auto groups = e->marginGroups();
        for (auto it = groups.cbegin(); it != groups.cend(); ++it)
            switch (it.key()) {
            case QCP::msLeft: m.setLeft(least.left()); break;
            case QCP::msRight: m.setRight(least.right()); break;
            case QCP::msTop: m.setTop(least.top()); break;
            case QCP::msBottom: m.setBottom(least.bottom()); break;
            default: break;
            }
        e->setMargins(m);
    }
}

bool replotWhenShown(QCustomPlot *plot)
{
    if (!hiddenInShownWindow(plot))
        return false;
    plot->setProperty("attnvizReplotOnShow", true);
    holdWhileHidden(plot);
    return true;
}

namespace {

template <typename M>
QCPColorMapData *colorMapDataOf(const M &w, const BoolMat *exclude, int maxCells, int *factorOut)
{
    const int rows = int(w.rows()), cols = int(w.cols());
    // in 64 bits: callers without a limit pass INT_MAX
    auto cellsPer = [maxCells](int n) { return int((int64_t(n) + maxCells - 1) / maxCells); };
    const int f = std::max({1, cellsPer(rows), cellsPer(cols)});
    if (factorOut)
        *factorOut = f;
    const bool useMask = exclude && exclude->size() > 0;
    const int nr = (rows + f - 1) / f, nc = (cols + f - 1) / f;
    const double c0 = (f - 1) / 2.0;
    // QCPColorMap sizes a cell from the distance between the first and last cell centres, so a
    // single column (or row) would be drawn zero pixels wide: it is stored as two half-width cells
    // holding the same value, which cell(0, …) still reads.
    const int dc = nc == 1 ? 2 : nc, dr = nr == 1 ? 2 : nr;
    const QCPRange keys = nc == 1 ? QCPRange(c0 - f / 4.0, c0 + f / 4.0) : QCPRange(c0, c0 + (nc - 1) * f);
    const QCPRange values = nr == 1 ? QCPRange(c0 - f / 4.0, c0 + f / 4.0) : QCPRange(c0, c0 + (nr - 1) * f);
    auto *d = new QCPColorMapData(dc, dr, keys, values);
    auto set = [&](int col, int row, double v) {
        for (int b = col; b < (nc == 1 ? 2 : col + 1); ++b)
            for (int a = row; a < (nr == 1 ? 2 : row + 1); ++a)
                d->setCell(b, a, v);
    };
    if (f == 1 && !useMask) {
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
                set(j, i, double(w(i, j)));
        return d;
    }
    for (int a = 0; a < nr; ++a)
        for (int b = 0; b < nc; ++b) {
            double sum = 0;
            int n = 0;
            for (int i = a * f; i < std::min(rows, (a + 1) * f); ++i)
                for (int j = b * f; j < std::min(cols, (b + 1) * f); ++j) {
                    const float v = w(i, j);
                    if (std::isfinite(v) && !(useMask && (*exclude)(i, j))) {
                        sum += v;
                        ++n;
                    }
                }
            set(b, a, n ? sum / n : std::nan(""));
        }
    return d;
}

} // namespace

QCPColorMapData *colorMapData(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> &w,
                              const Eigen::Matrix<uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> *exclude,
                              int maxCells, int *factorOut)
{
    return colorMapDataOf(w, exclude, maxCells, factorOut);
}

QCPColorMapData *colorMapData(const WeightMatrix<float> &w, const BoolMat *exclude, int maxCells, int *factorOut)
{
    return colorMapDataOf(w, exclude, maxCells, factorOut);
}

int pooledCell(int x, int first, int n, int out, int &from, int &to)
{
    const int rel = x - first;
    auto start = [&](int c) { return int(int64_t(c) * n / out); };
    int k = int(int64_t(rel) * out / n);
    while (k > 0 && start(k) > rel)
        --k;
    while (k + 1 < out && start(k + 1) <= rel)
        ++k;
    from = first + start(k);
    to = first + start(k + 1) - 1;
    return k;
}


QCPColorMapData *pooledMapData(const Mat<float> &cells, const QRect &region)
{
    const int c0 = region.left(), r0 = region.top(), C = region.width(), R = region.height();
    const int outR = int(cells.rows()), outC = int(cells.cols());
    auto centres = [](int first, int n, int out) {
        if (out == 1)
            return QCPRange(first - 0.5 + n / 2.0 - n / 4.0, first - 0.5 + n / 2.0 + n / 4.0);
        return QCPRange(first - 0.5 + 0.5 * n / out, first - 0.5 + (out - 0.5) * n / out);
    };
    const int dc = outC == 1 ? 2 : outC, dr = outR == 1 ? 2 : outR;
    auto *data = new QCPColorMapData(dc, dr, centres(c0, C, outC), centres(r0, R, outR));
    for (int a = 0; a < dr; ++a)
        for (int b = 0; b < dc; ++b)
            data->setCell(b, a, double(cells(std::min(a, outR - 1), std::min(b, outC - 1))));
    return data;
}

namespace {

// Words of each paragraph of `text` on lines, a line broken before the word that would make
// tooLong(line) true (a word longer than a line keeps a line of its own).
template <typename TooLong>
QString wrapWords(const QString &text, TooLong tooLong)
{
    QStringList lines;
    for (const QString &para : text.split(QLatin1Char('\n'))) {
        QString line;
        for (const QString &word : para.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString joined = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && tooLong(joined)) {
                lines << line;
                line = word;
            } else {
                line = joined;
            }
        }
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

} // namespace

QString wrapText(const QString &text, int width)
{
    return wrapWords(text, [width](const QString &line) { return line.size() > width; });
}

QString wrapText(const QString &text, const QFont &font, double pixels)
{
    const QFontMetricsF fm(font);
    return wrapWords(text, [&](const QString &line) { return fm.horizontalAdvance(line) > pixels; });
}

QColor contrastingText(const QColor &bg)
{
    return textOn(bg); // black or white by WCAG contrast: at least 4.58 : 1 on any cell
}

QColor headColor(int head)
{
    // Okabe & Ito (2008), "Color Universal Design"; ordered so that neighbouring heads differ most
    static const QColor kPalette[] = {
        QColor(0, 114, 178),   // blue
        QColor(230, 159, 0),   // orange
        QColor(0, 158, 115),   // bluish green
        QColor(213, 94, 0),    // vermillion
        QColor(204, 121, 167), // reddish purple
        QColor(86, 180, 233),  // sky blue
        QColor(240, 228, 66),  // yellow
    };
    constexpr int n = int(sizeof(kPalette) / sizeof(kPalette[0]));
    const int h = std::max(0, head);
    const QColor base = kPalette[h % n];
    switch ((h / n) % 3) {
    case 1: return base.darker(150);
    case 2: return base.lighter(130);
    default: return base;
    }
}

QColor headAverageColor() { return QColor(40, 40, 40); }

void setTokenAxes(QCPAxisRect *rect)
{
    QCPAxis *x = rect->axis(QCPAxis::atBottom), *y = rect->axis(QCPAxis::atLeft);
    y->setRangeReversed(true);
    x->setTickLabelRotation(-60);
    for (QCPAxis *a : {x, y}) {
        a->grid()->setVisible(false);
        a->setSubTicks(false);
        a->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    }
}

TokenHeatmap makeTokenHeatmap(QCustomPlot *plot, const QString &xLabel, const QString &yLabel, const QString &scaleLabel,
                              const QFont &titleFont)
{
    TokenHeatmap h;
    QCPAxisRect *rect = plot->axisRect();
    setTokenAxes(rect);
    plot->xAxis->setLabel(xLabel);
    plot->yAxis->setLabel(yLabel);
    h.map = new QCPColorMap(plot->xAxis, plot->yAxis);
    h.map->setInterpolate(false);
    h.map->setAntialiased(false); // crisp cells, and no smooth rescaling of the map image on every replot
    h.map->setTightBoundary(false);
    h.scale = new QCPColorScale(plot);
    h.scale->setGradient(weightsGradient()); // the map follows its colour scale's gradient
    // title across the whole width above [heatmap | colour scale]
    auto *row = new QCPLayoutGrid;
    plot->plotLayout()->take(rect);
    plot->plotLayout()->simplify();
    plot->plotLayout()->addElement(0, 0, row);
    row->addElement(0, 0, rect);
    row->addElement(0, 1, h.scale);
    h.scale->setType(QCPAxis::atRight);
    h.scale->setBarWidth(14);
    h.scale->axis()->setLabel(scaleLabel);
    h.map->setColorScale(h.scale);
    auto *group = new QCPMarginGroup(plot);
    rect->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    h.scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->setRowStretchFactor(0, 0.01);
    h.title = new QCPTextElement(plot, QString(), titleFont);
    plot->plotLayout()->addElement(0, 0, h.title);
    return h;
}

} // namespace attnviz::ui
