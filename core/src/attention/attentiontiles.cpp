// SPDX-License-Identifier: GPL-3.0-or-later
// AttentionTiles (attentiontiles.h): blocks and pooled maps of one layer's attention weights,
// recomputed from q, k and each row's log-sum-exp as the forward formed its scores (forward.cpp:
// scale * q, times k^T, soft-capped, then the masks), or read from the stored matrices. Also
// scoreBlock (scoreblock.h), the one place where both form a block of scores.
#include "attnviz/attentiontiles.h"
#include "attnviz/parallel.h"
#include "scoreblock.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace attnviz {

namespace {

// Rows (or keys) of output cell a of a region of n split into `out` cells: [edge(a), edge(a + 1)).
int edge(int begin, int n, int out, int a) { return begin + int(int64_t(a) * n / out); }

// Query rows a pooled map computes at once, and keys at most per block: 64 x 256 weights (64 KB of
// float) stay in cache between the product and the reduction.
constexpr int kBandRows = 64;
constexpr int kBlockKeys = 256;

} // namespace

// Register-blocked: kRows query rows (scaled, zero rows past rn) by kVecs packets of keys per pass,
// the keys a chunk at a time packed into panels of d_head x kPanel (transposed kPacket x kPacket in
// registers; zero past the block's end) so that a pass streams its keys from one contiguous panel.
// Each score is one chain over d in order, a multiply then multiply-adds (fused where the ISA has
// them), in its own lane: every score the same sum whatever the block's size, place or alignment.
// Out of line so that every caller runs the same code.
// (PacketBlock of a vector type: GCC warns that the type's alignment attribute is not part of the
// template argument, as in Eigen's own headers, which silence it.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
template <typename T>
__attribute__((noinline)) void scoreBlock(T scale, const Mat<T> &q, Eigen::Index r0, Eigen::Index rn, Eigen::Index qc,
                                          const Mat<T> &k, Eigen::Index c0, Eigen::Index cn, Eigen::Index kc, int dh,
                                          Mat<T> &out)
{
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;
    constexpr int kPacket = ei::packet_traits<T>::size;
    constexpr int kRows = 4;
    constexpr int kVecs = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 4 : 3;
    constexpr int kPanel = kVecs * kPacket;
    constexpr int kChunk = kPanel * std::max(1, 256 / kPanel);
    out.resize(rn, cn);
    if (rn == 0 || cn == 0)
        return;
    // scratch that only grows: no allocation per call (the forward calls this per head and block)
    thread_local std::vector<T, Eigen::aligned_allocator<T>> qs, kp;
    const Eigen::Index rows = (rn + kRows - 1) / kRows * kRows;
    qs.resize(std::max(qs.size(), size_t(rows * dh)));
    kp.resize(std::max(kp.size(), size_t(dh) * kChunk));
    Eigen::Map<Mat<T>> qm(qs.data(), rows, dh);
    qm.topRows(rn).noalias() = scale * q.block(r0, qc, rn, dh);
    qm.bottomRows(rows - rn).setZero();
    alignas(64) T tmp[kRows * kPanel];
    for (Eigen::Index j0 = 0; j0 < cn; j0 += kChunk) {
        const Eigen::Index w = std::min<Eigen::Index>(kChunk, cn - j0);
        const Eigen::Index panels = (w + kPanel - 1) / kPanel;
        // keys kPacket at a time, kPacket dimensions at a time transposed in registers; zero past w
        const T *kBase = k.data() + (c0 + j0) * k.cols() + kc;
        const Eigen::Index stride = k.cols();
        const int dVec = dh / kPacket * kPacket;
        for (Eigen::Index g = 0; g < panels * kVecs; ++g) {
            T *dst = kp.data() + (g / kVecs) * dh * kPanel + (g % kVecs) * kPacket;
            const Eigen::Index l0 = g * kPacket, ln = std::min<Eigen::Index>(kPacket, w - l0);
            if (ln <= 0) {
                for (int d = 0; d < dh; ++d)
                    ei::pstore(dst + d * kPanel, ei::pzero(Packet()));
                continue;
            }
            for (int d0 = 0; d0 < dVec; d0 += kPacket) {
                ei::PacketBlock<Packet, kPacket> b;
                for (int l = 0; l < kPacket; ++l)
                    b.packet[l] = l < ln ? ei::ploadu<Packet>(kBase + (l0 + l) * stride + d0) : ei::pzero(Packet());
                ei::ptranspose(b);
                for (int l = 0; l < kPacket; ++l)
                    ei::pstore(dst + (d0 + l) * kPanel, b.packet[l]);
            }
            for (int d = dVec; d < dh; ++d)
                for (int l = 0; l < kPacket; ++l)
                    dst[d * kPanel + l] = l < ln ? kBase[(l0 + l) * stride + d] : T(0);
        }
        for (Eigen::Index i = 0; i < rows; i += kRows) {
            const T *qr[kRows];
            for (int m = 0; m < kRows; ++m)
                qr[m] = qs.data() + (i + m) * dh;
            const int mr = int(std::min<Eigen::Index>(kRows, rn - i));
            for (Eigen::Index pn = 0; pn < panels; ++pn) {
                const T *kpp = kp.data() + pn * dh * kPanel;
                Packet acc[kRows][kVecs];
                Packet kv[kVecs];
                for (int v = 0; v < kVecs; ++v)
                    kv[v] = ei::pload<Packet>(kpp + v * kPacket);
                for (int m = 0; m < kRows; ++m) {
                    const Packet qb = ei::pset1<Packet>(qr[m][0]);
                    for (int v = 0; v < kVecs; ++v)
                        acc[m][v] = ei::pmul(qb, kv[v]);
                }
                for (int d = 1; d < dh; ++d) {
                    for (int v = 0; v < kVecs; ++v)
                        kv[v] = ei::pload<Packet>(kpp + d * kPanel + v * kPacket);
                    for (int m = 0; m < kRows; ++m) {
                        const Packet qb = ei::pset1<Packet>(qr[m][d]);
                        for (int v = 0; v < kVecs; ++v)
                            acc[m][v] = ei::pmadd(qb, kv[v], acc[m][v]);
                    }
                }
                const Eigen::Index pw = std::min<Eigen::Index>(kPanel, w - pn * kPanel);
                const Eigen::Index col = j0 + pn * kPanel;
                if (mr == kRows && pw == kPanel) {
                    for (int m = 0; m < kRows; ++m)
                        for (int v = 0; v < kVecs; ++v)
                            ei::pstoreu(out.data() + (i + m) * cn + col + v * kPacket, acc[m][v]);
                } else {
                    for (int m = 0; m < kRows; ++m)
                        for (int v = 0; v < kVecs; ++v)
                            ei::pstore(tmp + m * kPanel + v * kPacket, acc[m][v]);
                    for (int m = 0; m < mr; ++m)
                        std::copy(tmp + m * kPanel, tmp + m * kPanel + pw, out.data() + (i + m) * cn + col);
                }
            }
        }
    }
}

