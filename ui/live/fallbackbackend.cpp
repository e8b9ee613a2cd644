// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/fallbackbackend.h"

#include "attnviz/gpubackend.h"

namespace attnviz::ui {

FallbackBackend::FallbackBackend(Mode mode, std::unique_ptr<Backend> gpu, bool gpuIsSoftware, std::string whyNot)
    : m_mode(mode)
    , m_gpu(std::move(gpu))
    , m_software(gpuIsSoftware)
    , m_whyNot(std::move(whyNot))
{
    m_device = m_gpu ? m_gpu->forwardDevice(nullptr) : nullptr;
    m_lastName = m_gpu ? m_gpu->name() : m_cpu.name();
    m_lastDevice = m_gpu ? m_gpu->device() : m_cpu.device() + " — " + m_whyNot;
}

Status FallbackBackend::compute(const AttentionConfig &config, const AttentionInput<float> &input,
                                AttentionResult<float> &result)
{
    std::string reason = m_whyNot;
    if (m_gpu) {
        double work = 0;
        for (const auto &s : input.batch) {
            const double tk = double(s.key.rows() ? s.key.rows() : s.query.rows());
            work += double(config.numHeads) * double(s.query.rows()) * tk;
        }
        const bool worth = m_mode == Mode::Gpu || (!m_software && work >= double(1 << 20));
        if (worth) {
            const Status st = m_gpu->compute(config, input, result);
            if (st.ok()) {
                m_lastName = m_gpu->name();
                m_lastDevice = m_gpu->device();
                return st;
            }
            reason = m_gpu->name() + " failed: " + st.message;
            if (st.code == StatusCode::BackendFailed) { // device lost: never use it again
                m_whyNot = reason;
                m_device = nullptr;
                m_gpu.reset();
            }
        } else {
            reason = m_software ? "auto: the GPU is a software rasterizer" : "auto: too small to gain on the GPU";
        }
    }
    m_lastName = m_cpu.name();
    m_lastDevice = m_cpu.device() + " — " + reason + "; computed on the CPU";
    return m_cpu.compute(config, input, result);
}

ForwardDevice *FallbackBackend::forwardDevice(std::string *whyNot)
{
    std::string why = m_whyNot;
    ForwardDevice *device = m_device;
    if (device && m_mode == Mode::Auto && m_software) {
        why = "auto: " + m_gpu->device() + " is a software rasterizer";
        device = nullptr;
    }
    if (whyNot)
        *whyNot = device ? std::string() : why;
    return device;
}

std::unique_ptr<Backend> makeWindowBackend(const std::string &mode)
{
    if (mode != "gpu" && mode != "auto")
        return std::make_unique<CpuBackend>();
    auto gpu = std::make_unique<GpuBackend>(GpuApi::Auto);
    const Status st = gpu->start();
    const FallbackBackend::Mode m = mode == "gpu" ? FallbackBackend::Mode::Gpu : FallbackBackend::Mode::Auto;
    if (!st.ok())
        return std::make_unique<FallbackBackend>(m, nullptr, false, "no GPU backend could start: " + st.message);
    const bool software = gpu->isSoftware();
    return std::make_unique<FallbackBackend>(m, std::move(gpu), software, std::string());
}

} // namespace attnviz::ui
