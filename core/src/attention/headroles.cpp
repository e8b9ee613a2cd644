// SPDX-License-Identifier: GPL-3.0-or-later
// Head-role scores and attention rollout over a trace's weights (headroles.h).
#include "attnviz/headroles.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/fileio.h"
#include "attnviz/reads.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One score of a head from its layer's tiles.
template <typename T>
using Scorer = std::function<double(const AttentionTiles<T> &, int)>;

// scores[k](l, h) = score[k](tiles of layer l, h): each layer's tiles made once for every score;
// NaN for a layer whose weights cannot be read. With `weighted` the tiles read the norm-weighted
// attention as each query's shares (ReadingOptions::normWeighted; its row sums read once a layer);
// NaN for a layer without the values that needs.
template <typename T>
std::vector<Mat<double>> overHeads(const Trace<T> &trace, bool weighted, const std::vector<Scorer<T>> &score,
                                   const std::atomic<bool> *stop = nullptr,
                                   const std::function<void(int, int)> &progress = {})
{
    std::vector<Mat<double>> s(score.size(), Mat<double>::Constant(trace.numLayers(), trace.numHeads(), kNaN));
    for (int l = 0; l < trace.numLayers() && !(stop && stop->load()); ++l) {
        // nothing cached: every read below is made once
        AttentionTiles<T> tiles(trace, l, AttentionTiles<T>::Source::Auto, 0);
        const auto read = [&] {
            if (!tiles.valid())
                return true;
            if (weighted) {
                Mat<T> norms;
                if (!valueNorms(trace, l, norms) || !tiles.setKeyWeights(std::move(norms)))
                    return true;
                if (!tiles.setRowShares(true, stop))
                    return false; // stopped part way: this layer stays NaN
            }
            for (size_t k = 0; k < score.size(); ++k)
                for (int h = 0; h < std::min(trace.numHeads(), tiles.numHeads()); ++h)
                    s[k](l, h) = score[k](tiles, h);
            return true;
        };
        if (!read())
            break;
        if (progress)
            progress(l + 1, trace.numLayers());
    }
    return s;
}

template <typename T>
Mat<double> overHeads(const Trace<T> &trace, bool weighted, const Scorer<T> &score)
{
    return std::move(overHeads(trace, weighted, std::vector<Scorer<T>>{score}).front());
}

// The mean of values[i] over i in [from, to) (finite ones only where `finiteOnly`); NaN if none.
template <typename V>
double meanOver(const V &values, int from, int to, bool finiteOnly = false)
{
    double sum = 0;
    int n = 0;
    for (int i = std::max(0, from); i < to; ++i)
        if (!finiteOnly || std::isfinite(double(values[size_t(i)]))) {
            sum += double(values[size_t(i)]);
            ++n;
        }
    return n ? sum / n : kNaN;
}

// The mean over rows r >= from of m's row sums (each row summed in double, keys in order); NaN if none.
template <typename T>
double meanRowSum(const Mat<T> &m, int from)
{
    double sum = 0;
    int n = 0;
    for (Eigen::Index i = std::max(0, from); i < m.rows(); ++i) {
        double r = 0;
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            r += double(m(i, j));
        sum += r;
        ++n;
    }
    return n ? sum / n : kNaN;
}

template <typename T>
Scorer<T> previousTokenScorer(const Trace<T> &)
{
    return Scorer<T>([](const AttentionTiles<T> &a, int h) { return meanOver(a.diagonal(h, -1), 1, a.rows()); });
}

template <typename T>
Scorer<T> firstTokenScorer(const Trace<T> &)
{
    return Scorer<T>([](const AttentionTiles<T> &a, int h) { return meanRowSum(a.leading(h, 1), 1); });
}

