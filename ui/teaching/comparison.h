// SPDX-License-Identifier: GPL-3.0-or-later
// What the Compare view compares: two sides (sentence, settings, table) as plain values, and the
// seed notebooks' own comparisons as one-click specs with a plain-language explanation each.
#pragma once

#include "live/livetypes.h"

#include <QString>

#include <memory>
#include <vector>

namespace attnviz::ui {

struct CompareSide {
    QString title; // "A: scaled", "B: unscaled"
    QString sentence, keySentence;
    ComputeSettings settings;
    std::shared_ptr<const EmbeddingTable> table; // null: keep (A) / follow A's table (B)
    QString tableDescription;
};

struct ComparisonSpec {
    QString id, title, explanation;
    CompareSide a, b;
    int selectedQuery = -1; // A's selected query; -1 leaves it
    QString focusWord;      // the word followed when the sentences differ ("ship")
};

// The five demonstrations of the seed notebooks: ship in two sentences (seed 003), scaled vs
// unscaled, softmax vs sum, causal vs none (seed 001's journey table), one head vs four.
// Sides that need the bundled word vectors are left out when this build has none.
std::vector<ComparisonSpec> seedComparisons();

// One of seedComparisons() by id; false when there is none.
bool findSeedComparison(const QString &id, ComparisonSpec &out);

} // namespace attnviz::ui
