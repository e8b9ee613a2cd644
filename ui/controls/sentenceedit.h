// SPDX-License-Identifier: GPL-3.0-or-later
// A plain-text editor for a sentence. Pasted text is cleaned: bytes that are not UTF-8 arrive as
// U+FFFD (reported through pasteReport), control characters other than newline and tab are
// dropped, so that anything on the clipboard gives a usable sentence. Its height is a number of
// lines of its font, kept when the text size changes.
#pragma once

#include <QPlainTextEdit>

namespace attnviz::ui {

class SentenceEdit : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit SentenceEdit(QWidget *parent = nullptr);

    // The cleaning applied to pasted text; `replaced` counts U+FFFD characters (invalid bytes).
    static QString cleanText(const QString &text, int *replaced = nullptr);
    // Decodes clipboard bytes as UTF-8, invalid sequences becoming U+FFFD.
    static QString decodeBytes(const QByteArray &bytes, int *replaced = nullptr);

    QSize sizeHint() const override;
    // At most this many lines tall, in the current font (larger text keeps them whole).
    void setVisibleLines(int lines);

signals:
    void pasteReport(const QString &message);

protected:
    void insertFromMimeData(const QMimeData *source) override;
    void changeEvent(QEvent *event) override;

private:
    void fitLines();
    int m_lines = 0; // 0: no maximum
};

} // namespace attnviz::ui