template <typename T>
Scorer<T> sameTokenScorer(const Trace<T> &trace, int *queriesRead)
{
    const auto &tok = trace.tokens;
    // per query that repeats an earlier id, those earlier positions (ascending)
    std::vector<int> queries, starts;
    std::vector<std::pair<int, int>> pairs;
    {
        std::map<int, std::vector<int>> seen;
        std::vector<std::pair<int, int>> all;
        std::vector<int> allQueries, allStarts;
        for (int i = 0; i < int(tok.size()); ++i) {
            std::vector<int> &at = seen[tok[size_t(i)].id];
            if (!at.empty()) {
                allQueries.push_back(i);
                allStarts.push_back(int(all.size()));
                for (int j : at)
                    all.emplace_back(i, j);
            }
            at.push_back(i);
        }
        const size_t budget = size_t(16) * std::max<size_t>(1, tok.size());
        const size_t step = all.size() <= budget ? 1 : (all.size() + budget - 1) / budget;
        allStarts.push_back(int(all.size()));
        for (size_t q = 0; q < allQueries.size(); q += step) {
            queries.push_back(allQueries[q]);
            starts.push_back(int(pairs.size()));
            pairs.insert(pairs.end(), all.begin() + allStarts[q], all.begin() + allStarts[q + 1]);
        }
        starts.push_back(int(pairs.size()));
    }
    if (queriesRead)
        *queriesRead = int(queries.size());
    return Scorer<T>([=](const AttentionTiles<T> &a, int h) {
        const std::vector<T> w = a.cells(h, pairs);
        double sum = 0;
        int n = 0;
        for (size_t q = 0; q < queries.size(); ++q) {
            if (queries[q] >= a.rows())
                continue;
            double s = 0;
            for (int c = starts[q]; c < starts[q + 1]; ++c)
                s += double(w[size_t(c)]);
            sum += s;
            ++n;
        }
        return n ? sum / n : kNaN;
    });
}

template <typename T>
Scorer<T> selfScorer(const Trace<T> &)
{
    return Scorer<T>([](const AttentionTiles<T> &a, int h) {
        return meanOver(a.diagonal(h, 0), 1, std::min(a.rows(), a.cols()), true);
    });
}

template <typename T>
Scorer<T> sinkMassScorer(const Trace<T> &, int sinkTokens)
{
    sinkTokens = std::max(1, sinkTokens);
    return Scorer<T>([=](const AttentionTiles<T> &a, int h) { return meanRowSum(a.leading(h, sinkTokens), sinkTokens); });
}

template <typename T>
Scorer<T> recentMassScorer(const Trace<T> &, int window)
{
    window = std::max(1, window);
    return Scorer<T>([=](const AttentionTiles<T> &a, int h) { return meanRowSum(a.recent(h, window), window); });
}

template <typename T>
Scorer<T> entropyScorer(const Trace<T> &trace, int rows, int *rowsRead)
{
    const std::vector<int> list = entropyRows(int(trace.tokens.size()), rows);
    if (rowsRead)
        *rowsRead = int(list.size());
    return Scorer<T>([=](const AttentionTiles<T> &a, int h) {
        double sum = 0;
        int n = 0;
        constexpr size_t kChunk = 64; // rows read at once
        for (size_t c = 0; c < list.size(); c += kChunk) {
            std::vector<int> part;
            for (size_t k = c; k < std::min(list.size(), c + kChunk); ++k)
                if (list[k] < a.rows())
                    part.push_back(list[k]);
            const Mat<T> w = a.wholeRows(h, part);
            for (Eigen::Index r = 0; r < w.rows(); ++r) {
                double e = 0;
                for (Eigen::Index j = 0; j < w.cols(); ++j)
                    if (const double p = double(w(r, j)); p > 0)
                        e -= p * std::log(p);
                sum += e;
                ++n;
            }
        }
        return n ? sum / n : kNaN;
    });
}

template <typename T>
Scorer<T> spanMassScorer(const Trace<T> &, int spanBegin, int spanEnd)
{
    return Scorer<T>([=](const AttentionTiles<T> &a, int h) {
        const int b = std::clamp(spanBegin, 0, a.cols()), e = std::clamp(spanEnd, b, a.cols());
        if (e <= b || e >= a.rows())
            return kNaN;
        return meanRowSum(a.tile(h, e, a.rows(), b, e), 0);
    });
}

template <typename T>
Scorer<T> readingScorer(const Trace<T> &trace, HeadReading reading, const ReadingOptions &o, int *rowsRead)
{
    switch (reading) {
    case HeadReading::PreviousToken:
        return previousTokenScorer(trace);
    case HeadReading::FirstToken:
        return firstTokenScorer(trace);
    case HeadReading::SameToken:
        return sameTokenScorer(trace, rowsRead);
    case HeadReading::Self:
        return selfScorer(trace);
    case HeadReading::SinkMass:
        return sinkMassScorer(trace, o.sinkTokens);
    case HeadReading::RecentMass:
        return recentMassScorer(trace, o.window);
    case HeadReading::Entropy:
        return entropyScorer(trace, o.entropyRows, rowsRead);
    case HeadReading::SpanMass:
        return spanMassScorer(trace, o.spanBegin, o.spanEnd);
    }
    return Scorer<T>([](const AttentionTiles<T> &, int) { return kNaN; });
}

} // namespace

