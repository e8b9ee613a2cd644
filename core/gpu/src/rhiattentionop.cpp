// SPDX-License-Identifier: GPL-3.0-or-later
// The attention op (Backend::compute, the word-vector path) on the forward device's passes. Shapes
// (one sequence; H heads of d_head, dIn = H * d_head):
//   x_q (t_q, d_model), x_k (t_k, kdim), x_v (t_k, vdim)
//   q = x_q W_q^T + b_q (t_q, dIn)   k, v (t_k, dIn)          product (linear.comp), or host (identity)
//   W[h] = q_h k_h^T (t_q, t_k), heads in storage buffers     linear.comp (z = head)
//   W[h] = normalize(mask(scale W[h]))                        attend.comp
//   context[:, h] = W[h] v_h (t_q, dIn)                       linear.comp (z = head)
//   weights_avg = mean_h W[h] (t_q, t_k)                      headavg.comp, adding up buffer after buffer
//   output = context W_o^T + b_o (t_q, dOut)                  product, or host (identity)
// The normalizations, masks, fully-masked policies and degenerate rows follow the CPU core's
// normalizeRows() (attend.comp's modes). One frame per sequence: uploads, the dispatches, readbacks
// straight into the result's matrices at its end. Buffers stay from one call to the next while
// they are large enough; weights are uploaded only when their values change (one model, new text).
#include "rhiforward.h"
#include "vulkanreadback.h"

#include <chrono>
#include <cstring>
#include <deque>

