// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnviz/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace attnviz {

namespace {

class Pool {
public:
    static Pool &instance()
    {
        static Pool pool;
        return pool;
    }

    int threads() const { return m_threads.load(); }
    void setThreads(int n) { m_threads = std::max(1, n); }

    // Returns false when another caller holds the pool (the caller then runs serially).
    bool run(int n, const std::function<void(int)> &body)
    {
        std::unique_lock<std::mutex> busy(m_busy, std::try_to_lock);
        if (!busy.owns_lock())
            return false;
        const int helpers = ensureWorkers(std::min(threads() - 1, n - 1));
        {
            std::lock_guard<std::mutex> lk(m_mutex);
            m_body = &body;
            m_count = n;
            m_next = 0;
            m_closed = false;
            m_wanted = helpers;
            ++m_generation;
            m_published.store(m_generation, std::memory_order_release);
        }
        m_wake.notify_all();
        drain();
        // Every task is taken: a helper that has not joined by now stays out of this loop. Why: on a
        // busy machine a helper may not run for milliseconds (the scheduler gave its core to another
        // program), and waiting for it to merely check in cost 2-3x a 0.3 ms call under load. The
        // helpers that joined finish their last tasks within microseconds: wait for them briefly awake,
        // then asleep.
        {
            std::lock_guard<std::mutex> lk(m_mutex);
            m_closed = true;
        }
        spinWhile([&] { return m_active.load(std::memory_order_acquire) != 0; });
        std::unique_lock<std::mutex> lk(m_mutex);
        m_done.wait(lk, [&] { return m_active.load() == 0; });
        m_body = nullptr;
        return true;
    }

    ~Pool()
    {
        {
            std::lock_guard<std::mutex> lk(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        for (auto &t : m_workers)
            t.join();
    }

private:
    Pool()
    {
        int n = int(std::thread::hardware_concurrency());
        if (const char *env = std::getenv("ATTNVIZ_THREADS"))
            n = std::atoi(env);
        m_threads = std::max(1, n);
    }

    void drain()
    {
        for (;;) {
            const int i = m_next.fetch_add(1);
            if (i >= m_count)
                return;
            (*m_body)(i);
        }
    }

    // Starts helpers up to n; returns how many there are (fewer where the system refuses a thread: a
    // memory or process limit; the work then runs on those, or on the caller alone).
    int ensureWorkers(int n)
    {
        while (int(m_workers.size()) < n) {
            const int index = int(m_workers.size());
            try {
                m_workers.emplace_back([this, index] { workerLoop(index); });
            } catch (const std::system_error &) {
                break;
            }
        }
        return std::min(n, int(m_workers.size()));
    }

    // Spins (a pause per check) while `busy()` holds, for at most kSpin. Why: one attention call
    // is several parallel loops a few microseconds apart (projections, scores, W_o); a sleeping
    // thread takes tens of microseconds to wake (more in a VM), a third of a 0.5 ms call over its
    // loops. The bound keeps an idle pool asleep, as before.
    template <typename Busy>
    static void spinWhile(Busy busy)
    {
        constexpr auto kSpin = std::chrono::microseconds(100);
        const auto until = std::chrono::steady_clock::now() + kSpin;
        while (busy()) {
            for (int i = 0; i < 16; ++i)
                pause();
            if (std::chrono::steady_clock::now() > until)
                return;
        }
    }

    static void pause()
    {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }

    void workerLoop(int index)
    {
        uint64_t seen = 0;
        for (;;) {
            spinWhile([&] { return m_published.load(std::memory_order_acquire) == seen; });
            {
                std::unique_lock<std::mutex> lk(m_mutex);
                m_wake.wait(lk, [&] { return m_stop || (m_generation != seen && index < m_wanted); });
                if (m_stop)
                    return;
                seen = m_generation;
                if (m_closed)
                    continue; // too late: the caller has taken every task of this loop
                m_active.fetch_add(1, std::memory_order_acq_rel);
            }
            drain();
            if (m_active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                std::lock_guard<std::mutex> lk(m_mutex);
                m_done.notify_one();
            }
        }
    }

    std::atomic<int> m_threads{1};
    std::mutex m_busy;
    std::mutex m_mutex;
    std::condition_variable m_wake, m_done;
    std::vector<std::thread> m_workers;
    const std::function<void(int)> *m_body = nullptr;
    int m_count = 0;
    std::atomic<int> m_next{0};
    std::atomic<int> m_active{0};
    int m_wanted = 0;
    bool m_closed = true; // the current loop takes no more helpers (under m_mutex)
    uint64_t m_generation = 0;
    std::atomic<uint64_t> m_published{0}; // m_generation, for the threads spinning outside the mutex
    bool m_stop = false;
};

thread_local const std::atomic<bool> *t_gate = nullptr;

} // namespace

int coreThreads() { return Pool::instance().threads(); }
void setCoreThreads(int n) { Pool::instance().setThreads(n); }

void setThreadPoolGate(const std::atomic<bool> *gate) { t_gate = gate; }

void parallelFor(int n, double work, const std::function<void(int)> &body)
{
    // ~1 MFLOP per extra task is where waking a sleeping thread (tens of microseconds) pays off.
    if (n <= 1 || coreThreads() == 1 || work < 2.0e6 || (t_gate && !t_gate->load(std::memory_order_relaxed)) ||
        !Pool::instance().run(n, body))
        for (int i = 0; i < n; ++i)
            body(i);
}

} // namespace attnviz
