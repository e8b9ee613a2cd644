// SPDX-License-Identifier: GPL-3.0-or-later
// Word alignment read from an encoder-decoder model's cross-attention (the Alignment tab and
// `attnviz export --view alignment`): tokens grouped into words, the cross-attention of a layer and a
// head (or their means) merged into a target words × source words matrix, each row's argmax, and a
// sweep of every layer's alignment accuracy against an alignment the user marked.
//
// Word boundaries come from the tokenizer's pieces: a piece that begins with SentencePiece's "▁"
// (T5, Marian, mBART), byte-level BPE's "Ġ" or a space (BART) starts a word; WordPiece's "##" and
// every other piece continue the word before it. A special token ("</s>", "<pad>", "<s>", a
// language code) is a word of its own, and the piece after one starts a new word.
// Merging: a source word's weight is the sum over its pieces (the keys), a target word's row the
// mean over its pieces (the queries): each merged row still sums to what a token row sums to (1).
// Plain C++ and Eigen: no Qt.
#pragma once

#include "attnviz/model.h"

#include <map>
#include <string>
#include <vector>

namespace attnviz::ui {

struct AlignmentWord {
    int first = 0, last = 0; // its tokens [first, last)
    std::string label;       // the pieces joined, without the word marker ("March,", "</s>")
};

// The words of a token list (the rule above).
std::vector<AlignmentWord> alignmentWords(const std::vector<TraceToken> &tokens);

// The cross-attention (target tokens × source tokens) of `layer` and `head` of a trace that holds
// it (Trace::seq2seq.cross); layer -1: the mean over layers; head -1: the mean over heads. Empty when
// the trace holds no cross-attention or the layer or head is out of range.
Mat<double> crossAttentionOf(const Trace<float> &trace, int layer, int head);

// `tokens` (target tokens × source tokens) merged into target words × source words.
Mat<double> mergeIntoWords(const Mat<double> &tokens, const std::vector<AlignmentWord> &rows,
                           const std::vector<AlignmentWord> &cols);

// Each row's column of largest weight (the lower column on a tie; -1 for an empty row).
std::vector<int> rowArgmax(const Mat<double> &m);

// The fraction of the marked rows (marked[row] a column, -1: not marked) whose argmax is the marked
// column; rows and columns beyond the matrix are not counted. NaN when no row is marked.
double alignmentAccuracy(const Mat<double> &words, const std::vector<int> &marked);

// What the Alignment tab shows and a session keeps (its "alignment" section): the layer and the head
// (-1: their mean) and the marked alignment, per target word the source word the user expects.
struct AlignmentSettings {
    int layer = -1;
    int head = -1;
    std::map<int, int> marks; // target word -> source word
    bool isDefault() const { return layer == -1 && head == -1 && marks.empty(); }
    bool operator==(const AlignmentSettings &o) const { return layer == o.layer && head == o.head && marks == o.marks; }
    bool operator!=(const AlignmentSettings &o) const { return !(*this == o); }
};

// One layer of the sweep: the accuracy of its mean over heads, and its best head's (the lower head
// on a tie).
struct LayerAlignment {
    int layer = 0;
    double meanOfHeads = 0;
    int bestHead = 0;
    double bestHeadAccuracy = 0;
};

// Every cross-attention layer of `trace` scored against `marked` (per target word, its source word
// or -1), words by alignmentWords of the trace's target and source tokens. Empty when nothing is
// marked or the trace holds no cross-attention.
std::vector<LayerAlignment> layerSweep(const Trace<float> &trace, const std::vector<int> &marked);
// The layer whose mean over heads scores best (the lower layer on a tie); -1 for an empty sweep.
int bestLayer(const std::vector<LayerAlignment> &sweep);

} // namespace attnviz::ui
