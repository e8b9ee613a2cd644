// SPDX-License-Identifier: GPL-3.0-or-later
// Attention on QRhi compute. Shapes (one sequence; H heads of d_head, dIn = H * d_head):
//   x_q (t_q, d_model), x_k (t_k, kdim), x_v (t_k, vdim)
//   q = x_q W_q^T + b_q (t_q, dIn)   k, v (t_k, dIn)                    gemm.comp, or host (identity)
//   W[h] = q_h k_h^T (t_q, t_k) raw dots, heads in chunks              gemm.comp (z = head)
//   S[h] = scale * W[h]; W[h] = normalize(S[h], mask)                  normalize.comp
//   context[:, h] = W[h] v_h (t_q, dIn)                                gemm.comp (z = head)
//   output = context W_o^T + b_o (t_q, dOut)                           gemm.comp, or host (identity)
//   weights_avg = mean_h W[h] (t_q, t_k)                               headmean.comp
// One offscreen frame per sequence: uploads, every dispatch in one compute pass (QRhi inserts the
// barriers between a dispatch that writes a buffer and one that reads it), readbacks at its end.
// Buffers and bindings are created once and reused while the sizes fit.
#include "rhiattention.h"
#include "vulkanreadback.h"

#include "attnviz/attention.h"

#include <QFile>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QtGui/private/qrhigles2_p.h>
#if QT_CONFIG(vulkan)
#include <QVulkanFunctions>
#include <QVulkanInstance>
#include <QtGui/private/qrhivulkan_p.h>
#endif
#ifdef Q_OS_WIN
#include <QtGui/private/qrhid3d11_p.h>
#endif
#if defined(Q_OS_MACOS) || defined(Q_OS_IOS)
#include <QtGui/private/qrhimetal_p.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>

#ifndef GL_MAX_SHADER_STORAGE_BLOCK_SIZE
#define GL_MAX_SHADER_STORAGE_BLOCK_SIZE 0x90DE
#endif

