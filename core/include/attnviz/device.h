// SPDX-License-Identifier: GPL-3.0-or-later
// A device that runs a model's forward pass: the same named passes as the CPU forward
// (core/src/models/forward/) on other hardware. The CPU forward is the reference; the GPU device
// (core/gpu: Qt RHI compute shaders) keeps a model's weights uploaded and the last text's keys and
// values between calls, and brings back into the trace only what TraceRequest::observe asks for
// (ggml's scheduler callback is the model: unobserved stages never leave the GPU). A model traced
// with TraceRequest::device runs there where the device supports it and on the CPU otherwise,
// saying why in Trace::deviceNote.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/status.h"

#include <memory>
#include <string>

namespace attnviz {

template <typename T>
struct ModelWeights;
struct ForwardInput;

class ForwardDevice {
public:
    virtual ~ForwardDevice() = default;
    // "vulkan", "opengl" ...
    virtual std::string name() const = 0;
    // The driver's device, e.g. "NVIDIA H100 80GB HBM3" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    virtual std::string device() const = 0;
    // A software rasterizer (llvmpipe, lavapipe ...): correct, rarely faster than the CPU.
    virtual bool isSoftware() const = 0;
    // OK where this forward runs here; otherwise Unavailable naming what does not (a pass, a weight
    // encoding, a size), and the caller computes on the CPU.
    virtual Status supports(const Architecture &arch, const ModelWeights<float> &weights, const ForwardInput &in) = 0;
    // Runs the forward into `out`: embeddings, input, final and the predictions always, the layers'
    // stages as in.observe asks (the rest left empty). The weights stay uploaded while `weights`
    // lives; a causal text that shares a prefix with the last one computes the new rows only.
    // Cancelled when in.cancel is set; BackendFailed when the device failed (lost, out of memory):
    // the caller computes on the CPU and the device stops taking work.
    virtual Status forward(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights,
                           const ForwardInput &in, Trace<float> &out) = 0;
    // Forgets the last text: the next forward computes every row (a benchmark's full trace).
    virtual void forgetText() = 0;
};

} // namespace attnviz
