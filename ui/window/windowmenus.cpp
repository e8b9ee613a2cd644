// SPDX-License-Identifier: GPL-3.0-or-later
// The window's menus (File, Edit, Model, View, Presets, Compare, Help), the guide they open, and what
// changes with the appearance (View menu) and presentation mode: MainWindow's members for them.
#include "mainwindow.h"

#include "controls/controlpanel.h"
#include "live/livesession.h"
#include "style/appearance.h"
#include "style/appearancemenu.h"
#include "style/plotstyle.h"
#include "teaching/comparison.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "teaching/seedtables.h"
#include "views/compareview.h"
#include "views/patchingview.h"
#include "window/exportactions.h"
#include "window/guidedialog.h"
#include "window/headablations.h"
#include "window/modelmenu.h"
#include "window/needleprobes.h"
#include "window/presentationmode.h"
#include "window/viewrouter.h"
#include "window/windowstate.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QLayout>
#include <QMenuBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTimer>
#include <QUndoStack>

namespace attnviz::ui {

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    m_files->addFileActions(file);
    file->addSeparator();
    m_modelMenu = new ModelMenu(this, m_modelLoader, new QMenu(tr("&Model"), this), file);
    file->addAction(tr("Load &embeddings…"), m_state, &WindowState::startLoadEmbeddings);
    file->addAction(tr("Load &projections…"), m_state, &WindowState::askProjectionsFile);
    file->addSeparator();
    file->addAction(m_export->currentAction());
    m_export->update();
    connect(m_tabs, &QTabWidget::currentChanged, m_export, &ExportActions::update);
    connect(patchingView(), &PatchingView::sweepFinished, m_export, &ExportActions::update); // its heatmap drawn
    file->addAction(tr("Export &all heads…"), this, [this] { m_export->exportFigure(ExportView::Grid); });
    file->addAction(tr("Export &matrices (CSV, NPY, JSON)…"), m_export, &ExportActions::exportMatrices);
    file->addAction(tr("Export lesson as &slides (PNG, PDF)…"), this, &MainWindow::exportLessonSlides);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *undo = m_undo->createUndoAction(this, tr("&Undo"));
    undo->setObjectName(QStringLiteral("undoAction"));
    undo->setShortcut(QKeySequence(tr("Ctrl+Z")));
    QAction *redo = m_undo->createRedoAction(this, tr("&Redo"));
    redo->setObjectName(QStringLiteral("redoAction"));
    redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    m_ablations->addEditActions(edit);
    edit->addSeparator();
    QAction *needle = edit->addAction(tr("&Needle probe…"), this, [this] { m_needleProbes->ask(m_queryEdit->toPlainText()); });
    needle->setObjectName(QStringLiteral("needleProbeAction"));
    needle->setToolTip(tr("Hide a sentence in a long text, ask for it, and score each head's retrieval (Wu et al. 2024)"));

    menuBar()->addMenu(m_modelMenu->menu());
    buildViewMenu();
    QMenu *presetMenu = menuBar()->addMenu(tr("&Presets"));
    QAction *next = presetMenu->addAction(tr("&Next lesson"), QKeySequence(tr("Alt+Right")), this, [this] { stepLesson(1); });
    next->setObjectName(QStringLiteral("nextLessonAction"));
    QAction *previous = presetMenu->addAction(tr("&Previous lesson"), QKeySequence(tr("Alt+Left")), this, [this] { stepLesson(-1); });
    previous->setObjectName(QStringLiteral("previousLessonAction"));
    presetMenu->addSeparator();
    QString lastSeed;
    QMenu *sub = nullptr;
    for (const Preset &p : presets()) {
        if (p.seed != lastSeed) {
            sub = presetMenu->addMenu(seedTitle(p.seed));
            lastSeed = p.seed;
        }
        const QString id = p.id;
        sub->addAction(p.title, this, [this, id] { applyPreset(id); });
    }
    QMenu *compare = menuBar()->addMenu(tr("&Compare"));
    for (const ComparisonSpec &c : seedComparisons()) {
        const QString id = c.id;
        compare->addAction(c.title, this, [this, id] {
            ComparisonSpec spec;
            if (findSeedComparison(id, spec))
                startComparison(spec);
        });
    }
    compare->addSeparator();
    compare->addAction(tr("Show the Compare tab"), this, [this] { m_tabs->setCurrentWidget(compareView()); });
    buildHelpMenu();
}

