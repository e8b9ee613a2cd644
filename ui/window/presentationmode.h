// SPDX-License-Identifier: GPL-3.0-or-later
// Presentation mode of the window: full screen, large text, high contrast, only the Lesson dock (when
// a preset is in use); Right/Left/Space/PageUp/PageDown step through the pipeline's stages and then
// the views, Esc leaves and restores the docks, the geometry, the appearance and the focus. While on,
// the sentence editors are hidden (one view fills the screen), labels and numbers are at least 18 px
// tall (style/legibility.h) and the current view holds the focus so that the step keys work at once.
#pragma once

#include "style/appearance.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QRect>

#include <utility>
#include <vector>

class QAction;
class QCPAxis;
class QMainWindow;
class QShortcut;
class QTabWidget;
class QWidget;

namespace attnviz::ui {

class LessonPanel;
class PipelineView;

class PresentationMode : public QObject {
    Q_OBJECT
public:
    PresentationMode(QMainWindow *window, QTabWidget *tabs, PipelineView *pipeline, LessonPanel *lesson);
    // A window closed while presenting leaves the 18 px minimums (a process-wide setting) behind.
    ~PresentationMode() override;

    // View > Presentation mode (F11), checkable; the window adds it to its menu.
    QAction *action() const { return m_action; }
    void setOn(bool on);
    bool isOn() const { return m_on; }
    // One step forward (1) or back (-1): the pipeline's next stage, else the next visible view.
    void step(int delta);

signals:
    void changed(bool on);

private:
    QMainWindow *m_window;
    QTabWidget *m_tabs;
    PipelineView *m_pipeline;
    LessonPanel *m_lesson;
    bool m_on = false;
    struct {
        Appearance appearance;
        QByteArray state;
        QRect geometry;
        bool maximized = false;
        QPointer<QWidget> focus; // the widget that had the focus
        // the minimum heights the docks' plots had chosen for their text (a plot that sizes itself
        // to its labels meets half-restyled layouts on the way back, and one it chose then would
        // keep its dock taller than it was)
        std::vector<std::pair<QPointer<QWidget>, int>> minimumHeights;
        // the minimum widths the docks' contents had (the Controls fit their widest row again after
        // the text's size changes back, measured on rows whose text changed since the model opened,
        // and came back 35 px wider)
        std::vector<std::pair<QPointer<QWidget>, int>> minimumWidths;
        // the label sizes the plots' token axes had chosen (labelTokenAxis keeps a size it chose
        // while it fits: the Rollout's query labels kept the 11 px chosen on a size between and came
        // back 6 px narrower)
        std::vector<std::pair<QPointer<QCPAxis>, int>> labelPixels;
        int pipelineStage = -1; // the Pipeline's step (-1: every stage), which presenting sets
    } m_before;
    QAction *m_action = nullptr;
    std::vector<QShortcut *> m_keys; // live only in presentation mode (an editor keeps its arrow keys)
};

} // namespace attnviz::ui
