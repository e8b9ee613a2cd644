// SPDX-License-Identifier: GPL-3.0-or-later
// DockFold: a dock under the main view that folds to its one-line title bar, by hand (the arrow
// at the title's start) or by itself where the window is short (a 1280 × 720 projector, larger
// text), so that the main view keeps kMainShare of the window's height, as the panels of Qt
// Creator and KDevelop give way to the editor.
#pragma once

#include <QObject>

#include <functional>

class QDockWidget;
class QMainWindow;
class QToolButton;
class QWidget;

namespace attnviz::ui {

class DockFold : public QObject {
    Q_OBJECT
public:
    // The main view keeps at least this share of the window's height while the dock can give way.
    static constexpr double kMainShare = 0.55;

    // Gives `dock` (of `window`) a title bar with a fold arrow, its title on one elided line, and
    // its float and close buttons; `mainView` is the widget whose height comes first (the current
    // tab page; null: nothing to fit).
    DockFold(QMainWindow *window, QDockWidget *dock, std::function<QWidget *()> mainView);

    bool folded() const { return m_folded; }
    // Folds or unfolds by hand: fit() keeps that choice from then on (an unfolded dock still gives
    // way down to a readable chart, never folds by itself).
    void setFolded(bool folded);
    // The least height the dock's chart reads in, beyond its own minimum (its margins and a few
    // lines of data, measured by the view): the dock folds where that does not fit.
    void setReadableChartHeight(std::function<int()> height) { m_chartHeight = std::move(height); }
    // The arrow in the title bar (folds and unfolds by hand).
    QToolButton *foldButton() const { return m_button; }

    // On a resize or a change of text size: the dock folds where even a readable chart (six lines
    // of text, or the least height its view reads in) would leave the main view less than its
    // share (a 1280 × 720 screen, larger text): folded rather than squeezed,
    // and unfolds by itself once the window has room for that chart again; unfolded, it takes at
    // most a quarter of the window and no more than leaves the main view its share. Nothing where
    // the dock is hidden, floating or not under the main view.
    void fit();

signals:
    void foldedChanged(bool folded);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void apply(bool folded);
    int readableHeight() const; // the title bar and six lines, or the chart's least height: the least a chart reads in
    QMainWindow *m_window;
    QDockWidget *m_dock;
    QWidget *m_content = nullptr; // holds the dock's own widget; its maximum height 0 folds the dock
    QToolButton *m_button = nullptr;
    std::function<QWidget *()> m_mainView;
    std::function<int()> m_chartHeight;
    bool m_folded = false;
    bool m_byHand = false;    // the user folded or unfolded: fit() never folds nor unfolds again
    int m_openHeight = 230;   // the dock's height before it folded, which it takes again unfolding
    bool m_fitQueued = false;
};

} // namespace attnviz::ui
