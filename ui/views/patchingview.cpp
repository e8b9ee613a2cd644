// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/patchingview.h"

#include "files/outputfile.h"
#include "live/livesession.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/readsplot.h"

#include "attnviz/reads.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

namespace attnviz::ui {

namespace {

// The cells a sweep computes: every cell, or a path sweep's senders before the receiver's layer.
int cellsOf(const PatchResult &r)
{
    return r.sweep == PatchSweep::Path ? std::max(0, r.receiver.layer) * r.cols : r.rows * r.cols;
}

} // namespace

namespace {

const QColor kDiffers(255, 200, 90); // a position where the prompts' tokens differ
constexpr int kTokenColumns = 512;     // the token table's columns at most

QString quoted(const std::string &s) { return QStringLiteral("“%1”").arg(QString::fromStdString(s)); }

QString display(const TraceToken &t) { return QString::fromStdString(t.display.empty() ? t.text : t.display); }

QString sweepTitle(PatchSweep s)
{
    switch (s) {
    case PatchSweep::ResidPre: return QStringLiteral("resid_pre");
    case PatchSweep::HeadsAllPositions: return QStringLiteral("head outputs (hook_z), every position");
    case PatchSweep::HeadsByPosition: return QStringLiteral("head outputs (hook_z) by position");
    case PatchSweep::MlpOut: return QStringLiteral("mlp_out");
    case PatchSweep::Path: return QStringLiteral("sender heads (path patching)");
    }
    return {};
}

} // namespace

PatchingView::PatchingView(LiveSession *session, QWidget *parent) : DeferredView(parent), m_session(session)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_refusal = new QLabel(this);
    m_refusal->setObjectName(QStringLiteral("patchingRefusal"));
    m_refusal->setWordWrap(true);
    m_refusal->setContentsMargins(6, 4, 6, 4);
    layout->addWidget(m_refusal);

    // the inputs over the heatmap, the whole scrolled when the tab is too short for the heatmap to read
    auto *scroll = new QScrollArea(this);
    m_form = scroll;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto *inputs = new QWidget(scroll);
    scroll->setWidget(inputs);
    auto *form = new QVBoxLayout(inputs);
    form->setContentsMargins(6, 4, 6, 2);
    form->setSpacing(3);