#pragma GCC diagnostic pop

template void scoreBlock<float>(float, const Mat<float> &, Eigen::Index, Eigen::Index, Eigen::Index, const Mat<float> &,
                                Eigen::Index, Eigen::Index, Eigen::Index, int, Mat<float> &);
template void scoreBlock<double>(double, const Mat<double> &, Eigen::Index, Eigen::Index, Eigen::Index,
                                 const Mat<double> &, Eigen::Index, Eigen::Index, Eigen::Index, int, Mat<double> &);

template <typename T>
AttentionTiles<T>::AttentionTiles(const Trace<T> &trace, int layer, Source source, size_t cacheBytes)
    : m_trace(trace), m_layer(layer), m_capacity(cacheBytes)
{
    if (layer < 0 || layer >= trace.numLayers() || trace.layers[size_t(layer)].attention.batch.empty())
        return;
    const AttentionResult<T> &R = trace.layers[size_t(layer)].attention;
    m_seq = &R.batch.front();
    m_heads = R.numHeads;
    m_kvHeads = R.kvHeads > 0 ? R.kvHeads : R.numHeads;
    m_dh = R.dHead;
    m_scale = T(R.scale);
    m_cap = T(R.softcap);
    m_causal = R.causal;
    m_window = R.window;
    const bool stored = int(m_seq->weights.size()) == m_heads && m_heads > 0 && m_seq->weightsAvg.rows() > 0;
    const bool recomputable = AttentionTiles::recomputable(trace, layer);
    m_recompute = source == Source::Recompute || (source == Source::Auto && !stored);
    m_valid = m_recompute ? recomputable : stored;
    if (!m_valid)
        return;
    if (m_recompute) {
        const bool half = !m_seq->q16.empty();
        m_tq = int(half ? m_seq->q16.rows : m_seq->q.rows());
        m_tk = int(half ? m_seq->k16.rows : m_seq->k.rows());
        m_kPerHead = (half ? m_seq->k16.cols : m_seq->k.cols()) == Eigen::Index(m_heads) * m_dh;
        for (int j : trace.paddedKeys)
            if (j >= 0 && j < m_tk) {
                m_padded.resize(size_t(m_tk), 0);
                m_padded[size_t(j)] = 1;
            }
        for (const auto &c : trace.maskedCells)
            if (c.first >= 0 && c.first < m_tq && c.second >= 0 && c.second < m_tk)
                m_cells.push_back(c);
        std::sort(m_cells.begin(), m_cells.end());
    } else {
        m_tq = int(m_seq->weightsAvg.rows());
        m_tk = int(m_seq->weightsAvg.cols());
    }
}

