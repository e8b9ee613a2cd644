// SPDX-License-Identifier: GPL-3.0-or-later
// Small builders shared by the control groups (ControlPanel, StackControls).
#pragma once

#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QList>
#include <QPair>

#include <algorithm>

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

// A word-wrapped explanatory label in a slightly smaller font: 0.9 × its parent's, made again when
// that changes (View ▸ Larger text: a font set on a widget no longer follows its parent's).
inline QLabel *note(QWidget *parent)
{
    class SmallerFont : public QObject {
    public:
        explicit SmallerFont(QLabel *label) : QObject(label), m_label(label) { apply(); }
        bool eventFilter(QObject *, QEvent *e) override
        {
            if (e->type() == QEvent::FontChange || e->type() == QEvent::ApplicationFontChange)
                apply();
            return false;
        }

    private:
        void apply()
        {
            QFont f = m_label->parentWidget() ? m_label->parentWidget()->font() : QApplication::font();
            if (f.pointSizeF() > 0)
                f.setPointSizeF(f.pointSizeF() * 0.9);
            else
                f.setPixelSize(std::max(1, int(f.pixelSize() * 0.9 + 0.5)));
            if (f != m_label->font())
                m_label->setFont(f);
        }
        QLabel *m_label;
    };
    auto *l = new QLabel(parent);
    l->setWordWrap(true);
    auto *follower = new SmallerFont(l);
    l->installEventFilter(follower);
    if (parent)
        parent->installEventFilter(follower);
    return l;
}

// The rows of the forms under `root` whose field is an input: (label, input), the input being the
// field itself or the first input of a field that is a row of widgets (a spin box and its note).
inline QList<QPair<QLabel *, QWidget *>> labelledInputs(QWidget *root)
{
    const auto isInput = [](QWidget *w) {
        return qobject_cast<QAbstractSpinBox *>(w) || qobject_cast<QComboBox *>(w) || qobject_cast<QAbstractSlider *>(w)
            || qobject_cast<QAbstractButton *>(w) || qobject_cast<QLineEdit *>(w);
    };
    QList<QPair<QLabel *, QWidget *>> rows;
    for (QFormLayout *form : root->findChildren<QFormLayout *>()) {
        for (int row = 0; row < form->rowCount(); ++row) {
            QLayoutItem *labelItem = form->itemAt(row, QFormLayout::LabelRole);
            QLayoutItem *fieldItem = form->itemAt(row, QFormLayout::FieldRole);
            auto *label = labelItem ? qobject_cast<QLabel *>(labelItem->widget()) : nullptr;
            QWidget *field = fieldItem ? fieldItem->widget() : nullptr;
            if (!label || !field)
                continue;
            if (!isInput(field))
                for (QWidget *child : field->findChildren<QWidget *>(Qt::FindDirectChildrenOnly))
                    if (isInput(child)) {
                        field = child;
                        break;
                    }
            if (isInput(field))
                rows.append({label, field});
        }
    }
    return rows;
}

// Greys each row label of the forms under `root` with its input (labelledInputs), so that a disabled
// control does not stand beside a label as bright as an enabled one's (the dark theme's white labels
// by grey fields).
inline void greyLabelsWithFields(QWidget *root)
{
    class Follower : public QObject {
    public:
        Follower(QWidget *field, QLabel *label) : QObject(label), m_label(label)
        {
            field->installEventFilter(this);
            label->setEnabled(field->isEnabled());
        }
        bool eventFilter(QObject *watched, QEvent *e) override
        {
            if (e->type() == QEvent::EnabledChange)
                m_label->setEnabled(static_cast<QWidget *>(watched)->isEnabled());
            return false;
        }

    private:
        QLabel *m_label;
    };
    for (const auto &[label, field] : labelledInputs(root))
        new Follower(field, label);
}

} // namespace attnviz::ui
