// SPDX-License-Identifier: GPL-3.0-or-later
// A layer's attention weights read where a view looks, without the whole t x t matrix: AttentionTiles
// computes any block of them, or a pooled map of a region (each output cell the max or the mean of
// the weights it covers), from what the trace keeps. A real checkpoint's softmax forward keeps per
// layer the rotated q, k per key/value head and each (query row, head)'s log-sum-exp of its scores
// (SequenceResult::lse), so that weight (i, j) of head h is exact from q and k alone:
//   s_ij = cap(scale q_i,h · k_j,kv(h)),  w_ij = exp(s_ij - lse_i,h)  (0 where (i, j) is masked)
// (FlashAttention's identity). The masks are the forward's: causal, a sliding window, the user's
// padded keys and masked cells (the trace's). Where a trace keeps the weights themselves (every
// trace by default: Observe::weights) the same interface reads them instead; a layer whose weights
// come from another rule (Sum, Cosine, dropout) has no log-sum-exp and is read only so.
// Blocks of q x k^T come from the forward's own score kernel (scoreBlock: the same sums); a pooled
// map is computed in blocks of query rows over the core's pool (parallel.h). Recently computed tiles and maps are kept in a cache bounded in bytes
// (least recently used first out). Head -1 is the mean over heads, as Trace::weights.
// setKeyWeights multiplies each head's weights by a per-(key, head) factor in every read: the
// norm-weighted attention α_ij ‖v_j W_O^h‖ (reads.h valueNorms, normWeighted) of a long text.
// Cell reads (diagonal, leading, recent, cells, wholeRows) compute only the cells a score needs, each
// as tile() computes it (the same blocks, so the same numbers), uncached: what a score over a long
// text reads is O(t x its width), never t x t.
#pragma once

#include "attnviz/model.h"

#include <atomic>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

namespace attnviz {

// How a pooled map reduces the weights one output cell covers.
enum class Pooling { Max, Mean };

template <typename T>
class AttentionTiles {
public:
    // Where the weights come from: the stored matrices where the trace kept them, else recomputed
    // (Auto); always recomputed from q, k and the log-sum-exp (Recompute); only stored (Stored).
    enum class Source { Auto, Recompute, Stored };
    static constexpr size_t kDefaultCacheBytes = size_t(64) << 20;

    // Layer `layer` of `trace`, which must outlive this and stay unchanged while it is read.
    AttentionTiles(const Trace<T> &trace, int layer, Source source = Source::Auto,
                   size_t cacheBytes = kDefaultCacheBytes);
    AttentionTiles(const AttentionTiles &) = delete;
    AttentionTiles &operator=(const AttentionTiles &) = delete;

    // Whether layer `layer` of `trace` keeps what recomputing its weights needs (q, k, lse).
    static bool recomputable(const Trace<T> &trace, int layer);
    // Whether the layer holds what `source` needs; every read below requires it.
    bool valid() const { return m_valid; }
    bool recomputes() const { return m_recompute; }
    int rows() const { return m_tq; }
    int cols() const { return m_tk; }
    int numHeads() const { return m_heads; }
    // Whether key j is masked for query i (weight 0): causal, window, padded key, masked cell.
    bool masked(int i, int j) const;
    // Every read below gives head h's weight (i, j) times factors(j, h) (cols() x numHeads(); the
    // mean over heads is then the mean of the multiplied heads); an empty matrix: none. Clears the
    // cache; not to be called while another thread reads. False (nothing changed) where the shape
    // is not cols() x numHeads().
    bool setKeyWeights(Mat<T> factors);
    bool keyWeighted() const { return m_keyWeights.size() > 0; }
    // With `on`, every read below gives each row of a head divided by that row's sum (after the key
    // weights; a row summing to 0 stays as it is): the norm-weighted rows as each query's shares,
    // which the head readings (headroles.h) are defined on, as makeRowShares of the whole matrix. The
    // mean over heads is the mean of the heads (weighted) divided by its own row sums. Reads every
    // unmasked cell of every head once, over the pool, to sum the rows; clears the cache; not to be
    // called while another thread reads. Set after setKeyWeights (which clears it). `stop` set (by
    // another thread) while the rows are summed: the sum stops part way, the row shares stay off and
    // the answer is false.
    bool setRowShares(bool on, const std::atomic<bool> *stop = nullptr);
    bool rowShares() const { return m_rowSums.size() > 0; }

