// SPDX-License-Identifier: GPL-3.0-or-later
// The QRhi of GpuBackend for one graphics API: its creation, what the device is, and the largest
// storage buffer one binding may cover (QRhi's int sizes, Vulkan's maxStorageBufferRange, OpenGL's
// GL_MAX_SHADER_STORAGE_BLOCK_SIZE).
#include "rhicontext.h"
#include "vulkanreadback.h"

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
#include <limits>

#ifndef GL_MAX_SHADER_STORAGE_BLOCK_SIZE
#define GL_MAX_SHADER_STORAGE_BLOCK_SIZE 0x90DE
#endif

namespace attnviz {

RhiContext::RhiContext() = default;

RhiContext::~RhiContext()
{
    // The readback buffers before the device they belong to (declaration order does it too).
    m_vkReadback.reset();
    m_rhi.reset();
}

Status RhiContext::create(GpuApi api, QOffscreenSurface *surface, QVulkanInstance *instance)
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
    return {};
}

} // namespace attnviz