void MainWindow::buildViewMenu()
{
    QMenu *view = menuBar()->addMenu(tr("&View"));
    new AppearanceMenu(view, this);
    view->addSeparator();
    view->addAction(m_views->normWeightedAction());
    view->addAction(m_ablations->cleanAction());
    connect(m_views->normWeightedAction(), &QAction::toggled, this, [this] {
        if (m_session->snapshot())
            onSnapshot(m_session->snapshot());
    });
    view->addSeparator();
    for (auto *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction()); // Controls, Selected query, Lesson
    view->addSeparator();
    view->addAction(m_presentation->action());
}

void MainWindow::buildHelpMenu()
{
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *guide = help->addAction(tr("attnviz &guide"), QKeySequence(Qt::Key_F1), this, [this] { showGuide(); });
    guide->setObjectName(QStringLiteral("guideAction"));
    help->addAction(tr("&Keyboard shortcuts"), this, [this] { showGuide(tr("Keyboard shortcuts")); });
    help->addAction(tr("Start the &lessons"), this, [this] { applyPreset(presets().front().id); });
    help->addSeparator();
    help->addAction(tr("&About attnviz"), this, [this] {
        if (m_messagePrompt)
            m_messagePrompt(tr("About attnviz"),
                            tr("attnviz %1 shows, live, how transformer attention reads a sentence.\n\n"
                               "GPL-3.0-or-later. Help ▸ attnviz guide (F1) explains every view and key.")
                                .arg(QCoreApplication::applicationVersion()));
    });
}

void MainWindow::showGuide(const QString &section)
{
    if (!m_guide)
        m_guide = new GuideDialog(this);
    m_guide->show();
    m_guide->raise();
    m_guide->activateWindow();
    if (!section.isEmpty())
        m_guide->showSection(section);
}

void MainWindow::fitControlsWidth()
{
    auto *scroll = qobject_cast<QScrollArea *>(m_controls->parentWidget() ? m_controls->parentWidget()->parentWidget() : nullptr);
    if (!scroll)
        return;
    m_controls->layout()->activate();
    const int least = m_controls->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4;
    // QMainWindow widens a dock to a larger minimum and never narrows it back: the width it had
    // before is kept and given back once the rows fit in it again (smaller text). Presenting lays the
    // window out on its own and restores it on Esc.
    auto *dock = findChild<QDockWidget *>(QStringLiteral("controlsDock"));
    if (dock && dock->isVisible() && !presentationMode()) {
        if (least > scroll->width() && m_controlsScrollBefore == 0 && scroll->width() >= scroll->minimumWidth()) { // laid out
            m_controlsDockBefore = dock->width();
            m_controlsScrollBefore = scroll->width();
        } else if (m_controlsScrollBefore > 0 && least <= m_controlsScrollBefore) {
            scroll->setMinimumWidth(least);
            resizeDocks({dock}, {m_controlsDockBefore}, Qt::Horizontal);
            m_controlsDockBefore = m_controlsScrollBefore = 0;
            return;
        }
    }
    scroll->setMinimumWidth(least);
}

void MainWindow::onAppearanceChanged()
{
    // a dock draws its title in the font Qt gave it when the dock was made (the "QDockWidgetTitle"
    // font) while the dock's font equals the application's: each dock gets the application's font
    // marked as its own (an antialiasing preference, which text has anyway), so that larger text
    // (presentation's 1.6×) reaches the titles
    for (QDockWidget *d : findChildren<QDockWidget *>()) {
        QFont own = QApplication::font();
        own.setStyleStrategy(QFont::PreferAntialias);
        d->setFont(own);
    }
    for (QCustomPlot *p : findChildren<QCustomPlot *>()) {
        AppearanceManager::track(p);
        AppearanceManager::stylePlot(p);
    }
    // the Controls keep all their text in view at any text size, once their layout has taken the new font
    QTimer::singleShot(0, this, &MainWindow::fitControlsWidth);
    if (m_session->snapshot())
        onSnapshot(m_session->snapshot()); // the views draw again with the new maps
    for (QCustomPlot *p : findChildren<QCustomPlot *>())
        if (!replotWhenShown(p)) // a hidden tab's or dock's plot replots as it is shown
            p->replot(QCustomPlot::rpQueuedReplot);
}

void MainWindow::setPresentationMode(bool on)
{
    if (on)
        m_tabs->setMinimumSize(0, 0); // before the mode lays the window out
    m_presentation->setOn(on);
}
bool MainWindow::presentationMode() const { return m_presentation && m_presentation->isOn(); }
void MainWindow::presentationStep(int delta) { m_presentation->step(delta); }

} // namespace attnviz::ui
