// SPDX-License-Identifier: GPL-3.0-or-later
#include "style/appearancemenu.h"

#include "style/appearance.h"

#include <QAction>
#include <QActionGroup>
#include <QCoreApplication>
#include <QEvent>
#include <QMainWindow>
#include <QMenu>
#include <QPointer>
#include <QScreen>
#include <QStatusBar>
#include <QTimer>

#include <cmath>
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
    auto scaleBy = [this, view](double f) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fontScale = f == 0 ? 1.0 : a.fontScale * f;
        // the window the menu belongs to (the menu itself is a window of its own)
        setTextScale(view->parentWidget() ? view->parentWidget()->window() : nullptr, a);
    };
    QAction *larger = view->addAction(tr("&Larger text"), QKeySequence::ZoomIn, this, [scaleBy] { scaleBy(1.15); });
    larger->setObjectName(QStringLiteral("largerText"));
    larger->setShortcuts({QKeySequence(QKeySequence::ZoomIn), QKeySequence(tr("Ctrl+="))}); // = is + unshifted
    view->addAction(tr("&Smaller text"), QKeySequence::ZoomOut, this, [scaleBy] { scaleBy(1 / 1.15); })
        ->setObjectName(QStringLiteral("smallerText"));
    view->addAction(tr("&Reset text size"), QKeySequence(tr("Ctrl+0")), this, [scaleBy] { scaleBy(0); })
        ->setObjectName(QStringLiteral("resetText"));
    connect(AppearanceManager::instance(), &AppearanceManager::changed, this, &AppearanceMenu::sync);
}

void AppearanceMenu::setTextScale(QWidget *window, const Appearance &a)
{
    auto *am = AppearanceManager::instance();
    const Appearance before = am->appearance();
    const bool sized = window && window->isVisible() && window->screen()
                       && !(window->windowState() & (Qt::WindowMaximized | Qt::WindowFullScreen | Qt::WindowMinimized));
    const QRect geometry = sized ? window->geometry() : QRect();
    // the size the window had before its first step away from the normal text: given back by the
    // step that returns to it (where the larger text's minimum sizes had grown it)
    if (sized && before.fontScale == 1.0 && a.fontScale != 1.0)
        m_normalTextGeometry = geometry;
    if (m_step.window)
        m_step.window->removeEventFilter(this);
    m_step = {};
    am->setAppearance(a);
    if (!sized)
        return;
    if (am->appearance().fontScale == 1.0 && m_normalTextGeometry.isValid()) {
        const QRect back = m_normalTextGeometry;
        m_normalTextGeometry = QRect();
        // once the layouts have taken the smaller text (their minimum sizes still hold the larger one)
        QTimer::singleShot(0, window, [window, back] {
            for (int pass = 0; pass < 4; ++pass)
                QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
            if (!(window->windowState() & (Qt::WindowMaximized | Qt::WindowFullScreen)) && window->geometry() != back)
                window->setGeometry(back);
        });
        return;
    }
    if (am->appearance().fontScale <= before.fontScale)
        return; // smaller text needs no more room
    // the widgets take the new font in posted events and the layouts' minimum sizes follow over the
    // next few: until then (a second at most) a minimum past the screen refuses the step
    m_step = {window, before, geometry, am->appearance().fontScale};
    if (auto *main = qobject_cast<QMainWindow *>(window)) // a refusal of the step before is stale now
        main->statusBar()->clearMessage();
    window->installEventFilter(this);
    QTimer::singleShot(0, this, [this] { fitTextStep(); });
    QTimer::singleShot(1000, this, [this, window] {
        if (m_step.window == window) {
            window->removeEventFilter(this);
            m_step = {};
        }
    });
}

bool AppearanceMenu::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_step.window && (event->type() == QEvent::LayoutRequest || event->type() == QEvent::Resize))
        QTimer::singleShot(0, this, [this] { fitTextStep(); }); // once the window has taken it
    return QObject::eventFilter(watched, event);
}

void AppearanceMenu::fitTextStep()
{
    QWidget *w = m_step.window;
    auto *am = AppearanceManager::instance();
    if (!w || !w->isVisible() || !w->screen() || am->appearance().fontScale != m_step.scale)
        return; // gone, or another step since
    const QRect free = w->screen()->availableGeometry();
    const QSize frame = w->frameGeometry().size() - w->geometry().size(); // the window manager's, if any
    const QSize least = w->minimumSize().expandedTo(w->minimumSizeHint());
    if (least.width() + frame.width() <= free.width() && least.height() + frame.height() <= free.height()
        && w->width() + frame.width() <= std::max(free.width(), m_step.geometry.width() + frame.width()))
        return;
    // larger text whose layouts no longer fit the screen: the window would grow past it and cut the
    // docks at its edge; the step is refused, and the window keeps its size
    const auto step = m_step;
    w->removeEventFilter(this);
    m_step = {};
    am->setAppearance(step.before);
    for (int pass = 0; pass < 4; ++pass)
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    // the growth to the larger text's minimum may already be on its way from the window system:
    // the window's own size again once it has come
    const QPointer<QWidget> guard(w);
    for (int ms : {0, 100, 300, 700})
        QTimer::singleShot(ms, this, [guard, step] {
            if (guard && guard->geometry() != step.geometry
                && !(guard->windowState() & (Qt::WindowMaximized | Qt::WindowFullScreen)))
                guard->setGeometry(step.geometry);
        });
    // said once the restyle back and the geometry's restores (above) are done: the restyle's queued
    // work shows the status line again, under a message shown before it
    const QString why = tr("Larger text does not fit on this screen (%1 × %2 px): the text stays at %3 %.")
                            .arg(free.width())
                            .arg(free.height())
                            .arg(int(std::lround(step.before.fontScale * 100)));
    if (auto *main = qobject_cast<QMainWindow *>(w))
        QTimer::singleShot(800, main, [main, why] { main->statusBar()->showMessage(why, 8000); });
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
