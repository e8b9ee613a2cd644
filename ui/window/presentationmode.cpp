// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/presentationmode.h"

#include "style/legibility.h"
#include "style/plotstyle.h"
#include "teaching/lessonpanel.h"
#include "views/pipelineview.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QMainWindow>
#include <QScreen>
#include <QShortcut>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>

#include <algorithm>

namespace attnviz::ui {

PresentationMode::PresentationMode(QMainWindow *window, QTabWidget *tabs, PipelineView *pipeline, LessonPanel *lesson)
    : QObject(window)
    , m_window(window)
    , m_tabs(tabs)
    , m_pipeline(pipeline)
    , m_lesson(lesson)
{
    m_action = new QAction(tr("&Presentation mode"), this);
    m_action->setObjectName(QStringLiteral("presentationAction"));
    m_action->setCheckable(true);
    m_action->setShortcut(QKeySequence(Qt::Key_F11));
    m_action->setToolTip(tr("Full screen, large text, high contrast; arrows or space step through the "
                            "stages, Esc leaves."));
    connect(m_action, &QAction::toggled, this, &PresentationMode::setOn);
    const QList<QPair<QKeySequence, int>> steps = {{QKeySequence(Qt::Key_Right), 1}, {QKeySequence(Qt::Key_PageDown), 1},
                                                   {QKeySequence(Qt::Key_Space), 1},  {QKeySequence(Qt::Key_Left), -1},
                                                   {QKeySequence(Qt::Key_PageUp), -1}};
    for (const auto &[key, delta] : steps) {
        auto *sc = new QShortcut(key, window);
        sc->setEnabled(false);
        const int d = delta;
        connect(sc, &QShortcut::activated, this, [this, d] { step(d); });
        m_keys.push_back(sc);
    }
    auto *esc = new QShortcut(QKeySequence(Qt::Key_Escape), window);
    esc->setEnabled(false);
    connect(esc, &QShortcut::activated, this, [this] { setOn(false); });
    m_keys.push_back(esc);
}

PresentationMode::~PresentationMode()
{
    if (m_on)
        setPresentationLegibility(false);
}

void PresentationMode::setOn(bool on)
{
    if (on == m_on)
        return;
    m_on = on;
    auto *am = AppearanceManager::instance();
    // the sentence editors and chips above the tabs (the central splitter's first widget)
    auto *split = qobject_cast<QSplitter *>(m_window->centralWidget());
    QWidget *editors = split ? split->widget(0) : nullptr;
    if (on) { // before the Lesson column takes its presenting width
        m_before.minimumWidths.clear();
        for (auto *dock : m_window->findChildren<QDockWidget *>())
            if (dock->widget())
                m_before.minimumWidths.emplace_back(dock->widget(), dock->widget()->minimumWidth());
    }
    // labels and numbers at least 18 px tall while presenting (legibility.h); set before
    // the appearance below restyles every plot
    setPresentationLegibility(on);
    // the Lesson column as wide as its text needs, up to a third of the screen
    m_lesson->setPresenting(on);
    if (on) {
        m_before.appearance = am->appearance();
        m_before.state = m_window->saveState();
        m_before.maximized = m_window->isMaximized();
        m_before.focus = QApplication::focusWidget();
        m_before.minimumHeights.clear();
        for (auto *dock : m_window->findChildren<QDockWidget *>())
            for (auto *plot : dock->findChildren<QCustomPlot *>())
                m_before.minimumHeights.emplace_back(plot, plot->minimumHeight());
        m_before.pipelineStage = m_pipeline->currentStage();
        m_before.labelPixels.clear();
        for (auto *plot : m_window->findChildren<QCustomPlot *>())
            for (QCPAxisRect *rect : plot->axisRects())
                for (QCPAxis *axis : rect->axes())
                    if (const int px = chosenLabelPixels(axis); px > 0)
                        m_before.labelPixels.emplace_back(axis, px);
        // the Lesson column stays when a preset is in use, and with it the Predictions dock its
        // text quotes (a model's lesson reads the next-token probabilities there)
        const bool lesson = !m_lesson->currentId().isEmpty();
        for (auto *dock : m_window->findChildren<QDockWidget *>())
            dock->setVisible(lesson
                             && (dock->objectName() == QLatin1String("lessonDock")
                                 || (dock->objectName() == QLatin1String("predictionsDock") && dock->isVisible())));
        if (editors)
            editors->hide(); // one view fills the screen
        Appearance a = am->appearance();
        a.theme = Theme::HighContrast;
        a.fontScale = std::max(a.fontScale * 1.6, 1.6);
        am->setAppearance(a);
        m_before.geometry = m_window->geometry();
        // the layouts take the larger text and lose the docks now: until they do, their minimum sizes
        // are the window's as it was, and it stayed 1420 px wide on a 1280 × 720 screen
        for (int pass = 0; pass < 4; ++pass) // nested layouts ask again once their children have
            QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        if (m_window->screen())
            m_window->setGeometry(m_window->screen()->geometry()); // also where no window manager honours full screen
        m_window->showFullScreen();
        if (m_tabs->currentWidget() == m_pipeline) // a lesson starts from X, or at the stage its text is about
            m_pipeline->setCurrentStage(std::max(0, m_pipeline->focusedStage()));
        // the step keys work at once: no editor keeps the focus (and the arrows) for itself
        if (m_tabs->currentWidget())
            m_tabs->currentWidget()->setFocus(Qt::OtherFocusReason);
    } else {
        am->setAppearance(m_before.appearance);
        if (editors)
            editors->show();
        if (m_pipeline->currentStage() != m_before.pipelineStage)
            m_pipeline->setCurrentStage(m_before.pipelineStage);
        m_window->restoreState(m_before.state);
        if (m_before.maximized) {
            m_window->showMaximized();
        } else {
            m_window->showNormal();
            // the platform's own restore (the screen's geometry, where the mode set it) arrives as a
            // window-system event: take it before setting the window's own
            QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
            m_window->setGeometry(m_before.geometry);
            // again once the layouts have taken the smaller text: until then their minimum sizes are
            // those of the large text, and the window came back wider than the screen
            const QRect g = m_before.geometry;
            QTimer::singleShot(0, this, [this, g] {
                if (!m_on && !m_window->isMaximized())
                    m_window->setGeometry(g);
            });
        }
        // the docks' sizes again once the controls have their small-text minimum width: restored
        // while the large text's minimum held, the Controls dock kept it (420 px came back as 590)
        QTimer::singleShot(0, this, [this, state = m_before.state] {
            if (m_on)
                return;
            for (const auto &[plot, height] : m_before.minimumHeights)
                if (plot)
                    plot->setMinimumHeight(height);
            for (const auto &[content, width] : m_before.minimumWidths)
                if (content)
                    content->setMinimumWidth(width);
            for (int pass = 0; pass < 4; ++pass)
                QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
            m_window->restoreState(state);
            // each shown plot once more at its final size and text: its labels settle from there
            // (they had used up their settling replots on the sizes between, and a title stayed
            // wrapped for the narrower plot of a moment before), from the label sizes chosen
            // before presenting (a hidden plot's in the replot that shows it)
            for (const auto &[axis, pixels] : m_before.labelPixels)
                if (axis)
                    setChosenLabelPixels(axis, pixels);
            for (auto *plot : m_window->findChildren<QCustomPlot *>())
                if (plot->isVisible())
                    plot->replot(QCustomPlot::rpQueuedReplot);
        });
        if (m_before.focus)
            m_before.focus->setFocus(Qt::OtherFocusReason);
    }
    for (QShortcut *sc : m_keys)
        sc->setEnabled(on);
    const QSignalBlocker block(m_action);
    m_action->setChecked(on);
    emit changed(on);
}

void PresentationMode::step(int delta)
{
    // On the pipeline: stage by stage (the last step shows them all), then on to the next view.
    if (m_tabs->currentWidget() == m_pipeline) {
        const int stage = m_pipeline->currentStage();
        if (delta > 0 && stage >= 0) {
            m_pipeline->nextStage();
            return;
        }
        if (delta < 0 && stage != 0) {
            m_pipeline->previousStage();
            return;
        }
    }
    // the views in teaching order; the step moves to the next visible one
    const int n = m_tabs->count();
    for (int k = 1; k <= n; ++k) {
        const int i = ((m_tabs->currentIndex() + delta * k) % n + n) % n;
        if (m_tabs->isTabVisible(i)) {
            m_tabs->setCurrentIndex(i);
            if (m_tabs->currentWidget() == m_pipeline)
                m_pipeline->setCurrentStage(delta > 0 ? 0 : -1);
            return;
        }
    }
}

} // namespace attnviz::ui
