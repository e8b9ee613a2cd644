// SPDX-License-Identifier: GPL-3.0-or-later
// The Compare tab's next-token comparison: what a causal model predicts after the last token of
// side A and of side B, their top five side by side, and a logit difference read on both sides:
// A's top token against B's top token (A's second when both sides agree), logit(x) - logit(y) =
// log p(x) - log p(y), from each side's own trace. Hidden where a side has no next-token
// predictions (word vectors, encoders) or the two sides are different models.
#pragma once

#include "live/livetypes.h"

#include <QLabel>

#include <cmath>
#include <limits>

namespace attnviz::ui {

class ComparePredictions : public QLabel {
    Q_OBJECT
public:
    static constexpr int kShown = 5;

    explicit ComparePredictions(QWidget *parent = nullptr);

    void setSnapshots(const SnapshotPtr &a, const SnapshotPtr &b);

    // What is shown, for tests: the two tokens of the logit difference (ids, -1: none) and its value
    // on each side (NaN where it could not be read).
    int firstId() const { return m_x; }
    int secondId() const { return m_y; }
    double differenceA() const { return m_diffA; }
    double differenceB() const { return m_diffB; }

private:
    int m_x = -1, m_y = -1;
    double m_diffA = std::numeric_limits<double>::quiet_NaN(), m_diffB = std::numeric_limits<double>::quiet_NaN();
};

} // namespace attnviz::ui
