// SPDX-License-Identifier: GPL-3.0-or-later
// Legibility: what keeps every label and number readable in a classroom — the smallest
// text a view may draw (larger in presentation mode), the font of the numbers in cells, WCAG
// contrast between two colours, and the state of a token axis whose labels could not all be drawn.
#pragma once

#include <QColor>
#include <QFont>
#include <QSizeF>

#include <optional>

class QCPAxis;
class QCustomPlot;

namespace attnviz::ui {

// The smallest pixel size (em height) of an axis label: 10 px normally, times the text scale with
// larger text (View ▸ Larger text), 18 px in presentation mode (MainWindow sets it). Token labels
// shrink down to it before any is dropped.
int minimumLabelPixels();
// The smallest number drawn in a cell: 8 px normally, 18 px in presentation mode.
int minimumNumberPixels();
// Presentation mode on or off: both minimums above.
void setPresentationLegibility(bool on);
bool presentationLegibility();
// While a publication figure is drawn (saveFigure with FigureOptions::publication): labels and
// numbers may shrink to 6 px before any is dropped, and a thinned axis states its stride with no
// hint about the window (how to zoom).
void setPublicationFigure(bool on);
bool publicationFigure();

// The font for the numbers in cells of `cell` pixels: the largest pixel size from
// max(maxPx × the text scale, minimumNumberPixels()) — presenting, at least a third of the cell's
// height, up to 48 px — down to minimumNumberPixels() in which `widest` fits a cell;
// none when even that does not fit (the number is then on hover and in the lesson's text). The
// size drawn (0: none) is kept on `plot` as the property "attnvizCellNumberPx".
std::optional<QFont> cellNumberFont(QCustomPlot *plot, const QFont &base, const QSizeF &cell, const QString &widest,
                                    double maxPx);

// WCAG 2.1: relative luminance of an sRGB colour, and the contrast ratio of two colours
// (1 … 21; AA asks 4.5 for text, 3 for large text and graphics).
double relativeLuminance(const QColor &c);
double contrastRatio(const QColor &a, const QColor &b);
// `c` moved towards white (on a dark background) or black (on a light one) until its contrast with
// `bg` is at least `ratio` (3: WCAG AA for graphics such as lines and chips).
QColor readableOn(const QColor &c, const QColor &bg, double ratio = 3.0);
// Black or white, whichever contrasts more with `bg` (at least 4.58 : 1 on any colour).
QColor textOn(const QColor &bg);

// A token axis whose labels do not all fit even at minimumLabelPixels() labels every k-th token
// and says so in its axis label; this is that k (1: every token labelled).
int tokenAxisLabelStep(const QCPAxis *axis);

} // namespace attnviz::ui
