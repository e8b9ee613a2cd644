// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/speculation.h"

#include "live/livecompute.h"

#include "attnviz/backend.h"
#include "attnviz/parallel.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>
#include <QThread>
#include <QThreadPool>

#include <algorithm>
#include <limits>
#include <new>

#ifdef Q_OS_LINUX
#include <sys/resource.h>
#endif

namespace attnviz::ui {

Speculation::Speculation(QObject *parent)
    : QObject(parent), m_pool(new QThreadPool(this)), m_pointedPool(new QThreadPool(this)),
      m_computing(std::make_shared<std::mutex>())
{
    // A pool of its own with one thread at a low priority, which never reaches the global pool's
    // other work. On Linux nice 10 (Qt's priorities below normal change nothing there but the idle
    // one): a tenth of a busy core's share, never none, since a press may wait for it (halfway());
    // SCHED_IDLE gets nothing while any other thread wants the CPU, and no unprivileged thread can
    // leave it. Elsewhere Qt's lowest.
    m_pool->setMaxThreadCount(1);
#ifndef Q_OS_LINUX
    m_pool->setThreadPriority(QThread::LowestPriority);
#endif
    m_pool->setObjectName(QStringLiteral("attnviz-speculation"));
    m_pointedPool->setMaxThreadCount(1);
    m_pointedPool->setObjectName(QStringLiteral("attnviz-speculation-pointed"));
}

Speculation::~Speculation()
{
    if (m_cancel)
        m_cancel->store(true);
    m_pool->waitForDone();
    m_pointedPool->waitForDone();
}

bool Speculation::sameRequest(const ComputeRequest &a, const ComputeRequest &b)
{
    return a.model == b.model && a.sentence == b.sentence && a.keySentence == b.keySentence && a.settings == b.settings &&
           a.table == b.table && a.paddedKeys == b.paddedKeys && a.customMask == b.customMask && a.maxTokens == b.maxTokens &&
           a.observe == b.observe && a.longTexts == b.longTexts && a.keepMlp == b.keepMlp && a.edits == b.edits &&
           a.editsShownClean == b.editsShownClean && a.target == b.target && a.beams == b.beams;
}

bool Speculation::serves(const ComputeRequest &speculated, const ComputeRequest &press)
{
    ComputeRequest same = press;
    same.observe = speculated.observe;
    return speculated.observe.covers(press.observe) && sameRequest(speculated, same);
}

void Speculation::start(ComputeRequest request, std::shared_ptr<const Trace<float>> unedited,
                        std::shared_ptr<const Mat<double>> induction, const QString &inductionProblem,
                        std::shared_ptr<const Trace<float>> clean, bool pointed)
{
    discard();
    const quint64 token = ++m_token;
    m_running = true;
    m_pointed = pointed;
    ++m_starts;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    request.generation = 0; // the press gives it the session's generation
    request.cancel = nullptr;
    m_request = request;
    m_halfway = std::make_shared<std::atomic<bool>>(false);
    m_pooled = std::make_shared<std::atomic<bool>>(false);
    int first = std::numeric_limits<int>::max();
    for (const Intervention &e : request.edits)
        first = std::min(first, e.layer);
    // The work: the edited forward's layers from the first edited one, then, for a causal model
    // without a clean trace to copy, the clean model's whole forward. Called on the speculation's
    // thread as each layer of either starts (done: the layers finished; the second starts from 0).
    struct Count {
        int forward = 0, last = -1;
    };
    const bool cleanWhole = !clean && request.model && request.model->info().causal;
    request.progress = [halfway = m_halfway, count = std::make_shared<Count>(), first, cleanWhole](int done,
                                                                                                   int layers) {
        if (done < count->last)
            ++count->forward;
        count->last = done;
        const int from = std::clamp(first, 0, layers), edited = layers - from;
        const int total = edited + (cleanWhole ? layers : 0);
        const int work = count->forward == 0 ? std::max(0, done - from) : edited + done;
        if (2 * work >= total)
            halfway->store(true);
    };
    QPointer<Speculation> self(this);
    auto cancel = m_cancel;
    auto pooled = m_pooled;
    const int holdBefore = m_holdBeforeMs, holdAfter = m_holdAfterMs;
    QThreadPool *pool = pointed ? m_pointedPool : m_pool;
    pool->start([self, token, cancel, pooled, holdBefore, holdAfter, pointed, computing = m_computing,
                 request = std::move(request), unedited = std::move(unedited), induction = std::move(induction),
                 inductionProblem, clean = std::move(clean)]() mutable {
        const auto hold = [&cancel](int ms) {
            QElapsedTimer held;
            held.start();
            while (held.elapsed() < ms && !cancel->load())
                QThread::msleep(5);
        };
#ifdef Q_OS_LINUX
        if (!pointed)
            setpriority(PRIO_PROCESS, 0, 10); // this thread only: Linux keeps a nice value per thread
#endif
        // after the one discarded before it has stopped (at its next layer boundary)
        const std::lock_guard<std::mutex> one(*computing);
        // Its loops on this thread alone until a press waits for it (hurry()): the core's pool serves one
        // caller at a time, so a loop of this one holding it would make the loops of a press computing
        // beside it serial, and its helpers (at normal priority) would give this one their cores.
        setThreadPoolGate(pooled.get());
        hold(holdBefore);
        std::shared_ptr<ComputeSnapshot> snap;
        if (!cancel->load()) {
            request.cancel = cancel.get();
            // models of its own, let go of afterwards: only the snapshot keeps its traces
            CpuBackend backend;
            LiveModels models(&backend);
            models.setUneditedHint(std::move(unedited));
            models.setCleanHint(std::move(clean));
            if (induction || !inductionProblem.isEmpty())
                models.seedInduction(request.model, std::move(induction), inductionProblem);
            QElapsedTimer timer;
            timer.start();
            try {
                snap = computeSnapshot(request, backend, models);
                snap->totalMs = double(timer.nsecsElapsed()) / 1e6;
            } catch (const std::bad_alloc &) {
                snap.reset(); // the press computes it as usual and says so
            }
        }
        setThreadPoolGate(nullptr); // the thread serves other speculations; `pooled` goes with this task
        if (snap && !snap->status.ok())
            snap.reset();
        hold(holdAfter);
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, token, snap = std::move(snap)]() mutable {
                if (self)
                    self->onDone(token, std::move(snap));
            },
            Qt::QueuedConnection);
    });
}

void Speculation::onDone(quint64 token, std::shared_ptr<ComputeSnapshot> snapshot)
{
    if (token != m_token || !m_running) // discarded or started again since
        return;
    m_running = false;
    m_pointed = false;
    m_cancel.reset();
    m_pooled.reset();
    m_ready = std::move(snapshot);
    emit finished(m_ready != nullptr);
}

void Speculation::discard()
{
    if (m_cancel)
        m_cancel->store(true);
    m_cancel.reset();
    m_halfway.reset();
    m_pooled.reset();
    ++m_token;
    m_running = false;
    m_pointed = false;
    m_ready.reset();
}

std::shared_ptr<ComputeSnapshot> Speculation::take(const ComputeRequest &request)
{
    if (!m_ready || !serves(m_request, request))
        return nullptr;
    std::shared_ptr<ComputeSnapshot> out = std::move(m_ready);
    m_ready.reset();
    return out;
}

bool Speculation::covers(const ComputeRequest &request) const
{
    return (m_running || m_ready) && serves(m_request, request);
}

bool Speculation::waitForTests(int ms)
{
    QElapsedTimer t;
    t.start();
    while (m_running && t.elapsed() < ms)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    return m_ready != nullptr;
}

} // namespace attnviz::ui
