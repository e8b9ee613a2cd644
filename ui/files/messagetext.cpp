// SPDX-License-Identifier: GPL-3.0-or-later
// Text from files as the window shows it (messagetext.h): thin wrappers of the core's quoteText and
// printable, which the command line's messages use too.
#include "files/messagetext.h"

#include "attnviz/status.h"

#include <algorithm>

#include <QMessageBox>

namespace attnviz::ui {

QString quotedText(const QString &text, int maxBytes)
{
    return QString::fromStdString(attnviz::quoteText(text.toStdString(), size_t(std::max(1, maxBytes))));
}

QString shownText(const QString &message, int maxBytes)
{
    return QString::fromStdString(attnviz::printable(message.toStdString(), size_t(std::max(1, maxBytes))));
}

QString shownList(const QStringList &messages, int maxLines)
{
    QStringList lines;
    for (int i = 0; i < messages.size() && i < maxLines; ++i)
        lines << QStringLiteral("• ") + shownText(messages[i]);
    if (messages.size() > maxLines)
        lines << QObject::tr("… and %L1 more").arg(messages.size() - maxLines);
    return lines.join(QLatin1Char('\n'));
}

void warnPlain(QWidget *parent, const QString &title, const QString &text)
{
    QMessageBox box(QMessageBox::Warning, title, text, QMessageBox::Ok, parent);
    box.setTextFormat(Qt::PlainText);
    box.exec();
}

} // namespace attnviz::ui
