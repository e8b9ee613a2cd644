// SPDX-License-Identifier: GPL-3.0-or-later
// One query's rollout row through AttentionTiles (see rolloutrow.h).
#include "attnviz/rolloutrow.h"

#include "attnviz/headroles.h"
#include "attnviz/parallel.h"

#include <algorithm>
#include <mutex>
#include <string>

namespace attnviz {

namespace {
constexpr int kBandRows = 64; // rows of Â computed as one block
} // namespace

template <typename T>
Status rolloutRow(const RolloutRowRequest<T> &rq, std::vector<double> &out)
{
    if (!rq.layer || rq.upTo < 0)
        return Status::error(StatusCode::InvalidInput, "rollout row: no layers to roll out");
    const auto cancelled = [&] { return rq.cancel && rq.cancel->load(std::memory_order_relaxed); };
    std::vector<double> r, next;
    int t = -1;
    const int total = rq.upTo + 1;
    for (int l = rq.upTo; l >= 0; --l) {
        if (cancelled())
            return Status::error(StatusCode::Cancelled, "rollout row: cancelled");
        const std::shared_ptr<const AttentionTiles<T>> tiles = rq.layer(l);
        if (!tiles || !tiles->valid())
            return Status::error(StatusCode::Unavailable, "rollout row: layer " + std::to_string(l) +
                                                              " keeps neither its weights nor q, k and the log-sum-exp");
        if (tiles->rows() != tiles->cols())
            return Status::error(StatusCode::InvalidInput, "rollout row: layer " + std::to_string(l) +
                                                               " is not self-attention (" + std::to_string(tiles->rows()) +
                                                               " queries, " + std::to_string(tiles->cols()) + " keys)");
        if (t < 0) {
            t = tiles->rows();
            if (rq.query < 0 || rq.query >= t)
                return Status::error(StatusCode::InvalidInput, "rollout row: query " + std::to_string(rq.query) +
                                                                   " is not in the text (0.." + std::to_string(t - 1) + ")");
            r.assign(size_t(t), 0.0);
            r[size_t(rq.query)] = 1.0;
        } else if (tiles->rows() != t) {
            return Status::error(StatusCode::InvalidInput, "rollout row: layer " + std::to_string(l) + " has " +
                                                               std::to_string(tiles->rows()) + " rows, not " + std::to_string(t));
        }
        // r Â_l = Σ_k r_k Â_l[k, :]: only the rows k the vector reaches
        int last = t - 1;
        while (last >= 0 && r[size_t(last)] == 0)
            --last;
        next.assign(size_t(t), 0.0);
        std::mutex add;
        const int bands = (last + 1 + kBandRows - 1) / kBandRows;
        const double work = double(last + 1) * double(last + 1) * 64.0 * std::max(1, tiles->numHeads());
        parallelFor(bands, work, [&](int b) {
            if (cancelled())
                return;
            const int r0 = b * kBandRows, r1 = std::min(last + 1, r0 + kBandRows);
            if (std::all_of(r.begin() + r0, r.begin() + r1, [](double v) { return v == 0; }))
                return;
            int c0 = 0;
            const Mat<T> w = tiles->rowBlock(-1, r0, r1, &c0);
            // the keys this band touches: the block's, and each row's own (the identity's half)
            const int lo = std::min(c0, r0), hi = std::max(c0 + int(w.cols()), r1);
            Eigen::Matrix<double, 1, Eigen::Dynamic> part = Eigen::Matrix<double, 1, Eigen::Dynamic>::Zero(hi - lo);
            Eigen::Matrix<double, 1, Eigen::Dynamic> a(hi - lo);
            for (int k = r0; k < r1; ++k) {
                const double rk = r[size_t(k)];
                if (rk == 0)
                    continue;
                // as attentionRollout: the head mean's row mixed with the identity
                a.setZero();
                a.segment(c0 - lo, w.cols()) = w.row(k - r0).template cast<double>();
                rolloutMixRow(a, k - lo);
                part += rk * a;
            }
            std::lock_guard<std::mutex> lock(add);
            for (int j = 0; j < hi - lo; ++j)
                next[size_t(lo + j)] += part[j];
        });
        if (cancelled())
            return Status::error(StatusCode::Cancelled, "rollout row: cancelled");
        r.swap(next);
        if (rq.progress)
            rq.progress(total - l, total);
    }
    out = std::move(r);
    return {};
}

template Status rolloutRow<float>(const RolloutRowRequest<float> &, std::vector<double> &);
template Status rolloutRow<double>(const RolloutRowRequest<double> &, std::vector<double> &);

} // namespace attnviz
