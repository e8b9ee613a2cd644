// SPDX-License-Identifier: GPL-3.0-or-later
// Memory checks before large allocations: how much one computation may take on this machine, and
// what an attention computation keeps, so that a file or a sentence asking for too much gets one
// clear message instead of std::bad_alloc.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <cstdint>
#include <string>

namespace attnviz {

// The stated limit: no single computation takes more than this, whatever the machine.
constexpr uint64_t kMaxComputeBytes = 4'000'000'000; // 4 GB

// What one computation may allocate here: the smallest of kMaxComputeBytes, half the physical
// memory, and half the process's address-space and data limits (ulimit -v / -d) when set.
uint64_t memoryBudget();

// Numbers computeAttention keeps for `shape` (every stage of every sequence: q k v, scores and
// weights per head, weights before dropout when `dropout`, the head average, context, output).
uint64_t attentionNumbers(const ResolvedShape &shape, bool dropout);

// An error when `bytes` exceed memoryBudget(): "NAME: WHAT needs 9.6 GB, more than the 4.3 GB one
// computation may use here". `what` says what is being sized ("1 x 20000 x 20000 attention weights").
Status checkMemory(uint64_t bytes, const std::string &name, const std::string &what);

// The check for a resolved attention problem, for `scalarBytes` per number (8 float64, 4 float32)
// plus `extraPerNumber` bytes the caller adds per kept number (the JSON text of `compute`).
Status checkAttentionMemory(const ResolvedShape &shape, bool dropout, size_t scalarBytes, const std::string &name,
                            size_t extraPerNumber = 0);

} // namespace attnviz