    // Weights of `head` (-1: the mean over heads), rows [rowBegin, rowEnd) x keys [colBegin, colEnd).
    Mat<T> tile(int head, int rowBegin, int rowEnd, int colBegin, int colEnd) const;
    // The region rows [rowBegin, rowEnd) x keys [colBegin, colEnd) as an outRows x outCols map:
    // output cell (a, b) covers rows rowBegin + [floor(a R / outRows), floor((a + 1) R / outRows))
    // and the keys likewise (R, C the region's sizes; outRows, outCols at most R, C, at least 1:
    // clamped), and holds the max or the mean of those weights (masked cells count as 0).
    Mat<T> pooled(int head, int rowBegin, int rowEnd, int colBegin, int colEnd, int outRows, int outCols,
                  Pooling pool) const;

    // Cell (i, i + offset) of every query row i (rows() entries; 0 where i + offset is no key): the
    // previous token's weight at offset -1, the query's own at 0. Reads t x 64 cells at most.
    std::vector<T> diagonal(int head, int offset) const;
    // The first k keys of every query row: rows() x k (keys past cols() left out). Reads t x k cells.
    Mat<T> leading(int head, int k) const;
    // The w keys ending at each query row's own position: out(i, c) is the weight of key i - w + 1 + c
    // (0 where that is no key). rows() x w; reads t x (w + 64) cells at most.
    Mat<T> recent(int head, int w) const;
    // The weights of the listed (query row, key) cells, in the list's order (0 for a cell outside the
    // matrix). Reads the listed cells (a run of cells on one row, dense enough, as one block of that
    // row from its first key to its last: at most 32 cells per listed one).
    std::vector<T> cells(int head, const std::vector<std::pair<int, int>> &list) const;
    // Whole rows of the listed query rows: list.size() x cols() (a causal row's keys after it are 0
    // and not computed). Reads the rows' unmasked cells.
    Mat<T> wholeRows(int head, const std::vector<int> &list) const;
    // Rows [rowBegin, rowEnd) over the keys they can see, as one block on the calling thread,
    // uncached: keys [*firstKey, *firstKey + result.cols()) (a causal block ends at its last row's own
    // key; a windowed one begins at its first row's window). What a read that streams many rows (one
    // query's rollout) takes block by block over its own pool.
    Mat<T> rowBlock(int head, int rowBegin, int rowEnd, int *firstKey) const;

    size_t cacheCapacity() const { return m_capacity; }
    size_t cachedBytes() const;
    int cachedEntries() const;
    void clearCache();

private:
    using Key = std::tuple<int, int, int, int, int, int, int, int, int>; // kind, head, region, out, pool
    struct Entry {
        Key key;
        std::shared_ptr<const Mat<T>> value;
    };
    // Weights of one head (>= 0) or their mean (-1) into `out` (resized): the block itself.
    void block(int head, int r0, int r1, int c0, int c1, Mat<T> &out) const;
    void headBlock(int head, int r0, int r1, int c0, int c1, Mat<T> &out) const;
    // Whether every cell of the block is masked by causality or the window (nothing to compute).
    bool blockHidden(int r0, int r1, int c0, int c1) const;
    std::shared_ptr<const Mat<T>> cached(const Key &key) const;
    void remember(const Key &key, std::shared_ptr<const Mat<T>> value) const;

    const Trace<T> &m_trace;
    const SequenceResult<T> *m_seq = nullptr;
    int m_layer = 0;
    int m_tq = 0, m_tk = 0, m_heads = 0, m_kvHeads = 0, m_dh = 0;
    T m_scale = 1, m_cap = 0;
    bool m_causal = false;
    int m_window = 0;
    bool m_valid = false, m_recompute = false;
    bool m_kPerHead = true; // k holds a copy per query head (else the key/value heads' own)
    std::vector<uint8_t> m_padded;               // per key; empty: none
    std::vector<std::pair<int, int>> m_cells;    // (query, key) masked by hand, sorted
    Mat<T> m_keyWeights;                         // cols() x heads: setKeyWeights; empty: none
    Mat<double> m_rowSums;                       // rows() x heads: setRowShares; empty: none
    size_t m_capacity;
    mutable std::mutex m_mutex;
    mutable std::list<Entry> m_lru; // most recent first
    mutable std::map<Key, typename std::list<Entry>::iterator> m_index;
    mutable size_t m_bytes = 0;
};

extern template class AttentionTiles<float>;
extern template class AttentionTiles<double>;

} // namespace attnviz