template <typename T>
bool AttentionTiles<T>::recomputable(const Trace<T> &trace, int layer)
{
    if (layer < 0 || layer >= trace.numLayers() || trace.layers[size_t(layer)].attention.batch.empty())
        return false;
    const AttentionResult<T> &R = trace.layers[size_t(layer)].attention;
    const SequenceResult<T> &s = R.batch.front();
    const Eigen::Index H = R.numHeads, KV = R.kvHeads > 0 ? R.kvHeads : R.numHeads, dh = R.dHead;
    // q and k in T, or both kept in 16 bits (a long text of a 16-bit model: HalfRows)
    const bool half = !s.q16.empty();
    if (half && s.k16.empty())
        return false;
    const Eigen::Index t = half ? s.q16.rows : s.q.rows(), qCols = half ? s.q16.cols : s.q.cols();
    const Eigen::Index tk = half ? s.k16.rows : s.k.rows(), kCols = half ? s.k16.cols : s.k.cols();
    return H > 0 && dh > 0 && t > 0 && qCols == H * dh && s.lse.rows() == t && s.lse.cols() == H && tk > 0 &&
           (kCols == H * dh || kCols == KV * dh) && H % KV == 0;
}

template <typename T>
bool AttentionTiles<T>::masked(int i, int j) const
{
    if (!m_recompute) {
        const BoolMat &m = m_seq->mask;
        return m.rows() == m_tq && m.cols() == m_tk && m(i, j) != 0;
    }
    if (m_causal && j > i)
        return true;
    if (m_window > 0 && j <= i - m_window)
        return true;
    if (!m_padded.empty() && m_padded[size_t(j)])
        return true;
    return std::binary_search(m_cells.begin(), m_cells.end(), std::make_pair(i, j));
}

template <typename T>
bool AttentionTiles<T>::setKeyWeights(Mat<T> factors)
{
    if (factors.size() > 0 && (factors.rows() != m_tk || factors.cols() != m_heads))
        return false;
    m_keyWeights = std::move(factors);
    m_rowSums.resize(0, 0);
    clearCache();
    return true;
}

template <typename T>
bool AttentionTiles<T>::setRowShares(bool on, const std::atomic<bool> *stop)
{
    m_rowSums.resize(0, 0); // the sums below read the rows as they are
    clearCache();
    if (!on || !m_valid)
        return true;
    Mat<double> sums = Mat<double>::Zero(m_tq, m_heads);
    const int bands = (m_tq + kBandRows - 1) / kBandRows;
    const double work = 2.0 * double(m_tq) * m_tk * m_dh * m_heads;
    parallelFor(bands, work, [&](int b) {
        if (stop && stop->load(std::memory_order_relaxed))
            return; // the bands left are not read; the sums are dropped below
        const int r0 = b * kBandRows, r1 = std::min(m_tq, r0 + kBandRows);
        for (int h = 0; h < m_heads; ++h) {
            int c0 = 0;
            const Mat<T> w = rowBlock(h, r0, r1, &c0); // the keys these rows can see
            for (Eigen::Index r = 0; r < w.rows(); ++r) {
                double s = 0;
                for (Eigen::Index j = 0; j < w.cols(); ++j)
                    s += double(w(r, j));
                sums(r0 + r, h) = s;
            }
        }
    });
    if (stop && stop->load())
        return false;
    m_rowSums = std::move(sums);
    return true;
}

