// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/sentenceedit.h"

#include <QEvent>
#include <QMimeData>
#include <QStringDecoder>

namespace attnviz::ui {

SentenceEdit::SentenceEdit(QWidget *parent)
    : QPlainTextEdit(parent)
{
    setTabChangesFocus(true);
    setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
}

QSize SentenceEdit::sizeHint() const
{
    return QSize(600, fontMetrics().lineSpacing() * 2 + 14);
}

void SentenceEdit::setVisibleLines(int lines)
{
    m_lines = lines;
    fitLines();
}

void SentenceEdit::fitLines()
{
    if (m_lines > 0)
        setMaximumHeight(fontMetrics().lineSpacing() * m_lines + 14);
}

void SentenceEdit::changeEvent(QEvent *event)
{
    QPlainTextEdit::changeEvent(event);
    if (event->type() == QEvent::FontChange)
        fitLines();
}

QString SentenceEdit::decodeBytes(const QByteArray &bytes, int *replaced)
{
    QStringDecoder dec(QStringDecoder::Utf8);
    QString s = dec.decode(bytes);
    return cleanText(s, replaced);
}

QString SentenceEdit::cleanText(const QString &text, int *replaced)
{
    QString out;
    out.reserve(text.size());
    int bad = 0;
    for (QChar c : text) {
        if (c == QChar::ReplacementCharacter)
            ++bad;
        if (c.unicode() < 0x20 && c != QLatin1Char('\n') && c != QLatin1Char('\t'))
            continue;
        if (c.unicode() == 0x7f)
            continue;
        out += c;
    }
    if (replaced)
        *replaced = bad;
    return out;
}

void SentenceEdit::insertFromMimeData(const QMimeData *source)
{
    if (!source)
        return;
    int replaced = 0;
    QString text;
    if (source->hasFormat(QStringLiteral("text/plain")))
        text = decodeBytes(source->data(QStringLiteral("text/plain")), &replaced);
    else if (source->hasText())
        text = cleanText(source->text(), &replaced);
    else
        return;
    insertPlainText(text);
    if (replaced > 0)
        emit pasteReport(tr("The pasted text was not valid UTF-8: %n character(s) replaced by �.", nullptr, replaced));
}

} // namespace attnviz::ui
