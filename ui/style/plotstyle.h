// SPDX-License-Identifier: GPL-3.0-or-later
// Colours, gradients and axis labelling shared by the views.
#pragma once

#include "attnviz/types.h"

#include <qcustomplot.h>

#include <QRect>
#include <QStringList>

#include <Eigen/Core>

#include <cstdint>
#include <functional>

namespace attnviz::ui {

enum class SequentialMap;
enum class DivergingMap;

// Sequential (weights): the chosen map (View menu; viridis by default: dark = 0, yellow = 1).
// NaN cells light grey.
QCPColorGradient weightsGradient();
// Diverging (embeddings, signed scores, differences): the chosen map, white at 0.
QCPColorGradient divergingGradient();
QCPColorGradient sequentialGradient(SequentialMap m);
// The colour range of weights between lo and hi: [0, hi] on the weights map, or, when some are
// negative (cosine weights, sums of signed scores), symmetric around 0 on the diverging map (set
// into `gradient`).
// With the fixed weight scale on (Appearance::fixedWeights), weights within [0, 1] get [0, 1]
// whatever their maximum.
QCPRange weightsRange(double lo, double hi, QCPColorGradient &gradient);
// Whether weights are drawn on the fixed 0–1 scale.
bool fixedWeightScale();
// A colour scale's title saying which range it shows: "weight · fixed 0–1" or "weight · 0 to max
// (auto)" (a symmetric range: "± max (auto)", or "fixed ±1").
QString weightScaleLabel(const QString &base, const QCPRange &range);
// Widens [lo, hi] to the finite entries of `m` (`any`: whether lo and hi hold a value yet).
void extendFiniteRange(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> &m, double &lo,
                       double &hi, bool &any);
void extendFiniteRange(const WeightMatrix<float> &m, double &lo, double &hi, bool &any);
QCPColorGradient divergingGradient(DivergingMap m);

// The brush that marks masked cells and fully-masked rows.
QBrush maskHatchBrush();
QColor nanColor();
// Background of a masked cell, under the hatching.
QColor maskFillColor();
// An axis drawn in one colour (its line, ticks, numbers and title), kept by every theme: the axis
// of one curve among several, in that curve's colour (the property "attnviz.ownColour").
void colourAxis(QCPAxis *axis, const QColor &colour);

// Labels a token axis, thinning the labels when they cannot all fit: keeps every k-th label of the
// visible range so that neighbours are at least one text line apart. Returns whether the labels
// changed (the axis then needs another layout pass to show them). A thinned axis says so in its
// title, unless the axis has the property "attnvizThinNoteElsewhere" set (its view says it once for
// many small panels, where a rotated note would run past them: All heads). With `always` a token of
// the axis (the selected query row), the thinned labels are every k-th counted from it, so its own
// label is never the one dropped. A thinned label is prefixed with its position ("4 ␣because"),
// unless the axis has the property "attnvizLabelsAreIds" set (labels that name their column
// themselves: the pipeline's neuron indices).
bool labelTokenAxis(QCPAxis *axis, const QStringList &labels, int maxChars = 14, int always = -1);

// The label size labelTokenAxis last chose for a token axis (0: none yet), and setting the choice
// its next call starts from: it keeps that size where it fits and takes a larger one only with room
// to spare, so that the layout settles; a caller that takes a plot through other sizes and back
// (presentation mode) gives each axis its choice from before, and the plot is laid out as it was.
int chosenLabelPixels(const QCPAxis *axis);
void setChosenLabelPixels(QCPAxis *axis, int pixels);

// Calls `relabel` after every layout of `plot` (QCustomPlot::afterLayout, in a replot or an export):
// it chooses what depends on the layout (token labels thinned to the room, tick steps, a range with
// room for value labels) and returns whether it changed something the layout depends on. The plot is
// then laid out again at once, inside the same replot (at most three passes; a replot is queued only
// if it still has not settled, and at most kMaxSettlingReplots in a row: labels that flip between two
// layouts stay as the last replot drew them, instead of replotting for ever), so that a new text
// costs one replot, not two. Every view's after-layout changes go through here: drawn before the
// plot is laid out again, an axis is drawn with its old tick vectors (QCPAxis::draw takes the
// label of each tick by index: tick labels shown again after the layout, when the ticks were made
// without them, read past the end of the emptied list).
constexpr int kMaxSettlingReplots = 3;
void relabelAfterLayout(QCustomPlot *plot, QObject *context, std::function<bool()> relabel);

// For an afterLayout handler that `changed` something the layout depends on: a queued replot so
// that it settles, at most kMaxSettlingReplots in a row (labels that flip between two layouts, each
// asking for the other, stay as the last replot drew them: an endless replot loop otherwise kept a
// core busy while nothing changed). The count starts again when the plot is replotted for another
// reason than settling (a new text, size or setting); not by the clock, and not because another
// afterLayout handler of the same replot had nothing to change.
void replotToSettle(QCustomPlot *plot, bool changed);

// A plot the shown window does not show (another tab, a hidden or folded dock) does not replot:
// true, and it replots once when it is shown (its size and text may change before then). False
// where it is shown, or where its window is not (an export, the command line): the caller replots.
// replotToSettle asks it before queuing a settling replot.
bool replotWhenShown(QCustomPlot *plot);
// From now on `plot` does not replot on a resize while the shown window does not show it: it
// takes its new size, and replots, as it is shown (AppearanceManager::track does this for every
// plot of the window).
void replotOnlyWhenShown(QCustomPlot *plot);
// Gives every layout element of `plot` that shares a margin group but measures no axes of its own (a
// colour scale) its least margin on the group's sides, for the layout that follows: such an
// element's automatic margin is the margin it was last given, so a group kept the largest margin it
// ever had (presenting's large labels, after Esc). AppearanceManager::track calls it before each replot.
void resetGroupedMargins(QCustomPlot *plot);

// Shortens a label for an axis ("supercalifragilistic" -> "supercalifrag…").
QString elide(const QString &s, int maxChars);

// A (rows x cols) matrix as colour-map data whose cell centres sit on token coordinates
// (x = column, y = row). Larger than `maxCells` per side, it is block-averaged by the smallest
// factor that fits (returned in *factor); entries where `exclude` is set, and non-finite entries,
// are left out of the averages, and a block with nothing left is NaN.
QCPColorMapData *colorMapData(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> &m,
                              const Eigen::Matrix<uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> *exclude,
                              int maxCells, int *factor = nullptr);
QCPColorMapData *colorMapData(const WeightMatrix<float> &m, const BoolMat *exclude, int maxCells,
                              int *factor = nullptr);

// A long text's pooled map (AttentionTiles::pooled: `cells`, each covering an even share of
// `region`; x keys, y queries) as colour-map data laid over the cells it covers. QCPColorMap spaces
// cells evenly from the first centre to the last: a single one is stored as two half-width cells
// holding the same value.
QCPColorMapData *pooledMapData(const Mat<float> &cells, const QRect &region);

// The output cell of a pooled map (AttentionTiles::pooled: cell a covers first + [floor(a n / out),
// floor((a + 1) n / out))) that holds x, and the cells it covers [from, to].
int pooledCell(int x, int first, int n, int out, int &from, int &to);

// The bottom and left axes of `rect` as a matrix's: rows down (y reversed), the column labels at
// −60°, no grid and no sub-ticks, text tickers (labelTokenAxis fills them). Every heatmap of tokens
// or dimensions: the weights, the rollout, the pipeline's stages, Compare's panels.
void setTokenAxes(QCPAxisRect *rect);

// A token × token heatmap laid out in `plot` (the weights, the rollout): rows down, text tickers,
// no grid, a crisp colour map (no interpolation) on the weights' colour scale at the right, and a
// bold title across the top.
struct TokenHeatmap {
    QCPColorMap *map = nullptr;
    QCPColorScale *scale = nullptr;
    QCPTextElement *title = nullptr;
};
TokenHeatmap makeTokenHeatmap(QCustomPlot *plot, const QString &xLabel, const QString &yLabel, const QString &scaleLabel,
                              const QFont &titleFont);

// Breaks a message into lines of at most about `width` characters, at spaces.
QString wrapText(const QString &text, int width = 64);
// The same by pixels: lines no wider than `pixels` in `font` where words allow (a single longer word
// keeps its own line).
QString wrapText(const QString &text, const QFont &font, double pixels);

// Text colour readable on a cell of colour `bg`.
QColor contrastingText(const QColor &bg);

// One colour per attention head, colour-blind safe: the Okabe–Ito qualitative palette without its
// black (blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow). Heads 7..13
// repeat it darker, 14..20 lighter, and so on.
QColor headColor(int head);
// The colour of the head average where heads have their own colours (the palette's black, softened).
QColor headAverageColor();

} // namespace attnviz::ui
