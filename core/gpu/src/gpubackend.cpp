// SPDX-License-Identifier: GPL-3.0-or-later
// GpuBackend: a worker thread that owns the QRhi (a QRhi belongs to the thread that created it) and
// the one GPU code path on it (RhiForward: the model forward and the attention op); compute(),
// supports() and forward() hand each job to it and wait for the answer.
#include "attnviz/gpubackend.h"

#include "rhicontext.h"
#include "rhiforward.h"

#include <QCoreApplication>
#include <QGuiApplication>
#include <QMessageLogContext>
#include <QOffscreenSurface>
#include <QSurfaceFormat>
#include <QThread>
#if QT_CONFIG(vulkan)
#include <QVulkanInstance>
#include <QtGui/private/qrhivulkan_p.h>
#endif
#include <QtGui/private/qrhigles2_p.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace attnviz {

namespace {

// The platform's own messages about GPU work: QRhi's warnings ("Failed to create staging buffer of
// size …: -2") and the driver's debug reports ("vkDebug: …: VK_ERROR_OUT_OF_DEVICE_MEMORY"), a line
// per failed allocation. They come from the thread doing the work (the worker, or start() while it
// makes the Vulkan instance), and GpuBackend's Status already says what failed in one line, so they
// are dropped there; messages from any other thread pass to the handler installed before.
// ATTNVIZ_GPU_VERBOSE=1 keeps them, for a driver's bug report.
//
// The quiet threads are a list under a lock, not a thread_local flag: this library is linked into
// executables, and Debian 12's mold (1.10) can place an executable's lone one-byte .tbss so that the
// RELRO range starts on a page nothing maps (the loader then stops: "cannot apply additional memory
// protection after relocation"); tests/packaging's elf_layout test checks every program for it.
std::mutex g_quietMutex;
std::vector<std::thread::id> g_quietThreads; // once per GpuQuiet alive (nested ones repeat the id)
QtMessageHandler g_previousHandler = nullptr;

bool quietHere()
{
    const std::lock_guard<std::mutex> lock(g_quietMutex);
    return std::find(g_quietThreads.begin(), g_quietThreads.end(), std::this_thread::get_id()) != g_quietThreads.end();
}

void gpuQuietHandler(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (type != QtFatalMsg && quietHere())
        return;
    if (g_previousHandler)
        g_previousHandler(type, context, message);
}

// Installs the filter once per process (chained to the handler in place then).
void installGpuQuietHandler()
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (qEnvironmentVariableIntValue("ATTNVIZ_GPU_VERBOSE"))
            return;
        g_previousHandler = qInstallMessageHandler(gpuQuietHandler);
    });
}

// Quiet on this thread while it lives (nests).
struct GpuQuiet {
    GpuQuiet()
    {
        const std::lock_guard<std::mutex> lock(g_quietMutex);
        g_quietThreads.push_back(std::this_thread::get_id());
    }
    ~GpuQuiet()
    {
        const std::lock_guard<std::mutex> lock(g_quietMutex);
        g_quietThreads.erase(std::find(g_quietThreads.begin(), g_quietThreads.end(), std::this_thread::get_id()));
    }
    GpuQuiet(const GpuQuiet &) = delete;
    GpuQuiet &operator=(const GpuQuiet &) = delete;
};

} // namespace

const char *toString(GpuApi api)
{
    switch (api) {
    case GpuApi::Auto: return "auto";
    case GpuApi::Vulkan: return "vulkan";
    case GpuApi::OpenGL: return "opengl";
    case GpuApi::D3D11: return "d3d11";
    case GpuApi::Metal: return "metal";
    }
    return "?";
}

#if QT_CONFIG(vulkan)
// One Vulkan instance for every backend of the process, alive while any uses it: a second
// QVulkanInstance ending while the first's QRhi lives leaves that QRhi's device functions dangling
// (the first QRhi then crashes on destruction: the window's and its Compare tab's backends end in
// any order). Made and handed out on the GUI thread only (start()).
std::shared_ptr<QVulkanInstance> sharedVulkanInstance()
{
    static std::weak_ptr<QVulkanInstance> shared;
    if (std::shared_ptr<QVulkanInstance> v = shared.lock())
        return v;
    auto v = std::make_shared<QVulkanInstance>();
    v->setExtensions(QRhiVulkanInitParams::preferredInstanceExtensions());
    if (!v->create())
        return nullptr;
    shared = v;
    return v;
}
#endif

