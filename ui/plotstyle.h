// SPDX-License-Identifier: GPL-3.0-or-later
// Colours, gradients and axis labelling shared by the views.
#pragma once

#include <qcustomplot.h>

#include <QStringList>

namespace attnviz::ui {

// Sequential (weights): a viridis-like ramp, dark = 0, yellow = 1. NaN cells light grey.
QCPColorGradient weightsGradient();
// Diverging (embeddings, signed scores): blue - white - red.
QCPColorGradient divergingGradient();

// The brush that marks masked cells and fully-masked rows.
QBrush maskHatchBrush();
QColor nanColor();
// Background of a masked cell, under the hatching.
QColor maskFillColor();

// Labels a token axis, thinning the labels when they cannot all fit: keeps every k-th label of the
// visible range so that neighbours are at least one text line apart.
void labelTokenAxis(QCPAxis *axis, const QStringList &labels, int maxChars = 14);

// Shortens a label for an axis ("supercalifragilistic" -> "supercalifrag…").
QString elide(const QString &s, int maxChars);

// Text colour readable on a cell of colour `bg`.
QColor contrastingText(const QColor &bg);

} // namespace attnviz::ui
