// SPDX-License-Identifier: GPL-3.0-or-later
#include "teaching/lessonpanel.h"

#include "teaching/presets.h"

#include <QAbstractTextDocumentLayout>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QStyleOptionComboBox>
#include <QStylePainter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <memory>

namespace attnviz::ui {

namespace {

// QComboBox draws its current text clipped at the edge of its field ("tiny · Induction:" in a narrow
// column); this one draws it elided with "…", the whole text in its tooltip. Qt has no
// option for it: the label is drawn here as QComboBox::paintEvent draws it, with the text elided.
class ElidingComboBox : public QComboBox {
public:
    explicit ElidingComboBox(QWidget *parent) : QComboBox(parent)
    {
        connect(this, &QComboBox::currentIndexChanged, this, [this] { setToolTip(currentText()); });
    }

protected:
    void paintEvent(QPaintEvent *) override
    {
        QStylePainter painter(this);
        painter.setPen(palette().color(QPalette::Text));
        QStyleOptionComboBox opt;
        initStyleOption(&opt);
        painter.drawComplexControl(QStyle::CC_ComboBox, opt);
        const QRect field = style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, this);
        // the label is drawn 1 px inside the field on each side (QCommonStyle, CE_ComboBoxLabel)
        opt.currentText = fontMetrics().elidedText(opt.currentText, Qt::ElideRight, field.width() - 2);
        painter.drawControl(QStyle::CE_ComboBoxLabel, opt);
    }
};

} // namespace

LessonPanel::LessonPanel(QWidget *parent) : QWidget(parent)
{
    auto *l = new QVBoxLayout(this);
    l->setContentsMargins(6, 6, 6, 6);
    m_combo = new ElidingComboBox(this);
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
    // presenting, the steps sit beside the list (the text keeps the column's height; Alt+→ / Alt+← too)
    auto *top = new QHBoxLayout;
    top->setContentsMargins(0, 0, 0, 0);
    top->addWidget(m_combo, 1);
    m_presentPrevious = new QToolButton(this);
    m_presentPrevious->setObjectName(QStringLiteral("presentPreviousLesson"));
    m_presentPrevious->setText(QStringLiteral("◀"));
    m_presentPrevious->setToolTip(tr("The lesson before this one (Alt+Left)"));
    m_presentNext = new QToolButton(this);
    m_presentNext->setObjectName(QStringLiteral("presentNextLesson"));
    m_presentNext->setText(QStringLiteral("▶"));
    m_presentNext->setToolTip(tr("The next lesson (Alt+Right)"));
    for (QToolButton *b : {m_presentPrevious, m_presentNext}) {
        b->setFocusPolicy(Qt::NoFocus);
        b->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Preferred);
        b->hide();
        top->addWidget(b);
    }
    connect(m_presentPrevious, &QToolButton::clicked, this, [this] { emit stepRequested(-1); });
    connect(m_presentNext, &QToolButton::clicked, this, [this] { emit stepRequested(1); });
    l->addLayout(top);
    // the lessons in order, one click (or Alt+→ / Alt+←) each
    auto *steps = new QHBoxLayout;
    steps->setContentsMargins(0, 0, 0, 0);
    m_previousButton = new QPushButton(tr("◀ Previous lesson"), this);
    m_previousButton->setObjectName(QStringLiteral("previousLessonButton"));
    m_previousButton->setToolTip(tr("The lesson before this one (Alt+Left)"));
    m_nextButton = new QPushButton(tr("Next lesson ▶"), this);
    m_nextButton->setObjectName(QStringLiteral("nextLessonButton"));
    m_nextButton->setToolTip(tr("The next lesson (Alt+Right)"));
    for (QPushButton *b : {m_previousButton, m_nextButton}) {
        b->setFocusPolicy(Qt::NoFocus); // the arrows stay with the view (presentation steps)
        b->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed); // never widens the column
        steps->addWidget(b);
    }
    connect(m_previousButton, &QPushButton::clicked, this, [this] { emit stepRequested(-1); });
    connect(m_nextButton, &QPushButton::clicked, this, [this] { emit stepRequested(1); });
    l->addLayout(steps);
    m_text = new QTextBrowser(this);
    m_text->setObjectName(QStringLiteral("lessonText"));
    m_text->setOpenLinks(false);
    m_text->setWordWrapMode(QTextOption::WordWrap); // lines break between words, never inside one
    l->addWidget(m_text, 1);
    m_text->installEventFilter(this);
    fitWidth();
    connect(m_combo, qOverload<int>(&QComboBox::activated), this, [this](int i) {
        const QString id = m_combo->itemData(i).toString();
        if (!id.isEmpty())
            emit presetChosen(id);
    });
    render();
}

