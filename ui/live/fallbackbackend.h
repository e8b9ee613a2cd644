// SPDX-License-Identifier: GPL-3.0-or-later
// The window's backend choice: "gpu" computes on the GPU (Qt RHI) and falls back to the CPU core
// on any failure; "auto" uses the GPU only for problems big enough to gain (B*H*t^2 >= 2^20) on a
// hardware GPU. name()/device() describe what computed the LAST result, and say why the CPU did
// when the GPU was asked for, so the status bar shows it. Real models' forward passes run on the
// same GPU (forwardDevice): always with "gpu", with "auto" only where it is not a software
// rasterizer.
#pragma once

#include "attnviz/backend.h"

#include <memory>
#include <string>

namespace attnviz::ui {

class FallbackBackend final : public Backend {
public:
    enum class Mode { Gpu, Auto };
    // `gpu` may be null (it could not start): every compute then runs on the CPU, with `whyNot`.
    FallbackBackend(Mode mode, std::unique_ptr<Backend> gpu, bool gpuIsSoftware, std::string whyNot);

    std::string name() const override { return m_lastName; }
    std::string device() const override { return m_lastDevice; }
    Status compute(const AttentionConfig &config, const AttentionInput<float> &input,
                   AttentionResult<float> &result) override;
    ForwardDevice *forwardDevice(std::string *whyNot) override;

private:
    Mode m_mode;
    std::unique_ptr<Backend> m_gpu;
    ForwardDevice *m_device = nullptr; // m_gpu's forward device
    bool m_software;
    std::string m_whyNot;
    CpuBackend m_cpu;
    std::string m_lastName, m_lastDevice;
};

// Creates and starts the GPU backend. Call on the GUI thread: the QRhi's fallback surface and
// Vulkan instance must be made there.
std::unique_ptr<Backend> makeWindowBackend(const std::string &mode);

} // namespace attnviz::ui
