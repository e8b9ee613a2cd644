// SPDX-License-Identifier: GPL-3.0-or-later
// The logit lens (reads.h): each layer's residual stream (resid_post) through the model's own head,
// one position at once (the selected column) or the whole layers x positions grid in chunks of
// positions, each chunk one scan of the vocabulary for all its rows.
#include "readout.h"

#include <algorithm>
#include <cmath>

namespace attnviz {

namespace {

// The token each position's lens is scored against: the next one (causal), the token itself (MLM).
int actualAt(const ReadoutWeights &r, const std::vector<TraceToken> &tokens, int position)
{
    if (r.arch.head == LmHead::MaskedLm)
        return tokens[size_t(position)].id;
    return position + 1 < int(tokens.size()) ? tokens[size_t(position) + 1].id : -1;
}

// Cells for `positions` x every layer (rows ordered position-major, layer within).
template <typename T>
void lensRows(const ReadoutWeights &r, const ModelWeights<T> &w, const Trace<T> &trace, const std::vector<int> &positions,
              int topK, std::vector<LensCell> &cells)
{
    const int L = trace.numLayers(), d = int(trace.final.cols());
    Mat<T> resid(Eigen::Index(positions.size()) * L, d);
    std::vector<int> target;
    target.reserve(size_t(resid.rows()));
    for (size_t k = 0; k < positions.size(); ++k) {
        const int actual = actualAt(r, trace.tokens, positions[k]);
        for (int l = 0; l < L; ++l) {
            resid.row(Eigen::Index(k) * L + l) = trace.layers[size_t(l)].output.row(positions[k]);
            target.push_back(actual);
        }
    }
    std::vector<reads::ScanRow> rows;
    reads::scanLogits(r, w, reads::headInput(r, w, resid), target, topK, rows);
    cells.assign(rows.size(), LensCell());
    for (size_t i = 0; i < rows.size(); ++i) {
        const reads::ScanRow &s = rows[i];
        LensCell &c = cells[i];
        for (const auto &e : s.top) {
            TokenProb p = r.token(e.second);
            p.p = std::exp(e.first - s.logNormalizer);
            c.top.push_back(std::move(p));
        }
        c.entropy = s.entropy;
        if (s.targetRank > 0) {
            c.actualRank = s.targetRank;
            c.actualP = std::exp(s.targetLogit - s.logNormalizer);
        }
    }
}

template <typename T>
Status checkPosition(const Trace<T> &trace, int position)
{
    const int t = int(trace.tokens.size());
    if (position < 0 || position >= t)
        return Status::error(StatusCode::InvalidInput, "lens: position " + std::to_string(position) + " is not in the text (0.." +
                                                           std::to_string(t - 1) + ")");
    return {};
}

Status lensApplies(const ReadoutWeights &r)
{
    if (r.arch.head == LmHead::None)
        return Status::error(StatusCode::Unavailable, r.name + ": no language-model head to read the layers through");
    return {};
}

} // namespace

template <typename T>
Status lensColumn(const Model &model, const Trace<T> &trace, int position, int topK, std::vector<LensCell> &out)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    if (Status st = lensApplies(*r); !st)
        return st;
    if (Status st = checkPosition(trace, position); !st)
        return st;
    lensRows(*r, *r->weights<T>(), trace, {position}, std::max(1, topK), out);
    return {};
}

template <typename T>
Status lensGrid(const Model &model, const Trace<T> &trace, const LensOptions &options, LensGrid &out)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    if (Status st = lensApplies(*r); !st)
        return st;
    const int L = trace.numLayers(), t = int(trace.tokens.size()), chunk = std::max(1, options.chunk);
    out.layers = L;
    out.positions = t;
    out.topK = std::max(1, options.topK);
    out.cells.assign(size_t(L) * size_t(t), LensCell());
    std::vector<LensCell> cells;
    for (int p0 = 0; p0 < t; p0 += chunk) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed))
            return Status::error(StatusCode::Cancelled, "lens: stopped");
        const int n = std::min(chunk, t - p0);
        std::vector<int> positions(static_cast<size_t>(n));
        for (int k = 0; k < n; ++k)
            positions[size_t(k)] = p0 + k;
        lensRows(*r, *r->weights<T>(), trace, positions, out.topK, cells);
        for (int k = 0; k < n; ++k)
            for (int l = 0; l < L; ++l)
                out.at(l, p0 + k) = std::move(cells[size_t(k) * size_t(L) + size_t(l)]);
        if (options.progress && !options.progress(out, p0, n))
            return Status::error(StatusCode::Cancelled, "lens: stopped");
    }
    return {};
}

template Status lensColumn<float>(const Model &, const Trace<float> &, int, int, std::vector<LensCell> &);
template Status lensColumn<double>(const Model &, const Trace<double> &, int, int, std::vector<LensCell> &);
template Status lensGrid<float>(const Model &, const Trace<float> &, const LensOptions &, LensGrid &);
template Status lensGrid<double>(const Model &, const Trace<double> &, const LensOptions &, LensGrid &);

} // namespace attnviz
