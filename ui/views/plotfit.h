// SPDX-License-Identifier: GPL-3.0-or-later
// Fitting a plot's text to the room a layout gives it: value ticks as far apart as their labels
// need on a short axis (a colour scale or a bar chart 80–190 px high), and a title that elides
// to one line, with the whole text as its tooltip, where its wrapped lines would not fit.
#pragma once

#include <QString>

#include <functional>

class QCPAxis;
class QCPTextElement;
class QCustomPlot;

namespace attnviz::ui {

// Gives `axis` (a value axis, left/right or bottom/top) a ticker whose steps are 1, 2, 2.5 or 5
// × 10^k and never closer than `spacing` tick-label lines (vertical) or label widths
// (horizontal) in the axis's length: after a layout that changed it, the ticks are made again.
void fitValueTicks(QCPAxis *axis, double spacing = 1.8);

// The text `title` should show at the plot's current size: `full` wrapped to the plot's width
// when at most `maxShare` of the plot's height holds its lines, else its first line elided to
// one line (`*elided` says which).
// The title element keeps `full` as the property kFullTitleProperty: an export fits it again to the
// figure's size (saveFigure).
QString fittedTitle(QCustomPlot *plot, QCPTextElement *title, const QString &full, double maxShare,
                    bool *elided = nullptr);
inline constexpr const char *kFullTitleProperty = "attnvizFullTitle";
// Set on a title element while an export draws it: fittedTitle then keeps the text it has.
inline constexpr const char *kTitleHeldProperty = "attnvizTitleHeld";

// Hovering `title` shows what `full` returns as a tooltip (the whole text of an elided title).
void titleTooltip(QCustomPlot *plot, QCPTextElement *title, std::function<QString()> full);

} // namespace attnviz::ui