QString LessonPanel::neighbourId(const QString &id, int delta)
{
    const std::vector<Preset> &all = presets();
    int at = -1;
    for (size_t i = 0; i < all.size(); ++i)
        if (all[i].id == id)
            at = int(i);
    const int next = at < 0 ? (delta > 0 ? 0 : -1) : at + delta;
    return next >= 0 && next < int(all.size()) ? all[size_t(next)].id : QString();
}

QString LessonPanel::shownId() const { return m_shown ? m_shown->id : QString(); }

void LessonPanel::updateStepButtons()
{
    // from the lesson shown (or, after an edit, the one the text still describes)
    const QString id = m_shown ? m_shown->id : QString();
    m_previousButton->setEnabled(!neighbourId(id, -1).isEmpty());
    m_nextButton->setEnabled(!neighbourId(id, 1).isEmpty());
    m_presentPrevious->setEnabled(m_previousButton->isEnabled());
    m_presentNext->setEnabled(m_nextButton->isEnabled());
    m_nextButton->setText(id.isEmpty() ? tr("First lesson ▶") : tr("Next lesson ▶"));
}

void LessonPanel::showWelcome()
{
    m_welcome = true;
    showPreset(nullptr);
}

void LessonPanel::showPreset(const Preset *p)
{
    if (p)
        m_welcome = false;
    m_shown = p;
    m_current = p ? p->id : QString();
    m_edited = false;
    const QSignalBlocker block(m_combo);
    m_combo->setCurrentIndex(p ? std::max(0, m_combo->findData(p->id)) : 0);
    m_combo->setToolTip(m_combo->currentText()); // (the signal that sets it is blocked here)
    render();
}

void LessonPanel::changeEvent(QEvent *e)
{
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange) // presentation mode: the column grows with the text
        fitWidth();
}

void LessonPanel::resizeEvent(QResizeEvent *e)
{
    QWidget::resizeEvent(e);
    if (m_presenting) // the width it needs depends on the height it has
        fitWidth();
}

void LessonPanel::setPresenting(bool on)
{
    if (on == m_presenting)
        return;
    m_presenting = on;
    // presenting, the text has the column's height to itself (the keys step the lessons: Alt+Right)
    m_previousButton->setVisible(!on);
    m_nextButton->setVisible(!on);
    m_presentPrevious->setVisible(on);
    m_presentNext->setVisible(on);
    if (on)
        window()->installEventFilter(this); // the cap is a share of the window's width
    else
        window()->removeEventFilter(this);
    fitWidth();
}

bool LessonPanel::eventFilter(QObject *o, QEvent *e)
{
    if (m_presenting && o == window() && e->type() == QEvent::Resize)
        fitWidth();
    // the text's own font arrives after the panel's (the panel's FontChange measured the old one)
    if (m_presenting && o == m_text && e->type() == QEvent::FontChange)
        fitWidth();
    return QWidget::eventFilter(o, e);
}

