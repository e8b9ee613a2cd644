// SPDX-License-Identifier: GPL-3.0-or-later
// A small blocking thread pool for the core's coarse parallel loops. Waiting threads spin at most
// 100 microseconds (the gap between the loops of one attention call) and then sleep on a condition
// variable, so a busy machine (the UI thread, other programs) costs a little throughput, never the
// collapse that OpenMP's unbounded spinning barriers show under oversubscription.
#pragma once

#include <atomic>
#include <functional>

namespace attnviz {

// Threads the core uses (hardware threads by default; ATTNVIZ_THREADS overrides; >= 1).
int coreThreads();
void setCoreThreads(int n);

// Runs body(i) for i in [0, n). In parallel when `work` (a rough flop count of the whole loop) is
// large enough to pay for waking threads and the pool is free; otherwise serially on this thread.
void parallelFor(int n, double work, const std::function<void(int)> &body);

// The calling thread's loops take the pool only while *gate is true; serially on the thread while it
// is false (null: always the pool, the default). For work in the background at a low priority: the
// pool serves one caller at a time, so a background loop holding it makes a foreground caller's loops
// serial, and lends the background thread a helper at normal priority. The numbers are the same either
// way (the tasks are the same, only who runs them differs).
void setThreadPoolGate(const std::atomic<bool> *gate);

} // namespace attnviz
