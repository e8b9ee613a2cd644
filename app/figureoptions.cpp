// SPDX-License-Identifier: GPL-3.0-or-later
// The size options of the figure-writing verbs (see figureoptions.h).
#include "figureoptions.h"

#include <QCommandLineParser>

namespace attnviz::cli {

bool FigureSizeOptions::read(const QCommandLineParser &p, ui::FigureOptions &figure, QString *error) const
{
    bool okW = false, okH = false, okD = false;
    const int w = p.value(width).toInt(&okW), h = p.value(height).toInt(&okH);
    const double d = p.value(dpi).toDouble(&okD);
    if (!okW || !okH || w < 16 || h < 16 || w > 20000 || h > 20000) {
        *error = QStringLiteral("--width/--height: expected 16..20000");
        return false;
    }
    if (!okD || !(d >= 10 && d <= 2400)) {
        *error = QStringLiteral("--dpi: expected 10..2400");
        return false;
    }
    figure.width = w;
    figure.height = h;
    figure.dpi = d;
    return true;
}

QSize figureWidgetSize(const ui::FigureOptions &figure, const QString &suffix)
{
    const double scale = suffix == QLatin1String("png") ? figure.dpi / 96.0 : 1.0;
    return QSize(int(figure.width / scale), int(figure.height / scale));
}

} // namespace attnviz::cli
