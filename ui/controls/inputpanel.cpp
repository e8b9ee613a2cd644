// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/inputpanel.h"

#include "controls/elidedlabel.h"
#include "controls/sentenceedit.h"
#include "controls/tokenchipsview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace attnviz::ui {

namespace {

QWidget *labelled(const QString &label, QWidget *w, QWidget *parent, QLabel **labelOut = nullptr)
{
    auto *box = new QWidget(parent);
    auto *l = new QVBoxLayout(box);
    l->setContentsMargins(0, 0, 0, 0);
    l->setSpacing(2);
    auto *lab = new ElidedLabel(box); // one line that never sets the window's minimum width
    lab->setText(label);
    if (labelOut)
        *labelOut = lab;
    QFont f = lab->font();
    f.setBold(true);
    lab->setFont(f);
    l->addWidget(lab);
    l->addWidget(w);
    return box;
}

} // namespace

InputPanel::InputPanel(QWidget *parent)
    : QWidget(parent)
{
    auto *input = this;
    auto *il = new QVBoxLayout(input);
    il->setContentsMargins(6, 6, 6, 2);
    m_queryEdit = new SentenceEdit(input);
    m_queryEdit->setObjectName(QStringLiteral("sentenceEdit"));
    m_queryEdit->setPlaceholderText(tr("Type a sentence: every keystroke recomputes."));
    m_queryEdit->setVisibleLines(2);
    m_keyEdit = new SentenceEdit(input);
    m_keyEdit->setObjectName(QStringLiteral("keySentenceEdit"));
    // one line, as tall as the editor: a longer text wrapped and was cut in half
    m_keyEdit->setPlaceholderText(tr("Optional: keys and values from this sentence (cross-attention)"));
    m_keyEdit->setVisibleLines(1);
    m_keyEdit->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    m_queryChips = new TokenChipsView(input);
    m_queryChips->setObjectName(QStringLiteral("queryChips"));
    m_queryChips->setPlaceholder(tr("No tokens yet."));
    m_keyChips = new TokenChipsView(input);
    m_keyChips->setObjectName(QStringLiteral("keyChips"));
    m_keyChips->setVisible(false);
    auto scrolled = [input](TokenChipsView *w) {
        auto *sa = new QScrollArea(input);
        sa->setWidget(w);
        sa->setWidgetResizable(true);
        sa->setFrameShape(QFrame::NoFrame);
        sa->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        // as tall as the chips need, at most three rows, and at least one: where the column is
        // shorter than that (a model's longer help above, a 720 px screen) the layout takes the
        // rows from here and the chips scroll. A fixed height kept its rows while the layout
        // placed the key/value label where it thought they ended, over the third row.
        sa->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
        const int row = w->minimumSizeHint().height();
        sa->setMinimumHeight(row);
        sa->setMaximumHeight(row);
        QObject::connect(w, &TokenChipsView::chipsLaidOut, sa, [sa, row](int height) {
            sa->setMaximumHeight(std::clamp(height, row, 3 * row));
        });
        return sa;
    };
    il->addWidget(labelled(tr("Sentence (queries; keys too unless a key/value sentence is given)"), m_queryEdit, input,
                           &m_queryLabel));
    // one line (the whole text on hover where it is elided): the main view keeps the height
    auto *chipsHelp = m_chipsHelp = new ElidedLabel(input);
    chipsHelp->setObjectName(QStringLiteral("chipsHelp"));
    setModelTokens(QString());
    chipsHelp->setStyleSheet(QStringLiteral("color: palette(mid)"));
    il->addWidget(chipsHelp);
    il->addWidget(scrolled(m_queryChips));
    il->addWidget(m_keyBox = labelled(tr("Key/value sentence (cross-attention)"), m_keyEdit, input));
    auto *keyChipsArea = m_keyChipsArea = scrolled(m_keyChips);
    il->addWidget(keyChipsArea);
    keyChipsArea->setVisible(false);
    connect(m_keyEdit, &QPlainTextEdit::textChanged, this, [this, keyChipsArea] {
        const bool cross = m_takesKeys && !m_keyEdit->toPlainText().trimmed().isEmpty();
        keyChipsArea->setVisible(cross);
        m_keyChips->setVisible(cross);
        emit keySentenceChanged(m_keyEdit->toPlainText());
    });
    connect(m_queryEdit, &QPlainTextEdit::textChanged, this,
            [this] { emit sentenceChanged(m_queryEdit->toPlainText()); });

    // an encoder-decoder model's target: typed (teacher-forced) or, empty, generated from the source
    m_targetEdit = new SentenceEdit(input);
    m_targetEdit->setObjectName(QStringLiteral("targetEdit"));
    m_targetEdit->setPlaceholderText(tr("Empty: generated from the source"));
    m_targetEdit->setVisibleLines(1);
    m_targetEdit->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    m_generate = new QPushButton(tr("Generate"), input);
    m_generate->setObjectName(QStringLiteral("generateTargetButton"));
    m_generate->setToolTip(tr("Empty the target: the decoder's text is generated from the source "
                              "(the folder's generation settings, the beams beside)"));
    m_beams = new QSpinBox(input);
    m_beams->setObjectName(QStringLiteral("beamsSpin"));
    m_beams->setRange(1, 4);
    m_beams->setValue(1);
    m_beams->setPrefix(tr("Beams "));
    m_beams->setToolTip(tr("Beams of the generated target: 1 is greedy search; 2 to 4 beam search as "
                           "generate() runs it, the kept beam's target and its cross-attention shown"));
    connect(m_beams, &QSpinBox::valueChanged, this, &InputPanel::beamsChanged);
    // an mBART folder's source and target languages (their codes go around the texts)
    m_sourceLanguage = new QComboBox(input);
    m_sourceLanguage->setObjectName(QStringLiteral("sourceLanguageCombo"));
    m_sourceLanguage->setToolTip(tr("The source's language: its code follows the source's </s> (mBART-50: leads it)"));
    m_targetLanguage = new QComboBox(input);
    m_targetLanguage->setObjectName(QStringLiteral("targetLanguageCombo"));
    m_targetLanguage->setToolTip(tr("The target's language: mbart-large-cc25's decoder starts at its code; mBART-50's "
                                    "reads it first, and generation is made to begin with it"));
    m_languageArrow = new QLabel(QStringLiteral("→"), input);
    for (QWidget *w : {static_cast<QWidget *>(m_sourceLanguage), static_cast<QWidget *>(m_languageArrow),
                       static_cast<QWidget *>(m_targetLanguage)})
        w->setVisible(false);
    for (QComboBox *c : {m_sourceLanguage, m_targetLanguage})
        connect(c, &QComboBox::activated, this,
                [this] { emit languagesChanged(m_sourceLanguage->currentText(), m_targetLanguage->currentText()); });
    auto *targetRow = new QWidget(input);
    auto *tl = new QHBoxLayout(targetRow);
    tl->setContentsMargins(0, 0, 0, 0);
    tl->addWidget(m_targetEdit, 1);
    tl->addWidget(m_sourceLanguage);
    tl->addWidget(m_languageArrow);
    tl->addWidget(m_targetLanguage);
    tl->addWidget(m_generate);
    tl->addWidget(m_beams);
    m_targetBox = labelled(tr("Target (the decoder's text, teacher-forced)"), targetRow, input);
    auto *tbl = static_cast<QVBoxLayout *>(m_targetBox->layout());
    m_targetNote = new QLabel(m_targetBox);
    m_targetNote->setObjectName(QStringLiteral("targetNote"));
    m_targetNote->setWordWrap(true);
    m_targetNote->setTextFormat(Qt::PlainText);
    m_targetNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tbl->addWidget(m_targetNote);
    m_targetChips = new TokenChipsView(input);
    m_targetChips->setObjectName(QStringLiteral("targetChips"));
    tbl->addWidget(scrolled(m_targetChips));
    il->addWidget(m_targetBox);
    m_targetBox->setVisible(false);
    connect(m_targetEdit, &QPlainTextEdit::textChanged, this, [this] { emit targetChanged(m_targetEdit->toPlainText()); });
    connect(m_generate, &QPushButton::clicked, this, [this] { m_targetEdit->clear(); });

    m_notice = new QLabel(input);
    m_notice->setObjectName(QStringLiteral("notice"));
    m_notice->setWordWrap(true);
    m_notice->setStyleSheet(QStringLiteral("color: #b05a00"));
    m_notice->setVisible(false);
    il->addWidget(m_notice);
    for (SentenceEdit *e : {m_queryEdit, m_keyEdit, m_targetEdit})
        connect(e, &SentenceEdit::pasteReport, this, &InputPanel::showNotice);

}

