// SPDX-License-Identifier: GPL-3.0-or-later
// FrameFit: a first start's window sized to the screen's free area keeps its whole frame on it once
// a window manager has framed it (the title bar above, the borders around), so that nothing of the
// window, its status bar included, lies off the screen.
#pragma once

#include <QMargins>
#include <QObject>
#include <QRect>
#include <QSize>

class QWidget;

namespace attnviz::ui {

class FrameFit : public QObject {
    Q_OBJECT
public:
    // The client area `client`, moved and shrunk as little as needed so that it and its `frame`
    // (the frame's width on each side) lie inside `free` (the screen's available geometry). The
    // client keeps its size where that already fits, and never gets smaller than 1 × 1.
    static QRect fitted(const QRect &client, const QMargins &frame, const QRect &free);

    // Watches `window` (shown, or about to be) for its frame: the first time the window manager
    // gives it one, the window is fitted into its screen's available geometry, frame included.
    // Gives up after a few seconds (no window manager: nothing to do), and where anyone else gives
    // the window another size first (a session, a test, the user). Owned by the window.
    static void keepOnScreen(QWidget *window);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    explicit FrameFit(QWidget *window);
    void check(); // fits the window once its frame is known, then stops
    QWidget *m_window;
    QSize m_size; // the size the window was given: another one is someone else's choice
    bool m_done = false;
};

} // namespace attnviz::ui
