// SPDX-License-Identifier: GPL-3.0-or-later
// Writing what a view shows: the figure (PNG at a chosen size and DPI, SVG, PDF) exactly as
// drawn, title included, and the matrices behind it (CSV, NPY, JSON). Every file goes through
// OutputFile (outputfile.h): an unwritable path gives a message and leaves nothing half-written,
// and a pipe or a device is written in place, never replaced.
#pragma once

#include "live/livetypes.h"

#include <QColor>
#include <QImage>
#include <QJsonObject>
#include <QJsonValue>
#include <QStringList>
#include <QString>

class QCustomPlot;

namespace attnviz::ui {

// Lines: the figure of the lines view; its matrices are those of Weights (one head or the average)
// or Grid (all heads), as the view shows them.
enum class ExportView { Weights, Grid, Embeddings, Row, Lines };

struct FigureOptions {
    int width = 1200;  // pixels (PNG), or points (SVG user units, PDF page)
    int height = 900;
    double dpi = 96.0; // PNG only: stored in the file, and text and lines scale by dpi/96
    QString titleLine; // drawn under the figure's title while it is written (a pipeline stage's configuration)
    // A figure for a paper: labels and numbers shrink to 6 px before any is dropped (a thinned axis
    // states its stride), none of the window's hints (how to zoom, what hovering shows), the title
    // one line of what is shown (`title` instead, or none with `noTitle`), every axis's text at
    // `fontPt` points where given (the titles a little larger).
    bool publication = false;
    QString title;
    bool noTitle = false;
    double fontPt = 0;
};

bool isFigureSuffix(const QString &suffix);
bool isMatrixSuffix(const QString &suffix);

// The figure as its PNG holds it (`options`' size and DPI: text and lines scale by dpi/96), drawn on
// `background` where the plot draws no background of its own.
QImage renderFigure(QCustomPlot *plot, const FigureOptions &options, const QColor &background = Qt::white);

// By the path's suffix: .png .svg .pdf
bool saveFigure(QCustomPlot *plot, const QString &path, const FigureOptions &options, QString *error);

// By the path's suffix: .csv .npy .json. The selection: `layer`, `head` (-1 = average), `query` (for
// ExportView::Row).
bool saveMatrices(const ComputeSnapshot &s, ExportView view, int layer, int head, int query, const QString &path,
                  QString *error);

// Every layer's and head's attention weights (`export --all-layers`), by the path's suffix: NPY of
// float32 (layers, heads, queries, keys); CSV of rows layer,head,query_index,query,key_index,key,weight;
// JSON with the tokens and their positions, `shape` and `weights[layer][head][query][key]`. The NPY
// and CSV are written as they are made (a model's whole trace may be gigabytes); CSV and JSON text
// stop at kMaxTextCells cells with a message that names .npy.
constexpr qint64 kMaxTextCells = 50'000'000;
bool saveAllLayers(const ComputeSnapshot &s, const QString &path, QString *error);

QString exportViewName(ExportView v);

// A view's own table of numbers (the logit lens, attribution): rows x columns with their labels,
// written by the path's suffix as saveMatrices writes the attention's: CSV with the labels, NPY of
// the values (float32), JSON with `view`, `title`, `rows`, `columns`, `shape`, `data` and `extra`.
struct LabelledMatrix {
    QString view, title;
    QString corner; // the CSV's first cell ("layer\\position")
    QStringList rows, columns;
    Mat<double> values;
    QJsonObject extra;
};
bool saveLabelledMatrix(const LabelledMatrix &m, const QString &path, QString *error);

// A number for a JSON output: finite as a number, otherwise the case files' strings "NaN",
// "Infinity", "-Infinity" (JSON has no non-finite numbers; QJsonValue would write null).
QJsonValue jsonNumber(double v);
bool parseExportView(const QString &name, ExportView &v);

} // namespace attnviz::ui