std::vector<int> entropyRows(int t, int rows)
{
    std::vector<int> out;
    if (t < 2)
        return out;
    rows = std::max(1, rows);
    if (t - 1 <= rows) {
        for (int i = 1; i < t; ++i)
            out.push_back(i);
        return out;
    }
    for (int n = 0; n < rows; ++n)
        out.push_back(1 + int(int64_t(n) * (t - 1) / rows));
    return out;
}

template <typename T>
Mat<double> previousTokenScores(const Trace<T> &trace)
{
    return overHeads(trace, false, previousTokenScorer(trace));
}

template <typename T>
Mat<double> firstTokenScores(const Trace<T> &trace)
{
    return overHeads(trace, false, firstTokenScorer(trace));
}

template <typename T>
Mat<double> sameTokenScores(const Trace<T> &trace, int *queriesRead)
{
    return overHeads(trace, false, sameTokenScorer(trace, queriesRead));
}

template <typename T>
Mat<double> selfScores(const Trace<T> &trace)
{
    return overHeads(trace, false, selfScorer(trace));
}

template <typename T>
Mat<double> sinkMassScores(const Trace<T> &trace, int sinkTokens)
{
    return overHeads(trace, false, sinkMassScorer(trace, sinkTokens));
}

template <typename T>
Mat<double> recentMassScores(const Trace<T> &trace, int window)
{
    return overHeads(trace, false, recentMassScorer(trace, window));
}

template <typename T>
Mat<double> entropyScores(const Trace<T> &trace, int rows, int *rowsRead)
{
    return overHeads(trace, false, entropyScorer(trace, rows, rowsRead));
}

template <typename T>
Mat<double> spanMassScores(const Trace<T> &trace, int spanBegin, int spanEnd)
{
    return overHeads(trace, false, spanMassScorer(trace, spanBegin, spanEnd));
}

template <typename T>
Mat<double> headReading(const Trace<T> &trace, HeadReading reading, const ReadingOptions &o, int *rowsRead)
{
    return std::move(headReadings(trace, {reading}, o, rowsRead).front());
}

template <typename T>
std::vector<Mat<double>> headReadings(const Trace<T> &trace, const std::vector<HeadReading> &readings,
                                      const ReadingOptions &o, int *rowsRead)
{
    if (rowsRead)
        *rowsRead = 0;
    std::vector<Scorer<T>> scorers;
    for (HeadReading r : readings) {
        int rows = 0;
        scorers.push_back(readingScorer(trace, r, o, &rows));
        if (rowsRead)
            *rowsRead = rows;
    }
    return overHeads(trace, o.normWeighted, scorers, o.stop, o.progress);
}

template <typename T>
Mat<double> inductionScores(const Trace<T> &trace, int offset, int length)
{
    // query offset+L+j sees r_j; in the first copy r_j was followed by position offset+j+1
    return overHeads(trace, false, Scorer<T>([&](const AttentionTiles<T> &a, int h) {
        const int from = offset + length, to = std::min(a.rows(), offset + 2 * length);
        // a head that cannot see that position from any query (a sliding window shorter than the
        // repeat) has no induction to measure: its weight there is 0 by the mask, not by the head
        bool seen = false;
        for (int i = from; i < to && !seen; ++i)
            seen = !a.masked(i, i + 1 - length);
        return seen ? meanOver(a.diagonal(h, 1 - length), from, to) : kNaN;
    }));
}

