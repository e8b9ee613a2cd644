// SPDX-License-Identifier: GPL-3.0-or-later
// What a model with a prediction head says about the text, beside the views: a causal
// language model (GPT-2) — the top next tokens after the last token with their probabilities, or,
// while a position is hovered (token chips, heatmap rows), what it predicted after that position
// and the probability it gave the token that actually follows; a masked language model (BERT) — the
// top fills of each [MASK]. Every number comes from Trace::predictions where the trace has it (the
// last position of a causal model, the [MASK] fills); a hovered position the trace did not compute is
// asked of the snapshot's model (Model::nextTokens: one position's LM head, the shared trace only
// read) and kept while the tokens up to the one after it stay the same (typing elsewhere, later).
// maskedSentence() is what clicking a token does for BERT. With head ablations applied, the last
// token's list adds each token's change against the clean model (ComputeSnapshot::cleanNext) under
// its probability. The panel is as wide as the widest row a list can show (a token of nine
// characters, longer ones cut short with "…") from the first list on: no later list widens its dock.
#pragma once

#include "live/livetypes.h"
#include "views/view.h"

#include <QString>
#include <QWidget>

#include <limits>
#include <map>
#include <vector>

class QTextBrowser;

namespace attnviz::ui {

class PredictionsView : public View {
    Q_OBJECT
public:
    // One list of scored tokens: a heading ("Next token after “tired”") and its entries, best first.
    struct Entry {
        int id = -1;
        QString token; // the decoded text, spaces made visible (TokenProb::display)
        double p = 0.0;
        // an edited model's last position: p minus the clean model's probability of the token (NaN: none)
        double delta = std::numeric_limits<double>::quiet_NaN();
    };
    struct Group {
        QString heading;
        std::vector<Entry> entries;
        QString note;      // the probability of the token that actually follows, when hovering
        int position = -1; // the position the list is about
        double actualNext = std::numeric_limits<double>::quiet_NaN(); // that probability (NaN: none)
    };

    explicit PredictionsView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The position the mouse is over (token chips, a heatmap row); -1: none (the last token).
    void setHoveredPosition(int position);
    int hoveredPosition() const { return m_hovered; }
    // The position shown while none is hovered (a lesson's query, a clicked row); -1: the last token.
    void setSelectedPosition(int position);
    int selectedPosition() const { return m_selected; }

    const std::vector<Group> &groups() const { return m_groups; }
    QString message() const { return m_message; } // shown instead of lists ("" when there are lists)
    QString html() const;                         // what the panel shows

    // The snapshot's sentence with token `position` replaced by "[MASK]" (its byte range in the
    // text); an empty string when that token cannot be masked (an added special, or out of range).
    // "+0.12", "−0.30": a probability's change, as the list shows it.
    static QString deltaText(double delta);
    // A token as a list shows it: whole up to nine characters, else its first eight and "…".
    static QString shownToken(const QString &token);

    static QString maskedSentence(const ComputeSnapshot &snapshot, int position);

    // Positions computed on hover so far and still valid (tests).
    int computedOnDemand() const { return int(m_computed.size()); }

protected:
    void changeEvent(QEvent *e) override; // a theme or text size: the lists written and measured again

private:
    void rebuild();
    QString htmlOf(const std::vector<Group> &groups) const; // html() of these lists
    // The next tokens after `position` of the shown snapshot: the trace's, a kept one, or computed
    // now; false with `m_message` set when the model cannot say.
    bool nextTokensAt(int position, NextTokens &out);
    // Drops what the new snapshot's tokens (or masks, or model) no longer back.
    void keepValidComputed();

    // What a hovered position's list was computed from: the token ids up to the one after it (its
    // top tokens depend on those before, its actual-next probability on the one after), so that it
    // survives a snapshot that shares them. Same model (Trace::producer) and masks, or none kept.
    struct Computed {
        std::vector<int> ids;
        NextTokens next;
    };
    std::map<int, Computed> m_computed;
    uint64_t m_computedProducer = 0;
    std::vector<int> m_computedPadded;
    std::vector<std::pair<int, int>> m_computedCells;

    SnapshotPtr m_snapshot;
    int m_hovered = -1;
    int m_selected = -1;
    std::vector<Group> m_groups;
    QString m_message;
    QString m_shown; // the html on screen
    QTextBrowser *m_text = nullptr;
};

} // namespace attnviz::ui
