// SPDX-License-Identifier: GPL-3.0-or-later
// The model forward on QRhi compute: the CPU forward's passes (core/src/models/forward/forward.cpp
// says what each computes) as dispatches over rows [p, t) of buffers of `cap` rows, one compute pass
// each (QRhi puts the barrier between a pass that writes a buffer and one that reads it), in one
// offscreen frame per forward, readbacks at its end. Per block (pre-norm shown):
//   attnIn = N1(x)                                   rownorm
//   qPre, kPre, v = attnIn W^T + b                   linear        (k, v: the key/value heads only)
//   q, k = rotary(qkNorm(qPre, kPre))                rownorm / elementwise copy, rotary
//   weights = softmax(mask(cap(scale q k^T)))        attend        (heads, cap, cap)
//   avg = mean over heads; ctx = weights v           headavg, context
//   attnOut = ctx W_o^T + b; after = x + attnOut     linear, elementwise
//   out = after + down(act(gate N2(after)) * up N2(after))   rownorm, linear, elementwise, linear
// then the final norm and, for a causal model, the logits of the rows asked for (linear over the
// unembedding) and their top-k (topk): only the k best, the normalizer and the actual next token's
// logit come back (the logits rows themselves where more than topk.comp's K are asked for). The embedding lookup
// and the masked-LM head run on the host (a gather of t rows; a head at a few [MASK] positions).
// What comes back is what ForwardInput::observe asks for; everything else stays on the GPU.
#include "rhiforward.h"
#include "vulkanreadback.h"

#include "attnviz/attention.h"

#include <QFile>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>

namespace attnviz {

namespace {

// std140 uniform block `Params` of every forward shader: uvec4 u0..u3, vec4 f0, f1.
struct PassParams {
    quint32 u[16];
    float f[8];
};
static_assert(sizeof(PassParams) == 96, "PassParams must match the shaders' std140 block");
static_assert(sizeof(float) == 4 && Mat<float>::IsRowMajor, "buffers are row-major float32");

QShader loadShader(const char *name)
{
    QFile f(QStringLiteral(":/attnviz/shaders/%1.qsb").arg(QLatin1String(name)));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QShader::fromSerialized(f.readAll());
}

// ATTNVIZ_GPU_FAULT=shader|memory|hostmemory|lost: a failure a working device does not make on request
// (a pipeline that does not build, weights larger than its memory, the host out of memory while they
// are copied, the device lost during a frame),
// made here so that the tests see the fallback to the CPU where it happens.
bool injected(const char *fault) { return qgetenv("ATTNVIZ_GPU_FAULT") == fault; }

bool cancelled(const std::atomic<bool> *c) { return c && c->load(std::memory_order_relaxed); }

// Uploads in pieces, a frame whenever 64 MiB are pending: QRhi copies what a batch uploads, so a
// 2.5 GB model never sits in memory twice. That copy may find the host out of memory: Qt 6.4 then
// throws std::bad_alloc from uploadStaticBuffer and leaves the batch broken (its pieces freed twice
// when the QRhi goes, an abort), so the memory of each piece is tried first and a piece that would
// not fit ends the upload with hostMemory set, the batch given back intact (the CPU then says what it
// can). The catch is the second line, for memory taken between the try and the copy.
struct Uploader {
    QRhi *rhi;
    QRhiResourceUpdateBatch *batch = nullptr;
    qint64 pending = 0;
    bool ok = true;
    bool hostMemory = false; // the host, not the device, ran out of memory

    explicit Uploader(QRhi *r) : rhi(r) {}
    Uploader(const Uploader &) = delete;
    Uploader &operator=(const Uploader &) = delete;
    ~Uploader()
    {
        if (batch)
            batch->release();
    }

