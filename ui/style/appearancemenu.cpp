// SPDX-License-Identifier: GPL-3.0-or-later
#include "style/appearancemenu.h"

#include "style/appearance.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>

#include <functional>

namespace attnviz::ui {

AppearanceMenu::AppearanceMenu(QMenu *view, QObject *parent)
    : QObject(parent)
{
    auto radioMenu = [this, view](const QString &title, const QList<QPair<QString, int>> &items, int current,
                                  std::function<void(Appearance &, int)> set) {
        QMenu *m = view->addMenu(title);
        auto *group = new QActionGroup(m);
        for (const auto &item : items) {
            const int value = item.second; // a copy: C++17 lambdas cannot capture a structured binding
            QAction *a = m->addAction(item.first);
            a->setCheckable(true);
            a->setChecked(value == current);
            a->setData(value);
            group->addAction(a);
            connect(a, &QAction::triggered, this, [set, value] {
                Appearance ap = AppearanceManager::instance()->appearance();
                set(ap, value);
                AppearanceManager::instance()->setAppearance(ap);
            });
        }
        m_groups.push_back(group);
    };
    const Appearance &ap = AppearanceManager::instance()->appearance();
    radioMenu(tr("&Theme"),
              {{tr("Follow the system"), int(Theme::System)}, {tr("Light"), int(Theme::Light)},
               {tr("Dark"), int(Theme::Dark)}, {tr("High contrast"), int(Theme::HighContrast)}},
              int(ap.theme), [](Appearance &a, int v) { a.theme = Theme(v); });
    radioMenu(tr("&Weights colour map"),
              {{tr("Viridis"), int(SequentialMap::Viridis)}, {tr("Cividis (colour-blind safe)"), int(SequentialMap::Cividis)},
               {tr("Magma"), int(SequentialMap::Magma)}, {tr("Greys (print)"), int(SequentialMap::Greys)}},
              int(ap.sequential), [](Appearance &a, int v) { a.sequential = SequentialMap(v); });
    radioMenu(tr("&Signed colour map"),
              {{tr("Blue – white – red"), int(DivergingMap::RedBlue)},
               {tr("Purple – white – orange (colour-blind safe)"), int(DivergingMap::PurpleOrange)}},
              int(ap.diverging), [](Appearance &a, int v) { a.diverging = DivergingMap(v); });
    m_fixedWeights = view->addAction(tr("Weights on a &fixed 0–1 scale"));
    m_fixedWeights->setObjectName(QStringLiteral("fixedWeightScale"));
    m_fixedWeights->setCheckable(true);
    m_fixedWeights->setChecked(ap.fixedWeights);
    m_fixedWeights->setToolTip(tr("On: colour 0 is weight 0 and colour 1 is weight 1, so that nearly equal weights "
                                  "look nearly equal. Off: the scale runs from 0 to the largest weight shown."));
    connect(m_fixedWeights, &QAction::toggled, this, [](bool on) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fixedWeights = on;
        AppearanceManager::instance()->setAppearance(a);
    });
    view->addSeparator();
    auto scaleBy = [](double f) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fontScale = f == 0 ? 1.0 : a.fontScale * f;
        AppearanceManager::instance()->setAppearance(a);
    };
    QAction *larger = view->addAction(tr("&Larger text"), QKeySequence::ZoomIn, this, [scaleBy] { scaleBy(1.15); });
    larger->setShortcuts({QKeySequence(QKeySequence::ZoomIn), QKeySequence(tr("Ctrl+="))}); // = is + unshifted
    view->addAction(tr("&Smaller text"), QKeySequence::ZoomOut, this, [scaleBy] { scaleBy(1 / 1.15); });
    view->addAction(tr("&Reset text size"), QKeySequence(tr("Ctrl+0")), this, [scaleBy] { scaleBy(0); });
    connect(AppearanceManager::instance(), &AppearanceManager::changed, this, &AppearanceMenu::sync);
}

void AppearanceMenu::sync()
{
    const Appearance &a = AppearanceManager::instance()->appearance();
    const int values[] = {int(a.theme), int(a.sequential), int(a.diverging)};
    for (size_t i = 0; i < m_groups.size() && i < 3; ++i)
        for (QAction *act : m_groups[i]->actions())
            act->setChecked(act->data().toInt() == values[i]);
    m_fixedWeights->setChecked(a.fixedWeights);
}

} // namespace attnviz::ui