void InputPanel::showNotice(const QString &text)
{
    m_notice->setText(text);
    m_notice->setVisible(true);
}

void InputPanel::setModelTokens(const QString &modelName, const QString &tokenizer)
{
    if (modelName.isEmpty())
        m_chipsHelp->setText(tr("Tokens — dashed orange: not in the embedding table (a deterministic stand-in "
                                "vector is used); click a token to mask it as padding."));
    else if (tokenizer.startsWith(QLatin1String("WordPiece"), Qt::CaseInsensitive))
        m_chipsHelp->setText(tr("Tokens of %1 — ## starts a piece that continues the word before it, pieces of one "
                                "word are drawn together, [CLS] and [SEP] in violet; click a token to make it "
                                "[MASK]; hover a token for its vocabulary id.")
                                 .arg(modelName));
    else if (tokenizer.startsWith(QLatin1String("byte-level"), Qt::CaseInsensitive))
        m_chipsHelp->setText(tr("Tokens of %1 — ␣ marks a space, pieces of one word are drawn together, the "
                                "tokenizer's own tokens in violet; hover a token for its vocabulary id.")
                                 .arg(modelName));
    else
        m_chipsHelp->setText(tr("Tokens of %1 — pieces of one word are drawn together, the tokenizer's own tokens "
                                "in violet; hover a token for its vocabulary id.")
                                 .arg(modelName));
}

