// SPDX-License-Identifier: GPL-3.0-or-later
// memorybudget.h: the machine's memory and the process limits (sysconf, getrlimit), and the sizes
// an attention computation keeps, in saturating 64-bit arithmetic (a hostile shape cannot wrap).
#include "attnviz/memorybudget.h"

#include "attnviz/fileio.h"
#include "attnviz/model.h"

#include <sys/resource.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <limits>

namespace attnviz {

namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

uint64_t mul(uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}

uint64_t add(uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

uint64_t u(int v) { return v > 0 ? uint64_t(v) : 0; }


} // namespace

uint64_t memoryBudget()
{
    uint64_t budget = kMaxComputeBytes;
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && pageSize > 0)
        budget = std::min(budget, mul(uint64_t(pages), uint64_t(pageSize)) / 2);
    for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        struct rlimit rl {};
        if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            budget = std::min(budget, uint64_t(rl.rlim_cur) / 2);
    }
    return budget;
}

uint64_t attentionNumbers(const ResolvedShape &s, bool dropout)
{
    const uint64_t tq = u(s.tq), tk = u(s.tk), heads = u(s.numHeads);
    const uint64_t square = mul(tq, tk);
    uint64_t perSequence = mul(square, mul(heads, dropout ? 3 : 2)); // scores, weights (+ before dropout)
    perSequence = add(perSequence, square);                          // the head average
    const uint64_t inner = s.dInner ? u(s.dInner) : mul(heads, u(s.dHead));
    perSequence = add(perSequence, mul(tq, inner));                  // q
    perSequence = add(perSequence, mul(mul(tk, inner), 2));          // k, v
    perSequence = add(perSequence, mul(tq, inner));                  // context
    perSequence = add(perSequence, mul(tq, u(std::max(s.dOut, s.dInner)))); // output
    return mul(perSequence, std::max<uint64_t>(1, u(s.batch)));
}

Status checkMemory(uint64_t bytes, const std::string &name, const std::string &what)
{
    const uint64_t budget = memoryBudget();
    if (bytes <= budget)
        return {};
    const std::string need = bytes == kSaturated ? std::string("more than 16 EB") : describeBytes(bytes);
    return Status::error(StatusCode::InvalidInput, name + ": " + what + " needs " + need + ", more than the " +
                                                       describeBytes(budget) + " one computation may use here");
}

Status checkAttentionMemory(const ResolvedShape &s, bool dropout, size_t scalarBytes, const std::string &name,
                            size_t extraPerNumber)
{
    const uint64_t numbers = attentionNumbers(s, dropout);
    const std::string what = std::to_string(s.batch) + " x " + std::to_string(s.numHeads) + " head(s) x " +
                             std::to_string(s.tq) + " x " + std::to_string(s.tk) + " tokens of attention";
    return checkMemory(mul(numbers, uint64_t(scalarBytes) + extraPerNumber), name, what);
}

