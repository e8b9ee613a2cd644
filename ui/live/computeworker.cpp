// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/computeworker.h"

#include <QElapsedTimer>
#include <QMetaObject>

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
    m_cancel.store(true); // the trace running now, if any, is stale
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
    m_cancel.store(false);
    req->cancel = &m_cancel;
    emit started(req->generation, int(req->sentence.size() / 5));
    std::shared_ptr<ComputeSnapshot> snap = computeSnapshot(*req, *m_backend, m_models);
    snap->totalMs = double(timer.nsecsElapsed()) / 1e6;
    // A trace stopped for a newer request: that request is queued and computes next.
    if (snap->status.code == StatusCode::Cancelled && m_latest.load() != req->generation)
        return;
    // Sent even when a newer request is already queued: the session shows it if it is newer than
    // what is on screen (dropping it here would starve the views while someone types faster than
    // the compute).
    emit finished(SnapshotPtr(std::move(snap)));
}

} // namespace attnviz::ui
