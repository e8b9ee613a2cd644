// SPDX-License-Identifier: GPL-3.0-or-later
// The one seam between the views and whatever computes: the Eigen CPU core is the reference,
// the GPU (Qt RHI) backend mirrors it. Backends compute in float32.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <memory>
#include <string>

namespace attnviz {

class ForwardDevice;

class Backend {
public:
    virtual ~Backend() = default;
    // "cpu", "vulkan", "opengl", ...
    virtual std::string name() const = 0;
    // Human-readable device, e.g. "AMD EPYC (2 threads, AVX-512)" or "llvmpipe (LLVM 15.0.6)".
    virtual std::string device() const = 0;
    // Starts the backend if needed. Unavailable when it cannot run here (say why in the message).
    virtual Status start() { return {}; }
    // Computes every stage (see computeAttention). Must not throw.
    virtual Status compute(const AttentionConfig &config, const AttentionInput<float> &input,
                           AttentionResult<float> &result) = 0;
    // The device that runs real models' forward passes with this backend (TraceRequest::device;
    // valid while the backend lives); null: the CPU, with the reason in `whyNot` where another
    // device was asked for ("" where the CPU is the choice).
    virtual ForwardDevice *forwardDevice(std::string *whyNot)
    {
        if (whyNot)
            whyNot->clear();
        return nullptr;
    }
};

class CpuBackend final : public Backend {
public:
    std::string name() const override { return "cpu"; }
    std::string device() const override;
    Status compute(const AttentionConfig &config, const AttentionInput<float> &input,
                   AttentionResult<float> &result) override;
};

// "AMD EPYC (2 threads, AVX-512)": the model read once from /proc/cpuinfo where present, the pool's
// threads and the ISA of the running core build (isa.h).
std::string cpuDeviceName();
int cpuThreads();

} // namespace attnviz