InductionProbe inductionProbe(const ModelInfo &info, const Model &model, int length, uint64_t seed)
{
    InductionProbe p;
    p.length = length;
    std::vector<TraceToken> start;
    int bos = -1, sep = -1;
    // the model's own start and end tokens, where its tokenizer has them
    if (info.causal) {
        // a tokenizer that starts every text with its BOS (Llama, Gemma, Qwen's chat models) gives it
        // for ""; GPT-2's adds none, and its start is <|endoftext|>
        if (model.tokenize("", start).ok() && start.size() == 1)
            bos = start[0].id;
        else if (model.tokenize("<|endoftext|>", start).ok() && start.size() == 1)
            bos = start[0].id;
    } else if (model.tokenize("", start).ok() && start.size() == 2) {
        bos = start[0].id;
        sep = start[1].id;
    }
    if (bos >= 0)
        p.ids.push_back(bos);
    p.offset = int(p.ids.size());
    // random ids from the vocabulary's ordinary range: above BERT's specials and [unusedN] (< 1000),
    // below a causal model's start token where the specials follow it (GPT-2's <|endoftext|>, Llama 3's
    // <|begin_of_text|> and its 255 reserved tokens, Qwen's <|endoftext|> and its chat tokens)
    const int low = std::min(1000, info.vocabulary / 4);
    int high = info.causal ? info.vocabulary - 1 : info.vocabulary;
    if (info.causal && bos > low)
        high = std::min(high, bos);
    std::mt19937_64 g(seed);
    std::uniform_int_distribution<int> pick(low, std::max(low, high - 1));
    std::vector<int> r;
    for (int i = 0; i < length; ++i)
        r.push_back(pick(g));
    p.ids.insert(p.ids.end(), r.begin(), r.end());
    p.ids.insert(p.ids.end(), r.begin(), r.end());
    if (sep >= 0)
        p.ids.push_back(sep);
    return p;
}

namespace {

// The induction probe's scores: `model` run on its own random tokens said twice.
Status probeInduction(Model &model, Mat<double> &out)
{
    const ModelInfo info = model.info();
    int length = 50;
    if (info.maxPositions > 0)
        length = std::min(length, (info.maxPositions - 2) / 2);
    if (length < 2)
        return Status::error(StatusCode::InvalidInput, info.name + ": too few positions for the induction probe");
    const InductionProbe probe = inductionProbe(info, model, length);
    TraceRequest req;
    req.ids = probe.ids;
    req.keepScores = false;
    req.topK = 1;
    Trace<float> tr;
    if (Status st = model.trace(req, tr); !st)
        return st;
    out = inductionScores(tr, probe.offset, probe.length);
    return {};
}

// Welford's running mean and sum of squared deviations, per cell, over the prompts where the cell
// is finite; `spread` holds the running sum of squares until finish() makes it the deviation.
struct Running {
    CorpusScore s;
    void add(const Mat<double> &x)
    {
        if (s.mean.size() == 0) {
            s.mean = Mat<double>::Zero(x.rows(), x.cols());
            s.spread = Mat<double>::Zero(x.rows(), x.cols());
            s.count = Eigen::MatrixXi::Zero(x.rows(), x.cols());
        }
        for (Eigen::Index r = 0; r < x.rows(); ++r)
            for (Eigen::Index c = 0; c < x.cols(); ++c)
                if (const double v = x(r, c); std::isfinite(v)) {
                    const int n = ++s.count(r, c);
                    const double d = v - s.mean(r, c);
                    s.mean(r, c) += d / n;
                    s.spread(r, c) += d * (v - s.mean(r, c));
                }
    }
    CorpusScore finish()
    {
        constexpr double nan = std::numeric_limits<double>::quiet_NaN();
        for (Eigen::Index r = 0; r < s.mean.rows(); ++r)
            for (Eigen::Index c = 0; c < s.mean.cols(); ++c) {
                const int n = s.count(r, c);
                s.spread(r, c) = n >= 2 ? std::sqrt(s.spread(r, c) / (n - 1)) : nan;
                if (n == 0)
                    s.mean(r, c) = nan;
            }
        return std::move(s);
    }
};

} // namespace

Status readCorpusFile(const std::string &path, std::vector<std::string> &prompts)
{
    std::string text;
    if (Status st = readRegularFile(path, kCorpusFileCap, text); !st)
        return st;
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
        return Status::error(StatusCode::ParseError,
                             path + ": a NUL byte at offset " + std::to_string(nul) + ": not a text file of prompts");
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        lines.push_back(std::move(line));
        start = end + 1;
    }
    bool any = false;
    for (const std::string &l : lines)
        any = any || l.find_first_not_of(" \t") != std::string::npos;
    if (!any)
        return Status::error(StatusCode::InvalidInput, path + ": no prompt in it (every line is empty)");
    prompts = std::move(lines);
    return {};
}

