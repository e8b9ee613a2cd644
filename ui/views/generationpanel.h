// SPDX-License-Identifier: GPL-3.0-or-later
// Generation: a Generate button (and Ctrl+Enter) that continues the text token by token — greedy,
// or sampled with temperature, top-k, top-p and a seed — at a chosen pace so that each token can be
// watched, a Step button for one token at a time, and Stop. While it runs the views follow the newest
// token (showRow); afterwards "step k" replays the k-th generated token: the row that predicted it,
// whose attention is unchanged by what came after (causal). It takes snapshots like a view:
// at each one that shows the text it last asked for, it picks the next token from the snapshot's
// trace (attnviz/reads.h: nextTokenOf, the trace and the weights only read) and asks the window to
// append that token's text (appendText), so that the text, the chips and every view follow through
// the causal incremental path (one new row per token). It stops at the count, at Stop, or at the
// model's positions (said in its status line). The draws are torch-compatible, one per token from
// the seed: `attnviz generate` with the same options picks the same tokens.
#pragma once

#include "live/livetypes.h"

#include "attnviz/torchrng.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTimer;

namespace attnviz::ui {

class GenerationPanel : public QWidget {
    Q_OBJECT
public:
    explicit GenerationPanel(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setTokens(int n);
    // temperature 0: greedy
    void setSampling(double temperature, int topK, double topP, quint64 seed);

    bool running() const { return m_running; }
    // Generated so far in this run, and where (in characters of the text) the generated part begins
    // (-1: nothing generated since the last edit); the chips mark tokens from there on.
    int generatedCount() const { return m_done; }
    int generatedFrom() const { return m_from; }
    // The first generated token's chip in the snapshot shown (generatedChip), -1: none.
    int firstGeneratedChip() const { return m_firstChip; }
    QString status() const;
    QPushButton *generateButton() const { return m_generate; }
    QPushButton *stepButton() const { return m_stepOne; }
    // Seconds between tokens (0: as fast as they are computed).
    void setPace(double seconds);
    double pace() const;
    // Replays the k-th generated token (1-based): emits showRow with the row that predicted it.
    void replay(int k);

public slots:
    void start();
    // One token: continues the last run where the text still ends as it left it, else starts one.
    void stepOnce();
    void stop();

signals:
    // Append `text` to the text (the window's sentence), which is `expected` once appended.
    void appendText(const QString &text);
    void runningChanged(bool running);
    // Show this row (a trace position) as the selected query: the newest token while generating,
    // the replayed step's row afterwards.
    void showRow(int row);

private:
    void begin(int tokens, bool continuing);
    void step();
    void afterToken();
    void finish(const QString &why);
    void updateReplay();

    SnapshotPtr m_snapshot;
    QSpinBox *m_count = nullptr, *m_topK = nullptr, *m_seed = nullptr;
    QComboBox *m_mode = nullptr;
    QDoubleSpinBox *m_temperature = nullptr, *m_topP = nullptr;
    QDoubleSpinBox *m_pace = nullptr;
    QSpinBox *m_replay = nullptr;
    QPushButton *m_generate = nullptr, *m_stepOne = nullptr, *m_stop = nullptr;
    QLabel *m_status = nullptr;
    QTimer *m_paceTimer = nullptr;
    bool m_running = false;
    int m_done = 0, m_from = -1;
    int m_firstChip = -1; // generatedChip of the snapshot and m_from, found once per snapshot
    int m_target = 0; // m_done at which this run stops
    QString m_expected; // the text asked for by the last appendText
    TorchGenerator m_rng;
};

// The first token of `s` that begins at or after character `fromChar` of its sentence (what the
// chips mark as generated); -1 for fromChar -1 or none.
int generatedChip(const ComputeSnapshot &s, int fromChar);

} // namespace attnviz::ui