void LessonPanel::fitWidth()
{
    const int usual = std::max(320, fontMetrics().averageCharWidth() * 48); // a column beside the views
    if (!m_presenting) {
        m_fittedFor = -1;
        setMinimumHeight(0);
        setMinimumWidth(0);
        setMaximumWidth(usual);
        return;
    }
    const int cap = std::max(280, int(window()->width() * 0.36)); // the view keeps most of the screen
    const QMargins m = layout()->contentsMargins();
    const int chrome = m.left() + m.right() + 2 * m_text->frameWidth();
    // the viewport's height without a scroll bar, less a few pixels (rounding in the document layout)
    const int room = m_text->height() - 2 * m_text->frameWidth() - 4;
    // the text to keep in view: all of it, or else up to the end of the last number it quotes
    const QString plain = m_text->toPlainText();
    int quotedEnd = -1;
    if (m_shown)
        for (const QString &q : quotedNumbers(*m_shown))
            if (const qsizetype at = plain.lastIndexOf(q); at >= 0)
                quotedEnd = std::max(quotedEnd, int(at + q.size()));
    const std::unique_ptr<QTextDocument> doc(m_text->document()->clone());
    doc->setDefaultFont(m_text->font());
    doc->setDocumentMargin(m_text->document()->documentMargin());
    QTextOption wrap = doc->defaultTextOption();
    wrap.setWrapMode(m_text->wordWrapMode());
    doc->setDefaultTextOption(wrap);
    // the bottom of the text (to = -1) or of the character before `to`, laid out `width` wide
    // laid out beside a vertical scroll bar: a bar shown while the text did not fit yet stays when
    // the text fits only without it (Qt keeps it, and the text then needs it)
    const int bar = m_text->verticalScrollBar()->sizeHint().width();
    auto bottomAt = [&](int width, int to) {
        doc->setTextWidth(width - chrome - bar);
        if (to < 0)
            return doc->documentLayout()->documentSize().height();
        const QTextBlock b = doc->findBlock(std::max(0, to - 1));
        const QTextLine line = b.layout()->lineForTextPosition(std::max(0, to - 1 - b.position()));
        return doc->documentLayout()->blockBoundingRect(b).top() + (line.isValid() ? line.y() + line.height() : 0.0);
    };
    // the least width in [lo, cap] at which the text up to `to` fits the room (cap when none)
    const int lo = std::min(cap, usual * 2 / 3);
    auto least = [&](int to) {
        if (bottomAt(cap, to) > room)
            return -1;
        int a = lo, b = cap; // fits at b
        while (a < b) {
            const int mid = (a + b) / 2;
            if (bottomAt(mid, to) <= room)
                b = mid;
            else
                a = mid + 1;
        }
        return b;
    };
    int w = room > 0 ? least(-1) : cap;
    if (w < 0 && quotedEnd >= 0)
        w = least(quotedEnd);
    // too little height even at the cap (the Predictions dock shares the column on a 1280 × 720
    // screen): the column asks for the height that shows the text up to its last quoted number,
    // at most 80 % of the window's; the predictions below it scroll instead
    const int above = height() - m_text->height() + 2 * m_text->frameWidth(); // the combo, the margins
    const int tall = w < 0 ? std::min(int(std::ceil(bottomAt(cap, quotedEnd))) + above + 2, window()->height() * 8 / 10) : 0;
    if (minimumHeight() != tall)
        setMinimumHeight(tall);
    if (w < 0)
        w = cap;
    // never narrower again at the same window width: a narrower column can be given a new height
    // (the Predictions dock shares it), and width and height then chased each other forever
    if (window()->width() == m_fittedFor)
        w = std::max(w, minimumWidth());
    m_fittedFor = window()->width();
    if (minimumWidth() != w || maximumWidth() != w) {
        setMinimumWidth(w);
        setMaximumWidth(w);
    }
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
    updateStepButtons();
    if (!m_shown && m_welcome) {
        m_text->setHtml(tr("<h3>Welcome to attnviz</h3>"
                           "<p>attnviz shows, live, how a transformer's attention reads a sentence: type in the "
                           "editor above and every view follows.</p>"
                           "<p><b>Start with the lessons.</b> Each one sets the sentence, the controls and the view, "
                           "and says here what to look at. Press <b>First lesson</b> above, then "
                           "<b>Next lesson</b> (Alt+Right) to go on; the list above and the <b>Presets</b> menu "
                           "have them all.</p>"
                           "<p><b>Help ▸ attnviz guide</b> (F1) explains every view and lists every key: F11 "
                           "presents full screen, → and ← step through a lesson, Ctrl+Z undoes a change.</p>"));
        if (m_presenting)
            fitWidth();
        return;
    }
    if (!m_shown) {
        m_text->setHtml(tr("<p>Every demonstration of the five seed notebooks is a preset: it sets the sentence, "
                           "the word vectors, every control and the view, and explains here what to look at. "
                           "Every control stays live: change one and watch every stage follow.</p>"
                           "<p>Presets are also in the <b>Presets</b> menu; side-by-side versions are in "
                           "<b>Compare</b>.</p>"));
        if (m_presenting)
            fitWidth();
        return;
    }
    QString html = QStringLiteral("<h3>%1</h3><p><i>%2</i></p><p>%3</p>")
                       .arg(m_shown->title.toHtmlEscaped(), seedTitle(m_shown->seed).toHtmlEscaped(),
                            m_shown->explanation.toHtmlEscaped());
    if (m_edited)
        html += tr("<p><i>The controls have changed since this preset was applied: the numbers above describe the "
                   "preset, the views show your changes.</i></p>");
    m_text->setHtml(html);
    if (m_presenting)
        fitWidth();
}

} // namespace attnviz::ui