void InputPanel::setTextFields(TextFields fields)
{
    const bool on = fields == TextFields::SourceAndTarget, keys = fields == TextFields::SentenceAndKeys;
    m_encoderDecoder = on;
    m_takesKeys = keys;
    m_targetBox->setVisible(on);
    m_keyBox->setVisible(keys);
    m_keyChipsArea->setVisible(keys && !m_keyEdit->toPlainText().trimmed().isEmpty());
    m_queryLabel->setText(on     ? tr("Source (what the encoder reads)")
                          : keys ? tr("Sentence (queries; keys too unless a key/value sentence is given)")
                                 : tr("Sentence"));
}

int InputPanel::beams() const { return m_beams->value(); }

void InputPanel::setBeams(int beams) { m_beams->setValue(std::clamp(beams, 1, 4)); }

void InputPanel::setDecoderText(const QString &text, bool generated, int beams)
{
    m_generated = generated ? text : QString();
    const QString how = beams > 1 ? tr("the kept beam of %1").arg(beams) : tr("greedy");
    m_targetNote->setText(generated ? tr("Generated (%1): %2").arg(how, text) : QString());
    m_targetNote->setVisible(generated);
}

QString InputPanel::chipsHelpText() const { return m_chipsHelp->text(); }

void InputPanel::setLanguages(const QStringList &codes, const QString &source, const QString &target)
{
    for (QComboBox *c : {m_sourceLanguage, m_targetLanguage}) {
        const QSignalBlocker block(c);
        c->clear();
        c->addItems(codes);
    }
    m_sourceLanguage->setCurrentText(source);
    m_targetLanguage->setCurrentText(target);
    for (QWidget *w : {static_cast<QWidget *>(m_sourceLanguage), static_cast<QWidget *>(m_languageArrow),
                       static_cast<QWidget *>(m_targetLanguage)})
        w->setVisible(!codes.isEmpty());
}

} // namespace attnviz::ui