namespace attnviz {

namespace {

// attend.comp's normalization (mode) and fully-masked policy codes.
quint32 attendMode(const AttentionConfig &cfg, bool hasMask)
{
    switch (cfg.normalization) {
    case Normalization::Softmax: return cfg.maskMethod == MaskMethod::MultiplyRenormalize && hasMask ? 1 : 0;
    case Normalization::Sum: return 2;
    case Normalization::Cosine: return 3;
    }
    return 0;
}

quint32 policyCode(FullyMaskedPolicy p)
{
    switch (p) {
    case FullyMaskedPolicy::Zero: return 0;
    case FullyMaskedPolicy::NaN: return 1;
    case FullyMaskedPolicy::Uniform: return 2;
    }
    return 0;
}

} // namespace

// One chunk holding all of W's rows (a projection's weight is far smaller than a storage buffer);
// the bytes go up only when they differ from the last upload.
bool RhiForward::opWeight(QRhiResourceUpdateBatch *batch, OpWeight &w, const Linear<float> &lin)
{
    const int rows = int(lin.W.rows()), cols = int(lin.W.cols());
    const qint64 n = qint64(lin.W.size());
    if (w.m.rows != rows || w.m.cols != cols || w.m.chunks.size() != 1) {
        w.m = Matrix();
        w.m.chunks.emplace_back();
        w.w.clear();
        if (!makeBuffer(w.m.chunks[0].b, n * 4))
            return false;
        w.m.rows = w.m.chunks[0].rows = rows;
        w.m.cols = cols;
    }
    if (qint64(w.w.size()) != n || std::memcmp(w.w.data(), lin.W.data(), size_t(n) * 4) != 0) {
        batch->uploadStaticBuffer(w.m.chunks[0].b.get(), 0, int(n * 4), lin.W.data());
        w.w.assign(lin.W.data(), lin.W.data() + n);
    }
    if (!lin.hasBias())
        return true;
    const qint64 nb = qint64(lin.b.size());
    if (!makeBuffer(w.b, nb * 4, true))
        return false;
    if (qint64(w.bias.size()) != nb || std::memcmp(w.bias.data(), lin.b.data(), size_t(nb) * 4) != 0) {
        batch->uploadStaticBuffer(w.b.get(), 0, int(nb * 4), lin.b.data());
        w.bias.assign(lin.b.data(), lin.b.data() + nb);
    }
    return true;
}

Status RhiForward::attend(const AttentionConfig &cfg, const AttentionInput<float> &input, AttentionResult<float> &result)
{
    using clock = std::chrono::steady_clock;
    static const bool profile = qEnvironmentVariableIsSet("ATTNVIZ_GPU_PROFILE");
    const auto tStart = clock::now();
    ResolvedShape s;
    if (Status st = resolveShape(cfg, input, s); !st)
        return st;
    if (cfg.dropout > 0.0)
        return Status::error(StatusCode::Unavailable,
                             m_name + ": dropout is computed by the CPU backend only (torch's random stream)");
    const int H = s.numHeads, dh = s.dHead, tq = s.tq, tk = s.tk, dIn = s.dInner, dOut = s.dOut;
    if (tq > 65535 || H > 65535 || groups(std::max(tk, dOut), 64) > 65535)
        return Status::error(StatusCode::Unavailable, m_name + ": more than 65535 workgroups in one dimension");
    const Projections<float> &P = input.proj;
    const bool projQ = !P.q.isIdentity(), projK = !P.k.isIdentity(), projV = !P.v.isIdentity(),
               projO = !P.o.isIdentity();

    // Heads in storage buffers of at most limit() bytes each.
    const qint64 headElems = qint64(tq) * tk, head = headElems * 4;
    if (head > limit())
        return Status::error(StatusCode::Unavailable,
                             m_name + ": t_q x t_k = " + std::to_string(tq) + " x " + std::to_string(tk) +
                                 " does not fit one storage buffer on this device (" + std::to_string(limit() >> 20) +
                                 " MiB)");
    const int perBuffer = int(std::min<qint64>(H, limit() / head));
    const int nBuffers = (H + perBuffer - 1) / perBuffer;
    Op &op = m_op;
    const qint64 F = 4, maskWords = (tk + 31) / 32;
    bool ok = true;
    auto mk = [&](Buffer &b, qint64 floats) { ok = ok && makeBuffer(b, floats * F, true); };
    mk(op.xq, projQ ? qint64(tq) * s.dModel : 1);
    mk(op.xk, projK ? qint64(tk) * s.kdim : 1);
    mk(op.xv, projV ? qint64(tk) * s.vdim : 1);
    mk(op.q, qint64(tq) * dIn);
    mk(op.k, qint64(tk) * dIn);
    mk(op.v, qint64(tk) * dIn);
    mk(op.mask, tq * maskWords);
    mk(op.flags, qint64(H) * tq);
    mk(op.ctx, qint64(tq) * dIn);
    mk(op.out, projO ? qint64(tq) * dOut : 1);
    mk(op.avg, headElems);
    op.heads.resize(size_t(nBuffers));
    for (int c = 0; c < nBuffers && ok; ++c) {
        OpHeads &hb = op.heads[size_t(c)];
        hb.first = c * perBuffer;
        hb.count = std::min(perBuffer, H - hb.first);
        mk(hb.w, headElems * hb.count);
        if (cfg.keepScores)
            mk(hb.s, headElems * hb.count);
        else
            hb.s = Buffer();
    }
    if (!ok)
        return Status::error(StatusCode::BackendFailed, m_name + ": out of GPU memory for t_q " + std::to_string(tq) +
                                                            ", t_k " + std::to_string(tk) + ", " + std::to_string(H) +
                                                            " heads");

    std::vector<uint8_t> readHead(size_t(H), cfg.readbackHeads.empty() ? 1 : 0);
    for (int h : cfg.readbackHeads)
        if (h >= 0 && h < H)
            readHead[size_t(h)] = 1;
    const bool readAvg = cfg.readbackHeads.empty() ||
                         std::find(cfg.readbackHeads.begin(), cfg.readbackHeads.end(), -1) != cfg.readbackHeads.end();
    result.numHeads = H;
    result.dHead = dh;
    result.dModel = s.dModel;
    result.dOut = dOut;
    result.scale = s.scale;
    result.batch.resize(size_t(s.batch));

    double gpuMs = 0;
    for (int b = 0; b < s.batch; ++b) {
        const auto &seq = input.batch[size_t(b)];
        auto &r = result.batch[size_t(b)];
        const Mat<float> &xk = seq.key.size() ? seq.key : seq.query;
        const Mat<float> &xv = seq.value.size() ? seq.value : xk;

        r.mask = effectiveMask(input.attnMask, cfg.causal, seq.keyPadding, tq, tk);
        r.fullyMaskedRows.clear();
        r.degenerateRows.clear();
        r.weightsPreDropout.clear();
        const bool hasMask = r.mask.size() != 0;
        std::vector<quint32> bits;
        if (hasMask) {
            bits = maskBits(r.mask, int(maskWords));
            for (int i = 0; i < tq; ++i)
                if ((r.mask.row(i).array() != 0).all())
                    r.fullyMaskedRows.push_back(i);
        }

        const auto t0 = clock::now();
        QRhiCommandBuffer *cb = nullptr;
        const QRhi::FrameOpResult fr = m_rhi->beginOffscreenFrame(&cb);
        if (fr != QRhi::FrameOpSuccess)
            return Status::error(StatusCode::BackendFailed,
                                 m_name + (fr == QRhi::FrameOpDeviceLost ? ": device lost" : ": cannot begin a frame"));
        Frame f;
        f.batch = m_rhi->nextResourceUpdateBatch();
        m_dispatches.clear();
        m_slotSet = &m_opSlots;
        m_slotsUsed = 0;

        // Inputs: a projected role uploads x (and W, b where they changed) and is a product; an
        // identity role uploads x (+ b) as q/k/v itself.
        std::deque<Mat<float>> hostCopies; // x + b for identity roles, alive while the batch is recorded
        auto role = [&](bool proj, const Mat<float> &x, const Linear<float> &lin, Buffer &xb, OpWeight &w, Buffer &y) {
            if (proj) {
                f.batch->uploadStaticBuffer(xb.get(), 0, int(x.size() * F), x.data());
                f.ok = f.ok && opWeight(f.batch, w, lin);
                if (f.ok)
                    product(f, xb.get(), int(x.cols()), w.m, lin.hasBias() ? w.b.get() : nullptr, y.get(), 0, 0,
                            int(x.rows()), 0);
            } else if (lin.hasBias()) {
                hostCopies.push_back(x);
                hostCopies.back().rowwise() += lin.b.transpose();
                f.batch->uploadStaticBuffer(y.get(), 0, int(x.size() * F), hostCopies.back().data());
            } else {
                f.batch->uploadStaticBuffer(y.get(), 0, int(x.size() * F), x.data());
            }
        };
        role(projQ, seq.query, P.q, op.xq, op.wq, op.q);
        role(projK, xk, P.k, op.xk, op.wk, op.k);
        role(projV, xv, P.v, op.xv, op.wv, op.v);
        if (hasMask)
            f.batch->uploadStaticBuffer(op.mask.get(), 0, int(bits.size() * 4), bits.data());

        static const float none[8] = {};
        const float fa[8] = {float(s.scale), 0, 0, 0, 0, 0, 0, 0};
        // flags on; the raw dots given (linear.comp's tiles)
        const quint32 modeWord = attendMode(cfg, hasMask) | (policyCode(cfg.fullyMasked) << 4) | (1u << 8) | (1u << 9);
        for (size_t c = 0; c < op.heads.size(); ++c) {
            const OpHeads &hb = op.heads[c];
            // raw dots q_h k_h^T of the buffer's heads, one z each: x = q, W = k (rows of stride dIn)
            const quint32 ud[16] = {quint32(tq), quint32(tk), quint32(dh), 0, quint32(hb.first * dh), quint32(dIn), 0,
                                    quint32(tk), 0, 0, quint32(hb.first * dh), 0, quint32(dIn), quint32(dh), quint32(dh),
                                    quint32(headElems)};
            f.ok = f.ok && pass(Pipe::Linear, ud, none,
                                {{Access::Load, op.q.get()}, {Access::Load, op.k.get()}, {Access::Load, m_dummyLoad.get()},
                                 {Access::Store, hb.w.get()}},
                                groups(tk, 64), groups(tq, 64), hb.count, f.batch);
            const quint32 ua[16] = {quint32(tq), quint32(tk), quint32(tk), 0, quint32(dh), quint32(dIn), quint32(dIn), 1,
                                    0, 0, hasMask ? 1u : 0u, quint32(maskWords), cfg.keepScores ? 1u : 0u, modeWord,
                                    quint32(headElems), quint32(hb.first)};
            f.ok = f.ok && pass(Pipe::Attend, ua, fa,
                                {{Access::Load, op.q.get()}, {Access::Load, op.k.get()},
                                 {Access::Load, hasMask ? op.mask.get() : m_dummyLoad.get()}, {Access::LoadStore, hb.w.get()},
                                 {Access::Store, cfg.keepScores ? hb.s.get() : m_dummyStore.get()},
                                 {Access::Store, op.flags.get()}},
                                tq, hb.count, 1, f.batch);
            // context[:, h] = W[h] v_h, one z each: x = W[h] (t_q, t_k), the weight v_h stored (t_k, d_head)
            const quint32 uc[16] = {quint32(tq), quint32(dh), quint32(tk), 16, 0, quint32(tk), quint32(hb.first * dh),
                                    quint32(dIn), 0, 0, quint32(hb.first * dh), 0, quint32(dIn), quint32(headElems),
                                    quint32(dh), quint32(dh)};
            f.ok = f.ok && pass(Pipe::Linear, uc, none,
                                {{Access::Load, hb.w.get()}, {Access::Load, op.v.get()}, {Access::Load, m_dummyLoad.get()},
                                 {Access::Store, op.ctx.get()}},
                                groups(dh, 64), groups(tq, 64), hb.count, f.batch);
            if (readAvg) { // summed buffer after buffer, divided by H with the last
                const quint32 mode = (c > 0 ? 1u : 0u) | (c + 1 < op.heads.size() ? 2u : 0u);
                const quint32 uh[16] = {quint32(tq), quint32(hb.count), quint32(tk), 0, quint32(headElems), mode, quint32(H),
                                        0, 0, 0, 0, 0, 0, 0, 0, 0};
                f.ok = f.ok && pass(Pipe::HeadAvg, uh, none, {{Access::Load, hb.w.get()}, {Access::LoadStore, op.avg.get()}},
                                    groups(tk, 64), tq, 1, f.batch);
            }
        }
        if (projO) {
            f.ok = f.ok && opWeight(f.batch, op.wo, P.o);
            if (f.ok)
                product(f, op.ctx.get(), dIn, op.wo.m, P.o.hasBias() ? op.wo.b.get() : nullptr, op.out.get(), 0, 0, tq, 0);
        }
        if (!f.ok) {
            f.batch->release();
            m_rhi->endOffscreenFrame();
            return Status::error(StatusCode::BackendFailed,
                                 m_name + ": cannot create a buffer, a uniform buffer or shader bindings");
        }

        // What the result holds, straight into its matrices (sized first, storage kept from the last
        // call). Per-head matrices and the head mean only where asked for; heads not read back are
        // left empty.
        std::vector<ReadItem> items;
        auto want = [&](const Buffer &buf, qint64 offsetBytes, Mat<float> &m, int rows, int cols) {
            m.resize(rows, cols);
            items.push_back({buf.get(), offsetBytes, F * qint64(m.size()), m.data()});
        };
        auto wantWeights = [&](const Buffer &buf, qint64 offsetBytes, WeightMatrix<float> &m, int rows, int cols) {
            m.resize(rows, cols); // whole: the op's buffers hold every key of every row
            items.push_back({buf.get(), offsetBytes, F * qint64(m.size()), m.data()});
        };
        want(op.q, 0, r.q, tq, dIn);
        want(op.k, 0, r.k, tk, dIn);
        want(op.v, 0, r.v, tk, dIn);
        want(op.ctx, 0, r.context, tq, dIn);
        if (projO)
            want(op.out, 0, r.output, tq, dOut);
        if (readAvg)
            wantWeights(op.avg, 0, r.weightsAvg, tq, tk);
        else
            r.weightsAvg.clear();
        std::vector<quint32> flags(size_t(H) * tq);
        items.push_back({op.flags.get(), 0, F * qint64(flags.size()), flags.data()});
        r.weights.resize(size_t(H));
        r.scores.resize(cfg.keepScores ? size_t(H) : 0);
        for (const OpHeads &hb : op.heads)
            for (int h = hb.first; h < hb.first + hb.count; ++h) {
                const qint64 off = F * headElems * (h - hb.first);
                if (readHead[size_t(h)])
                    wantWeights(hb.w, off, r.weights[size_t(h)], tq, tk);
                else
                    r.weights[size_t(h)].clear();
                if (cfg.keepScores && readHead[size_t(h)])
                    want(hb.s, off, r.scores[size_t(h)], tq, tk);
                else if (cfg.keepScores)
                    r.scores[size_t(h)].resize(0, 0);
            }

        const auto tRecorded = clock::now();
        std::vector<QByteArray> data;
        if (Status st = runFrame(cb, f.batch, items, data); !st)
            return st;
        const auto tFrame = clock::now();
        for (size_t k = 0; k < items.size(); ++k)
            std::memcpy(items[k].dst, data[k].constData(), size_t(items[k].bytes));
        gpuMs += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        if (profile)
            qInfo("gpu attention: %zu dispatches, %zu readbacks: %.1f ms recording, the frame %.1f ms, copies %.1f ms",
                  m_dispatches.size(), items.size(), std::chrono::duration<double, std::milli>(tRecorded - t0).count(),
                  std::chrono::duration<double, std::milli>(tFrame - tRecorded).count(),
                  std::chrono::duration<double, std::milli>(clock::now() - tFrame).count());
        if (!projO) {
            r.output = r.context;
            if (P.o.hasBias())
                r.output.rowwise() += P.o.b.transpose();
        }
        for (int i = 0; i < tq; ++i) {
            bool deg = false;
            for (int h = 0; h < H; ++h)
                deg |= flags[size_t(h) * tq + i] != 0;
            if (deg)
                r.degenerateRows.push_back(i);
        }
    }
    m_lastGpuMs = gpuMs;
    if (profile)
        qInfo("gpu attention total %.1f ms (frames %.1f ms)",
              std::chrono::duration<double, std::milli>(clock::now() - tStart).count(), gpuMs);
    return {};
}

} // namespace attnviz
