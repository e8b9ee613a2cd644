// SPDX-License-Identifier: GPL-3.0-or-later
// The window's input strip: the sentence editor, its token chips, the key/value sentence editor
// (cross-attention) with its chips, and a notice line (pasted text that was cleaned, a cut at the
// live token limit). The key chips show only while the key/value sentence has text.
#pragma once

#include <QWidget>

class QLabel;
class QScrollArea;

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
    // The line under the sentence that explains the chips: the word vectors' (no name) or a model's,
    // in the words of its tokenizer (byte-level BPE marks spaces with ␣, WordPiece pieces with ##).
    void setModelTokens(const QString &modelName, const QString &tokenizer = QString());
    QString chipsHelpText() const;
    void showNotice(const QString &text);

signals:
    void sentenceChanged(const QString &text);
    void keySentenceChanged(const QString &text);

private:
    SentenceEdit *m_queryEdit = nullptr, *m_keyEdit = nullptr;
    TokenChipsView *m_queryChips = nullptr, *m_keyChips = nullptr;
    QLabel *m_notice = nullptr;
    QLabel *m_chipsHelp = nullptr;
};

} // namespace attnviz::ui