namespace attnviz {

namespace {

// std140 uniform block `Params` of gemm.comp: 16 four-byte scalars, no padding.
struct GemmParams {
    quint32 M, N, K;
    quint32 lda, ldb, ldc;
    quint32 aOff, bOff, cOff;
    quint32 aStrideZ, bStrideZ, cStrideZ;
    quint32 transB;
    quint32 hasBias;
    float alpha;
    quint32 pad0;
};
static_assert(sizeof(GemmParams) == 64, "GemmParams must match gemm.comp's std140 block");

// std140 uniform block `Params` of normalize.comp: 16 four-byte scalars.
struct NormalizeParams {
    quint32 tq, tk, maskWords, hasMask;
    quint32 mode, policy, keepScores, dHead;
    quint32 ldqk, headBase, pad1, pad2;
    float scale, pad3, pad4, pad5;
};
static_assert(sizeof(NormalizeParams) == 64, "NormalizeParams must match normalize.comp's std140 block");

// std140 uniform block `Params` of headmean.comp: 8 four-byte scalars.
struct HeadMeanParams {
    quint32 n, numHeads, threads, mode;
    float divisor;
    quint32 pad0, pad1, pad2;
};
static_assert(sizeof(HeadMeanParams) == 32, "HeadMeanParams must match headmean.comp's std140 block");

// Result storage is read back into Eigen's row-major float matrices byte for byte.
static_assert(sizeof(float) == 4 && Mat<float>::IsRowMajor, "buffers are row-major float32");

constexpr int kGemmTile = 64;
constexpr int kHeadMeanThreads = 256 * 4096; // grid-stride cap of headmean.comp

QShader loadShader(const char *name)
{
    QFile f(QStringLiteral(":/attnviz/shaders/%1.qsb").arg(QLatin1String(name)));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QShader::fromSerialized(f.readAll());
}

quint32 ceilDiv(qint64 a, qint64 b) { return quint32((a + b - 1) / b); }

constexpr qint64 kCopyPiece = qint64(16) << 20;

} // namespace


namespace {

using SRB = QRhiShaderResourceBinding;
constexpr auto kCompute = QRhiShaderResourceBinding::ComputeStage;

} // namespace

RhiAttention::RhiAttention() = default;

RhiAttention::~RhiAttention()
{
    // Resources before the QRhi (declaration order does it; spelled out for the reader).
    m_vkReadback.reset();
    m_chunks.clear();
    m_projQ = {};
    m_projK = {};
    m_projV = {};
    m_projO = {};
    m_gemm.reset();
    m_normalize.reset();
    m_headMean.reset();
    m_gemmLayout.reset();
    m_normalizeLayout.reset();
    m_headMeanLayout.reset();
    m_layoutUbo.reset();
    for (Buf *b : {&m_xq, &m_xk, &m_xv, &m_wq, &m_wk, &m_wv, &m_wo, &m_bq, &m_bk, &m_bv, &m_bo, &m_q, &m_k, &m_v,
                   &m_mask, &m_flags, &m_ctx, &m_out, &m_avg, &m_dummy, &m_dummyStore})
        b->buf.reset();
    m_rhi.reset();
}

Status RhiAttention::create(GpuApi api, QOffscreenSurface *surface, QVulkanInstance *instance)
{
    Q_UNUSED(surface);
    Q_UNUSED(instance);
    switch (api) {
    case GpuApi::Vulkan: {
#if QT_CONFIG(vulkan)
        if (!instance)
            return Status::error(StatusCode::Unavailable, "vulkan: no Vulkan instance");
        QRhiVulkanInitParams params;
        params.inst = instance;
        m_rhi.reset(QRhi::create(QRhi::Vulkan, &params));
        m_name = "vulkan";
#else
        return Status::error(StatusCode::Unavailable, "vulkan: this Qt has no Vulkan support");
#endif
        break;
    }
    case GpuApi::OpenGL: {
        if (!surface)
            return Status::error(StatusCode::Unavailable, "opengl: no fallback surface");
        QRhiGles2InitParams params;
        params.format = surface->requestedFormat();
        params.fallbackSurface = surface;
        m_rhi.reset(QRhi::create(QRhi::OpenGLES2, &params));
        m_name = "opengl";
        break;
    }
    case GpuApi::D3D11: {
#ifdef Q_OS_WIN
        QRhiD3D11InitParams params;
        m_rhi.reset(QRhi::create(QRhi::D3D11, &params));
        m_name = "d3d11";
#else
        return Status::error(StatusCode::Unavailable, "d3d11: only on Windows");
#endif
        break;
    }
    case GpuApi::Metal: {
#if defined(Q_OS_MACOS) || defined(Q_OS_IOS)
        QRhiMetalInitParams params;
        m_rhi.reset(QRhi::create(QRhi::Metal, &params));
        m_name = "metal";
#else
        return Status::error(StatusCode::Unavailable, "metal: only on Apple platforms");
#endif
        break;
    }
    case GpuApi::Auto:
        return Status::error(StatusCode::Unavailable, "internal: create() needs a concrete API");
    }
    if (!m_rhi)
        return Status::error(StatusCode::Unavailable, m_name + ": no device could be initialized");
    if (!m_rhi->isFeatureSupported(QRhi::Compute))
        return Status::error(StatusCode::Unavailable, m_name + ": the device has no compute shaders");
    if (!m_rhi->isFeatureSupported(QRhi::ReadBackNonUniformBuffer))
        return Status::error(StatusCode::Unavailable, m_name + ": storage buffers cannot be read back");
    const QRhiDriverInfo info = m_rhi->driverInfo();
    m_device = info.deviceName.toStdString();
    const QByteArray lower = info.deviceName.toLower();
    m_software = info.deviceType == QRhiDriverInfo::CpuDevice || lower.contains("llvmpipe") ||
                 lower.contains("softpipe") || lower.contains("lavapipe") || lower.contains("swiftshader") ||
                 lower.contains("microsoft basic render");

    // The largest storage buffer one binding may cover: QRhi 6.4 sizes are int; the device may say less.
    m_maxStorageBytes = std::numeric_limits<int>::max() - 255;
#if QT_CONFIG(vulkan)
    if (api == GpuApi::Vulkan) {
        const auto *nh = static_cast<const QRhiVulkanNativeHandles *>(m_rhi->nativeHandles());
        if (nh && nh->physDev) {
            VkPhysicalDeviceProperties props;
            instance->functions()->vkGetPhysicalDeviceProperties(nh->physDev, &props);
            m_maxStorageBytes = std::min<qint64>(m_maxStorageBytes, props.limits.maxStorageBufferRange);
            if (nh->dev && !qEnvironmentVariableIsSet("ATTNVIZ_GPU_QRHI_READBACK"))
                m_vkReadback = std::make_unique<VulkanReadback>(instance, nh->physDev, nh->dev);
        }
    }
#endif
    if (api == GpuApi::OpenGL && m_rhi->makeThreadLocalNativeContextCurrent()) {
        if (QOpenGLContext *ctx = QOpenGLContext::currentContext()) {
            GLint v = 0;
            ctx->functions()->glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &v);
            if (v > 0)
                m_maxStorageBytes = std::min<qint64>(m_maxStorageBytes, v);
        }
    }