struct GpuBackend::Impl {
    GpuApi api = GpuApi::Auto;
    bool started = false;
    Status startStatus;
    std::string name = "gpu", device;
    bool software = false;
    long long maxBufferBytes = 0;
    double lastGpuMs = 0;

    // Made on the thread that calls start() (the GUI thread), destroyed after the worker's QRhi.
#if QT_CONFIG(vulkan)
    std::shared_ptr<QVulkanInstance> vulkan;
#endif
    std::unique_ptr<QOffscreenSurface> surface;

    // The worker; `rhi` and `forward` are created, used and destroyed on it only, `forward` (which
    // borrows rhi's QRhi) first.
    std::unique_ptr<RhiContext> rhi;
    std::unique_ptr<RhiForward> forward;
    int lastForwardRows = 0;
    std::thread worker;
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool quit = false;

    void loop()
    {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> lock(mutex);
                cv.wait(lock, [&] { return quit || !jobs.empty(); });
                if (jobs.empty())
                    return;
                job = std::move(jobs.front());
                jobs.pop_front();
            }
            job();
        }
    }

    // Runs `f` on the worker and waits for it.
    template <typename F>
    auto onWorker(F f) -> decltype(f())
    {
        if (!worker.joinable())
            worker = std::thread([this] {
                GpuQuiet quiet; // the worker's messages are QRhi's and the driver's
                loop();
            });
        std::packaged_task<decltype(f())()> task(std::move(f));
        auto result = task.get_future();
        {
            std::lock_guard<std::mutex> lock(mutex);
            jobs.emplace_back([&task] { task(); });
        }
        cv.notify_one();
        return result.get();
    }
    // `f(forward)` on the worker where the device started; a device that failed there
    // (BackendFailed) is not reused: the next call says Unavailable until a new backend starts.
    template <class F>
    Status onForward(F f)
    {
        Status st = onWorker([&]() -> Status {
            if (!forward)
                return startStatus;
            forward->releaseExpired(); // a model's weights the window no longer holds leave the GPU
            forward->setMaxBufferBytes(maxBufferBytes);
            Status r = f(*forward);
            lastGpuMs = forward->lastGpuMs();
            return r;
        });
        if (st.code == StatusCode::BackendFailed) {
            onWorker([this] {
                forward.reset();
                rhi.reset();
                return 0;
            });
            startStatus = Status::error(StatusCode::Unavailable, name + ": stopped after a failure (" + st.message + ")");
        }
        return st;
    }

    Status tryStart(GpuApi which)
    {
        QVulkanInstance *inst = nullptr;
        if (which == GpuApi::Vulkan) {
#if QT_CONFIG(vulkan)
            if (!vulkan) {
                vulkan = sharedVulkanInstance();
                if (!vulkan)
                    return Status::error(StatusCode::Unavailable, "vulkan: no Vulkan instance (no loader or driver)");
            }
            inst = vulkan.get();
#else
            return Status::error(StatusCode::Unavailable, "vulkan: this Qt has no Vulkan support");
#endif
        }
        if (which == GpuApi::OpenGL && !surface) {
            if (QThread::currentThread() != QCoreApplication::instance()->thread())
                return Status::error(StatusCode::Unavailable, "opengl: start() must run on the GUI thread");
            QSurfaceFormat fmt = QSurfaceFormat::defaultFormat();
            fmt.setVersion(4, 3);
            fmt.setProfile(QSurfaceFormat::CoreProfile);
            surface.reset(QRhiGles2InitParams::newFallbackSurface(fmt));
            if (!surface || !surface->isValid()) {
                surface.reset();
                return Status::error(StatusCode::Unavailable, "opengl: no OpenGL 4.3 surface");
            }
        }
        QOffscreenSurface *surf = surface.get();
        return onWorker([this, which, surf, inst] {
            auto r = std::make_unique<RhiContext>();
            Status st = r->create(which, surf, inst);
            if (!st)
                return st;
            // The pipelines are built here: an API whose shaders do not build is not started.
            auto f = std::make_unique<RhiForward>(r->rhi(), r->name(), r->maxStorageBytes(), r->vulkanReadback());
            if (st = f->create(); !st)
                return st;
            name = r->name();
            device = r->device();
            software = r->isSoftware();
            rhi = std::move(r);
            forward = std::move(f);
            return st;
        });
    }

    void stopWorker()
    {
        if (!worker.joinable())
            return;
        onWorker([this] {
            forward.reset();
            rhi.reset();
            return 0;
        });
        {
            std::lock_guard<std::mutex> lock(mutex);
            quit = true;
        }
        cv.notify_one();
        worker.join();
    }

    ~Impl()
    {
        // Order: the QRhi (on its thread) first, then its fallback surface and Vulkan instance.
        stopWorker();
        surface.reset();
#if QT_CONFIG(vulkan)
        vulkan.reset();
#endif
    }
};

