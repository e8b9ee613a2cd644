// SPDX-License-Identifier: GPL-3.0-or-later
// The "Lesson" dock: pick a preset (every seed demonstration) and read its explanation beside the
// views. Choosing one asks the window to apply it; the panel only shows text.
#pragma once

#include <QWidget>

class QComboBox;
class QTextBrowser;

namespace attnviz::ui {

struct Preset;

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(QWidget *parent = nullptr);

    // Shows `p`'s explanation and selects it in the combo (no signal); nullptr: no preset in use.
    void showPreset(const Preset *p);
    // The id of the preset shown, or "" when the controls were changed since (the text stays,
    // marked as describing the preset the window started from).
    QString currentId() const { return m_current; }
    void markEdited();
    QString text() const;
    QSize sizeHint() const override { return QSize(280, 320); } // beside the views, not instead of them

protected:
    void changeEvent(QEvent *e) override;

signals:
    void presetChosen(const QString &id);

private:
    QComboBox *m_combo;
    QTextBrowser *m_text;
    QString m_current;
    const Preset *m_shown = nullptr;
    bool m_edited = false;
    void render();
};

} // namespace attnviz::ui
