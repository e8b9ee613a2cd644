// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/generationpanel.h"

#include "files/messagetext.h"

#include "attnviz/reads.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <QTimer>

namespace attnviz::ui {

GenerationPanel::GenerationPanel(QWidget *parent) : QWidget(parent)
{
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_generate = new QPushButton(QStringLiteral("Generate"), this);
    m_generate->setObjectName(QStringLiteral("generateButton"));
    m_generate->setToolTip(QStringLiteral("Continue the text token by token (Ctrl+Enter)"));
    m_stepOne = new QPushButton(QStringLiteral("Step"), this);
    m_stepOne->setObjectName(QStringLiteral("generateStep"));
    m_stepOne->setToolTip(QStringLiteral("Generate one token; again for the next (Ctrl+Shift+Enter)"));
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
    m_pace = new QDoubleSpinBox(this);
    m_pace->setObjectName(QStringLiteral("generatePace"));
    m_pace->setRange(0.0, 5.0);
    m_pace->setSingleStep(0.25);
    m_pace->setDecimals(2);
    m_pace->setValue(0.5);
    m_pace->setPrefix(QStringLiteral("pause "));
    m_pace->setSuffix(QStringLiteral(" s"));
    m_pace->setSpecialValueText(QStringLiteral("no pause"));
    m_pace->setToolTip(QStringLiteral("Pause after each token, to watch the views follow it"));
    m_replay = new QSpinBox(this);
    m_replay->setObjectName(QStringLiteral("generateReplay"));
    m_replay->setPrefix(QStringLiteral("step "));
    m_replay->setSpecialValueText(QStringLiteral("replay a step"));
    m_replay->setToolTip(QStringLiteral("Replay a generated token: the views show the row that predicted it"));
    m_replay->setVisible(false);
    m_paceTimer = new QTimer(this);
    m_paceTimer->setSingleShot(true);
    connect(m_paceTimer, &QTimer::timeout, this, [this] {
        if (!m_running)
            return;
        if (!m_snapshot || m_snapshot->sentence != m_expected) {
            finish(QStringLiteral("Stopped after %1: the text was edited.").arg(countText(m_done, QStringLiteral("token"), QStringLiteral("tokens"))));
            return;
        }
        step();
    });
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("generateStatus"));
    for (QWidget *w : std::initializer_list<QWidget *>{m_generate, m_stepOne, m_stop, m_count, m_mode, m_temperature, m_topK,
                                                       m_topP, m_seed, m_pace, m_replay})
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
    connect(m_stepOne, &QPushButton::clicked, this, &GenerationPanel::stepOnce);
    connect(m_stop, &QPushButton::clicked, this, &GenerationPanel::stop);
    connect(m_replay, qOverload<int>(&QSpinBox::valueChanged), this, &GenerationPanel::replay);
    for (const QKeySequence &k : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto *s = new QShortcut(k, this);
        s->setContext(Qt::WindowShortcut);
        connect(s, &QShortcut::activated, this, [this] { m_running ? stop() : start(); });
    }
    for (const QKeySequence &k : {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Enter)}) {
        auto *s = new QShortcut(k, this);
        s->setContext(Qt::WindowShortcut);
        connect(s, &QShortcut::activated, this, [this] {
            if (!m_running)
                stepOnce();
        });
    }
}

void GenerationPanel::setPace(double seconds) { m_pace->setValue(seconds); }

double GenerationPanel::pace() const { return m_pace->value(); }

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
    m_firstChip = m_snapshot ? generatedChip(*m_snapshot, m_from) : -1;
    const bool usable = m_snapshot && m_snapshot->hasResult() && m_snapshot->causalLm() && m_snapshot->model;
    m_generate->setEnabled(usable && !m_running);
    m_stepOne->setEnabled(usable && !m_running);
    if (!usable && !m_running)
        m_status->setText(m_snapshot && m_snapshot->fromModel() && !m_snapshot->causalLm()
                              ? QStringLiteral("Generation needs a causal language model.")
                              : QString());
    if (!m_running)
        updateReplay();
    if (m_running && m_snapshot && m_snapshot->sentence == m_expected && !m_paceTimer->isActive())
        afterToken();
}

void GenerationPanel::afterToken()
{
    if (m_done > 0 && m_snapshot->hasResult())
        emit showRow(m_snapshot->tq() - 1); // follow the newest token
    if (m_done < m_target && m_pace->value() > 0)
        m_paceTimer->start(int(m_pace->value() * 1000));
    else
        step();
}

void GenerationPanel::updateReplay()
{
    // Replay is offered while the text still holds what the last run generated.
    const int first = m_snapshot && m_done > 0 ? m_firstChip : -1;
    const bool offered = first > 0 && m_snapshot->sentence == m_expected && first + m_done <= m_snapshot->tq();
    if (offered) {
        const QSignalBlocker block(m_replay);
        if (m_replay->maximum() != m_done)
            m_replay->setValue(0); // a new run: no step chosen yet
        m_replay->setRange(0, m_done);
        m_replay->setSuffix(QStringLiteral(" of %1").arg(m_done));
    }
    m_replay->setVisible(offered);
}

void GenerationPanel::replay(int k)
{
    if (!m_snapshot || !m_snapshot->trace || k < 1 || k > m_done)
        return;
    const int first = m_firstChip;
    const int row = first + k - 2; // the row whose prediction was the k-th generated token
    if (first <= 0 || row < 0 || first + k - 1 >= m_snapshot->tq())
        return;
    const auto token = [this](int i) { return quotedText(m_snapshot->queryLabels.value(i), 24); };
    m_status->setText(QStringLiteral("Step %1 of %2: %3, predicted at row %4 %5")
                          .arg(k)
                          .arg(m_done)
                          .arg(token(first + k - 1))
                          .arg(row)
                          .arg(token(row)));
    if (m_replay->value() != k) {
        const QSignalBlocker block(m_replay);
        m_replay->setValue(k);
    }
    emit showRow(row);
}

void GenerationPanel::start() { begin(m_count->value(), false); }

void GenerationPanel::stepOnce()
{
    // Step continues the last run (its marks and its draws) while the text still ends as that run
    // left it; otherwise it begins one.
    if (!m_running && m_snapshot)
        begin(1, m_done > 0 && m_from >= 0 && m_snapshot->sentence == m_expected);
}

void GenerationPanel::begin(int tokens, bool continuing)
{
    if (m_running || !m_snapshot || !m_snapshot->hasResult() || !m_snapshot->causalLm() || !m_snapshot->model)
        return;
    if (!continuing) {
        m_done = 0;
        m_from = int(m_snapshot->sentence.size());
        m_expected = m_snapshot->sentence;
        m_rng = TorchGenerator(quint64(m_seed->value()));
    }
    m_target = m_done + tokens;
    m_running = true;
    m_generate->setEnabled(false);
    m_stepOne->setEnabled(false);
    m_stop->setEnabled(true);
    m_replay->setVisible(false);
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
    m_paceTimer->stop();
    m_stop->setEnabled(false);
    const bool usable = m_snapshot && m_snapshot->hasResult() && m_snapshot->causalLm();
    m_generate->setEnabled(usable);
    m_stepOne->setEnabled(usable);
    m_status->setText(why);
    updateReplay();
    emit runningChanged(false);
}

void GenerationPanel::step()
{
    const ComputeSnapshot &s = *m_snapshot;
    if (m_done >= m_target) {
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
    m_status->setText(QStringLiteral("Generating… %1 of %2").arg(m_done).arg(m_target));
    emit appendText(piece);
}

} // namespace attnviz::ui
