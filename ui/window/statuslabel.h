// SPDX-License-Identifier: GPL-3.0-or-later
// The status line's label: one line that, where the status bar is narrower than its text (the
// Generate controls beside it, presentation mode's larger font), ends in "…" instead of being cut
// mid-word, and shows the whole text as its tooltip then. text() is the whole text as set.
#pragma once

#include <QLabel>

namespace attnviz::ui {

class StatusLabel : public QLabel {
    Q_OBJECT
public:
    explicit StatusLabel(QWidget *parent = nullptr);

    // Whether the last paint had to elide the text.
    bool elided() const { return m_elided; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    bool m_elided = false;
};

} // namespace attnviz::ui
