// SPDX-License-Identifier: GPL-3.0-or-later
// The needle probe's dialog (needledialog.h).
#include "window/needledialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace attnviz::ui {

NeedleDialog::NeedleDialog(const QString &editorText, QWidget *parent)
    : QDialog(parent)
    , m_editorText(editorText)
{
    setWindowTitle(tr("Needle probe"));
    setObjectName(QStringLiteral("needleDialog"));
    m_needle = new QLineEdit(tr("The best thing to do in San Francisco is eat a sandwich in Dolores Park."), this);
    m_needle->setObjectName(QStringLiteral("needleText"));
    m_question = new QLineEdit(tr("What is the best thing to do in San Francisco?"), this);
    m_question->setObjectName(QStringLiteral("needleQuestion"));
    m_fromEditor = new QRadioButton(tr("the text in the editor (%Ln characters)", nullptr, int(editorText.size())), this);
    m_fromFile = new QRadioButton(tr("a text file:"), this);
    m_fromEditor->setChecked(true);
    m_file = new QLineEdit(this);
    m_file->setObjectName(QStringLiteral("needleFile"));
    auto *browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("The haystack: a text file"), QString(),
                                                          tr("Text files (*.txt *.md);;All files (*)"));
        if (!path.isEmpty()) {
            m_file->setText(path);
            m_fromFile->setChecked(true);
        }
    });
    connect(m_file, &QLineEdit::textEdited, this, [this] { m_fromFile->setChecked(true); });
    m_depth = new QDoubleSpinBox(this);
    m_depth->setObjectName(QStringLiteral("needleDepth"));
    m_depth->setRange(0.0, 1.0);
    m_depth->setSingleStep(0.1);
    m_depth->setValue(0.5);
    m_depth->setToolTip(tr("Where the needle goes: 0 the haystack's start, 1 its end (a share of its characters)"));
    m_answer = new QSpinBox(this);
    m_answer->setObjectName(QStringLiteral("needleAnswerTokens"));
    m_answer->setRange(0, 256);
    m_answer->setSpecialValueText(tr("as many as the needle's tokens"));
    auto *fileRow = new QHBoxLayout;
    fileRow->addWidget(m_fromFile);
    fileRow->addWidget(m_file, 1);
    fileRow->addWidget(browse);
    auto *hay = new QVBoxLayout;
    hay->addWidget(m_fromEditor);
    hay->addLayout(fileRow);
    auto *form = new QFormLayout;
    form->addRow(tr("Needle sentence:"), m_needle);
    form->addRow(tr("Question:"), m_question);
    form->addRow(tr("Haystack:"), hay);
    form->addRow(tr("Depth:"), m_depth);
    form->addRow(tr("Answer tokens:"), m_answer);
    auto *about = new QLabel(tr("The needle goes into the haystack at the depth, the question after it; the model answers "
                                "greedily, and each head scores the share of the needle's tokens it copied into the answer "
                                "(retrieval score, Wu et al. 2024). The probe's text then opens in the editor."),
                             this);
    about->setWordWrap(true);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(about);
    layout->addLayout(form);
    layout->addWidget(buttons);
    resize(560, sizeHint().height());
}

NeedleInput NeedleDialog::input() const
{
    NeedleInput in;
    in.needle = m_needle->text();
    in.question = m_question->text();
    in.haystack = m_editorText;
    in.haystackFile = m_fromFile->isChecked() ? m_file->text().trimmed() : QString();
    in.depth = m_depth->value();
    in.answerTokens = m_answer->value();
    return in;
}

void NeedleDialog::setInput(const NeedleInput &in)
{
    m_needle->setText(in.needle);
    m_question->setText(in.question);
    m_file->setText(in.haystackFile);
    (in.haystackFile.isEmpty() ? m_fromEditor : m_fromFile)->setChecked(true);
    m_depth->setValue(in.depth);
    m_answer->setValue(in.answerTokens);
}

} // namespace attnviz::ui
