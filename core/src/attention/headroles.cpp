// SPDX-License-Identifier: GPL-3.0-or-later
// Head-role scores and attention rollout over a trace's weights (headroles.h).
#include "attnviz/headroles.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace attnviz {

namespace {

// score(l, h) = mean over the queries `pick` accepts of `value(weights, i)`; NaN if none.
template <typename T, typename Pick, typename Value>
Mat<double> perHead(const Trace<T> &trace, Pick pick, Value value)
{
    Mat<double> s(trace.numLayers(), trace.numHeads());
    for (int l = 0; l < trace.numLayers(); ++l)
        for (int h = 0; h < trace.numHeads(); ++h) {
            const WeightMatrix<T> &w = trace.weights(l, h);
            double sum = 0;
            int n = 0;
            for (int i = 0; i < int(w.rows()); ++i)
                if (pick(i)) {
                    sum += value(w, i);
                    ++n;
                }
            s(l, h) = n ? sum / n : std::numeric_limits<double>::quiet_NaN();
        }
    return s;
}

} // namespace

template <typename T>
Mat<double> previousTokenScores(const Trace<T> &trace)
{
    return perHead(trace, [](int i) { return i >= 1; }, [](const WeightMatrix<T> &w, int i) { return double(w(i, i - 1)); });
}

template <typename T>
Mat<double> firstTokenScores(const Trace<T> &trace)
{
    return perHead(trace, [](int i) { return i >= 1; }, [](const WeightMatrix<T> &w, int i) { return double(w(i, 0)); });
}

template <typename T>
Mat<double> sameTokenScores(const Trace<T> &trace)
{
    const auto &tok = trace.tokens;
    auto repeats = [&](int i) {
        for (int j = 0; j < i; ++j)
            if (tok[size_t(j)].id == tok[size_t(i)].id)
                return true;
        return false;
    };
    return perHead(trace, repeats, [&](const WeightMatrix<T> &w, int i) {
        double s = 0;
        for (int j = 0; j < i; ++j)
            if (tok[size_t(j)].id == tok[size_t(i)].id)
                s += double(w(i, j));
        return s;
    });
}

template <typename T>
Mat<double> inductionScores(const Trace<T> &trace, int offset, int length)
{
    const int t = int(trace.tokens.size());
    auto second = [&](int i) { return i >= offset + length && i < offset + 2 * length && i < t; };
    // query offset+L+j sees r_j; in the first copy r_j was followed by position offset+j+1
    return perHead(trace, second, [&](const WeightMatrix<T> &w, int i) { return double(w(i, i - length + 1)); });
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

template <typename T>
Mat<double> selfScores(const Trace<T> &trace)
{
    Mat<double> out(trace.numLayers(), trace.numHeads());
    for (int l = 0; l < trace.numLayers(); ++l)
        for (int h = 0; h < trace.numHeads(); ++h) {
            const WeightMatrix<T> &w = trace.weights(l, h);
            double sum = 0;
            int n = 0;
            for (Eigen::Index i = 1; i < std::min(w.rows(), w.cols()); ++i)
                if (std::isfinite(double(w(i, i)))) {
                    sum += double(w(i, i));
                    ++n;
                }
            out(l, h) = n ? sum / n : std::numeric_limits<double>::quiet_NaN();
        }
    return out;
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

template <typename T>
std::vector<Mat<double>> attentionRollout(const Trace<T> &trace)
{
    std::vector<Mat<double>> r;
    Mat<double> acc;
    for (int l = 0; l < trace.numLayers(); ++l) {
        // the head mean's rows as shares first: a no-op for softmax weights, and what puts a
        // norm-weighted trace (rows summing to a norm, not to 1) on the same footing as the identity
        Mat<double> a = trace.weights(l, -1).template cast<double>();
        makeRowShares(a);
        a *= 0.5;
        a.diagonal().array() += 0.5;
        const Eigen::VectorXd sums = a.rowwise().sum();
        for (Eigen::Index i = 0; i < a.rows(); ++i)
            if (sums[i] > 0)
                a.row(i) /= sums[i];
        acc = l == 0 ? a : Mat<double>(a * acc);
        r.push_back(acc);
    }
    return r;
}

#define ATTNVIZ_HEADROLES(T)                                                                                           \
    template Mat<double> previousTokenScores<T>(const Trace<T> &);                                                     \
    template Mat<double> firstTokenScores<T>(const Trace<T> &);                                                        \
    template Mat<double> sameTokenScores<T>(const Trace<T> &);                                                         \
    template Mat<double> selfScores<T>(const Trace<T> &);                                                              \
    template Mat<double> inductionScores<T>(const Trace<T> &, int, int);                                               \
    template void makeRowShares<T>(Mat<T> &);                                                                          \
    template std::vector<Mat<double>> attentionRollout<T>(const Trace<T> &);
ATTNVIZ_HEADROLES(float)
ATTNVIZ_HEADROLES(double)

} // namespace attnviz
