// SPDX-License-Identifier: GPL-3.0-or-later
// What a model with a prediction head says about the text (issue 13), beside the views: a causal
// language model (GPT-2) — the top next tokens after the last token with their probabilities, or,
// while a position is hovered (token chips, heatmap rows), what it predicted after that position
// and the probability it gave the token that actually follows; a masked language model (BERT) — the
// top fills of each [MASK]. Every number comes from Trace::predictions (the core computes the top-k
// at every position of a causal model). maskedSentence() is what clicking a token does for BERT.
#pragma once

#include "live/livetypes.h"

#include <QString>
#include <QWidget>

#include <vector>

class QTextBrowser;

namespace attnviz::ui {

class PredictionsView : public QWidget {
    Q_OBJECT
public:
    // One list of scored tokens: a heading ("Next token after “tired”") and its entries, best first.
    struct Entry {
        int id = -1;
        QString token; // the decoded text, spaces made visible (TokenProb::display)
        double p = 0.0;
    };
    struct Group {
        QString heading;
        std::vector<Entry> entries;
        QString note;      // the probability of the token that actually follows, when hovering
        int position = -1; // the position the list is about
    };

    explicit PredictionsView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    // The position the mouse is over (token chips, a heatmap row); -1: none (the last token).
    void setHoveredPosition(int position);
    int hoveredPosition() const { return m_hovered; }

    const std::vector<Group> &groups() const { return m_groups; }
    QString message() const { return m_message; } // shown instead of lists ("" when there are lists)
    QString html() const;                         // what the panel shows

    // The snapshot's sentence with token `position` replaced by "[MASK]" (its byte range in the
    // text); an empty string when that token cannot be masked (an added special, or out of range).
    static QString maskedSentence(const ComputeSnapshot &snapshot, int position);

private:
    void rebuild();

    SnapshotPtr m_snapshot;
    int m_hovered = -1;
    std::vector<Group> m_groups;
    QString m_message;
    QString m_shown; // the html on screen
    QTextBrowser *m_text = nullptr;
};

} // namespace attnviz::ui
