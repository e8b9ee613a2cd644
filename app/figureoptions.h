// SPDX-License-Identifier: GPL-3.0-or-later
// The size options of every verb that writes a figure (`export`, `patch`): --width, --height and
// --dpi with their ranges and messages, and the widget size a view is drawn at for them.
#pragma once

#include "files/figureexport.h"

#include <QCommandLineOption>
#include <QList>
#include <QSize>
#include <QString>

class QCommandLineParser;

namespace attnviz::cli {

struct FigureSizeOptions {
    QCommandLineOption width{QStringLiteral("width"), QStringLiteral("Figure width (px; points for SVG/PDF; default 1200)."),
                             QStringLiteral("n"), QStringLiteral("1200")};
    QCommandLineOption height{QStringLiteral("height"), QStringLiteral("Figure height (default 900)."), QStringLiteral("n"),
                              QStringLiteral("900")};
    QCommandLineOption dpi{QStringLiteral("dpi"), QStringLiteral("PNG resolution (default 96)."), QStringLiteral("dpi"),
                           QStringLiteral("96")};

    QList<QCommandLineOption> options() const { return {width, height, dpi}; }
    // The three into `figure`: false with the line to print ("--dpi: expected 10..2400") when one is
    // not a number or out of its range (16..20000 px or points, 10..2400 dpi).
    bool read(const QCommandLineParser &p, ui::FigureOptions &figure, QString *error) const;
};

// The size a view is laid out at to be written as `figure` with this suffix: a PNG is drawn at
// dpi/96 (text and lines scale with it), so its widget is that much smaller than the image.
QSize figureWidgetSize(const ui::FigureOptions &figure, const QString &suffix);

} // namespace attnviz::cli