template <typename T>
bool AttentionTiles<T>::blockHidden(int r0, int r1, int c0, int c1) const
{
    if (r1 <= r0 || c1 <= c0)
        return true;
    if (m_causal && c0 > r1 - 1) // every key after every row's own
        return true;
    return m_window > 0 && c1 - 1 <= r0 - m_window; // every key before every row's window
}

template <typename T>
void AttentionTiles<T>::headBlock(int h, int r0, int r1, int c0, int c1, Mat<T> &out) const
{
    const int rn = r1 - r0, cn = c1 - c0, dh = m_dh;
    out.resize(rn, cn);
    if (!m_recompute) { // the stored matrix (a lower one holds keys 0 .. i of row i)
        const WeightMatrix<T> &w = h < 0 ? m_seq->weightsAvg : m_seq->weights[size_t(h)];
        for (int i = 0; i < rn; ++i) {
            const int upto = int(std::clamp<Eigen::Index>(w.stored(r0 + i), c0, c1));
            if (upto > c0)
                out.row(i).head(upto - c0) = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(w.rowData(r0 + i) + c0, upto - c0);
            out.row(i).tail(c1 - upto).setZero();
        }
        if (h >= 0 && m_keyWeights.size() > 0)
            out.array().rowwise() *= m_keyWeights.col(h).segment(c0, cn).transpose().array();
        return;
    }
    if (blockHidden(r0, r1, c0, c1)) {
        out.setZero();
        return;
    }
    // as the forward forms them (scoreBlock: the same sums), soft-capped
    const Eigen::Index kc = m_kPerHead ? Eigen::Index(h) * dh : Eigen::Index(h / (m_heads / m_kvHeads)) * dh;
    if (!m_seq->q16.empty()) { // the block's rows of q and keys of k widened (exact), the same sums
        thread_local Mat<T> qb, kb;
        m_seq->q16.widen(r0, rn, Eigen::Index(h) * dh, dh, qb);
        m_seq->k16.widen(c0, cn, kc, dh, kb);
        scoreBlock(m_scale, qb, 0, rn, 0, kb, 0, cn, 0, dh, out);
    } else {
        scoreBlock(m_scale, m_seq->q, r0, rn, Eigen::Index(h) * dh, m_seq->k, c0, cn, kc, dh, out);
    }
    if (m_cap > 0)
        out = ((out.array() / m_cap).tanh() * m_cap).matrix();
    for (int r = 0; r < rn; ++r) {
        const int i = r0 + r;
        const T lse = m_seq->lse(i, h);
        auto row = out.row(r);
        if (lse == -std::numeric_limits<T>::infinity()) { // every key masked
            row.setZero();
            continue;
        }
        row = (row.array() - lse).exp().matrix();
        if (m_causal && i + 1 < c1) // keys after the query
            row.tail(c1 - std::max(c0, i + 1)).setZero();
        if (m_window > 0 && i - m_window + 1 > c0) // keys before the window
            row.head(std::min(c1, i - m_window + 1) - c0).setZero();
    }
    if (!m_padded.empty())
        for (int j = c0; j < c1; ++j)
            if (m_padded[size_t(j)])
                out.col(j - c0).setZero();
    for (auto it = std::lower_bound(m_cells.begin(), m_cells.end(), std::make_pair(r0, std::numeric_limits<int>::min()));
         it != m_cells.end() && it->first < r1; ++it)
        if (it->second >= c0 && it->second < c1)
            out(it->first - r0, it->second - c0) = T(0);
    if (m_keyWeights.size() > 0)
        out.array().rowwise() *= m_keyWeights.col(h).segment(c0, cn).transpose().array();
}