GpuBackend::GpuBackend(GpuApi api) : d(std::make_unique<Impl>()) { d->api = api; }

GpuBackend::~GpuBackend() = default;

std::string GpuBackend::name() const { return d->name; }
std::string GpuBackend::device() const { return d->device; }
double GpuBackend::lastGpuMs() const { return d->lastGpuMs; }
bool GpuBackend::isSoftware() const { return d->software; }

void GpuBackend::setMaxBufferBytes(long long bytes)
{
    d->maxBufferBytes = bytes;
}

Status GpuBackend::start()
{
    if (d->started)
        return d->startStatus;
    d->started = true;
    installGpuQuietHandler();
    GpuQuiet quiet; // the Vulkan instance and OpenGL surface are made here
    if (!qobject_cast<QGuiApplication *>(QCoreApplication::instance())) {
        d->startStatus = Status::error(StatusCode::Unavailable, "gpu: needs a QGuiApplication (a display or platform plugin)");
        return d->startStatus;
    }
    std::vector<GpuApi> order;
    if (d->api != GpuApi::Auto) {
        order.push_back(d->api);
    } else {
#if defined(Q_OS_WIN)
        order = {GpuApi::D3D11, GpuApi::Vulkan, GpuApi::OpenGL};
#elif defined(Q_OS_MACOS) || defined(Q_OS_IOS)
        order = {GpuApi::Metal};
#else
        order = {GpuApi::Vulkan, GpuApi::OpenGL};
#endif
    }
    std::string why;
    for (GpuApi api : order) {
        Status st = d->tryStart(api);
        if (st) {
            d->startStatus = {};
            return {};
        }
        why += (why.empty() ? "" : "; ") + st.message;
    }
    d->startStatus = Status::error(StatusCode::Unavailable, "no GPU backend could start (" + why + ")");
    return d->startStatus;
}

Status GpuBackend::compute(const AttentionConfig &config, const AttentionInput<float> &input,
                           AttentionResult<float> &result)
{
    if (Status st = start(); !st)
        return st;
    return d->onForward([&](RhiForward &f) { return f.attend(config, input, result); });
}

Status GpuBackend::pooledMap(const Trace<float> &trace, int layer, int head, int rowBegin, int rowEnd, int colBegin,
                             int colEnd, int outRows, int outCols, Pooling pool, Mat<float> &out)
{
    if (Status st = start(); !st)
        return st;
    return d->onForward(
        [&](RhiForward &f) { return f.pooledMap(trace, layer, head, rowBegin, rowEnd, colBegin, colEnd, outRows, outCols, pool, out); });
}

int GpuBackend::lastForwardRows() const { return d->lastForwardRows; }

void GpuBackend::forgetText()
{
    if (!d->worker.joinable())
        return;
    d->onWorker([&] {
        if (d->forward)
            d->forward->forgetText();
        return 0;
    });
}

Status GpuBackend::supports(const Architecture &arch, const ModelWeights<float> &weights, const ForwardInput &in)
{
    if (Status st = start(); !st)
        return st;
    return d->onWorker([&]() -> Status {
        if (!d->forward)
            return d->startStatus;
        d->forward->releaseExpired();
        d->forward->setMaxBufferBytes(d->maxBufferBytes);
        return d->forward->supports(arch, weights, in);
    });
}

Status GpuBackend::forward(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights,
                           const ForwardInput &in, Trace<float> &out)
{
    if (Status st = supports(arch, *weights, in); !st)
        return st;
    Status st = d->onWorker([&] {
        Status r = d->forward->forward(arch, weights, in, out);
        d->lastGpuMs = d->forward->lastGpuMs();
        d->lastForwardRows = d->forward->lastComputedRows();
        return r;
    });
    if (st.code == StatusCode::BackendFailed) {
        d->onWorker([&] {
            d->forward.reset();
            d->rhi.reset();
            return 0;
        });
        d->startStatus = Status::error(StatusCode::Unavailable, d->name + ": stopped after a failure (" + st.message + ")");
    }
    return st;
}

} // namespace attnviz
