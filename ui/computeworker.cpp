// SPDX-License-Identifier: GPL-3.0-or-later
#include "computeworker.h"

#include <QElapsedTimer>
#include <QMetaObject>

#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::ui {

ComputeWorker::ComputeWorker(std::unique_ptr<Backend> backend, QObject *parent)
    : QObject(parent)
    , m_backend(std::move(backend))
{
}

ComputeWorker::~ComputeWorker() = default;

void ComputeWorker::post(ComputeRequest request)
{
    m_latest.store(request.generation);
    QMutexLocker lock(&m_mutex);
    m_pending = std::move(request);
    if (!m_scheduled) {
        m_scheduled = true;
        QMetaObject::invokeMethod(this, "process", Qt::QueuedConnection);
    }
}

void ComputeWorker::process()
{
    std::optional<ComputeRequest> req;
    {
        QMutexLocker lock(&m_mutex);
        req.swap(m_pending);
        m_scheduled = false;
    }
    if (!req)
        return;
    QElapsedTimer timer;
    timer.start();
    emit started(req->generation, int(req->sentence.size() / 5));
#ifdef _OPENMP
    // Inputs up to ~1024 tokens run on this thread alone: waking OpenMP workers costs more than it
    // saves when the UI thread wants the other core to paint. Measured on the 2-core dev machine
    // (d_model 768, 12 heads; attnviz bench with 1 vs 2 OpenMP threads): 128 tokens 24 vs 128 ms,
    // 512 tokens 88 vs 160 ms, 2048 tokens 738 vs ~700 ms. This only sets this thread's OpenMP
    // team size; the core decides the rest.
    static const int defaultThreads = omp_get_max_threads();
    const int approxTokens = int(std::max(req->sentence.size(), req->keySentence.size()) / 4);
    omp_set_num_threads(approxTokens <= 1024 ? 1 : defaultThreads);
#endif
    std::shared_ptr<ComputeSnapshot> snap = computeSnapshot(*req, *m_backend, m_cache);
    snap->totalMs = double(timer.nsecsElapsed()) / 1e6;
    // Sent even when a newer request is already queued: the session shows it if it is newer than
    // what is on screen (dropping it here would starve the views while someone types faster than
    // the compute).
    emit finished(SnapshotPtr(std::move(snap)));
}

} // namespace attnviz::ui
