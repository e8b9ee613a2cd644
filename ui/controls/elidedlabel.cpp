// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/elidedlabel.h"

#include <QPainter>
#include <QStyle>

namespace attnviz::ui {

ElidedLabel::ElidedLabel(QWidget *parent)
    : QLabel(parent)
{
    setTextFormat(Qt::PlainText);                          // names from files are never markup
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // never wider than the screen
}

void ElidedLabel::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    const QRect r = contentsRect();
    const QString line = text().section(QLatin1Char('\n'), 0, 0);
    const QString shown = fontMetrics().elidedText(line, Qt::ElideRight, r.width());
    const bool elided = shown != text();
    if (elided != m_elided) {
        m_elided = elided;
        setToolTip(elided ? text() : QString());
    } else if (elided && toolTip() != text()) {
        setToolTip(text());
    }
    style()->drawItemText(&p, r, int(alignment()), palette(), isEnabled(), shown, foregroundRole());
}

} // namespace attnviz::ui