    const QShader gemm = loadShader("gemm.comp"), norm = loadShader("normalize.comp"),
                  mean = loadShader("headmean.comp");
    if (!gemm.isValid() || !norm.isValid() || !mean.isValid())
        return Status::error(StatusCode::Unavailable, m_name + ": compute shaders missing from the resources");

    bool unused = false;
    if (!ensure(m_dummy, 16, unused) || !ensure(m_dummyStore, 16, unused))
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a buffer");
    QRhiBuffer *d = m_dummy.buf.get();
    std::unique_ptr<QRhiBuffer> layoutUbo(m_rhi->newBuffer(QRhiBuffer::Dynamic, QRhiBuffer::UniformBuffer, 64));
    if (!layoutUbo->create())
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a uniform buffer");
    auto pipeline = [&](const QShader &shader, std::unique_ptr<QRhiShaderResourceBindings> &layout,
                        const QVector<SRB> &bindings) -> std::unique_ptr<QRhiComputePipeline> {
        layout.reset(m_rhi->newShaderResourceBindings());
        layout->setBindings(bindings.cbegin(), bindings.cend());
        if (!layout->create())
            return {};
        std::unique_ptr<QRhiComputePipeline> p(m_rhi->newComputePipeline());
        p->setShaderStage({QRhiShaderStage::Compute, shader});
        p->setShaderResourceBindings(layout.get());
        if (!p->create())
            return {};
        return p;
    };
    QRhiBuffer *u = layoutUbo.get();
    m_gemm = pipeline(gemm, m_gemmLayout,
                      {SRB::uniformBuffer(0, kCompute, u), SRB::bufferLoad(1, kCompute, d), SRB::bufferLoad(2, kCompute, d),
                       SRB::bufferLoad(3, kCompute, d), SRB::bufferStore(4, kCompute, d)});
    m_normalize = pipeline(norm, m_normalizeLayout,
                           {SRB::uniformBuffer(0, kCompute, u), SRB::bufferLoadStore(1, kCompute, d),
                            SRB::bufferStore(2, kCompute, d), SRB::bufferLoad(3, kCompute, d),
                            SRB::bufferLoad(4, kCompute, d), SRB::bufferLoad(5, kCompute, d),
                            SRB::bufferStore(6, kCompute, d)});
    m_headMean = pipeline(mean, m_headMeanLayout,
                          {SRB::uniformBuffer(0, kCompute, u), SRB::bufferLoad(1, kCompute, d),
                           SRB::bufferLoadStore(2, kCompute, d)});
    if (!m_gemm || !m_normalize || !m_headMean)
        return Status::error(StatusCode::Unavailable, m_name + ": a compute pipeline failed to build (shader error?)");
    for (Slot *s : {&m_projQ, &m_projK, &m_projV, &m_projO})
        if (!makeSlot(*s, sizeof(GemmParams)))
            return Status::error(StatusCode::BackendFailed, m_name + ": cannot create a uniform buffer");
    // Keep layoutUbo alive as long as the layout bindings that name it.
    m_layoutUbo = std::move(layoutUbo);
    return {};
}

bool RhiAttention::ensure(Buf &b, qint64 bytes, bool &changed)
{
    bytes = std::max<qint64>(16, (bytes + 15) / 16 * 16);
    if (b.buf && b.size >= bytes)
        return true;
    if (bytes > std::numeric_limits<int>::max())
        return false;
    b.buf.reset(m_rhi->newBuffer(QRhiBuffer::Static, QRhiBuffer::StorageBuffer, int(bytes)));
    b.size = 0;
    b.uploaded.clear();
    changed = true;
    if (!b.buf->create()) {
        b.buf.reset();
        return false;
    }
    b.size = bytes;
    return true;
}

// Weights stay the same from one call to the next (one model, new text): compare with what was
// uploaded last (a memcmp of d^2 floats) instead of sending them again.
void RhiAttention::uploadIfChanged(QRhiResourceUpdateBatch *u, Buf &b, const void *data, qint64 bytes)
{
    if (qint64(b.uploaded.size()) == bytes && std::memcmp(b.uploaded.data(), data, size_t(bytes)) == 0)
        return;
    u->uploadStaticBuffer(b.buf.get(), 0, int(bytes), data);
    b.uploaded.assign(static_cast<const char *>(data), static_cast<const char *>(data) + bytes);
}

bool RhiAttention::makeSlot(Slot &slot, int uboBytes)
{
    slot.ubo.reset(m_rhi->newBuffer(QRhiBuffer::Dynamic, QRhiBuffer::UniformBuffer, uboBytes));
    return slot.ubo->create();
}

