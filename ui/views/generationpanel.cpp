// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/generationpanel.h"

#include "attnviz/reads.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>

namespace attnviz::ui {

GenerationPanel::GenerationPanel(QWidget *parent) : QWidget(parent)
{
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_generate = new QPushButton(QStringLiteral("Generate"), this);
    m_generate->setObjectName(QStringLiteral("generateButton"));
    m_generate->setToolTip(QStringLiteral("Continue the text token by token (Ctrl+Enter)"));
    m_stop = new QPushButton(QStringLiteral("Stop"), this);
    m_stop->setObjectName(QStringLiteral("generateStop"));
    m_stop->setEnabled(false);
    m_count = new QSpinBox(this);
    m_count->setRange(1, 4096);
    m_count->setValue(20);
    m_count->setSuffix(QStringLiteral(" tokens"));
    m_mode = new QComboBox(this);
    m_mode->addItems({QStringLiteral("greedy"), QStringLiteral("sampled")});
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setRange(0.05, 5.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.8);
    m_temperature->setPrefix(QStringLiteral("T "));
    m_topK = new QSpinBox(this);
    m_topK->setRange(0, 100000);
    m_topK->setValue(50);
    m_topK->setPrefix(QStringLiteral("top-k "));
    m_topK->setSpecialValueText(QStringLiteral("top-k all"));
    m_topP = new QDoubleSpinBox(this);
    m_topP->setRange(0.01, 1.0);
    m_topP->setSingleStep(0.05);
    m_topP->setValue(0.95);
    m_topP->setPrefix(QStringLiteral("top-p "));
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 999999);
    m_seed->setPrefix(QStringLiteral("seed "));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("generateStatus"));
    for (QWidget *w : std::initializer_list<QWidget *>{m_generate, m_stop, m_count, m_mode, m_temperature, m_topK, m_topP, m_seed})
        row->addWidget(w);
    row->addWidget(m_status, 1);
    // The sampling settings take room only when sampling: greedy keeps the row narrow enough for a
    // 1280-pixel projector.
    auto sampled = [this] {
        const bool on = m_mode->currentIndex() == 1;
        for (QWidget *w : std::initializer_list<QWidget *>{m_temperature, m_topK, m_topP, m_seed}) {
            w->setVisible(on);
            w->setEnabled(on && !m_running);
        }
    };
    connect(m_mode, qOverload<int>(&QComboBox::currentIndexChanged), this, sampled);
    connect(this, &GenerationPanel::runningChanged, this, sampled);
    sampled();
    connect(m_generate, &QPushButton::clicked, this, &GenerationPanel::start);
    connect(m_stop, &QPushButton::clicked, this, &GenerationPanel::stop);
    for (const QKeySequence &k : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto *s = new QShortcut(k, this);
        s->setContext(Qt::WindowShortcut);
        connect(s, &QShortcut::activated, this, [this] { m_running ? stop() : start(); });
    }
}

int generatedChip(const ComputeSnapshot &s, int fromChar)
{
    if (fromChar < 0 || !s.trace || fromChar > s.sentence.size())
        return -1;
    const size_t byte = size_t(s.sentence.left(fromChar).toUtf8().size()); // tokens hold UTF-8 byte ranges
    for (size_t i = 0; i < s.trace->tokens.size(); ++i) {
        const TraceToken &t = s.trace->tokens[i];
        if (!t.special && t.end > byte)
            return t.begin >= byte ? int(i) : int(i) + 1;
    }
    return -1;
}

void GenerationPanel::setTokens(int n) { m_count->setValue(n); }

void GenerationPanel::setSampling(double temperature, int topK, double topP, quint64 seed)
{
    m_mode->setCurrentIndex(temperature > 0 ? 1 : 0);
    if (temperature > 0)
        m_temperature->setValue(temperature);
    m_topK->setValue(topK);
    m_topP->setValue(topP);
    m_seed->setValue(int(seed));
}

QString GenerationPanel::status() const { return m_status->text(); }

void GenerationPanel::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    if (!m_running && m_from >= 0 && (!m_snapshot || m_snapshot->sentence.size() < m_from))
        m_from = -1; // the text was cut back before what was generated
    const bool usable = m_snapshot && m_snapshot->hasResult() && m_snapshot->causalLm() && m_snapshot->model;
    m_generate->setEnabled(usable && !m_running);
    if (!usable && !m_running)
        m_status->setText(m_snapshot && m_snapshot->fromModel() && !m_snapshot->causalLm()
                              ? QStringLiteral("Generation needs a causal language model.")
                              : QString());
    if (m_running && m_snapshot && m_snapshot->sentence == m_expected)
        step();
}

void GenerationPanel::start()
{
    if (m_running || !m_snapshot || !m_snapshot->hasResult() || !m_snapshot->causalLm() || !m_snapshot->model)
        return;
    m_running = true;
    m_done = 0;
    m_from = int(m_snapshot->sentence.size());
    m_expected = m_snapshot->sentence;
    m_rng = TorchGenerator(quint64(m_seed->value()));
    m_generate->setEnabled(false);
    m_stop->setEnabled(true);
    emit runningChanged(true);
    step();
}

void GenerationPanel::stop()
{
    if (m_running)
        finish(QStringLiteral("Stopped after %1: the text is as it was then.").arg(countText(m_done, QStringLiteral("token"), QStringLiteral("tokens"))));
}

void GenerationPanel::finish(const QString &why)
{
    m_running = false;
    m_stop->setEnabled(false);
    m_generate->setEnabled(m_snapshot && m_snapshot->hasResult() && m_snapshot->causalLm());
    m_status->setText(why);
    emit runningChanged(false);
}

void GenerationPanel::step()
{
    const ComputeSnapshot &s = *m_snapshot;
    if (m_done >= m_count->value()) {
        finish(QStringLiteral("Generated %1.").arg(countText(m_done, QStringLiteral("token"), QStringLiteral("tokens"))));
        return;
    }
    const int limit = s.modelInfo.maxPositions;
    if (limit > 0 && s.tq() >= limit) {
        finish(QStringLiteral("Stopped after %1: %2 reads at most %L3 positions.")
                   .arg(countText(m_done, QStringLiteral("token"), QStringLiteral("tokens")), QString::fromStdString(s.modelInfo.name))
                   .arg(limit));
        return;
    }
    GenerateOptions opt;
    opt.temperature = m_mode->currentIndex() == 1 ? m_temperature->value() : 0.0;
    opt.topK = m_topK->value();
    opt.topP = m_topP->value();
    const double u = opt.temperature > 0 ? m_rng.uniformDouble() : 0.0;
    int id = -1;
    if (Status st = nextTokenOf(*s.model, *s.trace, opt, u, id); !st) {
        finish(QString::fromStdString(st.message));
        return;
    }
    const QString piece = QString::fromStdString(decodeIds(*s.model, {id}));
    if (piece.isEmpty()) { // a special token (end of text) has no text to append
        finish(QStringLiteral("Stopped after %1: the model chose “%2”, which has no text.")
                   .arg(countText(m_done, QStringLiteral("token"), QStringLiteral("tokens")),
                        QString::fromStdString(tokenOf(*s.model, id).token)));
        return;
    }
    ++m_done;
    m_expected = s.sentence + piece;
    m_status->setText(QStringLiteral("Generating… %1 of %2").arg(m_done).arg(m_count->value()));
    emit appendText(piece);
}

} // namespace attnviz::ui