    void put(QRhiBuffer *buf, qint64 offset, qint64 bytes, const void *data)
    {
        constexpr qint64 kPiece = qint64(16) << 20;
        for (qint64 o = 0; o < bytes && ok; o += kPiece) {
            if (!batch)
                batch = rhi->nextResourceUpdateBatch();
            const qint64 n = std::min(kPiece, bytes - o);
            void *room = injected("hostmemory") ? nullptr : std::malloc(size_t(2 * n)); // the copy, and as much again
            if (!room) {
                batch->release();
                batch = nullptr;
                ok = false;
                hostMemory = true;
                return;
            }
            std::free(room);
            try {
                batch->uploadStaticBuffer(buf, int(offset + o), int(n), static_cast<const char *>(data) + o);
            } catch (const std::bad_alloc &) {
                batch->release();
                batch = nullptr;
                ok = false;
                hostMemory = true;
                return;
            }
            pending += n;
            if (pending >= (qint64(64) << 20))
                flush();
        }
    }
    void flush()
    {
        if (!batch || !ok)
            return;
        QRhiCommandBuffer *cb = nullptr;
        if (rhi->beginOffscreenFrame(&cb) != QRhi::FrameOpSuccess) {
            batch->release();
            batch = nullptr;
            ok = false;
            return;
        }
        cb->resourceUpdate(batch);
        batch = nullptr;
        pending = 0;
        ok = rhi->endOffscreenFrame() == QRhi::FrameOpSuccess;
    }
};

using SRB = QRhiShaderResourceBinding;
constexpr auto kCompute = QRhiShaderResourceBinding::ComputeStage;

const char *const kShaderNames[] = {"linear.comp",  "rownorm.comp",     "rotary.comp",    "attend.comp", "context.comp",
                                    "headavg.comp", "elementwise.comp", "rowlinear.comp", "topk.comp",
                                    "pooledmap.comp"};
static_assert(std::size(kShaderNames) == 10, "a shader for every pipeline");

// topk.comp's K: the most predictions a row's top-k keeps on the GPU; a row's output is 2 K + 4 words.
constexpr int kTopKMax = 16;
constexpr int kTopKStride = 2 * kTopKMax + 4;

// Rows at most this many go through rowlinear.comp (each weight read once) instead of the tiles.
constexpr int kFewRows = 8;
// rowlinear.comp's workgroups (4 outputs each) per grid row: a 2-D grid keeps every dimension under
// the 65,535 limit.
constexpr int kRowLinearWidth = 32768;

quint32 activationCode(Activation a)
{
    switch (a) {
    case Activation::GeluTanh: return 1;
    case Activation::GeluErf: return 2;
    case Activation::Relu: return 3;
    case Activation::Silu: return 4;
    }
    return 0;
}

quint32 normCode(NormKind k) { return k == NormKind::LayerNorm ? 0 : k == NormKind::RmsNorm ? 1 : 2; }

} // namespace

RhiForward::RhiForward(QRhi *rhi, std::string name, qint64 maxStorageBytes, VulkanReadback *vkReadback)
    : m_rhi(rhi), m_vkReadback(vkReadback), m_name(std::move(name)), m_maxStorageBytes(maxStorageBytes)
{
}

RhiForward::~RhiForward() = default;

void RhiForward::releaseExpired()
{
    if (!m_model.key || !m_model.alive.expired())
        return;
    for (Slot &s : m_slots) // first: their bindings name the buffers released below
        s = Slot();
    m_layers.clear();
    for (Buffer *b : {&m_inputRaw, &m_input, &m_final, &m_ffIn, &m_gateOut, &m_upOut, &m_hidden, &m_mlpOut, &m_tmp, &m_tmp2,
                      &m_cosG, &m_sinG, &m_cosL, &m_sinL, &m_mask, &m_logits})
        *b = Buffer();
    m_model = ModelGpu();
    m_cap = 0;
    m_lastIds.clear();
}

bool RhiForward::makeBuffer(Buffer &b, qint64 bytes, bool atLeast)
{
    bytes = std::max<qint64>(16, (bytes + 15) / 16 * 16);
    if (b.buf && (b.bytes == bytes || (atLeast && b.bytes > bytes)))
        return true;
    b.buf.reset();
    b.bytes = 0;
    if (bytes > m_maxStorageBytes)
        return false;
    b.buf.reset(m_rhi->newBuffer(QRhiBuffer::Static, QRhiBuffer::StorageBuffer, int(bytes)));
    if (!b.buf->create()) {
        b.buf.reset();
        return false;
    }
    b.bytes = bytes;
    return true;
}

Status RhiForward::create()
{
    bool ok = makeBuffer(m_dummyLoad, 16) && makeBuffer(m_dummyLoad2, 16) && makeBuffer(m_dummyStore, 16) &&
              makeBuffer(m_dummyStore2, 16);
    m_layoutUbo.reset(m_rhi->newBuffer(QRhiBuffer::Dynamic, QRhiBuffer::UniformBuffer, sizeof(PassParams)));
    if (!ok || !m_layoutUbo->create())
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a buffer");
    // The bindings each pipeline is laid out with, over placeholder buffers (access as in its shader).
    QRhiBuffer *u = m_layoutUbo.get(), *d = m_dummyLoad.get();
    auto L = [&](int b) { return SRB::bufferLoad(b, kCompute, d); };
    auto S = [&](int b) { return SRB::bufferStore(b, kCompute, d); };
    auto LS = [&](int b) { return SRB::bufferLoadStore(b, kCompute, d); };
    const SRB ubo = SRB::uniformBuffer(0, kCompute, u);
    const QVector<SRB> layouts[] = {
        {ubo, L(1), L(2), L(3), S(4)},              // linear
        {ubo, L(1), L(2), L(3), S(4)},              // rownorm
        {ubo, LS(1), L(2), L(3)},                   // rotary
        {ubo, L(1), L(2), L(3), LS(4), S(5), S(6)}, // attend
        {ubo, L(1), L(2), S(3)},                    // context
        {ubo, L(1), LS(2)},                         // headavg
        {ubo, L(1), L(2), S(3)},                    // elementwise
        {ubo, L(1), L(2), L(3), S(4)},              // rowlinear
        {ubo, L(1), L(2), S(3)},                    // topk
        {ubo, L(1), L(2), L(3), L(4), L(5), L(6), S(7)}, // pooledmap
    };
    for (int k = 0; k < int(Pipe::Count); ++k) {
        const QShader shader = loadShader(kShaderNames[k]);
        if (!shader.isValid())
            return Status::error(StatusCode::Unavailable,
                                 m_name + ": the compute shader " + kShaderNames[k] + " is missing from the resources");
        m_layouts[k].reset(m_rhi->newShaderResourceBindings());
        m_layouts[k]->setBindings(layouts[k].cbegin(), layouts[k].cend());
        if (!m_layouts[k]->create())
            return Status::error(StatusCode::BackendFailed, m_name + ": cannot create shader bindings");
        m_pipes[k].reset(m_rhi->newComputePipeline());
        m_pipes[k]->setShaderStage({QRhiShaderStage::Compute, shader});
        m_pipes[k]->setShaderResourceBindings(m_layouts[k].get());
        if (!m_pipes[k]->create() || (injected("shader") && k == int(Pipe::Attend)))
            return Status::error(StatusCode::Unavailable,
                                 m_name + ": the compute pipeline of " + kShaderNames[k] + " failed to build");
    }
    return {};
}

Status RhiForward::supports(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in) const
{
    if (!arch.weightRule.softmax() || arch.weightRule.fullyMasked != FullyMaskedPolicy::Zero)
        return Status::error(StatusCode::Unavailable,
                             m_name + ": attention weights other than the softmax run on the CPU (the teaching stack's rules)");
    if (arch.placement == NormPlacement::Post && arch.norm != NormKind::LayerNorm)
        return Status::error(StatusCode::Unavailable, m_name + ": post-norm blocks with RMSNorm run on the CPU");
    const qint64 t = qint64(in.ids.size());
    // the largest buffers: one layer's weights (heads, cap, cap), a weight matrix, the logits
    const qint64 cap = std::min<qint64>(arch.maxPositions, (t / 64 + 1) * 64);
    const qint64 attention = qint64(arch.heads) * cap * cap * 4;
    // a weight matrix goes in chunks of rows: one row must fit
    qint64 row = 0;
    for (const LayerWeights<float> &b : w.layers) {
        for (const Weight<float> *m : {&b.gate.W, &b.up.W, &b.down.W})
            row = std::max<qint64>(row, qint64(m->cols()) * 4);
        if (b.packed)
            for (const WeightLinear<float> *m : {&b.packed->q, &b.packed->k, &b.packed->v, &b.packed->o})
                row = std::max<qint64>(row, qint64(m->W.cols()) * 4);
    }
    row = std::max<qint64>(row, qint64(w.outputEmbedding().cols()) * 4);
    const qint64 largest = std::max(attention, row);
    if (largest > limit())
        return Status::error(StatusCode::Unavailable,
                             m_name + ": one layer's attention at " + std::to_string(t) + " tokens (" +
                                 std::to_string(attention >> 20) + " MiB) is more than the device's largest storage buffer (" +
                                 std::to_string(limit() >> 20) + " MiB)");
    return {};
}

Status RhiForward::upload(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights)
{
    if (m_model.key == weights.get() && !m_model.alive.expired() && m_model.limit == limit())
        return {};
    m_model = ModelGpu();
    m_lastIds.clear();
    m_layers.clear(); // activations of another model's shapes
    m_cap = 0;
    const ModelWeights<float> &w = *weights;
    Uploader up{m_rhi};
    qint64 total = 0;
    bool ok = true;
    if (injected("memory")) // the driver asked for more than it has (Vulkan), so that it answers as it would
        ok = m_vkReadback && !m_vkReadback->refusesMoreThanItHas();
    auto vec = [&](Buffer &b, const Vec<float> &v) {
        if (!v.size())
            return;
        ok = ok && makeBuffer(b, qint64(v.size()) * 4);
        if (ok) {
            up.put(b.get(), 0, qint64(v.size()) * 4, v.data());
            total += b.bytes;
        }
    };
    // Rows in chunks of at most one storage buffer (an even number of 16-bit values each, so that a
    // chunk starts on a whole word); `put(chunk, row0, rows)` uploads one.
    auto chunked = [&](Matrix &m, int rows, int cols, quint32 format, const std::function<void(Matrix::Chunk &)> &put) {
        m.rows = rows;
        m.cols = cols;
        m.format = format;
        m.chunks.clear();
        if (!rows || !cols)
            return;
        const qint64 rowBytes = qint64(cols) * (format ? 2 : 4);
        qint64 per = std::max<qint64>(1, (limit() - 16) / rowBytes);
        if (format && (cols % 2) && per > 1)
            per &= ~qint64(1);
        for (qint64 r0 = 0; r0 < rows && ok && up.ok; r0 += per) {
            m.chunks.emplace_back();
            Matrix::Chunk &c = m.chunks.back();
            c.row0 = int(r0);
            c.rows = int(std::min<qint64>(per, rows - r0));
            const qint64 bytes = qint64(c.rows) * rowBytes;
            ok = ok && makeBuffer(c.b, (bytes + 3) / 4 * 4);
            if (ok) {
                put(c);
                total += c.b.bytes;
            }
        }
    };
    auto dense = [&](Matrix &m, const Mat<float> &M) {
        chunked(m, int(M.rows()), int(M.cols()), 0, [&](Matrix::Chunk &c) {
            up.put(c.b.get(), 0, qint64(c.rows) * M.cols() * 4, M.data() + qint64(c.row0) * M.cols());
        });
    };
    auto weight = [&](Matrix &m, const Weight<float> &W) {
        if (!W.half.empty()) { // kept in 16 bits, widened in linear.comp
            chunked(m, int(W.rows()), int(W.cols()), W.half.kind == HalfMatrix::Kind::BF16 ? 1 : 2, [&](Matrix::Chunk &c) {
                up.put(c.b.get(), 0, qint64(c.rows) * W.cols() * 2, W.half.bits.data() + qint64(c.row0) * W.cols());
            });
        } else if (!W.quant.empty()) { // ggml blocks: widened to float32 here, a block of rows at a time
            std::vector<float> rows;
            chunked(m, int(W.rows()), int(W.cols()), 0, [&](Matrix::Chunk &c) {
                const Eigen::Index block =
                    std::max<Eigen::Index>(1, (Eigen::Index(4) << 20) / std::max<Eigen::Index>(1, W.cols()));
                for (Eigen::Index r = 0; up.ok && r < c.rows; r += block) {
                    const Eigen::Index n = std::min<Eigen::Index>(block, c.rows - r);
                    rows.resize(size_t(n * W.cols()));
                    W.widen(c.row0 + r, n, rows.data());
                    up.put(c.b.get(), qint64(r) * W.cols() * 4, qint64(rows.size()) * 4, rows.data());
                    up.flush(); // `rows` is reused: its piece leaves before the next block is widened
                }
            });
        } else {
            dense(m, W.dense);
        }
    };
    auto norm = [&](Norm &n, const LayerNorm<float> &ln) {
        n.eps = float(ln.eps);
        n.hasGamma = ln.gamma.size() != 0;
        n.hasBeta = ln.beta.size() != 0;
        vec(n.gamma, ln.gamma);
        vec(n.beta, ln.beta);
    };
    m_model.layers.resize(w.layers.size());
    for (size_t l = 0; l < w.layers.size() && ok && up.ok; ++l) {
        const LayerWeights<float> &b = w.layers[l];
        LayerWeightsGpu &g = m_model.layers[l];
        // the projections as the layer keeps them: packed ones as the MLP's (16 bits widened in the
        // shader, ggml blocks on upload), ones in float32 as they are
        auto projections = [&](const auto &P) {
            for (auto [m, lin] : {std::pair{&g.q, &P.q}, {&g.k, &P.k}, {&g.v, &P.v}, {&g.o, &P.o}}) {
                if constexpr (std::is_same_v<std::decay_t<decltype(P)>, Projections<float>>)
                    dense(*m, lin->W);
                else
                    weight(*m, lin->W);
            }
            for (auto [bias, lin] : {std::pair{&g.bq, &P.q}, {&g.bk, &P.k}, {&g.bv, &P.v}, {&g.bo, &P.o}})
                vec(*bias, lin->b);
        };
        if (b.packed)
            projections(*b.packed);
        else
            projections(*b.attn);
        weight(g.gate, b.gate.W);
        weight(g.up, b.up.W);
        weight(g.down, b.down.W);
        vec(g.bgate, b.gate.b);
        vec(g.bup, b.up.b);
        vec(g.bdown, b.down.b);
        norm(g.attnNorm, b.attnNorm);
        norm(g.ffnNorm, b.ffnNorm);
        norm(g.postAttnNorm, b.postAttnNorm);
        norm(g.postFfnNorm, b.postFfnNorm);
        norm(g.qNorm, b.qNorm);
        norm(g.kNorm, b.kNorm);
    }
    norm(m_model.embeddingNorm, w.embeddingNorm);
    norm(m_model.finalNorm, w.finalNorm);
    if (arch.head == LmHead::CausalLm) {
        weight(m_model.unembedding, w.outputEmbedding());
        vec(m_model.outputBias, w.outputBias);
    }
    up.flush();
    if (up.hostMemory) {
        m_model = ModelGpu();
        return Status::error(StatusCode::Unavailable, m_name + ": out of memory on the host while copying the model's weights to "
                                                          "the GPU (" + std::to_string((total >> 20)) + " MiB uploaded when it failed)");
    }
    if (!ok || !up.ok) {
        m_model = ModelGpu();
        return Status::error(StatusCode::Unavailable, m_name + ": the model's weights do not fit the GPU's memory (" +
                                                          std::to_string((total >> 20)) + " MiB uploaded when it failed)");
    }
    m_model.key = weights.get();
    m_model.alive = weights;
    m_model.limit = limit();
    m_model.bytes = total;
    return {};
}

Status RhiForward::ensureActivations(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in,
                                     int cap)
{
    const int logitRows = arch.head == LmHead::CausalLm ? (in.allPredictions ? cap : 1) : 0;
    if (cap == m_cap && in.keepScores == m_actsScores && (in.keepMlp && arch.gatedMlp) == m_actsMlp &&
        logitRows == m_logitRows && m_layers.size() == w.layers.size())
        return {};
    m_lastIds.clear();
    m_cap = 0;
    const qint64 c = cap, d = arch.dModel, qw = qint64(arch.heads) * arch.dHead, kw = qint64(arch.kvHeads) * arch.dHead;
    const qint64 ff = std::max(1, arch.dFeedForward), f = 4;
    bool ok = true;
    auto mk = [&](Buffer &b, qint64 floats) { ok = ok && makeBuffer(b, floats * f); };
    m_layers.resize(w.layers.size());
    const bool shaped = arch.qkNorm || arch.positions == PositionKind::Rotary;
    const bool keepMlp = in.keepMlp && arch.gatedMlp;
    for (LayerActs &L : m_layers) {
        mk(L.attnIn, c * d);
        mk(L.q, c * qw);
        mk(L.k, c * kw);
        mk(L.v, c * kw);
        if (shaped) {
            mk(L.qPre, c * qw);
            mk(L.kPre, c * kw);
        } else {
            L.qPre = {};
            L.kPre = {};
        }
        mk(L.w, qint64(arch.heads) * c * c);
        if (in.keepScores)
            mk(L.s, qint64(arch.heads) * c * c);
        else
            L.s = {};
        mk(L.avg, c * c);
        mk(L.ctx, c * qw);
        mk(L.attnOut, c * d);
        mk(L.after, c * d);
        mk(L.out, c * d);
        if (keepMlp) {
            mk(L.mlpPre, c * ff);
            mk(L.mlpPreLinear, c * ff);
        } else {
            L.mlpPre = {};
            L.mlpPreLinear = {};
        }
        if (!ok)
            break;
    }
    const qint64 half = std::max(arch.rope.dims, arch.ropeLocal.dims) / 2;
    mk(m_inputRaw, c * d);
    mk(m_input, c * d);
    mk(m_final, c * d);
    mk(m_ffIn, c * d);
    mk(m_gateOut, c * ff);
    mk(m_upOut, c * ff);
    mk(m_hidden, c * ff);
    mk(m_mlpOut, c * d);
    mk(m_tmp, c * d);
    mk(m_tmp2, c * d);
    mk(m_cosG, c * std::max<qint64>(1, half));
    mk(m_sinG, c * std::max<qint64>(1, half));
    mk(m_cosL, c * std::max<qint64>(1, half));
    mk(m_sinL, c * std::max<qint64>(1, half));
    mk(m_mask, c * ((c + 31) / 32));
    if (logitRows) {
        mk(m_logits, qint64(logitRows) * std::max(1, m_model.unembedding.rows));
        mk(m_nextIds, logitRows);
        mk(m_topk, qint64(logitRows) * kTopKStride);
    }
    if (!ok) {
        m_layers.clear();
        return Status::error(StatusCode::Unavailable, m_name + ": out of GPU memory for a trace of " +
                                                          std::to_string(in.ids.size()) + " tokens");
    }
    m_cap = cap;
    m_actsScores = in.keepScores;
    m_actsMlp = keepMlp;
    m_logitRows = logitRows;
    return {};
}

bool RhiForward::pass(Pipe pipe, const quint32 (&u)[16], const float (&f)[8], std::initializer_list<Binding> bindings,
                      int x, int y, int z, QRhiResourceUpdateBatch *batch)
{
    if (x <= 0 || y <= 0 || z <= 0)
        return true; // nothing to compute (no rows)
    std::vector<Slot> &set = *m_slotSet;
    if (m_slotsUsed == set.size())
        set.emplace_back();
    Slot &slot = set[m_slotsUsed++];
    if (!slot.ubo) {
        slot.ubo.reset(m_rhi->newBuffer(QRhiBuffer::Dynamic, QRhiBuffer::UniformBuffer, sizeof(PassParams)));
        if (!slot.ubo->create()) {
            slot.ubo.reset();
            return false;
        }
    }
    std::vector<QRhiBuffer *> bound;
    bound.push_back(reinterpret_cast<QRhiBuffer *>(quintptr(int(pipe) + 1))); // the pipeline is part of the key
    for (const Binding &b : bindings)
        bound.push_back(b.buf);
    if (bound != slot.bound || !slot.srb) {
        QVector<SRB> srbs{SRB::uniformBuffer(0, kCompute, slot.ubo.get())};
        int at = 1;
        for (const Binding &b : bindings) {
            switch (b.access) {
            case Access::Load: srbs.push_back(SRB::bufferLoad(at, kCompute, b.buf)); break;
            case Access::Store: srbs.push_back(SRB::bufferStore(at, kCompute, b.buf)); break;
            case Access::LoadStore: srbs.push_back(SRB::bufferLoadStore(at, kCompute, b.buf)); break;
            }
            ++at;
        }
        slot.srb.reset(m_rhi->newShaderResourceBindings());
        slot.srb->setBindings(srbs.cbegin(), srbs.cend());
        if (!slot.srb->create()) {
            slot.srb.reset();
            return false;
        }
        slot.bound = std::move(bound);
    }
    PassParams pp;
    std::memcpy(pp.u, u, sizeof pp.u);
    std::memcpy(pp.f, f, sizeof pp.f);
    batch->updateDynamicBuffer(slot.ubo.get(), 0, sizeof pp, &pp);
    m_dispatches.push_back({m_pipes[int(pipe)].get(), slot.srb.get(), x, y, z, int(pipe)});
    return true;
}

Status RhiForward::runFrame(QRhiCommandBuffer *cb, QRhiResourceUpdateBatch *batch, const std::vector<ReadItem> &items,
                            std::vector<QByteArray> &data)
{
    // ATTNVIZ_GPU_PROFILE=2: a frame per dispatch, each timed (slower; where a frame's time goes).
    static const bool profileEach = qEnvironmentVariableIntValue("ATTNVIZ_GPU_PROFILE") >= 2;
    // Vulkan: copies into persistent host-visible buffers at the end of the last pass; elsewhere QRhi's
    // readbacks.
    const bool native = m_vkReadback && m_vkReadback->prepare(items);
    std::deque<QRhiBufferReadbackResult> reads;
    QRhiResourceUpdateBatch *rb = nullptr;
    if (!native) {
        rb = m_rhi->nextResourceUpdateBatch();
        for (const ReadItem &it : items) {
            reads.emplace_back();
            rb->readBackBuffer(it.buf, int(it.offset), int(it.bytes), &reads.back());
        }
    }
    for (size_t k = 0; k < m_dispatches.size(); ++k) {
        const Dispatch &dsp = m_dispatches[k];
        const bool last = k + 1 == m_dispatches.size();
        cb->beginComputePass(k == 0 ? batch : nullptr,
                             last && native ? QRhiCommandBuffer::ExternalContent : QRhiCommandBuffer::BeginPassFlags());
        cb->setComputePipeline(dsp.pipe);
        cb->setShaderResources(dsp.srb);
        cb->dispatch(dsp.x, dsp.y, dsp.z);
        if (last && native)
            m_vkReadback->record(cb, items);
        cb->endComputePass(last ? rb : nullptr);
        if (profileEach && !last) { // a debugging aid: each dispatch in its own frame, timed
            const auto t0 = std::chrono::steady_clock::now();
            m_rhi->endOffscreenFrame();
            qInfo("dispatch %zu (%s, %d x %d x %d): %.2f ms", k, kShaderNames[dsp.pipeIndex], dsp.x, dsp.y, dsp.z,
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            m_rhi->beginOffscreenFrame(&cb);
        }
    }
    const QRhi::FrameOpResult fr = m_rhi->endOffscreenFrame();
    const bool lost = m_rhi->isDeviceLost() || injected("lost");
    if (fr != QRhi::FrameOpSuccess || lost)
        return Status::error(StatusCode::BackendFailed, m_name + (fr == QRhi::FrameOpDeviceLost || lost
                                                                      ? ": device lost"
                                                                      : ": the frame failed"));
    data.resize(items.size());
    for (size_t k = 0; k < items.size(); ++k) {
        // native: the mapped copy itself, valid until the next frame
        data[k] = native ? QByteArray::fromRawData(static_cast<const char *>(m_vkReadback->mapped(k)), int(items[k].bytes))
                         : reads[k].data;
        if (data[k].size() != items[k].bytes)
            return Status::error(StatusCode::BackendFailed, m_name + ": a readback came back incomplete");
    }
    return {};
}

int RhiForward::reusableRows(const Architecture &arch, const ForwardInput &in) const
{
    const int t = int(in.ids.size());
    if (!arch.causal || in.keepScores || in.paddedKeys != m_lastPadded || in.maskedCells != m_lastCells)
        return 0;
    int p = 0;
    const size_t n = std::min(m_lastIds.size(), in.ids.size());
    while (size_t(p) < n && m_lastIds[size_t(p)] == in.ids[size_t(p)])
        ++p;
    if (p == t) // the same text: its last row again (the predictions read it)
        p = t - 1;
    // angles that depend on the length (dynamic NTK, LongRoPE) change past the original positions
    const Rope &rope = arch.rope;
    if (arch.positions == PositionKind::Rotary && rope.dependsOnLength() &&
        std::max(m_lastIds.size(), in.ids.size()) > size_t(rope.originalMaxPositions))
        p = 0;
    return p;
}

void RhiForward::prepareHost(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in, int p,
                             Trace<float> &out, HostInputs &host) const
{
    const int t = int(in.ids.size()), d = arch.dModel;
    if (out.embeddings.rows() != t || out.embeddings.cols() != d)
        out.embeddings.resize(t, d);
    if (out.input.rows() != t || out.input.cols() != d)
        out.input.resize(t, d);
    for (int i = 0; i < t; ++i) {
        out.embeddings.row(i) = w.tokens.row(in.ids[size_t(i)]).transpose();
        out.input.row(i) = out.embeddings.row(i);
        if (arch.embeddingScale != 1.0)
            out.input.row(i) *= float(arch.embeddingScale);
        if (w.positions.rows())
            out.input.row(i) += w.positions.row(i);
        if (w.tokenTypes.rows())
            out.input.row(i) += w.tokenTypes.row(0);
    }
    if (arch.positions == PositionKind::Rotary) {
        rotaryRows(arch.rope, p, t, host.cosG, host.sinG);
        if (arch.localRope)
            rotaryRows(arch.ropeLocal, p, t, host.cosL, host.sinL);
    }
    host.mask = textMask(in, arch.causal, t, host.userMask);
    host.maskWords = (m_cap + 31) / 32;
    host.maskBits.clear();
    if (host.userMask || (!arch.causal && host.mask.size()))
        host.maskBits = maskBits(host.mask, host.maskWords);
}

std::vector<quint32> maskBits(const BoolMat &mask, int words)
{
    std::vector<quint32> bits(size_t(mask.rows()) * size_t(words), 0u);
    for (Eigen::Index i = 0; i < mask.rows(); ++i)
        for (Eigen::Index j = 0; j < mask.cols(); ++j)
            if (mask(i, j))
                bits[size_t(i) * size_t(words) + size_t(j / 32)] |= 1u << (j % 32);
    return bits;
}

// y rows [yFirst, yFirst + rows) = act(x rows [first, first + rows) W^T + b), a dispatch per chunk of W
void RhiForward::product(Frame &f, QRhiBuffer *x, int in, const Matrix &W, QRhiBuffer *bias, QRhiBuffer *y, quint32 act,
                         int first, int rows, int yFirst)
{
    static const float none[8] = {};
    for (const Matrix::Chunk &c : W.chunks) { // each chunk of W's rows: its columns of y
        const quint32 uu[16] = {quint32(rows), quint32(c.rows), quint32(in), W.format, quint32(first * in), quint32(in),
                                quint32(yFirst * W.rows + c.row0), quint32(W.rows), bias ? 1u : 0u, act, 0,
                                quint32(c.row0), rows <= kFewRows ? quint32(kRowLinearWidth) : 0u, 0, 0, 0};
        const std::initializer_list<Binding> bindings = {
            {Access::Load, x}, {Access::Load, c.b.get()}, {Access::Load, bias ? bias : m_dummyLoad.get()}, {Access::Store, y}};
        if (rows <= kFewRows)
            f.ok = f.ok && pass(Pipe::RowLinear, uu, none, bindings, std::min(groups(c.rows, 4), kRowLinearWidth),
                                groups(groups(c.rows, 4), kRowLinearWidth), 1, f.batch);
        else
            f.ok = f.ok && pass(Pipe::Linear, uu, none, bindings, groups(c.rows, 64), groups(rows, 64), 1, f.batch);
    }
}

void RhiForward::linear(Frame &f, QRhiBuffer *x, int in, const Matrix &W, const Buffer &b, QRhiBuffer *y, quint32 act)
{
    product(f, x, in, W, b.get(), y, act, f.p, f.n, f.p);
}

// y = N(x): `rows` rows of `width` from element offset `off` (the computed rows of a stream, or
// each head's slice of q or k)
void RhiForward::rownorm(Frame &f, QRhiBuffer *x, QRhiBuffer *y, const Norm &nm, NormKind kind, qint64 rows, int width,
                         qint64 off)
{
    const quint32 uu[16] = {quint32(rows), quint32(width), quint32(off), quint32(width), quint32(off), quint32(width),
                            normCode(kind), (nm.hasBeta ? 1u : 0u) | (nm.hasGamma ? 2u : 0u), 0, 0, 0, 0, 0, 0, 0, 0};
    const float ff[8] = {nm.eps, 0, 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::RowNorm, uu, ff, {{Access::Load, x}, {Access::Load, nm.hasGamma ? nm.gamma.get() : m_dummyLoad.get()},
                                                {Access::Load, nm.hasBeta ? nm.beta.get() : m_dummyLoad2.get()},
                                                {Access::Store, y}},
                        int(rows), 1, 1, f.batch);
}

// the computed rows of a (cap, width) stream: mode 0 y = a, 1 y = a + b, 2 y = act(a) * b
void RhiForward::elementwise(Frame &f, quint32 mode, QRhiBuffer *a, QRhiBuffer *b, QRhiBuffer *y, int width, quint32 act)
{
    static const float none[8] = {};
    const quint32 off = quint32(f.p * width);
    const quint32 uu[16] = {quint32(f.n), quint32(width), mode, act, off, quint32(width), off, quint32(width),
                            off, quint32(width), 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::Elementwise, uu, none,
                        {{Access::Load, a}, {Access::Load, b ? b : m_dummyLoad.get()}, {Access::Store, y}},
                        groups(width, 64), f.n, 1, f.batch);
}

void RhiForward::rotary(Frame &f, QRhiBuffer *q, int heads, int dHead, int half, bool local)
{
    static const float none[8] = {};
    const quint32 uu[16] = {quint32(f.n), quint32(heads), quint32(dHead), quint32(heads * dHead),
                            quint32(f.p * heads * dHead), quint32(half), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::Rotary, uu, none,
                        {{Access::LoadStore, q}, {Access::Load, local ? m_cosL.get() : m_cosG.get()},
                         {Access::Load, local ? m_sinL.get() : m_sinG.get()}},
                        groups(qint64(heads) * half, 64), f.n, 1, f.batch);
}

void RhiForward::topk(Frame &f, const Architecture &arch, int rows, int k)
{
    const quint32 uu[16] = {quint32(rows), quint32(m_model.unembedding.rows), quint32(k), 0, 0, 0, 0, 0,
                            0,             0,                                  0,          0, 0, 0, 0, 0};
    const float ff[8] = {float(arch.finalSoftcap), 0, 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::TopK, uu, ff,
                        {{Access::Load, m_logits.get()}, {Access::Load, m_nextIds.get()}, {Access::Store, m_topk.get()}},
                        rows, 1, 1, f.batch);
}

// One layer's attention from its q, k, v: the weights (scores, masks, softmax), their head mean and
// the context.
void RhiForward::attention(Frame &f, const Architecture &arch, const ForwardInput &in, const HostInputs &host, size_t l)
{
    static const float none[8] = {};
    LayerActs &L = m_layers[l];
    const int H = arch.heads, dh = arch.dHead, qw = H * dh, kw = arch.kvHeads * dh, group = H / arch.kvHeads;
    const int window = arch.windowOf(int(l));
    const quint32 uu[16] = {quint32(f.n), quint32(f.t), quint32(f.cap), quint32(f.p), quint32(dh), quint32(qw), quint32(kw),
                            quint32(group), arch.causal ? 1u : 0u, quint32(window > 0 && window < f.t ? window : 0),
                            host.maskBits.empty() ? 0u : 1u, quint32(host.maskWords), in.keepScores ? 1u : 0u, 0, 0, 0};
    const float ff[8] = {float(arch.scale()), float(arch.attentionSoftcap), 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::Attend, uu, ff,
                        {{Access::Load, L.q.get()}, {Access::Load, L.k.get()},
                         {Access::Load, host.maskBits.empty() ? m_dummyLoad.get() : m_mask.get()},
                         {Access::LoadStore, L.w.get()}, {Access::Store, in.keepScores ? L.s.get() : m_dummyStore.get()},
                         {Access::Store, m_dummyStore2.get()}},
                        f.n, H, 1, f.batch);
    const quint32 ua[16] = {quint32(f.n), quint32(H), quint32(f.cap), quint32(f.p), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::HeadAvg, ua, none, {{Access::Load, L.w.get()}, {Access::LoadStore, L.avg.get()}},
                        groups(f.cap, 64), f.n, 1, f.batch);
    const quint32 uc[16] = {quint32(f.n), quint32(f.t), quint32(f.cap), quint32(f.p), quint32(dh), quint32(H), quint32(kw),
                            quint32(qw), quint32(group), arch.causal ? 1u : 0u, 0, 0, 0, 0, 0, 0};
    f.ok = f.ok && pass(Pipe::Context, uc, none,
                        {{Access::Load, L.w.get()}, {Access::Load, L.v.get()}, {Access::Store, L.ctx.get()}},
                        groups(qw, 64), groups(f.n, 4), 1, f.batch);
}

// One block, as the CPU forward's: the norms where the placement puts them, q/k/v, q/k norms and
// rotary, attention, the output projection and residual, the MLP and its residual.
void RhiForward::block(Frame &f, const Architecture &arch, const ForwardInput &in, const HostInputs &host, size_t l,
                       QRhiBuffer *x)
{
    const LayerWeightsGpu &g = m_model.layers[l];
    LayerActs &L = m_layers[l];
    const int d = arch.dModel, H = arch.heads, KV = arch.kvHeads, dh = arch.dHead, qw = H * dh, kw = KV * dh;
    const qint64 rows = qint64(f.p) * d; // element offset of the computed rows of a (cap, d) stream
    const bool shaped = arch.qkNorm || arch.positions == PositionKind::Rotary;
    const bool pre = arch.placement != NormPlacement::Post, sandwich = arch.placement == NormPlacement::Sandwich;
    QRhiBuffer *a = x;
    if (pre) {
        rownorm(f, x, L.attnIn.get(), g.attnNorm, arch.norm, f.n, d, rows);
        a = L.attnIn.get();
    }
    linear(f, a, d, g.q, g.bq, shaped ? L.qPre.get() : L.q.get());
    linear(f, a, d, g.k, g.bk, shaped ? L.kPre.get() : L.k.get());
    linear(f, a, d, g.v, g.bv, L.v.get());
    if (arch.qkNorm) {
        rownorm(f, L.qPre.get(), L.q.get(), g.qNorm, arch.norm, qint64(f.n) * H, dh, qint64(f.p) * qw);
        rownorm(f, L.kPre.get(), L.k.get(), g.kNorm, arch.norm, qint64(f.n) * KV, dh, qint64(f.p) * kw);
    } else if (shaped) {
        elementwise(f, 0, L.qPre.get(), nullptr, L.q.get(), qw);
        elementwise(f, 0, L.kPre.get(), nullptr, L.k.get(), kw);
    }
    if (arch.positions == PositionKind::Rotary) {
        const bool local = arch.localRope && arch.windowOf(int(l)) > 0;
        const int half = arch.ropeOf(int(l)).dims / 2;
        rotary(f, L.q.get(), H, dh, half, local);
        rotary(f, L.k.get(), KV, dh, half, local);
    }
    attention(f, arch, in, host, l);
    linear(f, L.ctx.get(), qw, g.o, g.bo, L.attnOut.get());
    // after = x + attention (sandwich: its output normalized; post-norm: the sum normalized)
    QRhiBuffer *afterSum = pre ? L.after.get() : m_tmp2.get();
    if (sandwich) {
        rownorm(f, L.attnOut.get(), m_tmp.get(), g.postAttnNorm, arch.norm, f.n, d, rows);
        elementwise(f, 1, x, m_tmp.get(), afterSum, d);
    } else {
        elementwise(f, 1, x, L.attnOut.get(), afterSum, d);
    }
    if (!pre)
        rownorm(f, m_tmp2.get(), L.after.get(), g.attnNorm, arch.norm, f.n, d, rows);
    QRhiBuffer *ffIn = L.after.get();
    if (pre) {
        rownorm(f, L.after.get(), m_ffIn.get(), g.ffnNorm, arch.norm, f.n, d, rows);
        ffIn = m_ffIn.get();
    }
    const quint32 act = activationCode(arch.activation);
    if (g.gate.rows) { // gated: act(x W_gate^T) * x W_up^T, the two products kept where asked
        QRhiBuffer *gOut = m_actsMlp ? L.mlpPre.get() : m_gateOut.get();
        QRhiBuffer *uOut = m_actsMlp ? L.mlpPreLinear.get() : m_upOut.get();
        linear(f, ffIn, d, g.gate, g.bgate, gOut);
        linear(f, ffIn, d, g.up, g.bup, uOut);
        elementwise(f, 2, gOut, uOut, m_hidden.get(), arch.dFeedForward, act);
    } else {
        linear(f, ffIn, d, g.up, g.bup, m_hidden.get(), act);
    }
    linear(f, m_hidden.get(), arch.dFeedForward, g.down, g.bdown, m_mlpOut.get());
    QRhiBuffer *mlp = m_mlpOut.get();
    if (sandwich) {
        rownorm(f, m_mlpOut.get(), m_tmp.get(), g.postFfnNorm, arch.norm, f.n, d, rows);
        mlp = m_tmp.get();
    }
    if (pre) {
        elementwise(f, 1, mlp, L.after.get(), L.out.get(), d);
    } else {
        elementwise(f, 1, mlp, L.after.get(), m_tmp2.get(), d);
        rownorm(f, m_tmp2.get(), L.out.get(), g.ffnNorm, arch.norm, f.n, d, rows);
    }
}

Status RhiForward::forward(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights,
                           const ForwardInput &in, Trace<float> &out)
{
    // ATTNVIZ_GPU_PROFILE=1: where a forward's time goes (before the frame ends, the frame, the copies)
    static const bool profile = qEnvironmentVariableIsSet("ATTNVIZ_GPU_PROFILE");
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    const auto tStart = clock::now();
    const ModelWeights<float> &w = *weights;
    const int t = int(in.ids.size()), d = arch.dModel;
    if (t == 0)
        return Status::error(StatusCode::InvalidInput, "text: no tokens");
    if (t > arch.maxPositions)
        return Status::error(StatusCode::InvalidInput, "text: " + std::to_string(t) + " tokens, the model reads at most " +
                                                           std::to_string(arch.maxPositions));
    for (int id : in.ids)
        if (id < 0 || id >= w.tokens.rows())
            return Status::error(StatusCode::InvalidInput, "ids: " + std::to_string(id) + " is not in the vocabulary");
    if (Status st = supports(arch, w, in); !st)
        return st;
    if (Status st = upload(arch, weights); !st)
        return st;
    // activations for `cap` rows: the ones there while the text fits, else room for it and at least
    // one more row (a text typed on grows a token at a time), in steps of 64
    const int cap = m_cap >= t ? m_cap : std::min(arch.maxPositions, (t / 64 + 1) * 64);
    if (Status st = ensureActivations(arch, w, in, cap); !st)
        return st;
    Frame f;
    f.p = reusableRows(arch, in);
    f.t = t;
    f.n = t - f.p;
    f.cap = m_cap;
    m_lastIds.clear(); // until this forward completes
    if (cancelled(in.cancel))
        return Status::error(StatusCode::Cancelled, "trace cancelled");
    HostInputs host;
    prepareHost(arch, w, in, f.p, out, host);

    QRhiCommandBuffer *cb = nullptr;
    QRhi::FrameOpResult fr = m_rhi->beginOffscreenFrame(&cb);
    if (fr != QRhi::FrameOpSuccess)
        return Status::error(StatusCode::BackendFailed,
                             m_name + (fr == QRhi::FrameOpDeviceLost ? ": device lost" : ": cannot begin a frame"));
    f.batch = m_rhi->nextResourceUpdateBatch();
    const qint64 F = 4;
    f.batch->uploadStaticBuffer(m_inputRaw.get(), int(F * f.p * d), int(F * f.n * d), out.input.data() + qint64(f.p) * d);
    auto upload = [&](const Buffer &b, const auto &v) {
        if (!v.empty())
            f.batch->uploadStaticBuffer(b.get(), 0, int(F * qint64(v.size())), v.data());
    };
    upload(m_cosG, host.cosG);
    upload(m_sinG, host.sinG);
    upload(m_cosL, host.cosL);
    upload(m_sinL, host.sinL);
    upload(m_mask, host.maskBits);

    m_dispatches.clear();
    m_slotSet = &m_slots;
    m_slotsUsed = 0;
    QRhiBuffer *x = m_inputRaw.get();
    if (arch.embeddingNorm) {
        rownorm(f, m_inputRaw.get(), m_input.get(), m_model.embeddingNorm, arch.norm, f.n, d, qint64(f.p) * d);
        x = m_input.get();
    }
    for (size_t l = 0; l < m_layers.size() && f.ok; ++l) {
        block(f, arch, in, host, l, x);
        x = m_layers[l].out.get();
    }
    if (arch.finalNorm)
        rownorm(f, x, m_final.get(), m_model.finalNorm, arch.norm, f.n, d, qint64(f.p) * d);
    else
        elementwise(f, 0, x, nullptr, m_final.get(), d);
    // logits: the last row, or every row (allPredictions)
    const int firstPredicted = arch.head == LmHead::CausalLm ? (in.allPredictions ? 0 : t - 1) : t;
    const bool topkOnGpu = in.topK <= kTopKMax;
    if (firstPredicted < t) {
        product(f, m_final.get(), d, m_model.unembedding, m_model.outputBias.get(), m_logits.get(), 0, firstPredicted,
                t - firstPredicted, 0);
        if (topkOnGpu) {
            std::vector<quint32> next(size_t(t - firstPredicted), 0xffffffffu);
            for (int i = firstPredicted; i + 1 < t; ++i)
                next[size_t(i - firstPredicted)] = quint32(in.ids[size_t(i + 1)]);
            f.batch->uploadStaticBuffer(m_nextIds.get(), 0, int(F * qint64(next.size())), next.data());
            topk(f, arch, t - firstPredicted, in.topK);
        }
    }
    if (!f.ok) {
        f.batch->release();
        m_rhi->endOffscreenFrame();
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a uniform buffer or shader bindings");
    }

    Reads reads;
    planReads(arch, in, f, firstPredicted, reads);
    std::vector<ReadItem> items;
    for (const Read &r : reads.all)
        items.push_back({r.buf, r.offset, r.bytes, nullptr});
    std::vector<QByteArray> data;
    const auto tFrame = clock::now();
    const Status run = runFrame(cb, f.batch, items, data);
    const auto tEnd = clock::now();
    m_lastGpuMs = ms(tStart, tEnd);
    if (!run)
        return run;
    for (size_t k = 0; k < reads.all.size(); ++k)
        reads.all[k].result.data = data[k];
    m_lastIds = in.ids;
    m_lastPadded = in.paddedKeys;
    m_lastCells = in.maskedCells;
    m_lastRows = f.n;
    fillTrace(arch, w, in, host, reads, firstPredicted, out);
    if (profile)
        qInfo("gpu forward: %d rows of %d, %zu dispatches, %zu readbacks: %.1f ms before the frame's end, the frame "
              "%.1f ms, the trace %.1f ms",
              f.n, t, m_dispatches.size(), reads.all.size(), ms(tStart, tFrame), ms(tFrame, tEnd), ms(tEnd, clock::now()));
    return {};
}

// What comes back, as ForwardInput::observe asks: rows [0, t) of the observed layers' stages.
void RhiForward::planReads(const Architecture &arch, const ForwardInput &in, const Frame &f, int firstPredicted,
                           Reads &reads)
{
    const qint64 t = f.t, C = f.cap, d = arch.dModel, H = arch.heads, qw = H * arch.dHead,
                 kw = qint64(arch.kvHeads) * arch.dHead, ff = arch.dFeedForward;
    auto read = [&](const Buffer &b, qint64 offsetFloats, qint64 floats) -> QRhiBufferReadbackResult * {
        reads.all.push_back({b.get(), offsetFloats * 4, floats * 4, {}});
        return &reads.all.back().result;
    };
    const Observe &obs = in.observe;
    const bool shaped = arch.qkNorm || arch.positions == PositionKind::Rotary;
    reads.layers.assign(m_layers.size(), LayerReads());
    for (size_t l = 0; l < m_layers.size(); ++l) {
        LayerActs &L = m_layers[l];
        LayerReads &R = reads.layers[l];
        const bool seen = obs.layer(int(l));
        if (obs.stages) // every layer's residual stream: the lens and the embeddings views read them all
            R.out = read(L.out, 0, t * d);
        if (!seen)
            continue;
        R.avg = read(L.avg, 0, t * C);
        R.w.assign(size_t(H), nullptr);
        R.s.assign(size_t(H), nullptr);
        for (int h = 0; h < H; ++h)
            if (obs.head(h)) {
                R.w[size_t(h)] = read(L.w, h * C * C, t * C);
                if (in.keepScores)
                    R.s[size_t(h)] = read(L.s, h * C * C, t * C);
            }
        if (!obs.stages)
            continue;
        if (arch.placement != NormPlacement::Post)
            R.attnIn = read(L.attnIn, 0, t * d);
        R.q = read(L.q, 0, t * qw);
        R.k = read(L.k, 0, t * kw);
        R.v = read(L.v, 0, t * kw);
        if (shaped) {
            R.qPre = read(L.qPre, 0, t * qw);
            R.kPre = read(L.kPre, 0, t * kw);
        }
        R.ctx = read(L.ctx, 0, t * qw);
        R.attnOut = read(L.attnOut, 0, t * d);
        R.after = read(L.after, 0, t * d);
        if (m_actsMlp) {
            R.mlpPre = read(L.mlpPre, 0, t * ff);
            R.mlpPreLinear = read(L.mlpPreLinear, 0, t * ff);
        }
    }
    reads.final = read(m_final, 0, t * d);
    reads.input = arch.embeddingNorm ? read(m_input, 0, t * d) : nullptr;
    if (firstPredicted < t && in.topK <= kTopKMax)
        reads.topk = read(m_topk, 0, (t - firstPredicted) * kTopKStride);
    else if (firstPredicted < t)
        reads.logits = read(m_logits, 0, (t - firstPredicted) * m_model.unembedding.rows);
}

// The trace from what came back; what was not read back is left empty.
void RhiForward::fillTrace(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in,
                           const HostInputs &host, const Reads &reads, int firstPredicted, Trace<float> &out) const
{
    const int t = int(in.ids.size()), C = m_cap, d = arch.dModel, H = arch.heads, dh = arch.dHead, qw = H * dh,
              kw = arch.kvHeads * dh, ff = arch.dFeedForward, group = H / arch.kvHeads;
    const bool causal = arch.causal, pre = arch.placement != NormPlacement::Post;
    auto fill = [&](Mat<float> &m, const QRhiBufferReadbackResult *r, int cols) {
        if (!r) {
            m.resize(0, 0);
            return;
        }
        m.resize(t, cols);
        std::memcpy(m.data(), r->data.constData(), size_t(t) * size_t(cols) * 4);
    };
    auto fillStrided = [&](Mat<float> &m, const QRhiBufferReadbackResult *r) { // (t, C) rows -> (t, t)
        if (!r) {
            m.resize(0, 0);
            return;
        }
        m.resize(t, t);
        const float *src = reinterpret_cast<const float *>(r->data.constData());
        for (int i = 0; i < t; ++i)
            std::memcpy(m.data() + qint64(i) * t, src + qint64(i) * C, size_t(t) * 4);
    };
    // weights: stored as the CPU forward stores them (a causal model's lower: keys up to the query)
    auto fillWeights = [&](WeightMatrix<float> &m, const QRhiBufferReadbackResult *r) {
        if (!r) {
            m.clear();
            return;
        }
        m.resize(t, t, causal);
        const float *src = reinterpret_cast<const float *>(r->data.constData());
        for (int i = 0; i < t; ++i)
            std::memcpy(m.rowData(i), src + qint64(i) * C, size_t(m.stored(i)) * 4);
    };
    // k, v and kPre: the compact key/value heads repeated for each query head they serve
    auto fillShared = [&](Mat<float> &m, const QRhiBufferReadbackResult *r) {
        if (!r) {
            m.resize(0, 0);
            return;
        }
        m.resize(t, qw);
        const float *src = reinterpret_cast<const float *>(r->data.constData());
        for (int i = 0; i < t; ++i)
            for (int h = 0; h < H; ++h)
                std::memcpy(m.data() + qint64(i) * qw + qint64(h) * dh, src + qint64(i) * kw + qint64(h / group) * dh,
                            size_t(dh) * 4);
    };
    if (reads.input)
        fill(out.input, reads.input, d);
    out.layers.resize(m_layers.size());
    for (size_t l = 0; l < m_layers.size(); ++l) {
        LayerTrace<float> &lt = out.layers[l];
        const LayerReads &R = reads.layers[l];
        AttentionResult<float> &A = lt.attention;
        A.numHeads = H;
        A.kvHeads = arch.kvHeads;
        A.dHead = dh;
        A.dModel = d;
        A.dOut = d;
        A.scale = double(float(arch.scale())); // as the CPU forward records them: the float32 it used
        A.softcap = double(float(arch.attentionSoftcap));
        A.batch.resize(1);
        SequenceResult<float> &s = A.batch[0];
        fill(lt.output, R.out, d);
        if (R.q) {
            lt.residualIn = l ? out.layers[l - 1].output : out.input;
            if (pre)
                fill(lt.attentionIn, R.attnIn, d);
            else
                lt.attentionIn = lt.residualIn;
        } else {
            lt.residualIn.resize(0, 0);
            lt.attentionIn.resize(0, 0);
        }
        fill(lt.afterAttention, R.after, d);
        fill(lt.mlpPre, R.mlpPre, ff);
        fill(lt.mlpPreLinear, R.mlpPreLinear, ff);
        lt.keyIn.resize(0, 0);
        lt.projections = w.layers[l].projections();
        fill(s.q, R.q, qw);
        fillShared(s.k, R.k);
        fillShared(s.v, R.v);
        fill(s.qPre, R.qPre, qw);
        fillShared(s.kPre, R.kPre);
        fill(s.context, R.ctx, qw);
        fill(s.output, R.attnOut, d);
        fillWeights(s.weightsAvg, R.avg);
        s.weights.resize(R.w.empty() ? 0 : size_t(H));
        for (size_t h = 0; h < R.w.size(); ++h)
            fillWeights(s.weights[h], R.w[h]);
        s.scores.resize(in.keepScores && !R.s.empty() ? size_t(H) : 0);
        for (size_t h = 0; h < s.scores.size(); ++h)
            fillStrided(s.scores[h], R.s[h]);
        s.weightsPreDropout.clear();
        s.degenerateRows.clear();
        // the layer's mask as the CPU forward records it: the user's cells and a sliding window, or
        // the causal mask for the views to hatch
        const BoolMat layerMask = attnviz::layerMask(arch, host.mask, host.userMask, int(l), t);
        s.fullyMaskedRows.clear();
        if (layerMask.size())
            for (int i = 0; i < t; ++i)
                if ((layerMask.row(i).head(causal ? i + 1 : t).array() != 0).all())
                    s.fullyMaskedRows.push_back(i);
        s.mask = layerMask.size() || !causal ? layerMask : host.mask;
    }
    fill(out.final, reads.final, d);

    Predictions &pr = out.predictions;
    pr.masked.clear();
    pr.topK = std::min(in.topK, int(w.outputEmbedding().rows()));
    if (arch.head == LmHead::CausalLm) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const int V = m_model.unembedding.rows;
        pr.next.assign(size_t(t), {});
        pr.actualNext.assign(size_t(t), nan);
        pr.logNormalizer.assign(size_t(t), nan);
        for (int i = firstPredicted; i < t; ++i) {
            NextTokens nt;
            if (reads.topk) { // topk.comp's row: K logits (bits), K ids, max, sum, actual next's logit, count
                const quint32 *row = reinterpret_cast<const quint32 *>(reads.topk->data.constData()) +
                                     qint64(i - firstPredicted) * kTopKStride;
                auto value = [&](int k) {
                    float v;
                    std::memcpy(&v, row + k, 4);
                    return double(v);
                };
                const double mx = value(2 * kTopKMax), sum = value(2 * kTopKMax + 1);
                const int n = std::min<int>(int(row[2 * kTopKMax + 3]), kTopKMax);
                for (int e = 0; e < n; ++e)
                    nt.top.push_back({int(row[kTopKMax + e]), std::string(), std::exp(value(e) - mx) / sum, std::string()});
                nt.logNormalizer = mx + std::log(sum);
                if (i + 1 < t)
                    nt.actualNext = std::exp(value(2 * kTopKMax + 2) - mx) / sum;
            } else {
                const float *logits = reinterpret_cast<const float *>(reads.logits->data.constData());
                nextFromLogits(arch, logits + qint64(i - firstPredicted) * V, V, in.ids, i, in.topK, nt);
            }
            pr.set(size_t(i), std::move(nt));
        }
    } else {
        pr.next.clear();
        pr.actualNext.clear();
        pr.logNormalizer.clear();
        maskedPredictions(arch, w, in, out.final, pr);
    }
}

} // namespace attnviz