bool RhiAttention::buildSrb(Slot &slot, const QVector<QRhiShaderResourceBinding> &bindings)
{
    slot.srb.reset(m_rhi->newShaderResourceBindings());
    slot.srb->setBindings(bindings.cbegin(), bindings.cend());
    return slot.srb->create();
}

Status RhiAttention::ensureResources(int H, int tq, int tk, int dModel, int kdim, int vdim, int dIn, int dOut,
                                     bool keepScores, bool projQ, bool projK, bool projV, bool projO)
{
    const qint64 head = qint64(tq) * tk * 4;
    const qint64 maxBytes = m_capBytes > 0 ? std::min(m_capBytes, m_maxStorageBytes) : m_maxStorageBytes;
    if (head > maxBytes)
        return Status::error(StatusCode::Unavailable,
                             m_name + ": t_q x t_k = " + std::to_string(tq) + " x " + std::to_string(tk) +
                                 " does not fit one storage buffer on this device (" +
                                 std::to_string(maxBytes >> 20) + " MiB)");
    const int perChunk = int(std::min<qint64>(H, maxBytes / head));
    const int nChunks = (H + perChunk - 1) / perChunk;
    const std::vector<qint64> key = {H, tq, tk, dModel, kdim, vdim, dIn, dOut, keepScores, projQ, projK, projV, projO, perChunk};

    bool changed = key != m_layoutKey;
    bool ok = true;
    const qint64 f = 4;
    ok &= ensure(m_xq, projQ ? f * tq * dModel : 16, changed);
    ok &= ensure(m_xk, projK ? f * tk * kdim : 16, changed);
    ok &= ensure(m_xv, projV ? f * tk * vdim : 16, changed);
    ok &= ensure(m_wq, projQ ? f * dIn * dModel : 16, changed);
    ok &= ensure(m_wk, projK ? f * dIn * kdim : 16, changed);
    ok &= ensure(m_wv, projV ? f * dIn * vdim : 16, changed);
    ok &= ensure(m_wo, projO ? f * dOut * dIn : 16, changed);
    ok &= ensure(m_bq, f * dIn, changed);
    ok &= ensure(m_bk, f * dIn, changed);
    ok &= ensure(m_bv, f * dIn, changed);
    ok &= ensure(m_bo, f * dOut, changed);
    ok &= ensure(m_q, f * tq * dIn, changed);
    ok &= ensure(m_k, f * tk * dIn, changed);
    ok &= ensure(m_v, f * tk * dIn, changed);
    ok &= ensure(m_mask, f * tq * ((tk + 31) / 32), changed);
    ok &= ensure(m_flags, f * H * tq, changed);
    ok &= ensure(m_ctx, f * tq * dIn, changed);
    ok &= ensure(m_out, f * tq * dOut, changed);
    ok &= ensure(m_avg, head, changed);
    if (int(m_chunks.size()) != nChunks) {
        m_chunks.resize(size_t(nChunks));
        changed = true;
    }
    for (int c = 0; c < nChunks && ok; ++c) {
        HeadChunk &ch = m_chunks[size_t(c)];
        ch.first = c * perChunk;
        ch.count = std::min(perChunk, H - ch.first);
        ok &= ensure(ch.w, head * ch.count, changed);
        if (keepScores)
            ok &= ensure(ch.s, head * ch.count, changed);
        else
            ch.s.buf.reset(), ch.s.size = 0;
        if (!ch.scores.ubo) {
            ok &= makeSlot(ch.scores, sizeof(GemmParams)) && makeSlot(ch.normalize, sizeof(NormalizeParams)) &&
                  makeSlot(ch.context, sizeof(GemmParams)) && makeSlot(ch.mean, sizeof(HeadMeanParams));
            changed = true;
        }
    }
    if (!ok) {
        m_layoutKey.clear();
        m_chunks.clear();
        return Status::error(StatusCode::BackendFailed, m_name + ": out of GPU memory for t_q " + std::to_string(tq) +
                                                            ", t_k " + std::to_string(tk) + ", " + std::to_string(H) +
                                                            " heads");
    }
    if (!changed)
        return {};

    auto gemm = [&](Slot &s, QRhiBuffer *a, QRhiBuffer *b, QRhiBuffer *bias, QRhiBuffer *c) {
        return buildSrb(s, {SRB::uniformBuffer(0, kCompute, s.ubo.get()), SRB::bufferLoad(1, kCompute, a),
                            SRB::bufferLoad(2, kCompute, b), SRB::bufferLoad(3, kCompute, bias),
                            SRB::bufferStore(4, kCompute, c)});
    };
    ok &= gemm(m_projQ, m_xq.buf.get(), m_wq.buf.get(), m_bq.buf.get(), m_q.buf.get());
    ok &= gemm(m_projK, m_xk.buf.get(), m_wk.buf.get(), m_bk.buf.get(), m_k.buf.get());
    ok &= gemm(m_projV, m_xv.buf.get(), m_wv.buf.get(), m_bv.buf.get(), m_v.buf.get());
    ok &= gemm(m_projO, m_ctx.buf.get(), m_wo.buf.get(), m_bo.buf.get(), m_out.buf.get());
    for (HeadChunk &ch : m_chunks) {
        ok &= gemm(ch.scores, m_q.buf.get(), m_k.buf.get(), m_dummy.buf.get(), ch.w.buf.get());
        ok &= gemm(ch.context, ch.w.buf.get(), m_v.buf.get(), m_dummy.buf.get(), m_ctx.buf.get());
        ok &= buildSrb(ch.normalize, {SRB::uniformBuffer(0, kCompute, ch.normalize.ubo.get()),
                                      SRB::bufferLoadStore(1, kCompute, ch.w.buf.get()),
                                      SRB::bufferStore(2, kCompute, keepScores ? ch.s.buf.get() : m_dummyStore.buf.get()),
                                      SRB::bufferLoad(3, kCompute, m_mask.buf.get()),
                                      SRB::bufferLoad(4, kCompute, m_q.buf.get()),
                                      SRB::bufferLoad(5, kCompute, m_k.buf.get()),
                                      SRB::bufferStore(6, kCompute, m_flags.buf.get())});
        ok &= buildSrb(ch.mean, {SRB::uniformBuffer(0, kCompute, ch.mean.ubo.get()),
                                 SRB::bufferLoad(1, kCompute, ch.w.buf.get()),
                                 SRB::bufferLoadStore(2, kCompute, m_avg.buf.get())});
    }
    if (!ok) {
        m_layoutKey.clear();
        return Status::error(StatusCode::BackendFailed, m_name + ": cannot create shader resource bindings");
    }
    m_layoutKey = key;
    return {};
}

