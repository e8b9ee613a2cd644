// SPDX-License-Identifier: GPL-3.0-or-later
// Legibility (issue 14): what keeps every label readable in a classroom — the smallest text a
// token axis may draw, and the state of a token axis whose labels could not all be drawn.
#pragma once

class QCPAxis;

namespace attnviz::ui {

// The smallest pixel size (em height) of an axis label: 10 px. Token labels shrink down to it
// before any is dropped.
int minimumLabelPixels();

// A token axis whose labels do not all fit even at minimumLabelPixels() labels every k-th token
// and says so in its axis label; this is that k (1: every token labelled).
int tokenAxisLabelStep(const QCPAxis *axis);

} // namespace attnviz::ui
