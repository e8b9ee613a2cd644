// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend: the device string (model, threads, the ISA of this core build) and compute.
#include "attnviz/backend.h"
#include "attnviz/attention.h"
#include "attnviz/isa.h"

#include <fstream>
#include <string>
#include <thread>

#include "attnviz/parallel.h"

namespace attnviz {

int cpuThreads() { return coreThreads(); }

const char *coreIsa()
{
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "AVX2";
#elif defined(__SSE4_2__)
    return "SSE4.2";
#elif defined(__x86_64__)
    return "SSE2";
#else
    return "generic";
#endif
}

std::string cpuDeviceName()
{
    static const std::string name = [] {
        std::string model = "CPU";
        std::ifstream f("/proc/cpuinfo");
        std::string line;
        while (std::getline(f, line)) {
            if (line.rfind("model name", 0) == 0) {
                auto p = line.find(':');
                if (p != std::string::npos) {
                    model = line.substr(p + 1);
                    model.erase(0, model.find_first_not_of(" \t"));
                }
                break;
            }
        }
        return model + " (" + std::to_string(cpuThreads()) + (cpuThreads() == 1 ? " thread, " : " threads, ") +
               coreIsa() + ")";
    }();
    return name;
}

std::string CpuBackend::device() const { return cpuDeviceName(); }

Status CpuBackend::compute(const AttentionConfig &config, const AttentionInput<float> &input,
                           AttentionResult<float> &result)
{
    return computeAttention(config, input, result);
}

} // namespace attnviz
