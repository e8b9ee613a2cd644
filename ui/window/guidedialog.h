// SPDX-License-Identifier: GPL-3.0-or-later
// Help ▸ attnviz guide (F1): the user guide — what each view shows and how to read it, the lessons,
// every keyboard shortcut — rendered from resources/guide/guide.md, the same text as the README's
// tour. Not modal: the window stays live beside it.
#pragma once

#include <QDialog>

class QTextBrowser;

namespace attnviz::ui {

class GuideDialog : public QDialog {
    Q_OBJECT
public:
    explicit GuideDialog(QWidget *parent = nullptr);

    // The guide's Markdown as compiled into the program.
    static QString markdown();
    // Scrolls to the heading that starts with `heading` ("Keyboard shortcuts"); false when none does.
    bool showSection(const QString &heading);
    QTextBrowser *browser() const { return m_text; }

private:
    QTextBrowser *m_text;
};

} // namespace attnviz::ui
