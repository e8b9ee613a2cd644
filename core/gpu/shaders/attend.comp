// SPDX-License-Identifier: GPL-3.0-or-later
// One row of one head's attention, as the CPU forward's attend(): scores of query i against every
// key, q_h . k_g * scale (g the key/value head of query head h: grouped-query attention reads the
// compact k), soft-capped, then the masks (causal, the sliding window keeping keys j with
// i - w < j <= i, the user's cells and padding as bits), the softmax over the keys left, and zeros
// for masked keys and the rest of the row up to its stride (a row all masked is all 0). Weights
// are (heads, cap, cap) per layer, row i of head h at h cap^2 + i cap. With keepScores, the scaled
// and capped scores of every key, masked or not, go to S (same layout). One workgroup of 64 threads
// per (row, head), keys strided over the threads.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows (computed), t (keys), cap (weights stride), first row p
    uvec4 u1; // dHead, ldq, ldk, group (query heads per key/value head)
    uvec4 u2; // causal, window (0 none), hasMask, maskWords
    uvec4 u3; // keepScores, -, -, -
    vec4 f0;  // scale, softcap (0 none)
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer QBuf { float Q[]; };
layout(std430, binding = 2) readonly buffer KBuf { float K[]; };
layout(std430, binding = 3) readonly buffer MaskBuf { uint maskBits[]; };
layout(std430, binding = 4) buffer WBuf { float Wt[]; };
layout(std430, binding = 5) writeonly buffer SBuf { float S[]; };

shared float red[64];

// Reductions over the workgroup, called from main() by every invocation, outside any branch: each
// writes its part, then reads all 64 (two barriers instead of log2(64) + 1: barriers are what
// software rasterizers pay most for).
float reduceSum(float v, uint lid)
{
    red[lid] = v;
    barrier();
    float r = 0.0;
    for (uint k = 0u; k < 64u; ++k)
        r += red[k];
    barrier();
    return r;
}

float reduceMax(float v, uint lid)
{
    red[lid] = v;
    barrier();
    float r = red[0];
    for (uint k = 1u; k < 64u; ++k)
        r = max(r, red[k]);
    barrier();
    return r;
}

bool isMasked(uint i, uint j, uint keys, uint lo)
{
    if (j >= keys || j < lo)
        return true;
    if (p.u2.z != 0u)
        return (maskBits[i * p.u2.w + j / 32u] & (1u << (j % 32u))) != 0u;
    return false;
}

// No return before a barrier() and no barrier() in a branch (GLSL ES and some OpenGL drivers).
void main()
{
    uint r = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    bool live = r < p.u0.x;
    uint t = p.u0.y, cap = p.u0.z, i = p.u0.w + r;
    uint dh = p.u1.x, g = h / p.u1.w;
    uint keys = p.u2.x != 0u ? i + 1u : t;
    uint window = p.u2.y;
    uint lo = window > 0u && i + 1u > window ? i + 1u - window : 0u;
    uint qBase = i * p.u1.y + h * dh, wBase = h * cap * cap + i * cap;
    float scale = p.f0.x, softcap = p.f0.y;

    float mx = -1.0 / 0.0;
    for (uint j = lid; live && j < t; j += 64u) {
        uint kBase = j * p.u1.z + g * dh;
        float s = 0.0;
        for (uint c = 0u; c < dh; ++c)
            s += (scale * Q[qBase + c]) * K[kBase + c];
        if (softcap > 0.0)
            s = tanh(clamp(s / softcap, -15.0, 15.0)) * softcap;
        if (p.u3.x != 0u)
            S[wBase + j] = s;
        Wt[wBase + j] = s;
        if (!isMasked(i, j, keys, lo))
            mx = max(mx, s);
    }
    mx = reduceMax(mx, lid);
    bool none = isinf(mx); // every key masked: the row stays 0
    float sum = 0.0;
    for (uint j = lid; live && j < t; j += 64u) {
        float e = none || isMasked(i, j, keys, lo) ? 0.0 : exp(Wt[wBase + j] - mx);
        Wt[wBase + j] = e;
        sum += e;
    }
    sum = reduceSum(sum, lid);
    for (uint j = lid; live && j < cap; j += 64u)
        Wt[wBase + j] = j < t && !none ? Wt[wBase + j] / sum : 0.0;
}
