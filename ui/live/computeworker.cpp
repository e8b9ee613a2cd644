// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/computeworker.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <QThread>
#include <QtGlobal>

#include <algorithm>
#include <new>

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

void ComputeWorker::adopt(const Model *model, std::shared_ptr<Trace<float>> trace)
{
    // queued like process(): runs before the requests posted after it
    QMetaObject::invokeMethod(
        this, [this, model, trace = std::move(trace)]() mutable { m_models.adopt(model, std::move(trace)); },
        Qt::QueuedConnection);
}

void ComputeWorker::cancel(quint64 generation)
{
    m_cancelledUpTo.store(std::max(m_cancelledUpTo.load(), generation));
    m_cancel.store(true);
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
    const quint64 generation = req->generation;
    req->progress = [this, generation](int done, int layers) { emit progressed(generation, done, layers); };
    emit started(req->generation, int(req->sentence.size() / 5));
    std::shared_ptr<ComputeSnapshot> snap;
    if (const int holdMs = m_holdMs.load(); holdMs > 0) // setHoldForTests
        QThread::msleep(ulong(holdMs));
    try {
        if (req->generation <= m_cancelledUpTo.load()) { // stopped before it began
            snap = std::make_shared<ComputeSnapshot>();
            snap->generation = req->generation;
            snap->status = Status::error(StatusCode::Cancelled, "trace cancelled");
        } else {
            snap = computeSnapshot(*req, *m_backend, m_models);
        }
    } catch (const std::bad_alloc &) {
        // The budget (memorybudget.h) is checked before a trace is made, but the machine may have
        // less free than it says: the window stays up, with the text and the model it had, and says so.
        m_models.dropTraces();
        snap = std::make_shared<ComputeSnapshot>();
        snap->generation = req->generation;
        snap->sentence = req->sentence;
        snap->keySentence = req->keySentence;
        snap->settings = req->settings;
        snap->trace = std::make_shared<const Trace<float>>();
        snap->status = Status::error(StatusCode::BackendFailed, "out of memory");
        snap->message = tr("Out of memory: this text needs more memory than is free here. Shorten it, or close "
                           "other programs; the text and the model are kept.");
        if (req->model) {
            snap->model = req->model;
            snap->modelInfo = req->model->info();
        }
    }
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
