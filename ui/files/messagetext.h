// SPDX-License-Identifier: GPL-3.0-or-later
// Text from files as the window shows it (dialogs, the status bar, problem lists): the core's
// quoteText and printable (attnviz/status.h) for QStrings, so that the window shows what the command
// line prints: control characters (a line break, the ESC of a terminal sequence) as \xNN and a long
// string cut to an excerpt; and message boxes that show their text as plain text, so that a file
// holding "<h1>" or "<img src=...>" is not taken for markup (QMessageBox guesses rich text otherwise).
#pragma once

#include <QString>
#include <QStringList>

class QWidget;

namespace attnviz::ui {

// A value from a file, quoted: "\"mamba\"", "\"x\\x0ay\"", "\"xxxx...xxxx\"... (5.0 MB)".
QString quotedText(const QString &text, int maxBytes = 64);

// A whole message with text from files in it (a core Status message, a path): one line, at most
// `maxBytes` bytes ("... (5.0 MB in all)" past them).
constexpr int kShownBytes = 600;
QString shownText(const QString &message, int maxBytes = kShownBytes);

// Messages as a bulleted list, each through shownText, at most `maxLines` of them
// ("• a\n• b\n… and 97 more").
QString shownList(const QStringList &messages, int maxLines = 20);

// A modal warning whose text is plain text (QMessageBox::warning guesses).
void warnPlain(QWidget *parent, const QString &title, const QString &text);

} // namespace attnviz::ui