Status corpusHeadScores(Model &model, const CorpusRequest &request, CorpusHeadScores &out)
{
    Running prev, first, same, self;
    CorpusHeadScores res;
    const int total = int(request.prompts.size());
    for (int k = 0; k < total; ++k) {
        if (request.cancel && request.cancel->load())
            return Status::error(StatusCode::Cancelled, "cancelled after " + std::to_string(k) + " of " +
                                                            std::to_string(total) + " prompts");
        const std::string &text = request.prompts[size_t(k)];
        if (!text.empty()) {
            TraceRequest req;
            req.text = text;
            req.keepScores = false;
            req.topK = 1;
            Trace<float> tr;
            if (Status st = model.trace(req, tr); !st)
                return Status::error(st.code, "prompt " + std::to_string(k + 1) + ": " + st.message);
            prev.add(previousTokenScores(tr));
            first.add(firstTokenScores(tr));
            same.add(sameTokenScores(tr));
            self.add(selfScores(tr));
            ++res.prompts;
            res.tokens += (long long)tr.tokens.size();
            if (!tr.cutReason.empty() && res.cut++ == 0)
                res.cutReason = tr.cutReason;
        }
        if (request.progress)
            request.progress(k + 1, total);
    }
    if (res.prompts == 0)
        return Status::error(StatusCode::InvalidInput, "no prompt to score (every line empty)");
    if (request.induction)
        if (Status st = probeInduction(model, res.induction); !st)
            return st;
    res.previousToken = prev.finish();
    res.firstToken = first.finish();
    res.sameToken = same.finish();
    res.self = self.finish();
    out = std::move(res);
    return {};
}

Status headRoles(Model &model, const Trace<float> &trace, HeadRoleScores &out)
{
    HeadRoleScores s;
    s.previousToken = previousTokenScores(trace);
    s.firstToken = firstTokenScores(trace);
    s.sameToken = sameTokenScores(trace);
    if (Status st = probeInduction(model, s.induction); !st)
        return st;
    out = std::move(s);
    return {};
}

template <typename T>
void makeRowShares(Mat<T> &m)
{
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        if (const T sum = m.row(i).sum(); sum > 0)
            m.row(i) /= sum;
}

void rolloutMixRow(Eigen::Ref<Eigen::Matrix<double, 1, Eigen::Dynamic>> row, Eigen::Index self)
{
    // the row as shares first: a no-op for softmax weights, and what puts a norm-weighted row (summing
    // to a norm, not to 1) on the same footing as the identity
    if (const double shares = row.sum(); shares > 0)
        row /= shares;
    row *= 0.5;
    row[self] += 0.5;
    if (const double sum = row.sum(); sum > 0)
        row /= sum;
}

template <typename T>
std::vector<Mat<double>> attentionRollout(const Trace<T> &trace)
{
    std::vector<Mat<double>> r;
    Mat<double> acc;
    for (int l = 0; l < trace.numLayers(); ++l) {
        // each row mixed half-and-half with the identity (rolloutMixRow)
        Mat<double> a = trace.weights(l, -1).template cast<double>();
        for (Eigen::Index i = 0; i < a.rows(); ++i)
            rolloutMixRow(a.row(i), i);
        acc = l == 0 ? a : Mat<double>(a * acc);
        r.push_back(acc);
    }
    return r;
}

#define ATTNVIZ_HEADROLES(T)                                                                                           \
    template Mat<double> previousTokenScores<T>(const Trace<T> &);                                                     \
    template Mat<double> firstTokenScores<T>(const Trace<T> &);                                                        \
    template Mat<double> sameTokenScores<T>(const Trace<T> &, int *);                                                  \
    template Mat<double> sinkMassScores<T>(const Trace<T> &, int);                                                     \
    template Mat<double> recentMassScores<T>(const Trace<T> &, int);                                                   \
    template Mat<double> entropyScores<T>(const Trace<T> &, int, int *);                                               \
    template Mat<double> spanMassScores<T>(const Trace<T> &, int, int);                                                \
    template Mat<double> headReading<T>(const Trace<T> &, HeadReading, const ReadingOptions &, int *);                 \
    template std::vector<Mat<double>> headReadings<T>(const Trace<T> &, const std::vector<HeadReading> &,             \
                                                      const ReadingOptions &, int *);                        \
    template Mat<double> selfScores<T>(const Trace<T> &);                                                              \
    template Mat<double> inductionScores<T>(const Trace<T> &, int, int);                                               \
    template void makeRowShares<T>(Mat<T> &);                                                                          \
    template std::vector<Mat<double>> attentionRollout<T>(const Trace<T> &);
ATTNVIZ_HEADROLES(float)
ATTNVIZ_HEADROLES(double)

} // namespace attnviz
