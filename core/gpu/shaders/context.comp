// SPDX-License-Identifier: GPL-3.0-or-later
// Attention's context, heads concatenated: C[i, h d_head + c] = sum_j W_h[i, j] V[j, g d_head + c]
// over the keys row i can see (g the key/value head of query head h; masked keys weigh 0). The
// dispatched heads are query heads headBase + h, their weights at h headStride + i cap (as
// attend.comp writes them). Then the head mean of the same rows (headavg.comp) and the output
// projection (linear.comp).
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, t, cap, first row p
    uvec4 u1; // dHead, heads (dispatched), ldv, ldc
    uvec4 u2; // group, causal, headBase, headStride (0: cap^2)
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) readonly buffer VBuf { float V[]; };
layout(std430, binding = 3) writeonly buffer CBuf { float C[]; };

void main()
{
    uint col = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    uint dh = p.u1.x;
    if (r >= p.u0.x || col >= p.u1.y * dh)
        return;
    uint t = p.u0.y, cap = p.u0.z, i = p.u0.w + r;
    uint h = col / dh, c = col % dh, g = (p.u2.z + h) / p.u2.x;
    uint keys = p.u2.y != 0u ? i + 1u : t;
    uint headStride = p.u2.w != 0u ? p.u2.w : cap * cap;
    uint wBase = h * headStride + i * cap, vBase = g * dh + c;
    float s = 0.0;
    for (uint j = 0u; j < keys; ++j)
        s += Wt[wBase + j] * V[j * p.u1.z + vBase];
    C[i * p.u1.w + p.u2.z * dh + col] = s;
}
