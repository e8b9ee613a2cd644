// SPDX-License-Identifier: GPL-3.0-or-later
// The window's input strip: the sentence editor, its token chips, the key/value sentence editor
// (cross-attention) with its chips, and a notice line (pasted text that was cleaned, a cut at the
// live token limit). The key chips show only while the key/value sentence has text. An
// encoder-decoder model replaces the key/value sentence with its target (the decoder's text, with
// its chips, the generated text where it is empty, and Generate).
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace attnviz::ui {

class SentenceEdit;
class TokenChipsView;

class InputPanel : public QWidget {
    Q_OBJECT
public:
    explicit InputPanel(QWidget *parent = nullptr);

    SentenceEdit *sentenceEdit() const { return m_queryEdit; }
    SentenceEdit *keySentenceEdit() const { return m_keyEdit; }
    TokenChipsView *queryChips() const { return m_queryChips; }
    TokenChipsView *keyChips() const { return m_keyChips; }
    QLabel *notice() const { return m_notice; }
    SentenceEdit *targetEdit() const { return m_targetEdit; }
    TokenChipsView *targetChips() const { return m_targetChips; }
    QPushButton *generateButton() const { return m_generate; }
    // The beams an empty target is generated with, beside Generate (1: greedy, to 4).
    QSpinBox *beamsSpin() const { return m_beams; }
    int beams() const;
    void setBeams(int beams);
    // The text fields the open model reads: the word vectors a sentence and an optional key/value
    // sentence (cross-attention); a decoder-only or encoder-only model its sentence alone (its heads
    // attend within it); an encoder-decoder model a source and a target. The others hide.
    enum class TextFields { SentenceAndKeys, Sentence, SourceAndTarget };
    void setTextFields(TextFields fields);
    bool encoderDecoder() const { return m_encoderDecoder; }
    // What the decoder read: `generated` true when the target was empty and generated (greedily, or
    // the kept beam of `beams`).
    void setDecoderText(const QString &text, bool generated, int beams = 1);
    QString generatedTarget() const { return m_generated; }
    // An mBART folder's languages beside the target: the codes its tokenizer knows (none hides the
    // two pickers) and the ones chosen; a pick emits languagesChanged.
    void setLanguages(const QStringList &codes, const QString &source, const QString &target);
    QComboBox *sourceLanguageCombo() const { return m_sourceLanguage; }
    QComboBox *targetLanguageCombo() const { return m_targetLanguage; }
    // The line under the sentence that explains the chips: the word vectors' (no name) or a model's,
    // in the words of its tokenizer (byte-level BPE marks spaces with ␣, WordPiece pieces with ##).
    void setModelTokens(const QString &modelName, const QString &tokenizer = QString());
    QString chipsHelpText() const;
    void showNotice(const QString &text);

signals:
    void sentenceChanged(const QString &text);
    void keySentenceChanged(const QString &text);
    void targetChanged(const QString &text);
    void beamsChanged(int beams);
    void languagesChanged(const QString &source, const QString &target);

private:
    SentenceEdit *m_queryEdit = nullptr, *m_keyEdit = nullptr;
    TokenChipsView *m_queryChips = nullptr, *m_keyChips = nullptr;
    QLabel *m_notice = nullptr;
    QLabel *m_chipsHelp = nullptr;
    QLabel *m_queryLabel = nullptr;
    QWidget *m_keyBox = nullptr, *m_keyChipsArea = nullptr, *m_targetBox = nullptr;
    SentenceEdit *m_targetEdit = nullptr;
    TokenChipsView *m_targetChips = nullptr;
    QLabel *m_targetNote = nullptr;
    QPushButton *m_generate = nullptr;
    QSpinBox *m_beams = nullptr;
    QComboBox *m_sourceLanguage = nullptr, *m_targetLanguage = nullptr;
    QLabel *m_languageArrow = nullptr;
    QString m_generated; // the last generated target ("" while the target is typed)
    bool m_encoderDecoder = false;
    bool m_takesKeys = true; // the key/value sentence applies (the word vectors)
};

} // namespace attnviz::ui