template <typename T>
void AttentionTiles<T>::block(int head, int r0, int r1, int c0, int c1, Mat<T> &out) const
{
    if (head >= 0 || (!m_recompute && m_keyWeights.size() == 0)) { // weighted: the mean of the weighted heads
        headBlock(head, r0, r1, c0, c1, out);
    } else { // the mean over heads, summed in head order and divided as the forward does
        thread_local Mat<T> one;
        headBlock(0, r0, r1, c0, c1, out);
        for (int h = 1; h < m_heads; ++h) {
            headBlock(h, r0, r1, c0, c1, one);
            out += one;
        }
        out /= T(m_heads);
    }
    if (m_rowSums.size() > 0) // rows as shares of their sums (the mean's: the mean of the heads')
        for (int r = 0; r < r1 - r0; ++r)
            if (const double sum = head >= 0 ? m_rowSums(r0 + r, head) : m_rowSums.row(r0 + r).mean(); sum > 0)
                out.row(r) /= T(sum);
}

template <typename T>
std::shared_ptr<const Mat<T>> AttentionTiles<T>::cached(const Key &key) const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_index.find(key);
    if (it == m_index.end())
        return nullptr;
    m_lru.splice(m_lru.begin(), m_lru, it->second);
    return it->second->value;
}

template <typename T>
void AttentionTiles<T>::remember(const Key &key, std::shared_ptr<const Mat<T>> value) const
{
    const size_t bytes = size_t(value->size()) * sizeof(T);
    if (bytes > m_capacity)
        return;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_index.count(key))
        return;
    m_lru.push_front({key, std::move(value)});
    m_index[key] = m_lru.begin();
    m_bytes += bytes;
    while (m_bytes > m_capacity) {
        const Entry &last = m_lru.back();
        m_bytes -= size_t(last.value->size()) * sizeof(T);
        m_index.erase(last.key);
        m_lru.pop_back();
    }
}

template <typename T>
size_t AttentionTiles<T>::cachedBytes() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_bytes;
}

template <typename T>
int AttentionTiles<T>::cachedEntries() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return int(m_lru.size());
}

template <typename T>
void AttentionTiles<T>::clearCache()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_lru.clear();
    m_index.clear();
    m_bytes = 0;
}

template <typename T>
Mat<T> AttentionTiles<T>::tile(int head, int rowBegin, int rowEnd, int colBegin, int colEnd) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    rowBegin = std::clamp(rowBegin, 0, m_tq);
    rowEnd = std::clamp(rowEnd, rowBegin, m_tq);
    colBegin = std::clamp(colBegin, 0, m_tk);
    colEnd = std::clamp(colEnd, colBegin, m_tk);
    const Key key{0, head, rowBegin, rowEnd, colBegin, colEnd, 0, 0, 0};
    if (auto hit = cached(key))
        return *hit;
    auto out = std::make_shared<Mat<T>>(rowEnd - rowBegin, colEnd - colBegin);
    // bands of rows over the pool, each one product of its rows by the keys
    const int rn = rowEnd - rowBegin, bands = (rn + kBandRows - 1) / kBandRows;
    const double work = 2.0 * rn * double(colEnd - colBegin) * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(bands, work, [&](int b) {
        const int r0 = rowBegin + b * kBandRows, r1 = std::min(rowEnd, r0 + kBandRows);
        thread_local Mat<T> part;
        block(head, r0, r1, colBegin, colEnd, part);
        out->middleRows(r0 - rowBegin, r1 - r0) = part;
    });
    remember(key, out);
    return *out;
}

