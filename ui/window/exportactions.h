// SPDX-License-Identifier: GPL-3.0-or-later
// The window's export actions (File menu, Ctrl+E): the current view as a figure (with the size
// dialog), a pipeline stage or a part of the comparison, every head, and the current view's matrices
// (CSV, NPY, JSON). The writing itself is files/figureexport.h.
#pragma once

#include "files/figureexport.h"

#include <QObject>
#include <QString>

class QAction;
class QCustomPlot;

namespace attnviz::ui {

class MainWindow;

class ExportActions : public QObject {
    Q_OBJECT
public:
    explicit ExportActions(MainWindow *window);

    // What File ▸ Export current view (Ctrl+E) writes for the current tab: the tab's own plot and
    // the name its file takes by default (attnviz-NAME.png), or no plot and why not. The Pipeline and
    // Compare tabs ask which of their figures (`choose`).
    struct CurrentFigure {
        QCustomPlot *plot = nullptr;
        QString name;
        QString whyNot; // when there is no plot: said in the action's tooltip and the status bar
        bool choose = false;
    };
    CurrentFigure currentFigure() const;
    // File ▸ Export current view (Ctrl+E): enabled for the current tab, or disabled with the reason
    // as its tooltip (update() after the tab changes).
    QAction *currentAction() const { return m_current; }
    void update();

    void exportCurrent(); // Ctrl+E: what the current tab shows
    void exportFigure(ExportView view);
    // the size dialog, then saveFigure (`titleLine`: FigureOptions::titleLine)
    void exportPlot(QCustomPlot *plot, const QString &name, const QString &titleLine = QString());
    void exportMatrices();
    void exportAlignment(); // the Alignment tab's word matrix

private:
    void exportPipelineStage(); // on the Pipeline tab: one stage
    void exportComparePart();   // on the Compare tab: A and B, or the difference / focus word

    MainWindow *m_window;
    QAction *m_current = nullptr;
};

} // namespace attnviz::ui
