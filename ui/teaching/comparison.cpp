// SPDX-License-Identifier: GPL-3.0-or-later
#include "teaching/comparison.h"

#include "teaching/seedtables.h"

#include "bundledvectors.h"

namespace attnviz::ui {

namespace {

// The bundled table (read once per process), or null where it is missing or empty.
std::shared_ptr<const EmbeddingTable> bundledTable()
{
    std::shared_ptr<const EmbeddingTable> t = sharedBundledEmbeddings();
    return t && !t->empty() ? t : nullptr;
}

ComputeSettings identitySettings(ScaleRule scale, Normalization norm, MaskChoice mask)
{
    ComputeSettings s;
    s.numHeads = 1;
    s.scaleRule = scale;
    s.normalization = norm;
    s.mask = mask;
    s.projection = ProjectionMode::Identity;
    return s;
}

ComparisonSpec journeySpec(const QString &id, const QString &title, const QString &explanation)
{
    ComparisonSpec c;
    c.id = id;
    c.title = title;
    c.explanation = explanation;
    c.a.sentence = c.b.sentence = journeySentence();
    c.a.table = journeyTable();
    c.a.tableDescription = describeTable(*c.a.table);
    c.selectedQuery = 1;
    c.focusWord = QStringLiteral("journey");
    return c;
}

} // namespace

std::vector<ComparisonSpec> seedComparisons()
{
    std::vector<ComparisonSpec> out;
    const auto bundled = bundledTable();
    const QString shipSentence = QStringLiteral("I must go back to my ship and to my crew");

    if (bundled) {
        ComparisonSpec c;
        c.id = QStringLiteral("ship");
        c.title = QStringLiteral("“ship” in two sentences (seed 003)");
        c.explanation = QStringLiteral(
            "The word “ship” has one input vector, whatever the sentence: the table stores one vector per word. "
            "Attention mixes the other words of the sentence into it, so its contextual embedding (the attention "
            "output for “ship”) differs between “I must go back to my ship and to my crew” (a vessel, near crew) "
            "and “We process and ship your order” (to send, near order). The sentences have different lengths, "
            "so there is no cell-by-cell difference: look at ship's row of weights in each sentence — ship keeps "
            "the largest weight for itself in both; in the Odyssey crew takes the next largest share, in the shop "
            "sentence the rest is spread evenly — and at the two contextual embeddings, whose cosine similarity "
            "below 1 says how far the two contexts pulled ship apart. As in seed 003 (which reads GloVe; here the "
            "bundled vectors): no projections (Q = K = V = X), one head, softmax(QKᵀ/√d).");
        c.a.title = QStringLiteral("A: the Odyssey");
        c.b.title = QStringLiteral("B: an online shop");
        c.a.sentence = shipSentence;
        c.b.sentence = QStringLiteral("We process and ship your order");
        c.a.settings = c.b.settings =
            identitySettings(ScaleRule::InvSqrtDHead, Normalization::Softmax, MaskChoice::None);
        c.a.table = bundled;
        c.a.tableDescription = describeTable(*bundled);
        c.focusWord = QStringLiteral("ship");
        c.selectedQuery = 6; // "ship" in A
        out.push_back(std::move(c));
    }

    {
        ComparisonSpec c = journeySpec(
            QStringLiteral("scaled-unscaled"), QStringLiteral("Scaled vs unscaled scores (seed 001)"),
            QStringLiteral(
                "Both sides compute softmax(QKᵀ) on seed 001's six-word, 3-dimension table with no projections. "
                "A divides the scores by √d_head = √3 before the softmax; B does not. Dividing shrinks the gaps "
                "between scores, so softmax spreads the weight more evenly. In the difference A − B, blue cells "
                "are where scaling took weight away (each row's strongest keys) and red cells where it gave "
                "weight (the weak keys). With 3 dimensions the effect is mild; with hundreds, unscaled scores "
                "grow so large that softmax puts nearly all the weight on one key — which is why transformers "
                "scale."));
        c.a.title = QStringLiteral("A: scaled by 1/√d_head");
        c.b.title = QStringLiteral("B: unscaled");
        c.a.settings = identitySettings(ScaleRule::InvSqrtDHead, Normalization::Softmax, MaskChoice::None);
        c.b.settings = identitySettings(ScaleRule::None, Normalization::Softmax, MaskChoice::None);
        out.push_back(std::move(c));
    }

    {
        ComparisonSpec c = journeySpec(
            QStringLiteral("softmax-sum"), QStringLiteral("Softmax vs dividing by the sum (seed 001)"),
            QStringLiteral(
                "Seed 001 turns the raw scores of “journey” into weights two ways: A with softmax "
                "(exponentiate, then divide by the total), B by dividing each score by the row sum. Both rows add "
                "up to 1 and rank the keys the same way, but softmax stretches the gaps: it gives the two "
                "strongest keys (journey, starts) more than the plain sum does and takes it from the others "
                "(your, with, step; one is nearly unchanged) — red and blue in the difference. The selected row "
                "“journey” reproduces the notebook's printed numbers: A 0.1385 "
                "0.2379 0.2333 0.1240 0.1082 0.1581, B 0.1455 0.2278 0.2249 0.1285 0.1077 0.1656. Dividing by "
                "the sum only works here because every score is positive; softmax never has that problem."));
        c.a.title = QStringLiteral("A: softmax");
        c.b.title = QStringLiteral("B: divide by the sum");
        c.a.settings = identitySettings(ScaleRule::None, Normalization::Softmax, MaskChoice::None);
        c.b.settings = identitySettings(ScaleRule::None, Normalization::Sum, MaskChoice::None);
        out.push_back(std::move(c));
    }

    {
        ComparisonSpec c = journeySpec(
            QStringLiteral("causal-none"), QStringLiteral("Causal mask vs none (seed 001)"),
            QStringLiteral(
                "A hides the future: under a causal mask each word may attend only to itself and the words "
                "before it, so the upper-right triangle is masked (hatched, weight 0). B lets every word see the "
                "whole sentence. “Your” can see only itself, so A puts its whole weight (1.0) on the diagonal. In "
                "the difference A − B the masked cells are blue (B gave them weight, A cannot) and the allowed "
                "cells red: the weight the future words would have taken is shared out over the past. The last "
                "word sees everything on both sides, so its row is 0. This is how GPT-style models are kept from "
                "reading the word they must predict. Unscaled softmax, as in the notebook's first example."));
        c.a.title = QStringLiteral("A: causal mask");
        c.b.title = QStringLiteral("B: no mask");
        c.a.settings = identitySettings(ScaleRule::None, Normalization::Softmax, MaskChoice::Causal);
        c.b.settings = identitySettings(ScaleRule::None, Normalization::Softmax, MaskChoice::None);
        out.push_back(std::move(c));
    }

    if (bundled) {
        ComparisonSpec c;
        c.id = QStringLiteral("heads-1-4");
        c.title = QStringLiteral("One head vs four heads");
        c.explanation = QStringLiteral(
            "Both sides read seed 003's sentence with the bundled 50-dimension vectors through random projections "
            "drawn from the same seed (123). The head width is set by hand so that both have the same inner "
            "width: A is 1 head × d_head 48, B is 4 heads × d_head 12, and 1 × 48 = 4 × 12 = 48 (48, not 50, "
            "because 50 does not split into 4 equal heads). So the comparison changes only how the 48 projected "
            "dimensions are split, not how many there are: with the same seed and the same 48 × 50 matrices, "
            "B's four heads are A's single head cut into four slices of 12, each with its own softmax. The head "
            "counts differ, so the view compares A's head with the average of B's four heads: each narrow head "
            "forms its own pattern from 12 dimensions; compare their average with the one wide head. To see B's "
            "four heads one by one, press Swap A/B and open the All heads tab.");
        c.a.title = QStringLiteral("A: 1 head × 48");
        c.b.title = QStringLiteral("B: 4 heads × 12");
        c.a.sentence = c.b.sentence = shipSentence;
        ComputeSettings s = identitySettings(ScaleRule::InvSqrtDHead, Normalization::Softmax, MaskChoice::None);
        s.projection = ProjectionMode::Random;
        s.projectionSeed = 123;
        s.numHeads = 1;
        s.dHead = 48;
        c.a.settings = s;
        s.numHeads = 4;
        s.dHead = 12;
        c.b.settings = s;
        c.a.table = bundled;
        c.a.tableDescription = describeTable(*bundled);
        c.focusWord = QStringLiteral("ship");
        c.selectedQuery = 6;
        out.push_back(std::move(c));
    }
    return out;
}

bool findSeedComparison(const QString &id, ComparisonSpec &out)
{
    for (ComparisonSpec &c : seedComparisons())
        if (c.id == id) {
            out = std::move(c);
            return true;
        }
    return false;
}

} // namespace attnviz::ui
