// SPDX-License-Identifier: GPL-3.0-or-later
// DockFold: the fold arrow and one-line title bar of a dock under the main view, and the rule by
// which it gives way on a short window.
#include "window/dockfold.h"

#include "controls/elidedlabel.h"

#include <QDockWidget>
#include <QEvent>
#include <QHBoxLayout>
#include <QMainWindow>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {

// Room the main view keeps beyond its share before a folded dock unfolds by itself: the layout's
// rounding never folds it again at once.
constexpr int kUnfoldMargin = 8;

QToolButton *titleButton(QWidget *parent, const QString &name, const QString &tip)
{
    auto *b = new QToolButton(parent);
    b->setObjectName(name);
    b->setAutoRaise(true);
    b->setToolTip(tip);
    b->setAccessibleName(tip);
    b->setFocusPolicy(Qt::NoFocus);
    // as tall as the title's line, not as the button asks: the bar takes no more height than Qt's own
    b->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Ignored);
    return b;
}

} // namespace

DockFold::DockFold(QMainWindow *window, QDockWidget *dock, std::function<QWidget *()> mainView)
    : QObject(dock)
    , m_window(window)
    , m_dock(dock)
    , m_mainView(std::move(mainView))
{
    setObjectName(dock->objectName() + QStringLiteral("Fold"));
    // The dock's widget sits in a holder: a hidden dock widget would shrink the dock to its title's
    // width too; a holder of no height folds it to its title bar and keeps it as wide as its area.
    QWidget *own = dock->widget();
    m_content = new QWidget(dock);
    m_content->setObjectName(dock->objectName() + QStringLiteral("Content"));
    auto *holder = new QVBoxLayout(m_content);
    holder->setContentsMargins(0, 0, 0, 0);
    if (own)
        holder->addWidget(own);
    dock->setWidget(m_content);

    // The title bar: ▾ / ▸, the title on one line (elided, whole in its tooltip), float and close.
    // Mouse events the buttons do not take reach the dock: dragging and double-clicking the title
    // move and float it as before.
    auto *bar = new QWidget(dock);
    bar->setObjectName(dock->objectName() + QStringLiteral("Title"));
    auto *row = new QHBoxLayout(bar);
    row->setContentsMargins(2, 2, 2, 2);
    row->setSpacing(2);
    m_button = titleButton(bar, QStringLiteral("foldButton"), tr("Fold this panel to its title"));
    m_button->setArrowType(Qt::DownArrow);
    auto *title = new ElidedLabel(bar);
    title->setObjectName(QStringLiteral("dockTitle"));
    title->setText(dock->windowTitle());
    connect(dock, &QDockWidget::windowTitleChanged, title, &QLabel::setText);
    auto *floatButton = titleButton(bar, QStringLiteral("floatButton"), tr("Float or dock this panel"));
    floatButton->setIcon(dock->style()->standardIcon(QStyle::SP_TitleBarNormalButton, nullptr, dock));
    auto *closeButton = titleButton(bar, QStringLiteral("closeButton"), tr("Close this panel (View menu brings it back)"));
    closeButton->setIcon(dock->style()->standardIcon(QStyle::SP_TitleBarCloseButton, nullptr, dock));
    row->addWidget(m_button);
    row->addWidget(title, 1);
    row->addWidget(floatButton);
    row->addWidget(closeButton);
    const auto features = [dock, floatButton, closeButton] {
        floatButton->setVisible(dock->features().testFlag(QDockWidget::DockWidgetFloatable));
        closeButton->setVisible(dock->features().testFlag(QDockWidget::DockWidgetClosable));
    };
    features();
    connect(dock, &QDockWidget::featuresChanged, bar, features);
    connect(floatButton, &QToolButton::clicked, dock, [dock] { dock->setFloating(!dock->isFloating()); });
    connect(closeButton, &QToolButton::clicked, dock, &QDockWidget::close);
    connect(m_button, &QToolButton::clicked, this, [this] { setFolded(!m_folded); });
    dock->setTitleBarWidget(bar);

    // a change of text size, a model's editors, a dock shown again: the window lays out anew
    window->installEventFilter(this);
}

