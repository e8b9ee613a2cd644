// SPDX-License-Identifier: GPL-3.0-or-later
// The window's export actions (File menu, Ctrl+E): the current view as a figure (with the size
// dialog), a pipeline stage or a part of the comparison, every head, and the current view's matrices
// (CSV, NPY, JSON). The writing itself is files/figureexport.h.
#pragma once

#include "files/figureexport.h"

#include <QObject>
#include <QString>

class QCustomPlot;

namespace attnviz::ui {

class MainWindow;

class ExportActions : public QObject {
    Q_OBJECT
public:
    explicit ExportActions(MainWindow *window);

    void exportCurrent(); // Ctrl+E: what the current tab shows
    void exportFigure(ExportView view);
    // the size dialog, then saveFigure (`titleLine`: FigureOptions::titleLine)
    void exportPlot(QCustomPlot *plot, const QString &name, const QString &titleLine = QString());
    void exportMatrices();

private:
    void exportPipelineStage(); // on the Pipeline tab: one stage
    void exportComparePart();   // on the Compare tab: A and B, or the difference / focus word

    MainWindow *m_window;
};

} // namespace attnviz::ui
