// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/presentationmode.h"

#include "teaching/lessonpanel.h"
#include "views/pipelineview.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QScreen>
#include <QShortcut>
#include <QTabWidget>

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

void PresentationMode::setOn(bool on)
{
    if (on == m_on)
        return;
    m_on = on;
    auto *am = AppearanceManager::instance();
    if (on) {
        m_before.appearance = am->appearance();
        m_before.state = m_window->saveState();
        m_before.maximized = m_window->isMaximized();
        for (auto *dock : m_window->findChildren<QDockWidget *>()) // the Lesson column stays when a preset is in use
            dock->setVisible(dock->objectName() == QLatin1String("lessonDock") && !m_lesson->currentId().isEmpty());
        Appearance a = am->appearance();
        a.theme = Theme::HighContrast;
        a.fontScale = std::max(a.fontScale * 1.6, 1.6);
        am->setAppearance(a);
        m_before.geometry = m_window->geometry();
        if (m_window->screen())
            m_window->setGeometry(m_window->screen()->geometry()); // also where no window manager honours full screen
        m_window->showFullScreen();
        if (m_tabs->currentWidget() == m_pipeline)
            m_pipeline->setCurrentStage(0); // a lesson starts from X
    } else {
        am->setAppearance(m_before.appearance);
        m_window->restoreState(m_before.state);
        if (m_before.maximized) {
            m_window->showMaximized();
        } else {
            m_window->showNormal();
            m_window->setGeometry(m_before.geometry);
        }
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
