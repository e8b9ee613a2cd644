// SPDX-License-Identifier: GPL-3.0-or-later
// Word alignment from cross-attention (see wordalignment.h for the word rule and the merge).
#include "views/wordalignment.h"

#include <cmath>
#include <limits>

namespace attnviz::ui {

namespace {

const std::string kAlignSentencePieceSpace = "\xE2\x96\x81"; // ▁
const std::string kAlignByteLevelSpace = "\xC4\xA0";         // Ġ
const std::string kAlignShownSpace = "\xE2\x90\xA3";         // ␣, the space marker of TraceToken::display

bool alignStartsWith(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }

// Whether a piece begins a word, and its text without the marker.
bool alignBeginsWord(const TraceToken &t, std::string &bare)
{
    bare = t.display.empty() ? t.text : t.display;
    for (const std::string &m : {kAlignShownSpace, kAlignSentencePieceSpace, kAlignByteLevelSpace, std::string(" ")})
        if (alignStartsWith(bare, m)) {
            bare.erase(0, m.size());
            return true;
        }
    for (const std::string &m : {kAlignSentencePieceSpace, kAlignByteLevelSpace, std::string(" ")})
        if (alignStartsWith(t.text, m))
            return true;
    if (alignStartsWith(bare, "##"))
        bare.erase(0, 2);
    return false;
}

} // namespace

std::vector<AlignmentWord> alignmentWords(const std::vector<TraceToken> &tokens)
{
    std::vector<AlignmentWord> words;
    bool afterSpecial = true; // the first piece begins a word
    for (size_t i = 0; i < tokens.size(); ++i) {
        const TraceToken &t = tokens[i];
        std::string bare;
        const bool begins = alignBeginsWord(t, bare);
        if (t.special) {
            words.push_back({int(i), int(i) + 1, t.display.empty() ? t.text : t.display});
            afterSpecial = true;
            continue;
        }
        if (begins || afterSpecial || words.empty()) {
            words.push_back({int(i), int(i) + 1, bare});
        } else {
            words.back().last = int(i) + 1;
            words.back().label += bare;
        }
        afterSpecial = false;
    }
    return words;
}

Mat<double> crossAttentionOf(const Trace<float> &trace, int layer, int head)
{
    const std::vector<LayerTrace<float>> &cross = trace.seq2seq.cross;
    if (cross.empty() || layer >= int(cross.size()))
        return {};
    Mat<double> sum;
    int count = 0;
    for (int l = layer < 0 ? 0 : layer; l < (layer < 0 ? int(cross.size()) : layer + 1); ++l) {
        const AttentionResult<float> &a = cross[size_t(l)].attention;
        if (a.batch.empty() || head >= a.numHeads)
            return {};
        const SequenceResult<float> &s = a.batch.front();
        for (int h = head < 0 ? 0 : head; h < (head < 0 ? a.numHeads : head + 1); ++h) {
            if (h >= int(s.weights.size()))
                return {};
            const Mat<double> w = s.weights[size_t(h)].cast<double>();
            if (count == 0)
                sum = w;
            else if (w.rows() == sum.rows() && w.cols() == sum.cols())
                sum += w;
            else
                return {};
            ++count;
        }
    }
    if (count > 0)
        sum /= double(count);
    return sum;
}

Mat<double> mergeIntoWords(const Mat<double> &tokens, const std::vector<AlignmentWord> &rows,
                           const std::vector<AlignmentWord> &cols)
{
    Mat<double> out = Mat<double>::Zero(Eigen::Index(rows.size()), Eigen::Index(cols.size()));
    for (size_t r = 0; r < rows.size(); ++r) {
        const int n = rows[r].last - rows[r].first;
        for (size_t c = 0; c < cols.size(); ++c) {
            double sum = 0;
            for (int i = rows[r].first; i < rows[r].last && i < tokens.rows(); ++i)
                for (int j = cols[c].first; j < cols[c].last && j < tokens.cols(); ++j)
                    sum += tokens(i, j);
            out(Eigen::Index(r), Eigen::Index(c)) = n > 0 ? sum / n : 0.0;
        }
    }
    return out;
}

std::vector<int> rowArgmax(const Mat<double> &m)
{
    std::vector<int> out(size_t(m.rows()), -1);
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        double best = -std::numeric_limits<double>::infinity();
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (m(i, j) > best) { // strictly: the lower column wins a tie
                best = m(i, j);
                out[size_t(i)] = int(j);
            }
    }
    return out;
}

double alignmentAccuracy(const Mat<double> &words, const std::vector<int> &marked)
{
    const std::vector<int> argmax = rowArgmax(words);
    int counted = 0, right = 0;
    for (size_t r = 0; r < marked.size() && r < argmax.size(); ++r) {
        if (marked[r] < 0 || marked[r] >= words.cols())
            continue;
        ++counted;
        right += argmax[r] == marked[r] ? 1 : 0;
    }
    return counted ? double(right) / counted : std::numeric_limits<double>::quiet_NaN();
}

std::vector<LayerAlignment> layerSweep(const Trace<float> &trace, const std::vector<int> &marked)
{
    std::vector<LayerAlignment> out;
    const std::vector<AlignmentWord> rows = alignmentWords(trace.tokens), cols = alignmentWords(trace.seq2seq.sourceTokens);
    if (std::isnan(alignmentAccuracy(Mat<double>::Zero(Eigen::Index(rows.size()), Eigen::Index(cols.size())), marked)))
        return out; // nothing marked within the words
    for (int l = 0; l < int(trace.seq2seq.cross.size()); ++l) {
        LayerAlignment a;
        a.layer = l;
        a.meanOfHeads = alignmentAccuracy(mergeIntoWords(crossAttentionOf(trace, l, -1), rows, cols), marked);
        a.bestHeadAccuracy = -1;
        for (int h = 0; h < trace.seq2seq.cross[size_t(l)].attention.numHeads; ++h) {
            const double acc = alignmentAccuracy(mergeIntoWords(crossAttentionOf(trace, l, h), rows, cols), marked);
            if (acc > a.bestHeadAccuracy) {
                a.bestHeadAccuracy = acc;
                a.bestHead = h;
            }
        }
        out.push_back(a);
    }
    return out;
}

int bestLayer(const std::vector<LayerAlignment> &sweep)
{
    int best = -1;
    for (size_t i = 0; i < sweep.size(); ++i)
        if (best < 0 || sweep[i].meanOfHeads > sweep[size_t(best)].meanOfHeads)
            best = int(i);
    return best < 0 ? -1 : sweep[size_t(best)].layer;
}

} // namespace attnviz::ui
