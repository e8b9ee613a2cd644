// SPDX-License-Identifier: GPL-3.0-or-later
// Speculative ablation: with a head selected, the request that pressing Ctrl+K (Edit ▸ Ablate the
// selected head) would post is computed in the background, on a thread of its own at idle priority
// that leaves the core's pool to others (hurry()), through the same computeSnapshot as the press. A
// press whose request matches takes the finished snapshot instead of computing it, or waits for the
// running one once it is half done (halfway()); any other change discards it. At most one is running or kept; LiveSession decides when to start
// one, when to take it and when to wait for it. A pointed one (the pointer resting on a head of the
// Layers × heads grid, or its menu open: a press is likely soon) runs at normal priority on a thread of
// its own (Linux keeps a nice value per thread, and no unprivileged thread can lower it again), and a
// press waits for it however little it has done (joinable()); one computes at a time either way.
#pragma once

#include "live/livetypes.h"

#include <QObject>

#include <atomic>
#include <memory>
#include <mutex>

class QThreadPool;

namespace attnviz::ui {

class Speculation : public QObject {
    Q_OBJECT
public:
    explicit Speculation(QObject *parent = nullptr);
    ~Speculation() override;

    // Computes `request` in the background, discarding what was running or kept. `unedited`: the
    // clean trace on screen, whose layers before the first edited one are copied (TraceRequest::
    // unedited; the numbers are the whole forward's either way). `induction`: the model's induction
    // scores the window already has (null: measured again). `clean`: a clean trace beside an edited
    // one the window holds (ComputeSnapshot::cleanTrace), whose rows the clean trace of this request
    // copies where they are the same text's (LiveModels::setCleanHint; null: computed whole).
    void start(ComputeRequest request, std::shared_ptr<const Trace<float>> unedited,
               std::shared_ptr<const Mat<double>> induction, const QString &inductionProblem,
               std::shared_ptr<const Trace<float>> clean = nullptr, bool pointed = false);
    // Stops the running one (between layers) and drops the kept one.
    void discard();
    // The finished snapshot when it serves `request` (the same text, masks, settings, model and edits,
    // observing as much or more), handed over and no longer kept; null otherwise.
    std::shared_ptr<ComputeSnapshot> take(const ComputeRequest &request);
    // Whether the one running or kept serves `request` (nothing new to start).
    bool covers(const ComputeRequest &request) const;

    bool running() const { return m_running; }
    bool ready() const { return m_ready != nullptr; }
    // The running one has computed half the layers of its edited forward or more (those from the first
    // edited layer on): a press waits for it rather than computing it again at normal priority; one
    // begun just now, at idle priority, could take far longer than the press on a busy machine.
    bool halfway() const { return m_running && m_halfway && m_halfway->load(); }
    // The running one is pointed (start()): at normal priority, as fast as the press's own compute.
    bool pointed() const { return m_running && m_pointed; }
    // A press whose request it covers waits for it rather than computing the same trace beside it.
    bool joinable() const { return pointed() || halfway(); }
    // Speculations started since construction (tests: nothing starts while nothing changes).
    int startCount() const { return m_starts; }
    // A press waits for the running one: its loops take the core's pool from now on (until then they
    // run on its own thread alone, see start()).
    void hurry()
    {
        if (m_running && m_pooled)
            m_pooled->store(true);
    }
    bool hurried() const { return m_running && m_pooled && m_pooled->load(); }
    // Tests only: a speculation waits `beforeMs` before it computes and `afterMs` after (unless
    // discarded meanwhile), running all the while.
    void setHoldForTests(int beforeMs, int afterMs)
    {
        m_holdBeforeMs = beforeMs;
        m_holdAfterMs = afterMs;
    }
    // Tests and the bench: waits (running the event loop) until none is running; true when one is kept.
    bool waitForTests(int ms);

    // The fields of two requests that make their snapshots the same.
    static bool sameRequest(const ComputeRequest &a, const ComputeRequest &b);
    // The snapshot of `speculated` serves `press`: the same but for what the trace observes, of which
    // it holds at least what `press` asks (a click on the grid shows the Weights tab, whose views read
    // one layer where the grid's read all).
    static bool serves(const ComputeRequest &speculated, const ComputeRequest &press);

signals:
    void finished(bool ready); // a speculation ended: kept (ready) or failed / stopped

private:
    void onDone(quint64 token, std::shared_ptr<ComputeSnapshot> snapshot);

    QThreadPool *m_pool, *m_pointedPool; // idle priority (nice 10 on Linux); normal priority
    // held by the one computing: a new one waits until a discarded one has stopped at its layer boundary
    std::shared_ptr<std::mutex> m_computing;
    bool m_pointed = false;
    int m_starts = 0;
    quint64 m_token = 0; // the newest start; results of older ones are dropped
    bool m_running = false;
    ComputeRequest m_request; // the running or kept one's
    std::shared_ptr<std::atomic<bool>> m_cancel, m_halfway, m_pooled;
    int m_holdBeforeMs = 0, m_holdAfterMs = 0;
    std::shared_ptr<ComputeSnapshot> m_ready;
};

} // namespace attnviz::ui
