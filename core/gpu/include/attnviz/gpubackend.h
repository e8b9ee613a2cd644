// SPDX-License-Identifier: GPL-3.0-or-later
// The attention core on a GPU: Qt RHI compute shaders (core/gpu/shaders), checked against the CPU
// core by tests/tst_gpu.cpp. Same seam as CpuBackend, so callers switch with one setting. The same
// object is the GPU forward device of real models (ForwardDevice, device.h: TraceRequest::device),
// on the same QRhi and worker thread; tests/tst_gpumodel.cpp checks it against the CPU forward. It
// also draws a pooled map of one head from a trace's q, k and log-sum-exp (pooledMap), as
// AttentionTiles does on the CPU (tests/gpu/tst_gpumap.cpp).
//
// Threading: the QRhi lives on one worker thread owned by the backend; compute() hands the job to
// it and waits. Needs a QGuiApplication. Call start() on the GUI thread the first time (OpenGL's
// fallback surface must be made there); compute() may then be called from any one thread.
// Failures never throw or crash: start() returns Unavailable where no GPU backend can start,
// compute() returns BackendFailed (device lost, out of memory, shader error) or Unavailable (a
// problem this backend does not take, e.g. dropout or a buffer over 4 GiB). Callers fall back to
// CpuBackend and say so.
#pragma once

#include "attnviz/attentiontiles.h"
#include "attnviz/backend.h"
#include "attnviz/device.h"

#include <memory>
#include <string>

namespace attnviz {

enum class GpuApi {
    Auto,   // Linux: Vulkan, then OpenGL; Windows: D3D11, then Vulkan; macOS: Metal
    Vulkan,
    OpenGL, // 4.3 core (compute shaders)
    D3D11,
    Metal,
};

class GpuBackend final : public Backend, public ForwardDevice {
public:
    explicit GpuBackend(GpuApi api = GpuApi::Auto);
    ~GpuBackend() override;
    GpuBackend(const GpuBackend &) = delete;
    GpuBackend &operator=(const GpuBackend &) = delete;

    // "vulkan", "opengl", "d3d11", "metal"; "gpu" before a successful start().
    std::string name() const override;
    // The driver's device name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"; empty before start().
    std::string device() const override;
    Status start() override;
    // Every stage, as CpuBackend. Heads listed in AttentionConfig::readbackHeads (all when empty)
    // get their scores and weights back, and weightsAvg where -1 is listed; the others are left
    // empty (0 x 0).
    Status compute(const AttentionConfig &config, const AttentionInput<float> &input,
                   AttentionResult<float> &result) override;

    // True for a software rasterizer (llvmpipe, lavapipe, SwiftShader, WARP): correct, but rarely
    // faster than the CPU core; `auto` selection keeps the CPU then.
    bool isSoftware() const override;

    // The model forward (ForwardDevice). Starts the backend if needed; a failure (BackendFailed)
    // stops it as compute() does.
    Status supports(const Architecture &arch, const ModelWeights<float> &weights, const ForwardInput &in) override;
    Status forward(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights,
                   const ForwardInput &in, Trace<float> &out) override;
    ForwardDevice *forwardDevice(std::string *whyNot) override
    {
        if (whyNot)
            whyNot->clear();
        return this;
    }
    void forgetText() override;
    // Rows the last forward computed (fewer than its tokens where a causal prefix was kept).
    int lastForwardRows() const;

    // The pooled map of head `head` (>= 0) of layer `layer` of `trace` over query rows
    // [rowBegin, rowEnd) x keys [colBegin, colEnd) in outRows x outCols cells, recomputed from the
    // trace's q, k and log-sum-exp on the GPU: the same map as AttentionTiles<float>(trace, layer,
    // Source::Recompute).pooled(...) (region and grid clamped alike; masked cells count as 0).
    // Unavailable (the caller draws it on the CPU) where the layer keeps no q, k and log-sum-exp, for
    // the head mean (-1), or where no GPU backend starts; BackendFailed stops the backend as compute()
    // does. lastGpuMs() then holds its milliseconds (host preparation, uploads, dispatch, readback).
    Status pooledMap(const Trace<float> &trace, int layer, int head, int rowBegin, int rowEnd, int colBegin, int colEnd,
                     int outRows, int outCols, Pooling pool, Mat<float> &out);

    // Caps one storage buffer (bytes; 0 = the device's limit). Heads are split across buffers of
    // at most this size; a smaller cap trades dispatches for memory. Tests use it to split heads.
    void setMaxBufferBytes(long long bytes);

    // Milliseconds of the last compute() spent on the GPU frames (uploads, dispatches, readback).
    double lastGpuMs() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

const char *toString(GpuApi api);

} // namespace attnviz
