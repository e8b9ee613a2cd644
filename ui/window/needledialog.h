// SPDX-License-Identifier: GPL-3.0-or-later
// The needle probe's dialog (Layers tab "Needle probe…", Edit ▸ Needle probe…): the needle sentence,
// the question that asks for it, the haystack (the text in the editor or a text file), the depth where
// the needle goes and how many answer tokens to generate. It only gathers the values: NeedleProbes
// (window/needleprobes.h) checks and runs them.
#pragma once

#include <QDialog>
#include <QString>

class QDoubleSpinBox;
class QLineEdit;
class QRadioButton;
class QSpinBox;

namespace attnviz::ui {

// What the dialog asks for; the haystack is `haystackFile`'s text where that is set, else `haystack`.
struct NeedleInput {
    QString needle, question;
    QString haystack;     // the editor's text
    QString haystackFile; // a text file's path; empty: the editor's text
    double depth = 0.5;   // 0: the haystack's start, 1: its end
    int answerTokens = 0; // 0: as many as the needle has
};

class NeedleDialog : public QDialog {
    Q_OBJECT
public:
    // `editorText`: the haystack when "the text in the editor" is chosen.
    NeedleDialog(const QString &editorText, QWidget *parent = nullptr);

    NeedleInput input() const;
    void setInput(const NeedleInput &in);

private:
    QString m_editorText;
    QLineEdit *m_needle, *m_question, *m_file;
    QRadioButton *m_fromEditor, *m_fromFile;
    QDoubleSpinBox *m_depth;
    QSpinBox *m_answer;
};

} // namespace attnviz::ui
