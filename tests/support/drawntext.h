// SPDX-License-Identifier: GPL-3.0-or-later
// What a view draws, as text: a plot painted (QCustomPlot::toPainter) into a paint device that keeps
// every string with where it was drawn, and the numbers among them that are in view — inside the
// part of the plot its scroll area shows. For tests that read numbers back from what is on screen.
#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QVector>

class QCustomPlot;
class QTextEdit;
class QWidget;

namespace attnviz::test {

struct DrawnText {
    QString text;
    QPointF at; // the baseline's start, in the plot's pixels
    QColor color;  // the pen it was drawn with
    int pixels = 0; // the font's pixel size
    QRectF box;     // the glyphs' extent (ascent to descent, the advance wide), rotation included
};

// Every string `plot` draws at its current size.
QVector<DrawnText> drawnTexts(QCustomPlot *plot);
// Every string `widget` and its children draw (QWidget::render), as drawn: a combo box's elided title.
QStringList widgetTexts(QWidget *widget);
// The same with where and how each was drawn (in the widget's pixels).
QVector<DrawnText> widgetDrawnTexts(QWidget *widget);
// The strings among those drawn inside plot->visibleRegion() (what is on screen, not scrolled away).
QStringList textsInView(QCustomPlot *plot);
// The words of `edit`'s text that lie inside its viewport without scrolling.
QStringList wordsInView(QTextEdit *edit);
// True when the decimal `quoted` ("0.9544", "−0.4519") and a drawn number (`drawn`, any number of
// decimals) agree to the fewer decimals of the two.
bool sameNumber(const QString &quoted, const QString &drawn);

} // namespace attnviz::test
