// SPDX-License-Identifier: GPL-3.0-or-later
// GpuBackends: the GPU suites' backends, one per graphics API, each started once when a test first
// asks for it and kept for the rest of the suite (a start costs a device and its pipelines).
#pragma once

#include "attnviz/gpubackend.h"
#include "attnviz/status.h"

#include <QString>
#include <QtTest>

#include <map>
#include <memory>

namespace attnviz::test {

class GpuBackends {
public:
    // API's backend, started on first use (its device written to the log); nullptr where it cannot
    // start here, and why() says why.
    GpuBackend *get(GpuApi api)
    {
        auto it = m_backends.find(api);
        if (it == m_backends.end()) {
            auto b = std::make_unique<GpuBackend>(api);
            m_start[api] = b->start();
            if (m_start[api])
                qInfo("%s backend on %s", b->name().c_str(), b->device().c_str());
            it = m_backends.emplace(api, std::move(b)).first;
        }
        return m_start[api] ? it->second.get() : nullptr;
    }
    QString why(GpuApi api) const
    {
        const auto it = m_start.find(api);
        return it == m_start.end() ? QString() : QString::fromStdString(it->second.message);
    }
    // Stops every backend; a suite calls it in cleanupTestCase, before QGuiApplication goes.
    void clear() { m_backends.clear(); }

private:
    std::map<GpuApi, std::unique_ptr<GpuBackend>> m_backends;
    std::map<GpuApi, Status> m_start;
};

} // namespace attnviz::test

// In a test function: VAR is API's backend from BACKENDS (a GpuBackends), or the test is skipped with
// why it cannot start here.
#define GPU_BACKEND_OR_SKIP(var, backends, api)                                                                        \
    attnviz::GpuBackend *var = (backends).get(api);                                                                    \
    if (!var)                                                                                                          \
        QSKIP(qPrintable((backends).why(api)))