void DockFold::setFolded(bool folded)
{
    m_byHand = true;
    if (folded != m_folded)
        apply(folded);
}

int DockFold::readableHeight() const
{
    // the chart's title line, its bars and the key labels under them, in the dock's own text size,
    // and never less than the chart's own least height (larger text's rotated key labels): a dock
    // kept open at less would stay at that least height and take the main view's share
    const int line = m_dock->fontMetrics().lineSpacing();
    const int title = m_dock->titleBarWidget() ? m_dock->titleBarWidget()->sizeHint().height() : line;
    QWidget *own = m_content->layout()->count() > 0 ? m_content->layout()->itemAt(0)->widget() : nullptr;
    const int chart = std::max(own ? std::max(own->minimumSizeHint().height(), own->minimumHeight()) : 0,
                               m_chartHeight ? m_chartHeight() : 0);
    return title + std::max(6 * line, chart);
}

void DockFold::apply(bool folded)
{
    const int height = m_dock->height();
    if (folded && height >= readableHeight())
        m_openHeight = height; // taken again when it unfolds (at most what the window has room for)
    m_folded = folded;
    QWidget *own = m_content->layout()->count() > 0 ? m_content->layout()->itemAt(0)->widget() : nullptr;
    if (own)
        own->setVisible(!folded);
    m_content->setMaximumHeight(folded ? 0 : QWIDGETSIZE_MAX);
    m_button->setArrowType(folded ? Qt::RightArrow : Qt::DownArrow);
    const QString tip = folded ? tr("Unfold this panel") : tr("Fold this panel to its title");
    m_button->setToolTip(tip);
    m_button->setAccessibleName(tip);
    if (!folded && !m_dock->isFloating()) {
        // its height before it folded, at most a quarter of the window
        const int want = std::min(m_openHeight, std::max(readableHeight(), m_window->height() / 4));
        m_window->resizeDocks({m_dock}, {std::max(want, readableHeight())}, Qt::Vertical);
    }
    emit foldedChanged(folded);
}

void DockFold::fit()
{
    QWidget *main = m_mainView ? m_mainView() : nullptr;
    if (!main || !main->isVisible() || !m_dock->isVisible() || m_dock->isFloating()
        || m_window->dockWidgetArea(m_dock) != Qt::BottomDockWidgetArea)
        return;
    const int need = int(std::ceil(kMainShare * m_window->height()));
    const int page = main->height();
    const int height = m_dock->height();
    const int readable = readableHeight();
    if (m_folded) {
        if (m_byHand)
            return;
        // unfolds once it can take a readable chart and leave the main view its share
        const int room = page + height - need - kUnfoldMargin;
        if (std::min({std::max(m_openHeight, readable), m_window->height() / 4, room}) >= readable)
            apply(false);
        return;
    }
    // the most the dock may take and leave the main view its share
    const int room = page + height - need;
    // folds where even a readable chart would leave the main view less than its share
    if (!m_byHand && room < readable) {
        apply(true);
        return;
    }
    // else never more than that room nor a quarter of the window (the main view takes a window's
    // change in height; by hand a readable chart at least), nor less than the dock's own least
    // height: asking for less lays the window out again for nothing, and again
    const int most = std::min({height, m_window->height() / 4, std::max(room, m_byHand ? readable : 0)});
    const int target = std::max({most, m_dock->minimumSizeHint().height(), m_dock->minimumHeight()});
    if (target < height)
        m_window->resizeDocks({m_dock}, {target}, Qt::Vertical);
}

bool DockFold::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_window && event->type() == QEvent::LayoutRequest && !m_fitQueued) {
        m_fitQueued = true; // once the window has laid out
        QTimer::singleShot(0, this, [this] {
            m_fitQueued = false;
            fit();
        });
    }
    return QObject::eventFilter(watched, event);
}

} // namespace attnviz::ui
