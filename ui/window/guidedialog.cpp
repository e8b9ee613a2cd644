// SPDX-License-Identifier: GPL-3.0-or-later
// GuideDialog: the guide's Markdown in a QTextBrowser.
#include "window/guidedialog.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QVBoxLayout>

#include <algorithm>

namespace attnviz::ui {

GuideDialog::GuideDialog(QWidget *parent) : QDialog(parent), m_text(new QTextBrowser(this))
{
    setObjectName(QStringLiteral("guideDialog"));
    setWindowTitle(tr("attnviz guide"));
    m_text->setObjectName(QStringLiteral("guideText"));
    m_text->setOpenExternalLinks(true);
    m_text->setMarkdown(markdown());
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    auto *l = new QVBoxLayout(this);
    l->addWidget(m_text, 1);
    l->addWidget(buttons);
    // about 80 characters wide, most of a small screen tall
    const int em = fontMetrics().averageCharWidth();
    resize(std::max(560, em * 84), std::max(480, fontMetrics().lineSpacing() * 36));
}

QString GuideDialog::markdown()
{
    QFile f(QStringLiteral(":/attnviz/guide/guide.md"));
    if (!f.open(QIODevice::ReadOnly))
        return tr("The guide is missing from this build.");
    return QString::fromUtf8(f.readAll());
}

bool GuideDialog::showSection(const QString &heading)
{
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() > 0 && b.text().startsWith(heading)) {
            QTextCursor c(b);
            m_text->setTextCursor(c);
            // the heading at the top of the view, not merely somewhere in it
            m_text->verticalScrollBar()->setValue(m_text->verticalScrollBar()->maximum());
            m_text->ensureCursorVisible();
            return true;
        }
    }
    return false;
}

} // namespace attnviz::ui