Status RhiAttention::compute(const AttentionConfig &cfg, const AttentionInput<float> &input,
                             AttentionResult<float> &result)
{
    if (!m_rhi)
        return Status::error(StatusCode::Unavailable, "gpu: not started");
    const auto tStart = std::chrono::steady_clock::now();
    ResolvedShape s;
    if (Status st = resolveShape(cfg, input, s); !st)
        return st;
    if (cfg.dropout > 0.0)
        return Status::error(StatusCode::Unavailable,
                             m_name + ": dropout is computed by the CPU backend only (torch's random stream)");
    const int H = s.numHeads, dh = s.dHead, tq = s.tq, tk = s.tk, dIn = s.dInner, dOut = s.dOut;
    if (tq > 65535 || H > 65535 || ceilDiv(std::max(tk, dOut), kGemmTile) > 65535)
        return Status::error(StatusCode::Unavailable, m_name + ": more than 65535 workgroups in one dimension");
    const auto &P = input.proj;
    const bool projQ = !P.q.isIdentity(), projK = !P.k.isIdentity(), projV = !P.v.isIdentity(),
               projO = !P.o.isIdentity();
    const auto tShape = std::chrono::steady_clock::now();
    if (Status st = ensureResources(H, tq, tk, s.dModel, s.kdim, s.vdim, dIn, dOut, cfg.keepScores, projQ, projK, projV,
                                    projO);
        !st)
        return st;
    if (qEnvironmentVariableIsSet("ATTNVIZ_GPU_PROFILE"))
        qInfo("resolveShape %.1f ms, ensureResources %.1f ms",
              std::chrono::duration<double, std::milli>(tShape - tStart).count(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tShape).count());

    std::vector<uint8_t> readHead(size_t(H), cfg.readbackHeads.empty() ? 1 : 0);
    for (int h : cfg.readbackHeads)
        if (h >= 0 && h < H)
            readHead[size_t(h)] = 1;

    result.numHeads = H;
    result.dHead = dh;
    result.dModel = s.dModel;
    result.dOut = dOut;
    result.scale = s.scale;
    result.batch.resize(size_t(s.batch));

    int mode = 0;
    switch (cfg.normalization) {
    case Normalization::Softmax: mode = cfg.maskMethod == MaskMethod::MultiplyRenormalize ? 1 : 0; break;
    case Normalization::Sum: mode = 2; break;
    case Normalization::Cosine: mode = 3; break;
    }
    const int policy = cfg.fullyMasked == FullyMaskedPolicy::NaN ? 0 : cfg.fullyMasked == FullyMaskedPolicy::Zero ? 1 : 2;
    const int maskWords = (tk + 31) / 32;
    const qint64 headElems = qint64(tq) * tk;

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
        std::vector<quint32> maskBits;
        if (hasMask) {
            maskBits.assign(size_t(tq) * maskWords, 0u);
            for (int i = 0; i < tq; ++i) {
                bool all = true;
                for (int j = 0; j < tk; ++j) {
                    if (r.mask(i, j))
                        maskBits[size_t(i) * maskWords + j / 32] |= 1u << (j % 32);
                    else
                        all = false;
                }
                if (all)
                    r.fullyMaskedRows.push_back(i);
            }
        }

        // ATTNVIZ_GPU_PROFILE=1: a frame per dispatch, each timed (a debugging aid, slower).
        static const bool profile = qEnvironmentVariableIsSet("ATTNVIZ_GPU_PROFILE");
        const auto t0 = std::chrono::steady_clock::now();
        QRhiCommandBuffer *cb = nullptr;
        QRhi::FrameOpResult fr = m_rhi->beginOffscreenFrame(&cb);
        if (fr != QRhi::FrameOpSuccess)
            return Status::error(StatusCode::BackendFailed,
                                 m_name + (fr == QRhi::FrameOpDeviceLost ? ": device lost" : ": cannot begin a frame"));
        QRhiResourceUpdateBatch *u = m_rhi->nextResourceUpdateBatch();

        // Inputs: a projected role uploads x and W; an identity role uploads x (+ b) as q/k/v itself.
        std::deque<Mat<float>> hostCopies; // x + b for identity roles, alive while the batch is recorded
        auto input3 = [&](bool proj, const Mat<float> &x, const Linear<float> &lin, Buf &xb, Buf &wb, Buf &bb, Buf &out) {
            if (proj) {
                u->uploadStaticBuffer(xb.buf.get(), 0, int(x.size() * 4), x.data());
                uploadIfChanged(u, wb, lin.W.data(), lin.W.size() * 4);
                if (lin.hasBias())
                    uploadIfChanged(u, bb, lin.b.data(), lin.b.size() * 4);
            } else if (lin.hasBias()) {
                hostCopies.push_back(x);
                hostCopies.back().rowwise() += lin.b.transpose();
                u->uploadStaticBuffer(out.buf.get(), 0, int(x.size() * 4), hostCopies.back().data());
            } else {
                u->uploadStaticBuffer(out.buf.get(), 0, int(x.size() * 4), x.data());
            }
        };
        input3(projQ, seq.query, P.q, m_xq, m_wq, m_bq, m_q);
        input3(projK, xk, P.k, m_xk, m_wk, m_bk, m_k);
        input3(projV, xv, P.v, m_xv, m_wv, m_bv, m_v);
        if (projO) {
            uploadIfChanged(u, m_wo, P.o.W.data(), P.o.W.size() * 4);
            if (P.o.hasBias())
                uploadIfChanged(u, m_bo, P.o.b.data(), P.o.b.size() * 4);
        }
        if (hasMask)
            u->uploadStaticBuffer(m_mask.buf.get(), 0, int(maskBits.size() * 4), maskBits.data());

        auto setGemm = [&](Slot &slot, const GemmParams &gp) {
            u->updateDynamicBuffer(slot.ubo.get(), 0, sizeof(gp), &gp);
        };
        auto proj = [&](Slot &slot, int rows, int in, const Linear<float> &lin) {
            GemmParams gp{};
            gp.M = quint32(rows);
            gp.N = quint32(lin.W.rows());
            gp.K = quint32(in);
            gp.lda = quint32(in);
            gp.ldb = quint32(in);
            gp.ldc = quint32(lin.W.rows());
            gp.transB = 1;
            gp.hasBias = lin.hasBias() ? 1 : 0;
            gp.alpha = 1.0f;
            setGemm(slot, gp);
        };
        if (projQ)
            proj(m_projQ, tq, s.dModel, P.q);
        if (projK)
            proj(m_projK, tk, s.kdim, P.k);
        if (projV)
            proj(m_projV, tk, s.vdim, P.v);
        if (projO)
            proj(m_projO, tq, dIn, P.o);
        for (size_t c = 0; c < m_chunks.size(); ++c) {
            HeadChunk &ch = m_chunks[c];
            GemmParams sc{};
            sc.M = quint32(tq);
            sc.N = quint32(tk);
            sc.K = quint32(dh);
            sc.lda = sc.ldb = quint32(dIn);
            sc.ldc = quint32(tk);
            sc.aOff = sc.bOff = quint32(ch.first * dh);
            sc.aStrideZ = sc.bStrideZ = quint32(dh);
            sc.cStrideZ = quint32(headElems);
            sc.transB = 1;
            sc.alpha = 1.0f;
            setGemm(ch.scores, sc);
            GemmParams cx{};
            cx.M = quint32(tq);
            cx.N = quint32(dh);
            cx.K = quint32(tk);
            cx.lda = quint32(tk);
            cx.ldb = cx.ldc = quint32(dIn);
            cx.aStrideZ = quint32(headElems);
            cx.bOff = cx.cOff = quint32(ch.first * dh);
            cx.bStrideZ = cx.cStrideZ = quint32(dh);
            cx.transB = 0;
            cx.alpha = 1.0f;
            setGemm(ch.context, cx);
            NormalizeParams np{};
            np.tq = quint32(tq);
            np.tk = quint32(tk);
            np.maskWords = quint32(maskWords);
            np.hasMask = hasMask ? 1 : 0;
            np.mode = quint32(mode == 1 && !hasMask ? 0 : mode);
            np.policy = quint32(policy);
            np.keepScores = cfg.keepScores ? 1 : 0;
            np.dHead = quint32(dh);
            np.ldqk = quint32(dIn);
            np.headBase = quint32(ch.first);
            np.scale = float(s.scale);
            u->updateDynamicBuffer(ch.normalize.ubo.get(), 0, sizeof(np), &np);
            HeadMeanParams mp{};
            mp.n = quint32(headElems);
            mp.numHeads = quint32(ch.count);
            mp.threads = quint32(std::min<qint64>(kHeadMeanThreads, (headElems + 255) / 256 * 256));
            mp.mode = (c > 0 ? 1u : 0u) | (c + 1 == m_chunks.size() ? 2u : 0u);
            mp.divisor = float(H);
            u->updateDynamicBuffer(ch.mean.ubo.get(), 0, sizeof(mp), &mp);
        }

        // One compute pass per dispatch: QRhi tracks a buffer's access per pass and puts the barrier
        // (write, then read) between passes; the first pass carries the uploads.
        std::vector<std::function<void()>> dispatches;
        auto gemmDispatch = [&](Slot &slot, int M, int N, int Z) {
            dispatches.push_back([&, M, N, Z, srb = slot.srb.get()] {
                cb->setComputePipeline(m_gemm.get());
                cb->setShaderResources(srb);
                cb->dispatch(int(ceilDiv(N, kGemmTile)), int(ceilDiv(M, kGemmTile)), Z);
            });
        };
        if (projQ)
            gemmDispatch(m_projQ, tq, dIn, 1);
        if (projK)
            gemmDispatch(m_projK, tk, dIn, 1);
        if (projV)
            gemmDispatch(m_projV, tk, dIn, 1);
        for (HeadChunk &ch : m_chunks) {
            gemmDispatch(ch.scores, tq, tk, ch.count);
            dispatches.push_back([&, srb = ch.normalize.srb.get(), count = ch.count] {
                cb->setComputePipeline(m_normalize.get());
                cb->setShaderResources(srb);
                cb->dispatch(tq, count, 1);
            });
            gemmDispatch(ch.context, tq, dh, ch.count);
            dispatches.push_back([&, srb = ch.mean.srb.get()] {
                cb->setComputePipeline(m_headMean.get());
                cb->setShaderResources(srb);
                cb->dispatch(int(std::min<qint64>(kHeadMeanThreads, headElems + 255) / 256), 1, 1);
            });
        }
        if (projO)
            gemmDispatch(m_projO, tq, dOut, 1);
        const auto tRec = std::chrono::steady_clock::now();
        for (size_t k = 0; k + 1 < dispatches.size(); ++k) {
            cb->beginComputePass(k == 0 ? u : nullptr);
            if (profile && k == 0)
                qInfo("host work before the frame %.1f ms, uploads recorded %.1f ms",
                      std::chrono::duration<double, std::milli>(tRec - t0).count(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tRec).count());
            dispatches[k]();
            cb->endComputePass();
            if (profile) { // each dispatch in its own frame, timed
                const auto p0 = std::chrono::steady_clock::now();
                m_rhi->endOffscreenFrame();
                qInfo("dispatch %zu: %.1f ms", k, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count());
                m_rhi->beginOffscreenFrame(&cb);
            }
        }
        // Read back what the result holds, straight into its matrices (sized first, storage kept
        // from the last call: t^2 floats per head, fresh pages cost more than the copy). Per-head
        // matrices and the head mean only where asked for; heads not read back are left empty.
        const bool readAvg = cfg.readbackHeads.empty() ||
                             std::find(cfg.readbackHeads.begin(), cfg.readbackHeads.end(), -1) != cfg.readbackHeads.end();
        std::vector<ReadItem> items;
        auto want = [&](QRhiBuffer *buf, qint64 offsetBytes, Mat<float> &m, int rows, int cols) {
            m.resize(rows, cols);
            items.push_back({buf, offsetBytes, 4 * qint64(m.size()), m.data()});
        };
        want(m_q.buf.get(), 0, r.q, tq, dIn);
        want(m_k.buf.get(), 0, r.k, tk, dIn);
        want(m_v.buf.get(), 0, r.v, tk, dIn);
        want(m_ctx.buf.get(), 0, r.context, tq, dIn);
        if (projO)
            want(m_out.buf.get(), 0, r.output, tq, dOut);
        if (readAvg)
            want(m_avg.buf.get(), 0, r.weightsAvg, tq, tk);
        else
            r.weightsAvg.resize(0, 0);
        std::vector<quint32> flags(size_t(H) * tq);
        items.push_back({m_flags.buf.get(), 0, 4 * qint64(flags.size()), flags.data()});
        r.weights.resize(size_t(H));
        r.scores.resize(cfg.keepScores ? size_t(H) : 0);
        for (HeadChunk &ch : m_chunks)
            for (int h = ch.first; h < ch.first + ch.count; ++h) {
                const qint64 off = 4 * headElems * (h - ch.first);
                if (readHead[size_t(h)])
                    want(ch.w.buf.get(), off, r.weights[size_t(h)], tq, tk);
                else
                    r.weights[size_t(h)].resize(0, 0);
                if (cfg.keepScores && readHead[size_t(h)])
                    want(ch.s.buf.get(), off, r.scores[size_t(h)], tq, tk);
                else if (cfg.keepScores)
                    r.scores[size_t(h)].resize(0, 0);
            }

        // Vulkan: copies into persistent host-visible buffers recorded at the end of the last pass
        // (QRhi 6.4 would allocate and map a staging buffer per readback, then copy it once more).
        // Elsewhere: QRhi's readbacks.
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
        cb->beginComputePass(dispatches.size() == 1 ? u : nullptr,
                             native ? QRhiCommandBuffer::ExternalContent : QRhiCommandBuffer::BeginPassFlags());
        dispatches.back()();
        if (native)
            m_vkReadback->record(cb, items);
        cb->endComputePass(rb);
        const auto f0 = std::chrono::steady_clock::now();
        fr = m_rhi->endOffscreenFrame();
        if (profile)
            qInfo("last dispatch + readback frame: %.1f ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0).count());
        if (fr != QRhi::FrameOpSuccess || m_rhi->isDeviceLost())
            return Status::error(StatusCode::BackendFailed,
                                 m_name + (fr == QRhi::FrameOpDeviceLost || m_rhi->isDeviceLost()
                                               ? ": device lost"
                                               : ": the frame failed"));

        // Host copies in pieces of at most 16 MiB, in parallel: memory bandwidth, not one core.
        struct Piece {
            const char *src;
            char *dst;
            qint64 bytes;
        };
        std::vector<Piece> pieces;
        bool ok = true;
        for (size_t k = 0; k < items.size(); ++k) {
            const char *src = nullptr;
            if (native) {
                src = static_cast<const char *>(m_vkReadback->mapped(k));
            } else if (reads[k].data.size() == items[k].bytes) {
                src = reads[k].data.constData();
            } else {
                ok = false;
                break;
            }
            for (qint64 o = 0; o < items[k].bytes; o += kCopyPiece)
                pieces.push_back({src + o, static_cast<char *>(items[k].dst) + o, std::min(kCopyPiece, items[k].bytes - o)});
        }
        if (ok) {
#pragma omp parallel for schedule(dynamic) if (pieces.size() > 4)
            for (qint64 k = 0; k < qint64(pieces.size()); ++k)
                std::memcpy(pieces[size_t(k)].dst, pieces[size_t(k)].src, size_t(pieces[size_t(k)].bytes));
        }
        gpuMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (profile)
            qInfo("frame end + host copies: %.1f ms (%s readback)",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0).count(),
                  native ? "native" : "QRhi");
        if (!projO) {
            r.output = r.context;
            if (P.o.hasBias())
                r.output.rowwise() += P.o.b.transpose();
        }
        for (int i = 0; i < tq && ok; ++i) {
            bool deg = false;
            for (int h = 0; h < H; ++h)
                deg |= flags[size_t(h) * tq + i] != 0;
            if (deg)
                r.degenerateRows.push_back(i);
        }
        if (!ok)
            return Status::error(StatusCode::BackendFailed, m_name + ": a readback came back incomplete");
    }
    m_lastGpuMs = gpuMs;
    if (qEnvironmentVariableIsSet("ATTNVIZ_GPU_PROFILE"))
        qInfo("compute total %.1f ms (frames %.1f ms)",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tStart).count(), gpuMs);
    return {};
}

} // namespace attnviz
