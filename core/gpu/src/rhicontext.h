// SPDX-License-Identifier: GPL-3.0-or-later
// The device of GpuBackend: one QRhi for a graphics API, what it is (name, device, software or not,
// the largest storage buffer) and, on Vulkan, the persistent readback buffers. Created, used and
// destroyed on GpuBackend's worker thread; RhiForward borrows the QRhi and must end first.
#pragma once

#include "attnviz/gpubackend.h"

#include <QtGui/private/qrhi_p.h>

#include <memory>
#include <string>

QT_BEGIN_NAMESPACE
class QOffscreenSurface;
class QVulkanInstance;
QT_END_NAMESPACE

namespace attnviz {

struct VulkanReadback;

class RhiContext {
public:
    RhiContext();
    ~RhiContext();
    RhiContext(const RhiContext &) = delete;
    RhiContext &operator=(const RhiContext &) = delete;

    // Creates the QRhi for `api` (not Auto). `surface` (OpenGL) and `instance` (Vulkan) are made by
    // the caller on the GUI thread and must outlive this object.
    Status create(GpuApi api, QOffscreenSurface *surface, QVulkanInstance *instance);

    QRhi *rhi() const { return m_rhi.get(); }
    std::string name() const { return m_name; }
    std::string device() const { return m_device; }
    bool isSoftware() const { return m_software; }
    // The device's (and QRhi's) limit for one storage buffer.
    qint64 maxStorageBytes() const { return m_maxStorageBytes; }
    // Vulkan's persistent readback buffers (vulkanreadback.h); null elsewhere.
    VulkanReadback *vulkanReadback() const { return m_vkReadback.get(); }

private:
    // Declared first, destroyed last: the readback buffers belong to its device.
    std::unique_ptr<QRhi> m_rhi;
    std::unique_ptr<VulkanReadback> m_vkReadback;
    std::string m_name, m_device;
    bool m_software = false;
    qint64 m_maxStorageBytes = 0;
};

} // namespace attnviz
