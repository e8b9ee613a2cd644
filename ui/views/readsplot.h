// SPDX-License-Identifier: GPL-3.0-or-later
// What the views of attnviz/reads.h (the logit lens, attribution) share in building their plot: a
// title row whose text is wrapped to the plot's width, a row of elements below it, whole-number
// ticks (layers, heads) and a grid of cells that shows a text on hover and reports clicks.
#pragma once

#include <QSharedPointer>
#include <QString>

#include <functional>

class QCPAxisTicker;
class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QPointF;
class QWidget;

namespace attnviz::ui {

struct TitledPlot {
    QCPTextElement *title = nullptr;
    QCPLayoutGrid *row = nullptr; // the plot's second row, for the maps and their scale
};

// Clears `plot`'s layout into a title (`first` until `*full` is set; then `*full` wrapped, at most
// `share` of the plot's height) over one row. `owner` keeps `full` alive.
TitledPlot titledPlot(QCustomPlot *plot, QWidget *owner, const QString &first, const QString *full, double share);

// Ticks at whole numbers only (multiples of a step where there are many).
QSharedPointer<QCPAxisTicker> wholeNumberTicker();

// Hovering a cell shows text(row, column) as a tooltip; a click on one calls clicked(row, column).
// cellAt maps a point of the plot to a cell, false outside every cell.
void cellInteraction(QCustomPlot *plot, QWidget *owner, std::function<bool(const QPointF &, int &, int &)> cellAt,
                     std::function<QString(int, int)> text, std::function<void(int, int)> clicked);

} // namespace attnviz::ui
