// SPDX-License-Identifier: GPL-3.0-or-later
// Legibility helpers: the minimum sizes, the cell-number font, WCAG contrast, a token axis's label step.
#include "style/legibility.h"

#include "style/appearance.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {
bool g_presenting = false;
bool g_publication = false; // only while saveFigure draws a publication figure (GUI thread)
}

int minimumLabelPixels()
{
    if (g_presenting)
        return 18;
    if (g_publication)
        return 6;
    // larger text raises the floor with it: a label shrunk to fit stays as large as the text scale
    // makes the smallest one (12 px at ×1.15, 15 px at ×1.15³), and fewer labels are drawn instead
    return std::max(10, int(std::lround(10 * AppearanceManager::instance()->appearance().fontScale)));
}

int minimumNumberPixels() { return g_presenting ? 18 : g_publication ? 6 : 8; }

void setPublicationFigure(bool on) { g_publication = on; }

bool publicationFigure() { return g_publication; }

void setPresentationLegibility(bool on) { g_presenting = on; }

bool presentationLegibility() { return g_presenting; }

std::optional<QFont> cellNumberFont(QCustomPlot *plot, const QFont &base, const QSizeF &cell, const QString &widest,
                                    double maxPx)
{
    std::optional<QFont> found;
    QFont f = base;
    // the view's ceiling follows the text size (View ▸ Larger text makes the numbers larger), and
    // presenting, the numbers grow with their cell, up to a third of its height
    double top = maxPx * AppearanceManager::instance()->appearance().fontScale;
    if (g_presenting)
        top = std::max(top, std::min(48.0, cell.height() * 0.35));
    for (int px = int(std::max(top, double(minimumNumberPixels()))); px >= minimumNumberPixels() && !found; --px) {
        f.setPixelSize(px);
        const QFontMetricsF fm(f);
        if (cell.width() >= fm.horizontalAdvance(widest) + 2 && cell.height() >= fm.height())
            found = f;
    }
    if (plot)
        plot->setProperty("attnvizCellNumberPx", found ? found->pixelSize() : 0);
    return found;
}

double relativeLuminance(const QColor &c)
{
    auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    const QColor rgb = c.toRgb();
    return 0.2126 * lin(rgb.redF()) + 0.7152 * lin(rgb.greenF()) + 0.0722 * lin(rgb.blueF());
}

double contrastRatio(const QColor &a, const QColor &b)
{
    const double la = relativeLuminance(a), lb = relativeLuminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor readableOn(const QColor &c, const QColor &bg, double ratio)
{
    const QColor target = relativeLuminance(bg) < 0.18 ? QColor(255, 255, 255) : QColor(0, 0, 0);
    QColor out = c.toRgb();
    for (int k = 1; k <= 20 && contrastRatio(out, bg) < ratio; ++k) {
        const double t = k / 20.0;
        out = QColor::fromRgbF(float(c.redF() + (target.redF() - c.redF()) * t),
                               float(c.greenF() + (target.greenF() - c.greenF()) * t),
                               float(c.blueF() + (target.blueF() - c.blueF()) * t));
    }
    return out;
}

QColor textOn(const QColor &bg)
{
    return contrastRatio(bg, Qt::black) >= contrastRatio(bg, Qt::white) ? QColor(0, 0, 0) : QColor(255, 255, 255);
}

int tokenAxisLabelStep(const QCPAxis *axis)
{
    const QVariant v = axis ? axis->property("attnvizLabelStep") : QVariant();
    return v.isValid() ? std::max(1, v.toInt()) : 1;
}

} // namespace attnviz::ui
