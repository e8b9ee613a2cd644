// SPDX-License-Identifier: GPL-3.0-or-later
// FrameFit: the window's whole frame, not its client area alone, within the screen's free area.
#include "window/framefit.h"

#include <QEvent>
#include <QScreen>
#include <QTimer>
#include <QWidget>

#include <algorithm>

namespace attnviz::ui {

namespace {
// How long to wait for a window manager's frame: openbox frames a new window within a few hundred
// milliseconds; without a window manager the frame never comes.
constexpr int kWaitMs = 3000;
} // namespace

QRect FrameFit::fitted(const QRect &client, const QMargins &frame, const QRect &free)
{
    const int w = std::max(1, std::min(client.width(), free.width() - frame.left() - frame.right()));
    const int h = std::max(1, std::min(client.height(), free.height() - frame.top() - frame.bottom()));
    // the frame's left/top edge inside free, and its right/bottom edge too where the size allows
    int x = std::min(client.x(), free.x() + free.width() - frame.right() - w);
    int y = std::min(client.y(), free.y() + free.height() - frame.bottom() - h);
    x = std::max(x, free.x() + frame.left());
    y = std::max(y, free.y() + frame.top());
    return QRect(x, y, w, h);
}

FrameFit::FrameFit(QWidget *window)
    : QObject(window)
    , m_window(window)
    , m_size(window->size())
{
    setObjectName(QStringLiteral("frameFit"));
    window->installEventFilter(this);
    for (int ms : {0, 250, 1000})
        QTimer::singleShot(ms, this, [this] { check(); });
    QTimer::singleShot(kWaitMs, this, [this] {
        m_done = true;
        deleteLater();
    });
}

void FrameFit::keepOnScreen(QWidget *window) { new FrameFit(window); }

bool FrameFit::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_window && !m_done && (event->type() == QEvent::Move || event->type() == QEvent::Resize))
        QTimer::singleShot(0, this, [this] { check(); }); // once the window has taken the change
    return QObject::eventFilter(watched, event);
}

void FrameFit::check()
{
    if (m_done || !m_window->isVisible() || !m_window->screen())
        return;
    if (m_window->windowState() & (Qt::WindowMaximized | Qt::WindowFullScreen | Qt::WindowMinimized)) {
        m_done = true; // the window manager or the user sized it: theirs
        return;
    }
    if (m_window->size() != m_size) {
        m_done = true; // sized by someone else since
        return;
    }
    const QRect client = m_window->geometry();
    const QRect outer = m_window->frameGeometry();
    if (outer == client)
        return; // no frame yet (or none at all)
    m_done = true;
    const QMargins frame(client.left() - outer.left(), client.top() - outer.top(), outer.right() - client.right(),
                         outer.bottom() - client.bottom());
    const QRect free = m_window->screen()->availableGeometry();
    const QRect fit = fitted(client, frame, free);
    if (fit != client)
        m_window->setGeometry(fit);
}

} // namespace attnviz::ui
