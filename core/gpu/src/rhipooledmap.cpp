// SPDX-License-Identifier: GPL-3.0-or-later
// RhiForward::pooledMap: a pooled map of one head of a trace's layer on the GPU (pooledmap.comp), the
// same map as AttentionTiles<float>::pooled computes on the CPU from the trace's q, k and log-sum-exp
// (the region and grid clamped alike, output cell (a, b) covering the same rows and keys). Uploads
// only the head's q rows and its key/value head's k rows of the region (16-bit ones widened on the
// host, exactly), the rows' log-sum-exp, the cells' edges and the masks; one dispatch; the slices'
// maxima or sums come back and are combined on the host (sums in double, divided by the cell's size).
#include "rhiforward.h"
#include "vulkanreadback.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace attnviz {

namespace {

// Iterations one invocation's loops may run on the slowest target (lavapipe stops a loop after
// 65,535); also the float sum's length per invocation before the workgroup's tree.
constexpr qint64 kCellsPerInvocation = 256;
// Partial results at most (slices x cells of the map), to bound the readback.
constexpr qint64 kMaxPartials = qint64(1) << 24;

int edge(int n, int out, int a) { return int(qint64(a) * n / out); }

} // namespace

Status RhiForward::pooledMap(const Trace<float> &trace, int layer, int head, int rowBegin, int rowEnd, int colBegin,
                             int colEnd, int outRows, int outCols, Pooling pool, Mat<float> &out)
{
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    if (!AttentionTiles<float>::recomputable(trace, layer))
        return Status::error(StatusCode::Unavailable,
                             m_name + ": layer " + std::to_string(layer) +
                                 " keeps no q, k and log-sum-exp to recompute its weights from (a map is drawn on the CPU)");
    const AttentionResult<float> &A = trace.layers[size_t(layer)].attention;
    const SequenceResult<float> &seq = A.batch.front();
    const int H = A.numHeads, dh = A.dHead, kvHeads = A.kvHeads > 0 ? A.kvHeads : H;
    if (head < 0 || head >= H)
        return Status::error(StatusCode::Unavailable,
                             m_name + ": the map of the mean over heads is drawn on the CPU (head " +
                                 std::to_string(head) + " of " + std::to_string(H) + ")");
    const bool half = !seq.q16.empty();
    const int tq = int(half ? seq.q16.rows : seq.q.rows()), tk = int(half ? seq.k16.rows : seq.k.rows());
    const bool kPerHead = (half ? seq.k16.cols : seq.k.cols()) == Eigen::Index(H) * dh;
    rowBegin = std::clamp(rowBegin, 0, tq);
    rowEnd = std::clamp(rowEnd, rowBegin, tq);
    colBegin = std::clamp(colBegin, 0, tk);
    colEnd = std::clamp(colEnd, colBegin, tk);
    const int R = rowEnd - rowBegin, C = colEnd - colBegin;
    if (R == 0 || C == 0) {
        out.resize(0, 0);
        return {};
    }
    outRows = std::clamp(outRows, 1, R);
    outCols = std::clamp(outCols, 1, C);
    if (outRows > 65535 || outCols > 65535)
        return Status::error(StatusCode::Unavailable, m_name + ": a map wider or taller than 65,535 cells");

    // Slices of each cell's rows: an invocation takes every 64th weight of a slice.
    const int maxRows = edge(R, outRows, 1) + 1, maxKeys = edge(C, outCols, 1) + 1; // cells differ by 1 at most
    const qint64 keysPer = (maxKeys + 63) / 64;
    const qint64 rowsPerSlice = std::max<qint64>(1, kCellsPerInvocation * 64 / maxKeys);
    const int S = int(std::min<qint64>({(maxRows + rowsPerSlice - 1) / rowsPerSlice, maxRows, 65535}));
    const qint64 cellsOut = qint64(outRows) * outCols;
    if (S * cellsOut > kMaxPartials)
        return Status::error(StatusCode::Unavailable, m_name + ": a map of " + std::to_string(outRows) + " x " +
                                                          std::to_string(outCols) + " cells over this region is too large");
    if (qint64(S) * maxRows >= (qint64(1) << 32)) // pooledmap.comp's slice edges in 32 bits
        return Status::error(StatusCode::Unavailable, m_name + ": a map cell taller than its 32-bit slices reach");
    if (keysPer * 64 > 65535 * 64) // a row of a cell longer than an invocation's loop may run
        return Status::error(StatusCode::Unavailable, m_name + ": a map cell wider than 4 million keys");

    // Host data: the head's q rows and its key/value head's k rows, widened where kept in 16 bits.
    const Eigen::Index qc = Eigen::Index(head) * dh;
    const Eigen::Index kc = kPerHead ? qc : Eigen::Index(head / (H / kvHeads)) * dh;
    Mat<float> q, k;
    if (half) {
        seq.q16.widen(rowBegin, R, qc, dh, q);
        seq.k16.widen(colBegin, C, kc, dh, k);
    } else {
        q = seq.q.block(rowBegin, qc, R, dh);
        k = seq.k.block(colBegin, kc, C, dh);
    }
    std::vector<float> lse(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r)
        lse[size_t(r)] = seq.lse(rowBegin + r, head);
    std::vector<quint32> edges(size_t(outRows) + 1 + size_t(outCols) + 1);
    for (int a = 0; a <= outRows; ++a)
        edges[size_t(a)] = quint32(edge(R, outRows, a));
    for (int b = 0; b <= outCols; ++b)
        edges[size_t(outRows) + 1 + size_t(b)] = quint32(edge(C, outCols, b));
    std::vector<quint32> padded;
    for (int j : trace.paddedKeys)
        if (j >= colBegin && j < colEnd) {
            padded.resize(size_t(C), 0);
            padded[size_t(j - colBegin)] = 1;
        }
    std::vector<std::pair<int, int>> masked; // (row in the region, absolute key)
    for (const auto &c : trace.maskedCells)
        if (c.first >= rowBegin && c.first < rowEnd && c.second >= colBegin && c.second < colEnd)
            masked.push_back({c.first - rowBegin, c.second});
    std::sort(masked.begin(), masked.end());
    masked.erase(std::unique(masked.begin(), masked.end()), masked.end());
    std::vector<quint32> cells;
    if (!masked.empty()) {
        cells.assign(size_t(R) + 1, 0);
        for (const auto &c : masked)
            ++cells[size_t(c.first) + 1];
        for (int r = 0; r < R; ++r)
            cells[size_t(r) + 1] += cells[size_t(r)];
        for (const auto &c : masked)
            cells.push_back(quint32(c.second));
    }

    const qint64 F = 4;
    if (qint64(std::max(q.size(), k.size())) * F > limit()) // too large for this device, not a failure of it
        return Status::error(StatusCode::Unavailable, m_name + ": the region's " + std::to_string(std::max(R, C)) +
                                                          " rows of q or k do not fit one storage buffer on this device (" +
                                                          std::to_string(limit() >> 20) + " MiB)");
    bool ok = makeBuffer(m_map.q, qint64(q.size()) * F, true) && makeBuffer(m_map.k, qint64(k.size()) * F, true) &&
              makeBuffer(m_map.lse, qint64(R) * F, true) && makeBuffer(m_map.edges, qint64(edges.size()) * F, true) &&
              makeBuffer(m_map.padded, std::max<qint64>(1, qint64(padded.size())) * F, true) &&
              makeBuffer(m_map.cells, std::max<qint64>(1, qint64(cells.size())) * F, true) &&
              makeBuffer(m_map.out, S * cellsOut * F, true);
    if (!ok)
        return Status::error(StatusCode::BackendFailed, m_name + ": out of GPU memory for a map of " +
                                                            std::to_string(R) + " x " + std::to_string(C) + " weights");

    QRhiCommandBuffer *cb = nullptr;
    const QRhi::FrameOpResult fr = m_rhi->beginOffscreenFrame(&cb);
    if (fr != QRhi::FrameOpSuccess)
        return Status::error(StatusCode::BackendFailed,
                             m_name + (fr == QRhi::FrameOpDeviceLost ? ": device lost" : ": cannot begin a frame"));
    QRhiResourceUpdateBatch *batch = m_rhi->nextResourceUpdateBatch();
    m_dispatches.clear();
    m_slotSet = &m_opSlots;
    m_slotsUsed = 0;
    batch->uploadStaticBuffer(m_map.q.get(), 0, int(q.size() * F), q.data());
    batch->uploadStaticBuffer(m_map.k.get(), 0, int(k.size() * F), k.data());
    batch->uploadStaticBuffer(m_map.lse.get(), 0, int(R * F), lse.data());
    batch->uploadStaticBuffer(m_map.edges.get(), 0, int(edges.size() * F), edges.data());
    if (!padded.empty())
        batch->uploadStaticBuffer(m_map.padded.get(), 0, int(padded.size() * F), padded.data());
    if (!cells.empty())
        batch->uploadStaticBuffer(m_map.cells.get(), 0, int(cells.size() * F), cells.data());
    const quint32 flags = (pool == Pooling::Max ? 1u : 0u) | (A.causal ? 2u : 0u) | (padded.empty() ? 0u : 4u) |
                          (cells.empty() ? 0u : 8u);
    const quint32 u[16] = {quint32(R), quint32(C), quint32(outRows), quint32(outCols), quint32(dh), quint32(rowBegin),
                           quint32(colBegin), flags, quint32(std::max(0, A.window)), quint32(S), 0, 0, 0, 0, 0, 0};
    const float fl[8] = {float(A.scale), float(A.softcap), 0, 0, 0, 0, 0, 0};
    const bool passed =
        pass(Pipe::PooledMap, u, fl,
             {{Access::Load, m_map.q.get()}, {Access::Load, m_map.k.get()}, {Access::Load, m_map.lse.get()},
              {Access::Load, m_map.edges.get()}, {Access::Load, m_map.padded.get()}, {Access::Load, m_map.cells.get()},
              {Access::Store, m_map.out.get()}},
             outCols, outRows, S, batch);
    if (!passed) {
        batch->release();
        m_rhi->endOffscreenFrame();
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a uniform buffer or shader bindings");
    }
    std::vector<float> partial(size_t(S * cellsOut));
    const std::vector<ReadItem> items{{m_map.out.get(), 0, F * qint64(partial.size()), partial.data()}};
    std::vector<QByteArray> data;
    if (Status st = runFrame(cb, batch, items, data); !st)
        return st;
    std::memcpy(partial.data(), data[0].constData(), size_t(items[0].bytes));

    out.resize(outRows, outCols);
    for (int a = 0; a < outRows; ++a)
        for (int b = 0; b < outCols; ++b) {
            const size_t at = size_t(a) * outCols + b;
            if (pool == Pooling::Max) {
                float m = 0;
                for (int z = 0; z < S; ++z)
                    m = std::max(m, partial[size_t(z) * size_t(cellsOut) + at]);
                out(a, b) = m;
            } else {
                double s = 0;
                for (int z = 0; z < S; ++z)
                    s += double(partial[size_t(z) * size_t(cellsOut) + at]);
                const double n = double(edge(R, outRows, a + 1) - edge(R, outRows, a)) *
                                 double(edge(C, outCols, b + 1) - edge(C, outCols, b));
                out(a, b) = float(s / n);
            }
        }
    m_lastGpuMs = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    return {};
}

} // namespace attnviz