uint64_t traceBytes(const ModelInfo &info, int tokens, size_t scalarBytes, bool keepScores, size_t extraPerWeight,
                    bool keepMlp, bool keepWeights, bool keepStages, bool sixteenBit)
{
    const uint64_t t = u(tokens), layers = std::max<uint64_t>(1, u(info.layers)), heads = std::max<uint64_t>(1, u(info.heads));
    const uint64_t d = u(info.dModel), inner = std::max(d, mul(heads, u(info.dHead))), ff = u(info.dFeedForward);
    const uint64_t square = mul(t, t);
    if (!keepWeights && !keepScores) { // no t x t matrix kept: linear in the text
        const uint64_t kvInner = info.kvHeads > 0 ? mul(u(info.kvHeads), u(info.dHead)) : inner;
        // per layer: each row's log-sum-exp per head, q, k and v (a copy per query head with the
        // stages, the key/value heads' own without), and with the stages resid_pre, ln1, resid_mid,
        // resid_post, q and k before rotation, z, attn_out
        const uint64_t stages = add(mul(d, 5), mul(inner, 3));
        uint64_t perToken = add(heads, inner);
        perToken = add(perToken, mul(keepStages ? inner : kvInner, 2));
        if (keepStages)
            perToken = add(perToken, stages);
        // 16-bit q, k and v: counted at half a float32 (the log-sum-exp stays float)
        const bool half = sixteenBit && !keepStages && scalarBytes == 4;
        if (half)
            perToken = add(heads, add(inner, mul(kvInner, 2)) / 2);
        uint64_t numbers = mul(mul(perToken, layers), t);
        // The layer being computed without its stages (forward.cpp's spare layers): the stream it adds
        // into in place, its input (whose rows then hold the context) and W_O's output; with 16-bit
        // rows also its q, k and v in float until they are narrowed, W_O's output then in q's rows.
        // (An edit of resid_pre keeps a copy of the stream: one (t, d) more, not counted.)
        if (!keepStages)
            numbers = add(numbers, mul(half ? add(add(d, mul(inner, 2)), mul(kvInner, 2)) : add(mul(d, 2), inner), t));
        numbers = add(numbers, mul(t, mul(d, 3))); // embeddings, input, final
        if (keepStages || kvInner == inner)        // k, v as projected, before they are shared out
            numbers = add(numbers, mul(t, mul(kvInner, 2)));
        // the feed-forward's rows, in blocks of 16 MB of hidden units (forward.cpp)
        const uint64_t block = std::max<uint64_t>(256, (uint64_t(16) << 20) / std::max<uint64_t>(1, mul(ff, scalarBytes)) / 64 * 64);
        numbers = add(numbers, mul(std::min(t, block), add(mul(ff, 2), d)));
        if (keepMlp && info.architecture.gatedMlp)
            numbers = add(numbers, mul(mul(t, mul(ff, 2)), layers));
        // The text's t x t mask is built only for the user's masked cells and keys, and a sliding
        // window's for its layer while it is computed: one layer's is counted.
        return add(mul(numbers, uint64_t(scalarBytes)), info.architecture.slides() ? square : 0);
    }
    const uint64_t weights = mul(square, heads); // per layer
    // a causal model's weights are stored lower (WeightMatrix): t (t + 1) / 2 of each head's
    const uint64_t stored = info.causal ? add(square, t) / 2 : square;
    uint64_t numbers = add(mul(stored, heads), keepScores ? weights : 0);
    numbers = add(numbers, stored);                       // the head average
    numbers = add(numbers, mul(t, add(mul(d, 4), mul(inner, 5)))); // resid_pre, ln1, resid_mid, resid_post; q k v z out
    uint64_t bytes = mul(mul(numbers, layers), uint64_t(scalarBytes));
    bytes = add(bytes, mul(square, layers));                       // each layer's t x t mask (one byte a cell)
    bytes = add(bytes, mul(mul(weights, layers), uint64_t(extraPerWeight)));
    bytes = add(bytes, mul(mul(t, add(mul(d, 4), ff)), uint64_t(scalarBytes))); // embeddings, input, final; FF rows
    if (keepMlp && info.architecture.gatedMlp) // the gate's and up's products, kept per layer
        bytes = add(bytes, mul(mul(mul(t, mul(ff, 2)), layers), uint64_t(scalarBytes)));
    return bytes;
}

int tokensWithin(const ModelInfo &info, uint64_t budget, size_t scalarBytes, bool keepScores, size_t extraPerWeight,
                 bool keepMlp, bool keepWeights, bool keepStages, bool sixteenBit)
{
    int lo = 0, hi = info.maxPositions > 0 ? info.maxPositions : (1 << 30); // traceBytes grows with the tokens
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (traceBytes(info, mid, scalarBytes, keepScores, extraPerWeight, keepMlp, keepWeights, keepStages, sixteenBit) <=
            budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

bool sixteenBitKept(const ModelInfo &info)
{
    return info.dtype.rfind("BF16", 0) == 0 || info.dtype.rfind("F16", 0) == 0;
}

Status checkTraceMemory(const ModelInfo &info, int tokens, size_t scalarBytes, bool keepScores, size_t extraPerWeight,
                        bool keepMlp, bool keepWeights, bool keepStages, bool sixteenBit)
{
    const uint64_t bytes =
        traceBytes(info, tokens, scalarBytes, keepScores, extraPerWeight, keepMlp, keepWeights, keepStages, sixteenBit);
    const uint64_t budget = memoryBudget();
    if (bytes <= budget)
        return {};
    const std::string need = bytes == kSaturated ? std::string("more than 16 EB") : describeBytes(bytes);
    return Status::error(StatusCode::InvalidInput,
                         info.name + ": " + describeCount(tokens) + " tokens through " + std::to_string(info.layers) +
                             " layers x " + std::to_string(info.heads) + " heads need " + need +
                             " of attention, more than the " + describeBytes(budget) +
                             " one computation may use here (at most " +
                             describeCount(tokensWithin(info, budget, scalarBytes, keepScores, extraPerWeight, keepMlp,
                                                        keepWeights, keepStages, sixteenBit)) +
                             " tokens fit)");
}

void keepTraceMemory()
{
#if defined(__GLIBC__)
    static const bool once = [] {
        // Blocks below 32 MB (glibc's largest mmap threshold; a 1,024 x 1,024 head is 4 MB) come
        // from the heap, and the heap is not trimmed below 2 GB of free top: fixed values also stop
        // glibc's dynamic threshold from moving.
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
        return true;
    }();
    (void)once;
#endif
}

} // namespace attnviz
