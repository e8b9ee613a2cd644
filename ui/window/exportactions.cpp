// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/exportactions.h"

#include "files/figureexport.h"
#include "files/messagetext.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/alignmentview.h"
#include "views/compareview.h"
#include "views/layergridview.h"
#include "views/pipelineview.h"
#include "views/residualview.h"
#include "views/view.h"
#include "window/viewrouter.h"

#include <qcustomplot.h>

#include <QAction>
#include <QCheckBox>
#include <QDialog>
#include <QJsonArray>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>

namespace attnviz::ui {

ExportActions::ExportActions(MainWindow *window)
    : QObject(window)
    , m_window(window)
{
    m_current = new QAction(tr("Export current &view…"), this);
    m_current->setObjectName(QStringLiteral("exportCurrentAction"));
    m_current->setShortcut(QKeySequence(tr("Ctrl+E")));
    connect(m_current, &QAction::triggered, this, &ExportActions::exportCurrent);
}

ExportActions::CurrentFigure ExportActions::currentFigure() const
{
    const QString id = m_window->currentViewId();
    CurrentFigure f;
    if (id == QLatin1String("pipeline") || id == QLatin1String("compare")) {
        f.name = id;
        f.choose = true;
        return f;
    }
    // the file is named after the view: "headRoles" -> attnviz-head-roles.png
    for (const QChar c : id) {
        if (c.isUpper() && !f.name.isEmpty())
            f.name += QLatin1Char('-');
        f.name += c.toLower();
    }
    const auto *view = qobject_cast<const View *>(m_window->viewWidget(id));
    if (view && m_window->viewWidget(id) == m_window->tabs()->currentWidget())
        f.plot = view->plot();
    if (!f.plot)
        f.whyNot = tr("The %1 tab draws no figure to export; File ▸ Export matrices writes the attention's numbers.")
                       .arg(m_window->tabs()->tabText(m_window->tabs()->currentIndex()).remove(QLatin1Char('&')));
    return f;
}

void ExportActions::update()
{
    const CurrentFigure f = currentFigure();
    const bool can = f.plot || f.choose;
    m_current->setEnabled(can);
    const QString tip = can ? tr("Export the %1 view as a figure (PNG, SVG or PDF)").arg(f.name) : f.whyNot;
    m_current->setToolTip(tip);
    m_current->setStatusTip(tip);
}

void ExportActions::exportCurrent()
{
    const CurrentFigure f = currentFigure();
    if (f.choose && f.name == QLatin1String("pipeline"))
        exportPipelineStage();
    else if (f.choose)
        exportComparePart();
    else if (f.plot)
        exportPlot(f.plot, f.name);
    else
        m_window->statusBar()->showMessage(f.whyNot, 8000);
}

void ExportActions::exportPipelineStage()
{
    // one stage per figure: the one being stepped to, else the user picks (weights first)
    QStringList names;
    for (int i = 0; i < m_window->pipelineView()->stageCount(); ++i)
        names << QStringLiteral("%1. %2").arg(i + 1).arg(m_window->pipelineView()->stageName(i));
    if (names.isEmpty())
        return;
    int stage = m_window->pipelineView()->currentStage();
    if (stage < 0) {
        int preselect = 0;
        for (int i = 0; i < names.size(); ++i)
            if (m_window->pipelineView()->stageName(i).contains(QLatin1String("eights")))
                preselect = i;
        bool ok = false;
        const QString pick = QInputDialog::getItem(m_window, tr("Export a pipeline stage"), tr("Stage"), names, preselect,
                                                   false, &ok);
        if (!ok)
            return;
        stage = int(names.indexOf(pick));
    }
    if (QCustomPlot *plot = m_window->pipelineView()->stagePlot(stage))
        exportPlot(plot,
                   QStringLiteral("pipeline-%1").arg(m_window->pipelineView()->stageName(stage).toLower().replace(QLatin1Char(' '), QLatin1Char('-'))),
                   m_window->pipelineView()->stageFigureTitle(stage));
}

void ExportActions::exportComparePart()
{
    const QString pair = tr("A and B (one colour scale)");
    const QString second = m_window->compareView()->showsDifference() ? tr("Difference A − B") : tr("The focus word in A and B");
    bool ok = false;
    const QString pick = QInputDialog::getItem(m_window, tr("Export the comparison"), tr("Figure"), {pair, second}, 0, false, &ok);
    if (!ok)
        return;
    if (pick == pair)
        exportPlot(m_window->compareView()->pairPlot(), QStringLiteral("compare"));
    else
        exportPlot(m_window->compareView()->showsDifference() ? m_window->compareView()->differencePlot() : m_window->compareView()->focusPlot(),
                   m_window->compareView()->showsDifference() ? QStringLiteral("compare-difference") : QStringLiteral("compare-focus"));
}

void ExportActions::exportFigure(ExportView view) { exportPlot(m_window->plotFor(view), exportViewName(view)); }

void ExportActions::exportPlot(QCustomPlot *plot, const QString &name, const QString &titleLine)
{
    QSettings settings;
    QDialog dialog(m_window);
    dialog.setWindowTitle(tr("Export %1 view").arg(name));
    auto *form = new QFormLayout(&dialog);
    auto *w = new QSpinBox(&dialog);
    w->setRange(16, 20000);
    w->setValue(settings.value(QStringLiteral("export/width"), 1600).toInt());
    auto *h = new QSpinBox(&dialog);
    h->setRange(16, 20000);
    h->setValue(settings.value(QStringLiteral("export/height"), 1000).toInt());
    auto *dpi = new QDoubleSpinBox(&dialog);
    dpi->setRange(10, 2400);
    dpi->setValue(settings.value(QStringLiteral("export/dpi"), 144).toDouble());
    form->addRow(tr("Width (px; points for SVG/PDF)"), w);
    form->addRow(tr("Height"), h);
    form->addRow(tr("DPI (PNG)"), dpi);
    // a figure for a paper (FigureOptions::publication), as `attnviz export --publication` writes it
    auto *publication = new QCheckBox(tr("Publication figure: every label, no hints, a one-line title"), &dialog);
    publication->setObjectName(QStringLiteral("publicationCheck"));
    publication->setChecked(settings.value(QStringLiteral("export/publication"), false).toBool());
    auto *title = new QLineEdit(&dialog);
    title->setObjectName(QStringLiteral("publicationTitle"));
    title->setPlaceholderText(tr("the view's own; a single space: none"));
    auto *fontPt = new QDoubleSpinBox(&dialog);
    fontPt->setObjectName(QStringLiteral("publicationFontSize"));
    fontPt->setRange(0, 72);
    fontPt->setSpecialValueText(tr("the view's own"));
    fontPt->setSuffix(tr(" pt"));
    fontPt->setValue(settings.value(QStringLiteral("export/fontPt"), 0.0).toDouble());
    form->addRow(publication);
    form->addRow(tr("Title"), title);
    form->addRow(tr("Axis text"), fontPt);
    const auto follow = [=] {
        title->setEnabled(publication->isChecked());
        fontPt->setEnabled(publication->isChecked());
    };
    follow();
    connect(publication, &QCheckBox::toggled, &dialog, follow);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted)
        return;
    settings.setValue(QStringLiteral("export/width"), w->value());
    settings.setValue(QStringLiteral("export/height"), h->value());
    settings.setValue(QStringLiteral("export/dpi"), dpi->value());
    settings.setValue(QStringLiteral("export/publication"), publication->isChecked());
    settings.setValue(QStringLiteral("export/fontPt"), fontPt->value() < 4 ? 0.0 : fontPt->value());
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export figure"),
                                                      QStringLiteral("attnviz-%1.png").arg(name),
                                                      tr("PNG image (*.png);;SVG (*.svg);;PDF (*.pdf)"));
    if (path.isEmpty())
        return;
    QString error;
    FigureOptions figure;
    figure.width = w->value();
    figure.height = h->value();
    figure.dpi = dpi->value();
    figure.titleLine = titleLine;
    figure.publication = publication->isChecked();
    figure.noTitle = figure.publication && !title->text().isEmpty() && title->text().trimmed().isEmpty();
    figure.title = figure.publication ? title->text().trimmed() : QString();
    figure.fontPt = figure.publication && fontPt->value() >= 4 ? fontPt->value() : 0;
    if (!saveFigure(plot, path, figure, &error))
        warnPlain(m_window, tr("Export failed"), shownText(error));
    else
        m_window->statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void ExportActions::exportMatrices()
{
    if (m_window->currentViewId() == QLatin1String("alignment")) {
        exportAlignment();
        return;
    }
    // what the current tab was handed: an encoder-decoder model's attention the selector names, or
    // its "not yet" line
    const SnapshotPtr s = m_window->views()->snapshotFor(m_window->session()->snapshot(), m_window->currentViewId());
    if (!s || !s->hasResult()) {
        QMessageBox box(QMessageBox::Information, tr("Nothing to export"), s ? shownText(s->message) : tr("Nothing computed yet."),
                        QMessageBox::Ok, m_window);
        box.setTextFormat(Qt::PlainText);
        box.exec();
        return;
    }
    const ExportView view = m_window->currentView();
    const QString path = QFileDialog::getSaveFileName(
        m_window, tr("Export matrices"), QStringLiteral("attnviz-%1.csv").arg(exportViewName(view)),
        tr("CSV (*.csv);;NumPy (*.npy);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    QString error;
    // the lines view's numbers: its one matrix, or every head when it overlays them
    const ExportView data = view != ExportView::Lines ? view
        : m_window->session()->headDisplay() == HeadDisplay::All ? ExportView::Grid
                                                       : ExportView::Weights;
    if (!saveMatrices(*s, data, m_window->session()->selectedLayer(), m_window->session()->shownHead(), m_window->session()->selectedQuery(), path, &error))
        warnPlain(m_window, tr("Export failed"), shownText(error));
    else
        m_window->statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

// The Alignment tab's word matrix (`attnviz export --view alignment` writes the same).
void ExportActions::exportAlignment()
{
    const AlignmentView *v = m_window->alignmentView();
    if (!v->plot()) {
        QMessageBox box(QMessageBox::Information, tr("Nothing to export"), shownText(v->message()), QMessageBox::Ok, m_window);
        box.setTextFormat(Qt::PlainText);
        box.exec();
        return;
    }
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export matrices"), QStringLiteral("attnviz-alignment.csv"),
                                                      tr("CSV (*.csv);;NumPy (*.npy);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    LabelledMatrix m;
    m.view = QStringLiteral("alignment");
    m.title = tr("Cross-attention by word, %1").arg(v->selectionText());
    m.corner = QStringLiteral("target\\source");
    m.rows = v->rowLabels();
    m.columns = v->columnLabels();
    m.values = v->wordMatrix();
    QJsonArray argmax;
    for (int a : v->argmax())
        argmax.append(a);
    const auto choice = [](int i) { return i < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(i); };
    m.extra = QJsonObject{{QStringLiteral("layer"), choice(v->settings().layer)},
                          {QStringLiteral("head"), choice(v->settings().head)},
                          {QStringLiteral("argmax"), argmax}};
    QString error;
    if (!saveLabelledMatrix(m, path, &error))
        warnPlain(m_window, tr("Export failed"), shownText(error));
    else
        m_window->statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

} // namespace attnviz::ui
