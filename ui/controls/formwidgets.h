// SPDX-License-Identifier: GPL-3.0-or-later
// Small builders shared by the control groups (ControlPanel, StackControls).
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QList>
#include <QPair>

namespace attnviz::ui {

// A combo box named `name` (tests find controls by object name) holding (text, value) items.
inline QComboBox *combo(QWidget *parent, const char *name, const QList<QPair<QString, int>> &items)
{
    auto *c = new QComboBox(parent);
    c->setObjectName(QLatin1String(name));
    for (const auto &[text, value] : items)
        c->addItem(text, value);
    return c;
}

// A word-wrapped explanatory label in a slightly smaller font.
inline QLabel *note(QWidget *parent)
{
    auto *l = new QLabel(parent);
    l->setWordWrap(true);
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    l->setFont(f);
    return l;
}

} // namespace attnviz::ui
