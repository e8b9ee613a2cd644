// SPDX-License-Identifier: GPL-3.0-or-later
// Memory checks before large allocations: how much one computation may take on this machine, and
// what an attention computation keeps, so that a file or a sentence asking for too much gets one
// clear message instead of std::bad_alloc. Also the allocator policy for repeated large traces.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <cstdint>
#include <string>

namespace attnviz {

struct ModelInfo; // model.h

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

// Bytes a trace of a model of `info`'s shape keeps for `tokens` tokens (Model::trace), for
// `scalarBytes` per number plus `extraPerWeight` bytes per attention weight the caller adds (the
// JSON text of `model run`). Every head's t x t weights per layer dominate (with the raw scores too
// when `keepScores`), then the head average and the layer's t x t mask, then the (t, d) stages of
// each layer and the feed-forward's hidden rows; with `keepMlp`, a gated MLP's two (t, d_ff)
// products per layer (LayerTrace::mlpPre, mlpPreLinear). Without `keepWeights` (Observe::weights)
// no t x t matrix is kept: per layer q, k, v and each row's log-sum-exp, the stages where
// `keepStages` (Observe::stages; else a spare layer's worth), and a sliding window's mask while its
// layer is computed (the user's masked cells and keys add t x t bytes, not counted). `sixteenBit`
// (Observe::sixteenBit), without the weights and the stages: q, k and v kept in 2 bytes a number.
uint64_t traceBytes(const ModelInfo &info, int tokens, size_t scalarBytes, bool keepScores, size_t extraPerWeight = 0,
                    bool keepMlp = false, bool keepWeights = true, bool keepStages = true, bool sixteenBit = false);

// The most tokens whose trace fits `budget` bytes (at most `info.maxPositions` when it has one).
int tokensWithin(const ModelInfo &info, uint64_t budget, size_t scalarBytes, bool keepScores,
                 size_t extraPerWeight = 0, bool keepMlp = false, bool keepWeights = true, bool keepStages = true,
                 bool sixteenBit = false);

// Whether a trace asking Observe::sixteenBit keeps q, k and v in 16 bits: the model's weights are
// BF16 or F16 (ModelInfo::dtype names that type first: "BF16", "BF16 (seeded)", "BF16+F32").
bool sixteenBitKept(const ModelInfo &info);

// Refuses a trace above memoryBudget(), before anything is allocated:
// "NAME: 20,000 tokens through 12 layers x 12 heads need 231 GB of attention, more than the 4.0 GB
// one computation may use here (at most 2,944 tokens fit)". NAME is info.name. `sixteenBit`: as
// traceBytes' (the caller says whether the model's q, k and v are kept in 16 bits).
Status checkTraceMemory(const ModelInfo &info, int tokens, size_t scalarBytes, bool keepScores,
                        size_t extraPerWeight = 0, bool keepMlp = false, bool keepWeights = true,
                        bool keepStages = true, bool sixteenBit = false);

// Asks the C library's allocator (glibc) to keep freed blocks of up to 32 MB in the process for the
// next trace instead of handing each back to the kernel: a real model's trace is ~1 GB of fresh
// matrices at 1,024 tokens, and refaulting it page by page took more time than the arithmetic
// (measured: 4.2 s of CPU against 1.6 s with the memory kept). The peak is unchanged; the memory a
// trace used stays resident for the next one. Called once a real model is opened; idempotent.
void keepTraceMemory();

} // namespace attnviz
