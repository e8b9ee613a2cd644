// SPDX-License-Identifier: GPL-3.0-or-later
// A label of one line that, where it is narrower than its text, ends in "…" instead of being cut
// mid-word, and shows the whole text as its tooltip then; it never asks for its text's width (it
// does not widen the window). text() is the whole text as set. The status line (beside the Generate
// controls, in presentation mode's larger font), the Compare tab's shared caption and the titles
// of the sentence fields.
#pragma once

#include <QLabel>

namespace attnviz::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget *parent = nullptr);

    // Whether the last paint had to elide the text.
    bool elided() const { return m_elided; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    bool m_elided = false;
};

} // namespace attnviz::ui
