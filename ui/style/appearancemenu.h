// SPDX-License-Identifier: GPL-3.0-or-later
// The appearance entries of the View menu: theme, weights colour map and signed colour map (radio
// groups that follow AppearanceManager, whoever changes it), the fixed 0–1 weight scale, and larger /
// smaller / reset text size (a larger text step that would grow the window past its screen is
// refused with a note; the reset gives the window back the size it had at the normal text).
#pragma once

#include "style/appearance.h"

#include <QObject>
#include <QPointer>
#include <QRect>

#include <vector>

class QAction;
class QActionGroup;
class QMenu;
class QWidget;

namespace attnviz::ui {

class AppearanceMenu : public QObject {
    Q_OBJECT
public:
    // Adds the entries to `view`.
    AppearanceMenu(QMenu *view, QObject *parent);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override; // the window while a larger step settles

private:
    void sync(); // checks the entries the current appearance has
    // Sets the text scale of `a` for `window` (the menu's): keeps the window inside its screen.
    void setTextScale(QWidget *window, const Appearance &a);
    void fitTextStep(); // refuses the larger text step in m_step where the window no longer fits its screen
    QRect m_normalTextGeometry; // the window's before the text left scale 1 (invalid: none kept)
    struct {
        QPointer<QWidget> window; // none: no larger step settling
        Appearance before;        // the appearance and geometry the step started from
        QRect geometry;
        double scale = 1.0; // the step's text scale
    } m_step;
    std::vector<QActionGroup *> m_groups; // theme, weights map, signed map
    QAction *m_fixedWeights = nullptr;
};

} // namespace attnviz::ui
