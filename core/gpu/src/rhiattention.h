// SPDX-License-Identifier: GPL-3.0-or-later
// The QRhi side of GpuBackend: one QRhi, three compute pipelines and the buffers of one problem
// size, all owned by (and only touched on) GpuBackend's worker thread.
#pragma once

#include "attnviz/gpubackend.h"

#include <QtGui/private/qrhi_p.h>

#include <memory>
#include <string>
#include <vector>

QT_BEGIN_NAMESPACE
class QOffscreenSurface;
class QVulkanInstance;
QT_END_NAMESPACE

namespace attnviz {

struct ReadItem;
struct VulkanReadback;

class RhiAttention {
public:
    RhiAttention();
    ~RhiAttention();
    RhiAttention(const RhiAttention &) = delete;
    RhiAttention &operator=(const RhiAttention &) = delete;

    // Creates the QRhi for `api` (not Auto) and the pipelines. `surface` (OpenGL) and `instance`
    // (Vulkan) are made by the caller on the GUI thread and must outlive this object.
    Status create(GpuApi api, QOffscreenSurface *surface, QVulkanInstance *instance);
    Status compute(const AttentionConfig &config, const AttentionInput<float> &input, AttentionResult<float> &result);

    std::string name() const { return m_name; }
    std::string device() const { return m_device; }
    double lastGpuMs() const { return m_lastGpuMs; }
    void setMaxBufferBytes(qint64 bytes) { m_capBytes = bytes; }
    bool isSoftware() const { return m_software; }
    // The QRhi, for the forward device that shares it (RhiForward); owned here.
    QRhi *rhi() const { return m_rhi.get(); }
    qint64 maxStorageBytes() const { return m_maxStorageBytes; }
    // Vulkan's persistent readback buffers (vulkanreadback.h), shared with the forward; null elsewhere.
    VulkanReadback *vulkanReadback() const { return m_vkReadback.get(); }

private:
    struct Buf {
        std::unique_ptr<QRhiBuffer> buf;
        qint64 size = 0;
        std::vector<char> uploaded; // weights: the bytes last uploaded (skip the upload when equal)
    };
    void uploadIfChanged(QRhiResourceUpdateBatch *u, Buf &b, const void *data, qint64 bytes);
    // A dispatch with its own uniform buffer and bindings (all dispatches of a frame are recorded
    // before any runs, so each needs its own uniform buffer).
    struct Slot {
        std::unique_ptr<QRhiBuffer> ubo;
        std::unique_ptr<QRhiShaderResourceBindings> srb;
    };
    // Heads whose (t_q, t_k) matrices share one storage buffer: buffers are limited to 2 GiB in
    // Qt 6.4 and to the device's storage-buffer range.
    struct HeadChunk {
        int first = 0, count = 0;
        Buf w, s;
        Slot scores, normalize, context, mean;
    };

    bool ensure(Buf &b, qint64 bytes, bool &changed);
    bool makeSlot(Slot &slot, int uboBytes);
    bool buildSrb(Slot &slot, const QVector<QRhiShaderResourceBinding> &bindings);
    Status ensureResources(int H, int tq, int tk, int dModel, int kdim, int vdim, int dIn, int dOut, bool keepScores,
                           bool projQ, bool projK, bool projV, bool projO);

    // Declared first, destroyed last: every resource below belongs to m_rhi and is released
    // before it (members are destroyed in reverse order).
    std::unique_ptr<QRhi> m_rhi;
    // 16 bytes bound where a stage has no buffer: m_dummy for reads (no bias), m_dummyStore for
    // writes (scores not kept); QRhi wants one kind of access per buffer and pass.
    Buf m_dummy, m_dummyStore;
    std::unique_ptr<QRhiBuffer> m_layoutUbo; // named by the layout bindings below
    std::string m_name, m_device;
    bool m_software = false;
    qint64 m_maxStorageBytes = 0; // the device's (and QRhi's) limit for one storage buffer
    qint64 m_capBytes = 0;        // setMaxBufferBytes(); 0 = none
    double m_lastGpuMs = 0;

    // Layout-defining bindings (over m_dummy) the pipelines were created with; kept as long as them.
    std::unique_ptr<QRhiShaderResourceBindings> m_gemmLayout, m_normalizeLayout, m_headMeanLayout;
    std::unique_ptr<QRhiComputePipeline> m_gemm, m_normalize, m_headMean;
    // Inputs, weights (empty W: identity, computed on the host), stage outputs.
    Buf m_xq, m_xk, m_xv, m_wq, m_wk, m_wv, m_wo, m_bq, m_bk, m_bv, m_bo;
    Buf m_q, m_k, m_v, m_mask, m_flags, m_ctx, m_out, m_avg;
    Slot m_projQ, m_projK, m_projV, m_projO;
    std::vector<HeadChunk> m_chunks;
    std::vector<qint64> m_layoutKey; // sizes and flags the bindings were built for
    std::unique_ptr<VulkanReadback> m_vkReadback; // Vulkan's readback path; released before m_rhi
};

} // namespace attnviz