template <typename T>
Mat<T> AttentionTiles<T>::pooled(int head, int rowBegin, int rowEnd, int colBegin, int colEnd, int outRows,
                                 int outCols, Pooling pool) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    rowBegin = std::clamp(rowBegin, 0, m_tq);
    rowEnd = std::clamp(rowEnd, rowBegin, m_tq);
    colBegin = std::clamp(colBegin, 0, m_tk);
    colEnd = std::clamp(colEnd, colBegin, m_tk);
    const int R = rowEnd - rowBegin, C = colEnd - colBegin;
    if (R == 0 || C == 0)
        return Mat<T>(0, 0);
    outRows = std::clamp(outRows, 1, R);
    outCols = std::clamp(outCols, 1, C);
    const Key key{1, head, rowBegin, rowEnd, colBegin, colEnd, outRows, outCols, int(pool)};
    if (auto hit = cached(key))
        return *hit;
    auto out = std::make_shared<Mat<T>>(outRows, outCols);
    // output columns per block: blocks of about kBlockKeys keys, whole output cells
    const int cellsPer = std::max(1, int(int64_t(kBlockKeys) * outCols / C));
    const double work = 2.0 * R * double(C) * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(outRows, work, [&](int a) {
        const int ra = edge(rowBegin, R, outRows, a), rb = edge(rowBegin, R, outRows, a + 1);
        auto acc = out->row(a);
        if (pool == Pooling::Max)
            acc.setConstant(-std::numeric_limits<T>::infinity());
        else
            acc.setZero();
        thread_local Mat<T> w;
        for (int r0 = ra; r0 < rb; r0 += kBandRows) {
            const int r1 = std::min(rb, r0 + kBandRows);
            for (int b0 = 0; b0 < outCols; b0 += cellsPer) {
                const int b1 = std::min(outCols, b0 + cellsPer);
                const int ca = edge(colBegin, C, outCols, b0), cb = edge(colBegin, C, outCols, b1);
                if (m_recompute && blockHidden(r0, r1, ca, cb)) { // all 0
                    if (pool == Pooling::Max)
                        acc.segment(b0, b1 - b0) = acc.segment(b0, b1 - b0).cwiseMax(T(0));
                    continue;
                }
                block(head, r0, r1, ca, cb, w);
                for (int b = b0; b < b1; ++b) {
                    const int c0 = edge(colBegin, C, outCols, b) - ca, c1 = edge(colBegin, C, outCols, b + 1) - ca;
                    const auto cells = w.middleCols(c0, c1 - c0);
                    if (pool == Pooling::Max)
                        acc[b] = std::max(acc[b], cells.maxCoeff());
                    else
                        acc[b] += cells.sum();
                }
            }
        }
        if (pool == Pooling::Mean)
            for (int b = 0; b < outCols; ++b)
                acc[b] /= T(double(rb - ra) * (edge(colBegin, C, outCols, b + 1) - edge(colBegin, C, outCols, b)));
    });
    remember(key, out);
    return *out;
}

template <typename T>
std::vector<T> AttentionTiles<T>::diagonal(int head, int offset) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    std::vector<T> out(size_t(m_tq), T(0));
    const int bands = (m_tq + kBandRows - 1) / kBandRows;
    const double work = 2.0 * m_tq * double(kBandRows) * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(bands, work, [&](int b) {
        const int r0 = b * kBandRows, r1 = std::min(m_tq, r0 + kBandRows);
        const int ca = std::clamp(r0 + offset, 0, m_tk), cb = std::clamp(r1 + offset, 0, m_tk);
        if (cb <= ca)
            return;
        thread_local Mat<T> w;
        block(head, r0, r1, ca, cb, w);
        for (int i = r0; i < r1; ++i)
            if (const int j = i + offset; j >= ca && j < cb)
                out[size_t(i)] = w(i - r0, j - ca);
    });
    return out;
}

template <typename T>
Mat<T> AttentionTiles<T>::leading(int head, int k) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    k = std::clamp(k, 0, m_tk);
    Mat<T> out(m_tq, k);
    const int bands = (m_tq + kBandRows - 1) / kBandRows;
    const double work = 2.0 * m_tq * double(k) * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(bands, work, [&](int b) {
        const int r0 = b * kBandRows, r1 = std::min(m_tq, r0 + kBandRows);
        thread_local Mat<T> w;
        block(head, r0, r1, 0, k, w);
        out.middleRows(r0, r1 - r0) = w;
    });
    return out;
}

template <typename T>
Mat<T> AttentionTiles<T>::recent(int head, int w) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    w = std::max(0, w);
    Mat<T> out = Mat<T>::Zero(m_tq, w);
    if (w == 0)
        return out;
    const int bands = (m_tq + kBandRows - 1) / kBandRows;
    const double work = 2.0 * m_tq * double(w + kBandRows) * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(bands, work, [&](int b) {
        const int r0 = b * kBandRows, r1 = std::min(m_tq, r0 + kBandRows);
        const int ca = std::clamp(r0 - w + 1, 0, m_tk), cb = std::clamp(r1, 0, m_tk);
        if (cb <= ca)
            return;
        thread_local Mat<T> blk;
        block(head, r0, r1, ca, cb, blk);
        for (int i = r0; i < r1; ++i)
            for (int c = 0; c < w; ++c)
                if (const int j = i - w + 1 + c; j >= ca && j < cb)
                    out(i, c) = blk(i - r0, j - ca);
    });
    return out;
}

