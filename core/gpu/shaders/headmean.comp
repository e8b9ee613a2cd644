// SPDX-License-Identifier: GPL-3.0-or-later
// weights_avg (t_q, t_k) = mean over heads of weights (H, t_q, t_k), summed head after head as the
// CPU core does, then divided by H. Heads arrive in chunks (one storage buffer each): a later chunk
// adds onto the partial sum (mode bit 0), the last one divides (mode bit 1).
// A grid-stride loop keeps the dispatch small; one invocation loops (n / threads) * heads times,
// a few hundred at t = 3000.
#version 440

layout(local_size_x = 256) in;

// Host struct: HeadMeanParams in rhiattention.cpp (std140: 8 scalars of 4 bytes, 32 bytes).
layout(std140, binding = 0) uniform Params {
    uint n;        // t_q * t_k
    uint numHeads; // heads in this chunk
    uint threads;  // total invocations dispatched
    uint mode;     // bit 0: add onto Avg, bit 1: divide by `divisor`
    float divisor; // H, all heads
    uint pad0;
    uint pad1;
    uint pad2;
} p;

layout(std430, binding = 1) readonly buffer WBuf { float W[]; };
layout(std430, binding = 2) buffer AvgBuf { float Avg[]; };

void main()
{
    for (uint idx = gl_GlobalInvocationID.x; idx < p.n; idx += p.threads) {
        float s = (p.mode & 1u) != 0u ? Avg[idx] + W[idx] : W[idx];
        for (uint h = 1u; h < p.numHeads; ++h)
            s += W[h * p.n + idx];
        if ((p.mode & 2u) != 0u)
            s = s / p.divisor;
        Avg[idx] = s;
    }
}
