// SPDX-License-Identifier: GPL-3.0-or-later
#include "teaching/lessonpanel.h"

#include "teaching/presets.h"

#include <QComboBox>
#include <QEvent>
#include <QLabel>
#include <QSignalBlocker>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace attnviz::ui {

LessonPanel::LessonPanel(QWidget *parent) : QWidget(parent)
{
    auto *l = new QVBoxLayout(this);
    l->setContentsMargins(6, 6, 6, 6);
    m_combo = new QComboBox(this);
    m_combo->setObjectName(QStringLiteral("presetCombo"));
    // the longest title must not set the column's (and the window's) minimum width: elided instead
    m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_combo->setMinimumContentsLength(16);
    m_combo->addItem(tr("Choose a seed demonstration…"), QString());
    QString lastSeed;
    for (const Preset &p : presets()) {
        if (p.seed != lastSeed) {
            m_combo->insertSeparator(m_combo->count());
            lastSeed = p.seed;
        }
        m_combo->addItem(QStringLiteral("%1 · %2").arg(p.seed, p.title), p.id);
    }
    l->addWidget(m_combo);
    m_text = new QTextBrowser(this);
    m_text->setObjectName(QStringLiteral("lessonText"));
    m_text->setOpenLinks(false);
    l->addWidget(m_text, 1);
    // a column beside the views: about 48 characters wide, never wider
    setMaximumWidth(std::max(320, fontMetrics().averageCharWidth() * 48));
    connect(m_combo, qOverload<int>(&QComboBox::activated), this, [this](int i) {
        const QString id = m_combo->itemData(i).toString();
        if (!id.isEmpty())
            emit presetChosen(id);
    });
    render();
}

void LessonPanel::showPreset(const Preset *p)
{
    m_shown = p;
    m_current = p ? p->id : QString();
    m_edited = false;
    const QSignalBlocker block(m_combo);
    m_combo->setCurrentIndex(p ? std::max(0, m_combo->findData(p->id)) : 0);
    render();
}

void LessonPanel::changeEvent(QEvent *e)
{
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange) // presentation mode: the column grows with the text
        setMaximumWidth(std::max(320, fontMetrics().averageCharWidth() * 48));
}

void LessonPanel::markEdited()
{
    if (!m_shown || m_edited)
        return;
    m_edited = true;
    m_current.clear();
    render();
}

QString LessonPanel::text() const { return m_text->toPlainText(); }

void LessonPanel::render()
{
    if (!m_shown) {
        m_text->setHtml(tr("<p>Every demonstration of the five seed notebooks is a preset: it sets the sentence, "
                           "the word vectors, every control and the view, and explains here what to look at. "
                           "Every control stays live: change one and watch every stage follow.</p>"
                           "<p>Presets are also in the <b>Presets</b> menu; side-by-side versions are in "
                           "<b>Compare</b>.</p>"));
        return;
    }
    QString html = QStringLiteral("<h3>%1</h3><p><i>%2</i></p><p>%3</p>")
                       .arg(m_shown->title.toHtmlEscaped(), seedTitle(m_shown->seed).toHtmlEscaped(),
                            m_shown->explanation.toHtmlEscaped());
    if (m_edited)
        html += tr("<p><i>The controls have changed since this preset was applied: the numbers above describe the "
                   "preset, the views show your changes.</i></p>");
    m_text->setHtml(html);
}

} // namespace attnviz::ui
