// SPDX-License-Identifier: GPL-3.0-or-later
// The compute thread's thin adapter: keeps only the newest request (older ones not started yet
// are replaced), computes it through the Backend, and hands back an immutable snapshot. The
// session drops any snapshot older than the one it already shows.
#pragma once

#include "live/livecompute.h"
#include "live/livetypes.h"

#include "attnviz/backend.h"

#include <QMutex>
#include <QObject>

#include <atomic>
#include <memory>
#include <optional>

namespace attnviz::ui {

class ComputeWorker : public QObject {
    Q_OBJECT
public:
    explicit ComputeWorker(std::unique_ptr<Backend> backend, QObject *parent = nullptr);
    ~ComputeWorker() override;

    // Thread-safe. Replaces any request not started yet.
    void post(ComputeRequest request);
    // Thread-safe. Stops the request of `generation` (and any older one): one not started yet is not
    // computed, a running trace stops between layers; either comes back as a Cancelled snapshot.
    void cancel(quint64 generation);
    quint64 latestGeneration() const { return m_latest.load(); }
    // Thread-safe. LiveModels::adopt on the compute thread, before any request posted after this call.
    void adopt(const Model *model, std::shared_ptr<Trace<float>> trace);
    // Thread-safe. Tests only (LiveSession::holdComputeForTests): each request waits `ms` first.
    void setHoldForTests(int ms) { m_holdMs.store(ms); }

signals:
    void started(quint64 generation, int approxTokens);
    // A model's trace of `generation`: `done` of `layers` layers computed.
    void progressed(quint64 generation, int done, int layers);
    void finished(attnviz::ui::SnapshotPtr snapshot);

private:
    Q_INVOKABLE void process();

    std::unique_ptr<Backend> m_backend;
    LiveModels m_models; // the models this thread asks for traces (they keep their caches)
    QMutex m_mutex;
    std::optional<ComputeRequest> m_pending;
    bool m_scheduled = false;
    std::atomic<quint64> m_latest{0};
    std::atomic<bool> m_cancel{false}; // set by post(): the running trace is stale
    std::atomic<quint64> m_cancelledUpTo{0}; // cancel(): requests up to this generation stop
    std::atomic<int> m_holdMs{0};
};

} // namespace attnviz::ui