    auto *row1 = new QHBoxLayout;
    row1->addWidget(new QLabel(tr("Corrupted:"), inputs));
    m_corrupted = new QLineEdit(inputs);
    m_corrupted->setObjectName(QStringLiteral("patchingCorrupted"));
    m_corrupted->setPlaceholderText(tr("the clean prompt (the window's text) with a few tokens changed"));
    row1->addWidget(m_corrupted, 1);
    m_run = new QPushButton(tr("Run"), inputs);
    m_run->setObjectName(QStringLiteral("patchingRun"));
    m_cancel = new QPushButton(tr("Cancel"), inputs);
    m_cancel->setObjectName(QStringLiteral("patchingCancel"));
    m_clear = new QPushButton(tr("Clear patch"), inputs);
    m_clear->setObjectName(QStringLiteral("patchingClear"));
    m_clear->setToolTip(tr("Take the patch out of the model and give the window the clean prompt back"));
    m_progress = new QProgressBar(inputs);
    m_progress->setObjectName(QStringLiteral("patchingProgress"));
    m_progress->setFormat(tr("%v of %m cells"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setMaximumWidth(180);
    row1->addWidget(m_run);
    row1->addWidget(m_cancel);
    row1->addWidget(m_progress);
    row1->addWidget(m_clear);
    m_csv = new QPushButton(tr("CSV…"), inputs);
    m_csv->setObjectName(QStringLiteral("patchingCsv"));
    m_csv->setToolTip(tr("Save the heatmap's numbers as CSV (File ▸ Export current view writes the figure)"));
    row1->addWidget(m_csv);
    form->addLayout(row1);

    auto *row2 = new QHBoxLayout;
    row2->addWidget(new QLabel(tr("Answer:"), inputs));
    m_answer = new QLineEdit(inputs);
    m_answer->setObjectName(QStringLiteral("patchingAnswer"));
    m_answer->setPlaceholderText(tr("one token: “ Mary”"));
    m_answer->setToolTip(tr("The clean prompt's right next token (one token, as typed or as the vocabulary spells it)"));
    row2->addWidget(m_answer, 1);
    row2->addWidget(new QLabel(tr("Wrong:"), inputs));
    m_wrong = new QLineEdit(inputs);
    m_wrong->setObjectName(QStringLiteral("patchingWrong"));
    m_wrong->setPlaceholderText(tr("one token: “ John”"));
    m_wrong->setToolTip(tr("The corrupted prompt's answer (one token): the logit difference is answer − wrong"));
    row2->addWidget(m_wrong, 1);
    row2->addWidget(new QLabel(tr("Sweep:"), inputs));
    m_sweep = new QComboBox(inputs);
    m_sweep->setObjectName(QStringLiteral("patchingSweep"));
    // in PatchSweep's order
    m_sweep->addItems({tr("resid_pre"), tr("heads"), tr("heads by position"), tr("mlp_out"), tr("path")});
    m_sweep->setToolTip(tr("What each cell patches from the clean run: the residual stream entering a layer at one position "
                           "(layer × position), one head's output at every position (layer × head) or at one position "
                           "(layer × position·head), an MLP's output at one position (layer × position); path: one "
                           "sender head's output, reaching only the receiver head's queries, keys or values (sender "
                           "layer × head)"));
    row2->addWidget(m_sweep);
    row2->addWidget(new QLabel(tr("Metric:"), inputs));
    m_metric = new QComboBox(inputs);
    m_metric->setObjectName(QStringLiteral("patchingMetric"));
    m_metric->addItems({tr("logit difference"), tr("p(answer)"), tr("KL to clean")});
    m_metric->setToolTip(tr("Logit difference answer − wrong, normalised: 0 the corrupted run, 1 the clean run; the "
                            "answer's probability; KL(clean ‖ patched) in nats, 0 the clean run"));
    row2->addWidget(m_metric);
    form->addLayout(row2);

    m_receiverRow = new QWidget(inputs);
    auto *row3 = new QHBoxLayout(m_receiverRow);
    row3->setContentsMargins(0, 0, 0, 0);
    row3->addWidget(new QLabel(tr("Receiver head:"), m_receiverRow));
    m_receiver = new QComboBox(m_receiverRow);
    m_receiver->setObjectName(QStringLiteral("patchingReceiver"));
    m_receiver->setToolTip(tr("The head whose input the sender heads' clean outputs reach (a layer after layer 0); "
                              "on the Layers tab, Shift-drag a sender head onto it"));
    row3->addWidget(m_receiver);
    row3->addWidget(new QLabel(tr("its input:"), m_receiverRow));
    m_receiverInput = new QComboBox(m_receiverRow);
    m_receiverInput->setObjectName(QStringLiteral("patchingReceiverInput"));
    m_receiverInput->addItems({tr("queries (q)"), tr("keys (k)"), tr("values (v)")}); // in HeadInput's order
    m_receiverInput->setCurrentIndex(int(m_wantReceiver.input));
    m_receiverInput->setToolTip(tr("Which of the receiver's inputs is computed from the stream with the sender's clean "
                                   "output; the other two, and every other head and MLP, keep the corrupted run's"));
    row3->addWidget(m_receiverInput);
    row3->addStretch(1);
    form->addWidget(m_receiverRow);

    m_tokens = new QTableWidget(2, 0, inputs);
    m_tokens->setObjectName(QStringLiteral("patchingTokens"));
    m_tokens->setVerticalHeaderLabels({tr("clean"), tr("corrupted")});
    m_tokens->verticalHeaderItem(0)->setToolTip(tr("The clean prompt: the window's text"));
    m_tokens->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tokens->setSelectionMode(QAbstractItemView::NoSelection);
    // sized to the contents once after each fill (refresh): resizing to contents on every item set
    // measured every column again, 16 s for 512 tokens
    m_tokens->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_tokens->verticalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_tokens->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_tokens->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    m_tokens->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    form->addWidget(m_tokens);
    m_tokenNote = new QLabel(inputs);
    m_tokenNote->setObjectName(QStringLiteral("patchingTokenNote"));
    m_tokenNote->setWordWrap(true);
    form->addWidget(m_tokenNote);
    m_answerNote = new QLabel(inputs);
    m_answerNote->setObjectName(QStringLiteral("patchingAnswerNote"));
    m_wrongNote = new QLabel(inputs);
    m_wrongNote->setObjectName(QStringLiteral("patchingWrongNote"));
    for (QLabel *l : {m_answerNote, m_wrongNote}) {
        l->setWordWrap(true);
        form->addWidget(l);
    }

    m_status = new QLabel(inputs);
    m_status->setObjectName(QStringLiteral("patchingStatus"));
    m_status->setWordWrap(true);
    form->addWidget(m_status);

    m_plot = new QCustomPlot(inputs);
    m_plot->setObjectName(QStringLiteral("patchingPlot"));
    m_plot->setMinimumHeight(250); // below that the tab scrolls rather than squash the heatmap
    QFont titleFont = font();
    titleFont.setBold(true);
    const TokenHeatmap h = makeTokenHeatmap(m_plot, tr("position"), tr("layer"), QString(), titleFont);
    m_map = h.map;
    m_scale = h.scale;
    m_title = h.title;
    m_scale->setGradient(divergingGradient());
    fitValueTicks(m_scale->axis());
    m_plot->yAxis->setTicker(wholeNumberTicker());
    titleTooltip(m_plot, m_title, [this] { return m_titleText; });
    // after each layout: the title fitted to the width, the column labels thinned to the room
    relabelAfterLayout(m_plot, this, [this] {
        const QString fitted = fittedTitle(m_plot, m_title, m_titleText, 0.2);
        const bool titleChanged = fitted != m_title->text();
        m_title->setText(fitted);
        return labelTokenAxis(m_plot->xAxis, m_colLabels) || titleChanged;
    });
    form->addWidget(m_plot, 1);
    layout->addWidget(m_form, 1);

    cellInteraction(
        m_plot, this,
        [this](const QPointF &pos, int &r, int &c) {
            const PatchResult *res = result();
            if (!res || m_plot->axisRectAt(pos) != m_plot->axisRect())
                return false;
            c = int(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
            r = int(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
            return r >= 0 && r < res->rows && c >= 0 && c < res->cols;
        },
        [this](int r, int c) { return cellText(r, c); }, [this](int r, int c) { applyCell(r, c); });

    m_poll = new QTimer(this);
    m_poll->setInterval(100);
    connect(m_poll, &QTimer::timeout, this, [this] {
        if (m_done && m_total) {
            m_progress->setRange(0, std::max(1, m_total->load()));
            m_progress->setValue(m_done->load());
        }
    });
    connect(&m_watcher, &QFutureWatcher<std::shared_ptr<const Outcome>>::finished, this, &PatchingView::finished);
    connect(m_run, &QPushButton::clicked, this, [this] { run(); });
    connect(m_cancel, &QPushButton::clicked, this, &PatchingView::cancel);
    connect(m_clear, &QPushButton::clicked, this, &PatchingView::clearPatch);
    connect(m_csv, &QPushButton::clicked, this, [this] {
        const QString path = m_csvPrompt ? m_csvPrompt()
                                         : QFileDialog::getSaveFileName(this, tr("Save the patching heatmap as CSV"),
                                                                        QStringLiteral("attnviz-patching.csv"),
                                                                        tr("CSV (*.csv)"));
        if (path.isEmpty())
            return;
        QString error;
        m_message = saveCsv(path, &error) ? tr("Saved %1").arg(path) : error;
        refresh();
    });
    for (QLineEdit *e : {m_corrupted, m_answer, m_wrong})
        connect(e, &QLineEdit::textChanged, this, &PatchingView::refresh);
    for (QComboBox *c : {m_sweep, m_metric})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &PatchingView::refresh);
    for (QComboBox *c : {m_receiver, m_receiverInput})
        connect(c, qOverload<int>(&QComboBox::activated), this, [this] {
            m_wantReceiver = receiver();
            refresh();
        });
    if (m_session)
        connect(m_session, &LiveSession::editsChanged, this, &PatchingView::refresh);
    refresh();
}

PatchingView::~PatchingView()
{
    if (m_cancelFlag)
        m_cancelFlag->store(true);
    m_watcher.waitForFinished(); // the pool thread holds the model and writes into shared state only
}

void PatchingView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    const Model *model = m_session ? m_session->model().get() : nullptr;
    if (model != m_model) { // another model: the results cached are the last one's
        m_model = model;
        cancel(); // a sweep of the last one is of no use
        m_cache.clear();
        m_result.reset();
        m_message.clear();
        draw();
    }
    refresh();
}

QString PatchingView::refusal() const
{
    if (!m_snapshot || !m_snapshot->fromModel() || !m_session || !m_session->model())
        return tr("Patching needs a language model: open a decoder-only model (Model menu); the word-vector "
                  "attention has no layers to patch.");
    const ModelInfo &info = m_snapshot->modelInfo;
    if (info.architecture.encoderDecoder)
        return tr("Patching is computed for decoder-only models; %1 is an encoder-decoder model.")
            .arg(QString::fromStdString(info.name));
    if (!info.causal)
        return tr("Patching scores the next token, which %1 (not a causal language model) does not predict.")
            .arg(QString::fromStdString(info.name));
    return QString();
}

bool PatchingView::patchApplied() const
{
    if (!m_session)
        return false;
    for (const Intervention &e : m_session->edits())
        if (e.kind == EditKind::Value)
            return true;
    return false;
}

QString PatchingView::cleanPrompt() const
{
    if (patchApplied() && !m_appliedClean.isEmpty())
        return m_appliedClean;
    return m_session ? m_session->sentence() : QString();
}

PatchingSettings PatchingView::settings() const
{
    PatchingSettings s;
    s.corrupted = m_corrupted->text();
    s.answer = m_answer->text();
    s.wrong = m_wrong->text();
    s.sweep = PatchSweep(m_sweep->currentIndex());
    s.metric = PatchMetric(m_metric->currentIndex());
    s.receiver = receiver();
    return s;
}

PathReceiver PatchingView::receiver() const
{
    PathReceiver r = m_wantReceiver;
    if (m_receiver->currentIndex() >= 0 && m_receiverHeads > 0) {
        const int i = m_receiver->currentData().toInt();
        r.layer = i / m_receiverHeads;
        r.head = i % m_receiverHeads;
    }
    r.input = HeadInput(std::max(0, m_receiverInput->currentIndex()));
    return r;
}

void PatchingView::setReceiver(const PathReceiver &r)
{
    m_wantReceiver = r;
    m_receiverInput->setCurrentIndex(int(r.input));
    fillReceivers();
}

void PatchingView::fillReceivers()
{
    const int layers = m_snapshot && m_snapshot->fromModel() ? m_snapshot->modelInfo.layers : 0;
    const int heads = m_snapshot && m_snapshot->fromModel() ? m_snapshot->modelInfo.heads : 0;
    if (layers != m_receiverLayers || heads != m_receiverHeads) {
        const QSignalBlocker block(m_receiver);
        m_receiver->clear();
        m_receiverLayers = layers;
        m_receiverHeads = heads;
        for (int l = 1; l < layers; ++l)
            for (int h = 0; h < heads; ++h)
                m_receiver->addItem(QStringLiteral("L%1 H%2").arg(l).arg(h), l * heads + h);
    }
    const QSignalBlocker block(m_receiver);
    const int at = m_receiver->findData(m_wantReceiver.layer * m_receiverHeads + m_wantReceiver.head);
    if (m_wantReceiver.layer >= 1 && m_wantReceiver.head >= 0 && m_wantReceiver.head < m_receiverHeads && at >= 0)
        m_receiver->setCurrentIndex(at);
}

bool PatchingView::openPath(int senderLayer, int senderHead, int receiverLayer, int receiverHead)
{
    if (receiverLayer <= senderLayer) {
        m_message = tr("A path runs forward: the receiver (L%1 H%2) must be in a later layer than the sender (L%3 H%4).")
                        .arg(receiverLayer)
                        .arg(receiverHead)
                        .arg(senderLayer)
                        .arg(senderHead);
        refresh();
        return false;
    }
    m_sweep->setCurrentIndex(int(PatchSweep::Path));
    setReceiver(PathReceiver{receiverLayer, receiverHead, HeadInput(std::max(0, m_receiverInput->currentIndex()))});
    m_senderLayer = senderLayer;
    m_senderHead = senderHead;
    return run();
}

void PatchingView::setSettings(const PatchingSettings &s)
{
    m_corrupted->setText(s.corrupted);
    m_answer->setText(s.answer);
    m_wrong->setText(s.wrong);
    m_sweep->setCurrentIndex(int(s.sweep));
    m_metric->setCurrentIndex(int(s.metric));
    setReceiver(s.receiver);
    refresh();
}

QString PatchingView::tokenNote(const QString &text, int &id) const
{
    id = -1;
    if (!m_snapshot || !m_snapshot->model)
        return QString();
    const Model &m = *m_snapshot->model;
    if (vocabularyId(m, text.toStdString(), id))
        return QString();
    id = -1;
    std::vector<TraceToken> tokens;
    QStringList names;
    if (m.tokenize(text.toStdString(), tokens))
        for (const TraceToken &t : tokens)
            if (!t.special)
                names << quoted(t.text);
    if (names.size() > 1)
        return tr("%1 is %2 tokens (%3): the metric needs one").arg(quoted(text.toStdString())).arg(names.size()).arg(names.join(QLatin1Char(' ')));
    return tr("%1 is not a token of this model").arg(quoted(text.toStdString()));
}

QString PatchingView::problem() const
{
    if (const QString r = refusal(); !r.isEmpty())
        return r;
    const QString clean = cleanPrompt();
    if (clean.trimmed().isEmpty())
        return tr("Type the clean prompt in the window's text field.");
    if (m_corrupted->text().trimmed().isEmpty())
        return tr("Type the corrupted prompt: the clean one with a few tokens changed.");
    if (!m_tokenNote->property("mismatch").toString().isEmpty())
        return m_tokenNote->property("mismatch").toString();
    if (PatchSweep(m_sweep->currentIndex()) == PatchSweep::Path && m_snapshot) {
        const PathReceiver r = receiver();
        if (Status st = checkPathReceiver(r, m_snapshot->modelInfo.layers, m_snapshot->modelInfo.heads); !st)
            return tr("Receiver: %1.").arg(QString::fromStdString(st.message));
    }
    const PatchMetric metric = PatchMetric(m_metric->currentIndex());
    int id = -1;
    if (metric != PatchMetric::Kl) {
        if (m_answer->text().isEmpty())
            return tr("Type the answer token (the clean prompt's right next token).");
        if (const QString n = tokenNote(m_answer->text(), id); !n.isEmpty())
            return tr("Answer: %1.").arg(n);
    }
    if (metric == PatchMetric::LogitDiff) {
        if (m_wrong->text().isEmpty())
            return tr("Type the wrong token (the corrupted prompt's answer).");
        if (const QString n = tokenNote(m_wrong->text(), id); !n.isEmpty())
            return tr("Wrong: %1.").arg(n);
    }
    return QString();
}

void PatchingView::refresh()
{
    if (deferred())
        return;
    const QString why = refusal();
    m_refusal->setText(why);
    m_refusal->setVisible(!why.isEmpty());
    m_form->setVisible(why.isEmpty());
    const QString clean = cleanPrompt();
    m_tokenNote->setProperty("mismatch", QString());
    if (why.isEmpty() && m_snapshot && m_snapshot->model) {
        std::vector<TraceToken> a, b;
        m_snapshot->model->tokenize(clean.toStdString(), a);
        if (!m_corrupted->text().isEmpty())
            m_snapshot->model->tokenize(m_corrupted->text().toStdString(), b);
        const int n = int(std::max(a.size(), b.size()));
        // a long text's first tokens only: a column per token of 20,000 took minutes to lay out
        const int shown = std::min(n, kTokenColumns);
        m_tokens->setColumnCount(shown);
        QStringList heads;
        int differ = 0, first = -1;
        for (int i = 0; i < n; ++i) {
            const bool has = i < int(a.size()) && i < int(b.size());
            const bool differs = !b.empty() && (!has || a[size_t(i)].id != b[size_t(i)].id);
            if (differs) {
                ++differ;
                if (first < 0)
                    first = i;
            }
            if (i >= shown)
                continue;
            heads << QString::number(i);
            for (int r = 0; r < 2; ++r) {
                const std::vector<TraceToken> &t = r == 0 ? a : b;
                auto *item = new QTableWidgetItem(i < int(t.size()) ? display(t[size_t(i)]) : QString());
                if (differs) {
                    item->setBackground(kDiffers);
                    item->setForeground(QColor(Qt::black));
                    QFont f = item->font();
                    f.setBold(true);
                    item->setFont(f);
                }
                m_tokens->setItem(r, i, item);
            }
        }
        m_tokens->setHorizontalHeaderLabels(heads);
        m_tokens->resizeColumnsToContents();
        m_tokens->resizeRowsToContents();
        m_tokens->setFixedHeight(m_tokens->horizontalHeader()->sizeHint().height() + m_tokens->rowHeight(0) + m_tokens->rowHeight(1)
                                 + m_tokens->horizontalScrollBar()->sizeHint().height() + 2 * m_tokens->frameWidth());
        if (b.empty()) {
            m_tokenNote->setText(QString());
        } else if (a.size() != b.size()) {
            const auto at = [first](const std::vector<TraceToken> &t) {
                return first < int(t.size()) ? quoted(t[size_t(first)].text) : tr("nothing");
            };
            const QString line = tr("Refused: the clean prompt has %1 tokens and the corrupted %2; they first differ at "
                                    "position %3 (clean %4, corrupted %5). Patching needs prompts of the same token count.")
                                     .arg(a.size())
                                     .arg(b.size())
                                     .arg(first)
                                     .arg(at(a), at(b));
            m_tokenNote->setText(line);
            m_tokenNote->setProperty("mismatch", line);
        } else if (differ == 0) {
            m_tokenNote->setText(tr("The prompts are the same tokens: every cell would be the clean run."));
        } else {
            m_tokenNote->setText(differ == 1 ? tr("1 position differs (marked).")
                                             : tr("%1 positions differ (marked).").arg(differ));
        }
        if (shown < n && m_tokenNote->property("mismatch").toString().isEmpty())
            m_tokenNote->setText(m_tokenNote->text() + (m_tokenNote->text().isEmpty() ? QString() : QStringLiteral(" "))
                                 + tr("The table shows the first %L1 of %L2 tokens.").arg(shown).arg(n));
        int id = -1;
        const PatchMetric metric = PatchMetric(m_metric->currentIndex());
        const QString an = metric == PatchMetric::Kl || m_answer->text().isEmpty() ? QString() : tokenNote(m_answer->text(), id);
        const QString wn = metric != PatchMetric::LogitDiff || m_wrong->text().isEmpty() ? QString() : tokenNote(m_wrong->text(), id);
        m_answerNote->setText(an.isEmpty() ? QString() : tr("Answer: %1").arg(an));
        m_wrongNote->setText(wn.isEmpty() ? QString() : tr("Wrong: %1").arg(wn));
        m_answerNote->setVisible(!an.isEmpty());
        m_wrongNote->setVisible(!wn.isEmpty());
        m_tokenNote->setVisible(!m_tokenNote->text().isEmpty());
        m_wrong->setEnabled(metric == PatchMetric::LogitDiff);
        m_answer->setEnabled(metric != PatchMetric::Kl);
    }
    fillReceivers();
    m_receiverRow->setVisible(PatchSweep(m_sweep->currentIndex()) == PatchSweep::Path);
    const bool busy = running();
    const QString p = busy ? QString() : problem();
    m_run->setEnabled(!busy && p.isEmpty());
    m_run->setToolTip(p.isEmpty() ? tr("Run the sweep (one corrupted forward per cell)") : p);
    m_cancel->setEnabled(busy);
    m_clear->setEnabled(patchApplied());
    m_csv->setEnabled(m_result != nullptr && !busy);
    const QString status = m_message.isEmpty() && !busy ? p : m_message;
    m_status->setText(status == m_tokenNote->text() ? QString() : status); // said once, under the tokens
}

QString PatchingView::cacheKey() const
{
    int a = -1, w = -1;
    const PatchMetric metric = PatchMetric(m_metric->currentIndex());
    if (metric != PatchMetric::Kl)
        tokenNote(m_answer->text(), a);
    if (metric == PatchMetric::LogitDiff)
        tokenNote(m_wrong->text(), w);
    const bool path = PatchSweep(m_sweep->currentIndex()) == PatchSweep::Path;
    return QStringLiteral("%1\n%2\n%3\n%4 %5 %6 %7 %8")
        .arg(quintptr(m_session ? m_session->model().get() : nullptr), 0, 16)
        .arg(cleanPrompt(), m_corrupted->text())
        .arg(a)
        .arg(w)
        .arg(m_sweep->currentIndex())
        .arg(m_metric->currentIndex())
        .arg(path ? QString::fromStdString(pathReceiverName(receiver())) : QString());
}

bool PatchingView::run()
{
    if (running())
        return false;
    if (m_session && m_session->model().get() != m_model)
        setSnapshot(SnapshotPtr(m_snapshot)); // another model, its first result not in yet
    if (const QString p = problem(); !p.isEmpty()) {
        m_message = p;
        refresh();
        return false;
    }
    const QString key = cacheKey();
    if (auto it = m_cache.find(key); it != m_cache.end()) {
        m_result = *it;
        const int cells = cellsOf(m_result->result);
        m_progress->setRange(0, std::max(1, cells));
        m_progress->setValue(m_result->result.done);
        m_message = tr("From this session's cache: the same prompts, tokens, sweep and metric.");
        draw();
        refresh();
        emit sweepFinished();
        return true;
    }
    PatchRequest req;
    req.sweep = PatchSweep(m_sweep->currentIndex());
    req.metric = PatchMetric(m_metric->currentIndex());
    req.clean = cleanPrompt().toStdString();
    req.corrupted = m_corrupted->text().toStdString();
    req.receiver = receiver();
    if (req.metric != PatchMetric::Kl)
        tokenNote(m_answer->text(), req.answer);
    if (req.metric == PatchMetric::LogitDiff)
        tokenNote(m_wrong->text(), req.wrong);
    std::shared_ptr<Model> model = m_session->model();
    m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_done = std::make_shared<std::atomic<int>>(0);
    m_total = std::make_shared<std::atomic<int>>(1);
    auto cancelFlag = m_cancelFlag;
    auto done = m_done, total = m_total;
    const QString cleanText = cleanPrompt(), corruptedText = m_corrupted->text();
    m_runningKey = key;
    m_runningModel = model.get();
    auto hook = m_hook;
    m_watcher.setFuture(QtConcurrent::run([model, req, cancelFlag, done, total, cleanText, corruptedText, hook]() mutable {
        auto o = std::make_shared<Outcome>();
        o->cleanText = cleanText;
        o->corruptedText = corruptedText;
        req.cancel = cancelFlag.get();
        req.progress = [done, total, hook](int d, int t) {
            done->store(d);
            total->store(t);
            if (hook)
                hook(d, t);
        };
        // the clean run as patchSweep traces it, kept for the edit a clicked cell stands for
        TraceRequest cr;
        cr.text = req.clean;
        cr.keepHookOutputs = req.sweep == PatchSweep::MlpOut || req.sweep == PatchSweep::Path;
        auto clean = std::make_shared<Trace<float>>();
        if (Status st = model->trace(cr, *clean); st)
            o->clean = clean;
        if (req.sweep == PatchSweep::Path) { // and the corrupted run: a path cell's edit reads both
            cr.text = req.corrupted;
            auto corrupted = std::make_shared<Trace<float>>();
            if (Status st = model->trace(cr, *corrupted); st)
                o->corrupted = corrupted;
        }
        o->status = patchSweep<float>(*model, req, o->result);
        return std::shared_ptr<const Outcome>(o);
    }));
    m_message = tr("Running: one corrupted forward per cell …");
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_poll->start();
    refresh();
    return true;
}

void PatchingView::cancel()
{
    if (m_cancelFlag)
        m_cancelFlag->store(true);
}

void PatchingView::finished()
{
    m_poll->stop();
    const std::shared_ptr<const Outcome> o = m_watcher.result();
    if (m_runningModel != m_model) { // the model changed while it ran: not this model's numbers
        m_message.clear();
        m_cancelFlag.reset();
        refresh();
        emit sweepFinished();
        return;
    }
    const bool cancelled = o->status.code == StatusCode::Cancelled;
    if (o->status.ok() || (cancelled && o->result.rows > 0)) {
        m_result = o;
        const int total = cellsOf(o->result);
        m_progress->setRange(0, std::max(1, total));
        m_progress->setValue(o->result.done);
        if (o->status.ok()) {
            m_cache.insert(m_runningKey, o);
            m_message = o->result.metricKind == PatchMetric::LogitDiff
                ? tr("Done: %1 cells. Logit differences: clean %2, corrupted %3. Click a cell to apply its patch.")
                      .arg(total)
                      .arg(o->result.cleanDiff, 0, 'f', 3)
                      .arg(o->result.corruptedDiff, 0, 'f', 3)
                : tr("Done: %1 cells. Clean run %2, corrupted run %3. Click a cell to apply its patch.")
                      .arg(total)
                      .arg(o->result.cleanValue, 0, 'g', 4)
                      .arg(o->result.corruptedValue, 0, 'g', 4);
            const PatchResult &r = o->result;
            if (r.sweep == PatchSweep::Path && m_senderLayer >= 0 && m_senderLayer < r.receiver.layer && m_senderHead >= 0 &&
                m_senderHead < r.cols)
                m_message += QLatin1Char(' ') + tr("The path L%1 H%2 → L%3 H%4 (%5): %6.")
                                                    .arg(m_senderLayer)
                                                    .arg(m_senderHead)
                                                    .arg(r.receiver.layer)
                                                    .arg(r.receiver.head)
                                                    .arg(QLatin1String(headInputName(r.receiver.input)))
                                                    .arg(r.at(m_senderLayer, m_senderHead), 0, 'f', 4);
        } else {
            m_message = tr("Cancelled after %1 of %2 cells: the cells done are shown, the others are blank.")
                            .arg(o->result.done)
                            .arg(total);
        }
        draw();
    } else {
        m_message = tr("Not computed: %1").arg(QString::fromStdString(o->status.message));
    }
    m_cancelFlag.reset();
    m_senderLayer = m_senderHead = -1;
    refresh();
    emit sweepFinished();
}

QString PatchingView::message() const { return m_message; }

void PatchingView::showResult(const PatchResult &result)
{
    auto o = std::make_shared<Outcome>();
    o->result = result;
    m_result = o;
    m_message.clear();
    draw();
}

double PatchingView::scaleCentre() const
{
    const PatchResult *r = result();
    return r && r->metricKind == PatchMetric::Prob ? r->corruptedValue : 0.0;
}

QString PatchingView::scaleLabel() const
{
    const PatchMetric m = m_result ? m_result->result.metricKind : PatchMetric(m_metric->currentIndex());
    switch (m) {
    case PatchMetric::LogitDiff: return tr("logit diff (0 corrupted, 1 clean)");
    case PatchMetric::Prob:
        return m_result
                   ? tr("p(answer), centred on the corrupted run's %1").arg(m_result->result.corruptedValue, 0, 'g', 3)
                   : tr("p(answer)");
    case PatchMetric::Kl: return tr("KL(clean ‖ patched)");
    }
    return {};
}

QString PatchingView::cellText(int row, int col) const
{
    const PatchResult *r = result();
    if (!r || row < 0 || row >= r->rows || col < 0 || col >= r->cols)
        return QString();
    const double v = r->at(row, col);
    if (r->sweep == PatchSweep::Path && row >= r->receiver.layer)
        return tr("layer %1, %2: not a sender (a path runs from a layer before the receiver's, L%3)")
            .arg(row)
            .arg(col < m_colLabels.size() ? m_colLabels[col] : QString::number(col))
            .arg(r->receiver.layer);
    const QString value = std::isnan(v) ? tr("not computed") : QString::number(v, 'f', 4);
    return tr("layer %1, %2: %3\nclick: apply this patch to the corrupted prompt")
        .arg(row)
        .arg(col < m_colLabels.size() ? m_colLabels[col] : QString::number(col), value);
}

void PatchingView::draw()
{
    const PatchResult *r = result();
    m_colLabels.clear();
    if (!r || r->rows == 0 || r->cols == 0) {
        for (QCPItemText *t : std::as_const(m_cellTexts))
            m_plot->removeItem(t);
        m_cellTexts.clear();
        m_map->data()->clear();
        m_title->setText(QString());
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const auto tokenAt = [r](int p) {
        const TraceToken &a = r->cleanTokens[size_t(p)], &b = r->corruptedTokens[size_t(p)];
        return a.id == b.id ? display(a) : display(a) + QStringLiteral("→") + display(b);
    };
    for (int c = 0; c < r->cols; ++c) {
        switch (r->sweep) {
        case PatchSweep::ResidPre:
        case PatchSweep::MlpOut: m_colLabels << tokenAt(c); break;
        case PatchSweep::HeadsAllPositions:
        case PatchSweep::Path: m_colLabels << QStringLiteral("H%1").arg(c); break;
        case PatchSweep::HeadsByPosition:
            m_colLabels << QStringLiteral("%1 H%2").arg(tokenAt(c / std::max(1, r->heads))).arg(c % std::max(1, r->heads));
            break;
        }
    }
    m_plot->yAxis->setLabel(r->sweep == PatchSweep::Path ? tr("sender layer") : tr("layer"));
    m_plot->xAxis->setLabel(r->sweep == PatchSweep::Path              ? tr("sender head")
                            : r->sweep == PatchSweep::HeadsAllPositions ? tr("head")
                            : r->sweep == PatchSweep::HeadsByPosition ? tr("position · head")
                                                                      : tr("position (clean→corrupted where they differ)"));
    auto *data = new QCPColorMapData(r->cols, r->rows, QCPRange(0, r->cols - 1), QCPRange(0, r->rows - 1));
    // diverging around the corrupted run's value (prob: a cell above it raised p(answer), below lowered)
    const double centre = scaleCentre();
    double hi = 0;
    for (int y = 0; y < r->rows; ++y)
        for (int x = 0; x < r->cols; ++x) {
            const double v = r->at(y, x);
            data->setCell(x, y, v);
            if (std::isfinite(v))
                hi = std::max(hi, std::abs(v - centre));
        }
    if (r->cols == 1)
        data->setKeyRange(QCPRange(-0.5, 0.5));
    if (r->rows == 1)
        data->setValueRange(QCPRange(-0.5, 0.5));
    m_map->setData(data);
    hi = hi > 0 ? hi : 1;
    m_scale->setGradient(divergingGradient());
    m_scale->setDataRange(QCPRange(centre - hi, centre + hi));
    m_scale->axis()->setLabel(scaleLabel());
    m_plot->xAxis->setRange(-0.5, r->cols - 0.5);
    m_plot->yAxis->setRange(-0.5, r->rows - 0.5);
    // a small grid (a path sweep, the heads of a small model) carries its numbers on its cells
    for (QCPItemText *t : std::as_const(m_cellTexts))
        m_plot->removeItem(t);
    m_cellTexts.clear();
    // three decimals, or three significant digits for a grid of small numbers (a rare answer's
    // probabilities read 0.000 every one at three decimals)
    double largest = 0;
    for (double v : r->metric)
        if (std::isfinite(v))
            largest = std::max(largest, std::abs(v));
    const bool small = largest < kSmallCells;
    if (r->rows * r->cols <= kNumberedCells)
        for (int y = 0; y < r->rows; ++y)
            for (int x = 0; x < r->cols; ++x) {
                const double v = r->at(y, x);
                if (!std::isfinite(v))
                    continue;
                auto *t = new QCPItemText(m_plot);
                t->position->setType(QCPItemPosition::ptPlotCoords);
                t->position->setCoords(x, y);
                t->setText(small ? QString::number(v, 'g', 3) : QString::number(v, 'f', 3));
                t->setColor(std::abs(v - centre) > 0.6 * hi ? Qt::white : Qt::black);
                t->setProperty("attnviz.ownColour", true); // legible on its cell, not the theme's text colour
                t->setClipToAxisRect(true);
                m_cellTexts << t;
            }
    m_titleText = r->sweep == PatchSweep::Path
                      ? tr("Clean sender heads → L%1 H%2's %3 (path patching)")
                            .arg(r->receiver.layer)
                            .arg(r->receiver.head)
                            .arg(r->receiver.input == HeadInput::Q   ? tr("queries")
                                 : r->receiver.input == HeadInput::K ? tr("keys")
                                                                     : tr("values"))
                      : tr("Clean %1 patched into the corrupted run").arg(sweepTitle(r->sweep));
    m_title->setText(m_titleText);
    labelTokenAxis(m_plot->xAxis, m_colLabels);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QStringList PatchingView::cellNumbers() const
{
    QStringList out;
    for (const QCPItemText *t : m_cellTexts)
        out << t->text();
    return out;
}

bool PatchingView::patchOf(int row, int col, Intervention &out) const
{
    if (!m_result || !m_result->clean) {
        return false;
    }
    if (m_result->result.sweep == PatchSweep::Path) { // the receiver's z, as this sender's path makes it
        std::shared_ptr<Model> model = m_session ? m_session->model() : nullptr;
        if (!m_result->corrupted || !model || model.get() != m_model)
            return false;
        std::vector<Intervention> edits;
        if (!pathPatchFor(*model, *m_result->clean, *m_result->corrupted, row, col, m_result->result.receiver, {}, edits).ok() ||
            edits.empty())
            return false;
        out = edits.front();
        return true;
    }
    const Status st = patchFor(m_result->result.sweep, *m_result->clean, row, col, out);
    return st.ok();
}

bool PatchingView::applyCell(int row, int col)
{
    Intervention e;
    const PatchResult *r = result();
    const bool path = r && r->sweep == PatchSweep::Path;
    if (path && (row >= r->receiver.layer || row < 0 || col < 0 || col >= r->cols)) {
        m_message = tr("L%1 H%2 is not a sender: a path runs from a layer before the receiver's (L%3).")
                        .arg(row)
                        .arg(col)
                        .arg(r->receiver.layer);
        refresh();
        return false;
    }
    if (path) { // pathPatchFor runs two forwards: on the pool, the newest click wins
        std::shared_ptr<Model> model = m_session ? m_session->model() : nullptr;
        if (!m_result->clean || !m_result->corrupted || !model || model.get() != m_model) {
            m_message = tr("No patch for that cell: run the sweep first.");
            refresh();
            return false;
        }
        const quint64 gen = ++m_pathGen;
        const std::shared_ptr<const Outcome> outcome = m_result;
        m_message =
            tr("Computing the path L%1 H%2 → L%3 H%4 …").arg(row).arg(col).arg(r->receiver.layer).arg(r->receiver.head);
        refresh();
        QPointer<PatchingView> self(this);
        (void)QtConcurrent::run([self, gen, outcome, model, row, col] {
            std::vector<Intervention> edits;
            const Status st = pathPatchFor(*model, *outcome->clean, *outcome->corrupted, row, col,
                                           outcome->result.receiver, {}, edits);
            QMetaObject::invokeMethod(
                qApp,
                [self, gen, outcome, row, col, st, edits = std::move(edits)] {
                    if (!self || self->m_pathGen != gen || self->m_result != outcome)
                        return; // a newer click, or another sweep shown
                    if (!st || edits.empty()) {
                        self->m_message = !st ? tr("No patch for that cell: %1").arg(QString::fromStdString(st.message))
                                              : tr("L%1 H%2's clean output does not reach the receiver: the patched "
                                                   "run is the corrupted "
                                                   "run itself.")
                                                    .arg(row)
                                                    .arg(col);
                        self->refresh();
                        return;
                    }
                    self->emitPatch(edits.front(), row, col);
                },
                Qt::QueuedConnection);
        });
        return true;
    }
    if (!patchOf(row, col, e)) {
        m_message = tr("No patch for that cell: run the sweep first.");
        refresh();
        return false;
    }
    emitPatch(e, row, col);
    return true;
}

void PatchingView::emitPatch(const Intervention &e, int row, int col)
{
    const PatchResult *r = result();
    const bool path = r && r->sweep == PatchSweep::Path;
    m_appliedClean = m_result->cleanText;
    const QString label = col < m_colLabels.size() ? m_colLabels[col] : QString::number(col);
    const QString cell = path ? tr("path L%1 H%2 → L%3 H%4 %5")
                                    .arg(row)
                                    .arg(col)
                                    .arg(r->receiver.layer)
                                    .arg(r->receiver.head)
                                    .arg(QLatin1String(headInputName(r->receiver.input)))
                              : tr("%1 L%2 %3").arg(QLatin1String(hookName(e.hook))).arg(row).arg(label);
    emit patchRequested(e, m_result->cleanText, m_result->corruptedText, tr("Patch %1 from the clean prompt").arg(cell));
    m_message = tr("Applied: the clean run's %1 patched into the corrupted prompt, which the window now shows (Clear "
                   "patch or Undo takes it out).")
                    .arg(cell);
    refresh();
}

void PatchingView::clearPatch()
{
    if (!patchApplied())
        return;
    emit patchClearRequested(m_appliedClean.isEmpty() ? cleanPrompt() : m_appliedClean);
    m_message = tr("Patch cleared: the window shows the clean prompt.");
    refresh();
}

bool PatchingView::saveCsv(const QString &path, QString *error) const
{
    const PatchResult *r = result();
    if (!r) {
        if (error)
            *error = tr("No sweep to save: run one first.");
        return false;
    }
    const auto field = [](QString s) {
        if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n')))
            s = QLatin1Char('"') + s.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
        return s;
    };
    QString text = QStringLiteral("layer");
    for (const QString &l : m_colLabels)
        text += QLatin1Char(',') + field(l);
    text += QLatin1Char('\n');
    for (int y = 0; y < r->rows; ++y) {
        text += QString::number(y);
        for (int x = 0; x < r->cols; ++x) {
            text += QLatin1Char(',');
            if (std::isfinite(r->at(y, x)))
                text += QString::number(r->at(y, x), 'g', 17); // read back exactly
        }
        text += QLatin1Char('\n');
    }
    QString why;
    if (!writeOutputFile(path, text.toUtf8(), why)) {
        if (error)
            *error = tr("Could not write %1: %2").arg(path, why);
        return false;
    }
    return true;
}

} // namespace attnviz::ui
