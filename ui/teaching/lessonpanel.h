// SPDX-License-Identifier: GPL-3.0-or-later
// The "Lesson" dock: pick a preset (every seed demonstration) and read its explanation beside the
// views. Choosing one asks the window to apply it; the panel only shows text. The combo elides a
// title too long for it ("…", the whole title in its tooltip); in presentation mode the column takes
// the width at which the text, up to the last number it quotes, is in view without scrolling.
#pragma once

#include <QWidget>

class QComboBox;
class QPushButton;
class QToolButton;
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
    // The first start's welcome: what attnviz is and where the lessons are (no preset shown).
    void showWelcome();
    bool welcomeShown() const { return m_welcome; }
    // The preset whose text is shown, edited since or not ("" for none).
    QString shownId() const;
    // The lesson `delta` places after (1) or before (-1) `id` in teaching order; the first lesson
    // going forward from none; "" past either end.
    static QString neighbourId(const QString &id, int delta);
    QPushButton *nextButton() const { return m_nextButton; }
    QPushButton *previousButton() const { return m_previousButton; }
    QSize sizeHint() const override { return QSize(280, 320); } // beside the views, not instead of them
    // Presentation mode (PresentationMode sets it): the column's width follows the text (at most
    // 36 % of the window's), see fitWidth().
    void setPresenting(bool on);
    bool presenting() const { return m_presenting; }

protected:
    void changeEvent(QEvent *e) override;
    void resizeEvent(QResizeEvent *e) override;
    bool eventFilter(QObject *o, QEvent *e) override; // the window's resizes, while presenting

signals:
    void presetChosen(const QString &id);
    // Next lesson (1) / Previous lesson (-1): the window applies LessonPanel::neighbourId's lesson.
    void stepRequested(int delta);

private:
    QComboBox *m_combo;
    QTextBrowser *m_text;
    QPushButton *m_previousButton, *m_nextButton;
    // presenting: ◀ ▶ beside the lesson list, where they take no line of the text's height
    QToolButton *m_presentPrevious, *m_presentNext;
    bool m_welcome = false;
    void updateStepButtons();
    QString m_current;
    const Preset *m_shown = nullptr;
    bool m_edited = false;
    bool m_presenting = false;
    int m_fittedFor = -1; // the window's width the column was last fitted at
    void render();
    // The panel's width limits: in the window about 48 characters at most; presenting, the least
    // width (up to the cap) at which the text shows whole without scrolling at the panel's present
    // height, or else up to the last quoted number, or else the cap.
    void fitWidth();
};

} // namespace attnviz::ui