template <typename T>
std::vector<T> AttentionTiles<T>::cells(int head, const std::vector<std::pair<int, int>> &list) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    std::vector<T> out(list.size(), T(0));
    // runs of the list on one query row: a run dense in its keys is one block of the row from its
    // first key to its last (one vectorised product), a sparse one a block per cell
    std::vector<size_t> runs;
    for (size_t n = 0; n < list.size(); ++n)
        if (n == 0 || list[n].first != list[n - 1].first)
            runs.push_back(n);
    runs.push_back(list.size());
    const int nRuns = int(runs.size()) - 1;
    const double work = 2.0 * double(list.size()) * m_dh * (head < 0 ? m_heads : 1) * 16;
    parallelFor(nRuns, work, [&](int r) {
        thread_local Mat<T> w;
        const size_t b = runs[size_t(r)], e = runs[size_t(r) + 1];
        const int i = list[b].first;
        if (i < 0 || i >= m_tq)
            return;
        int lo = m_tk, hi = -1;
        for (size_t n = b; n < e; ++n)
            if (const int j = list[n].second; j >= 0 && j < m_tk) {
                lo = std::min(lo, j);
                hi = std::max(hi, j);
            }
        if (hi < lo)
            return;
        constexpr int kCellsPerKey = 32; // a block per cell costs about 32 keys of a row's block
        if (int64_t(e - b) * kCellsPerKey >= int64_t(hi - lo + 1)) {
            block(head, i, i + 1, lo, hi + 1, w);
            for (size_t n = b; n < e; ++n)
                if (const int j = list[n].second; j >= lo && j <= hi)
                    out[n] = w(0, j - lo);
            return;
        }
        for (size_t n = b; n < e; ++n)
            if (const int j = list[n].second; j >= 0 && j < m_tk) {
                block(head, i, i + 1, j, j + 1, w);
                out[n] = w(0, 0);
            }
    });
    return out;
}

template <typename T>
Mat<T> AttentionTiles<T>::wholeRows(int head, const std::vector<int> &list) const
{
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    Mat<T> out = Mat<T>::Zero(Eigen::Index(list.size()), m_tk);
    const double work = 2.0 * double(list.size()) * m_tk * m_dh * (head < 0 ? m_heads : 1);
    parallelFor(int(list.size()), work, [&](int n) {
        const int i = list[size_t(n)];
        if (i < 0 || i >= m_tq)
            return;
        // the keys a causal or windowed row can see; the rest stay 0
        const int c1 = m_causal ? std::min(m_tk, i + 1) : m_tk;
        const int c0 = m_window > 0 ? std::clamp(i - m_window + 1, 0, c1) : 0;
        if (c1 <= c0)
            return;
        thread_local Mat<T> row;
        block(head, i, i + 1, c0, c1, row);
        out.row(n).segment(c0, c1 - c0) = row.row(0);
    });
    return out;
}

template <typename T>
Mat<T> AttentionTiles<T>::rowBlock(int head, int rowBegin, int rowEnd, int *firstKey) const
{
    if (firstKey)
        *firstKey = 0;
    if (!m_valid)
        return {};
    head = head >= m_heads ? -1 : std::max(-1, head);
    rowBegin = std::clamp(rowBegin, 0, m_tq);
    rowEnd = std::clamp(rowEnd, rowBegin, m_tq);
    const int c1 = m_causal ? std::min(m_tk, rowEnd) : m_tk;
    const int c0 = m_window > 0 ? std::clamp(rowBegin - m_window + 1, 0, c1) : 0;
    if (firstKey)
        *firstKey = c0;
    Mat<T> out;
    if (rowEnd <= rowBegin || c1 <= c0)
        return Mat<T>::Zero(rowEnd - rowBegin, 0);
    block(head, rowBegin, rowEnd, c0, c1, out);
    return out;
}

template class AttentionTiles<float>;
template class AttentionTiles<double>;

} // namespace attnviz
