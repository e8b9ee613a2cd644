// SPDX-License-Identifier: GPL-3.0-or-later
// The appearance entries of the View menu: theme, weights colour map and signed colour map (radio
// groups that follow AppearanceManager, whoever changes it), the fixed 0–1 weight scale, and larger /
// smaller / reset text size.
#pragma once

#include <QObject>

#include <vector>

class QAction;
class QActionGroup;
class QMenu;

namespace attnviz::ui {

class AppearanceMenu : public QObject {
    Q_OBJECT
public:
    // Adds the entries to `view`.
    AppearanceMenu(QMenu *view, QObject *parent);

private:
    void sync(); // checks the entries the current appearance has
    std::vector<QActionGroup *> m_groups; // theme, weights map, signed map
    QAction *m_fixedWeights = nullptr;
};

} // namespace attnviz::ui
