// SPDX-License-Identifier: GPL-3.0-or-later
// Attention's context, heads concatenated: C[i, h d_head + c] = sum_j W_h[i, j] V[j, g d_head + c]
// over the keys row i can see (g the key/value head of query head h; masked keys weigh 0), weights
// (heads, cap, cap) as attend.comp writes them. One invocation computes one column of 4 rows (each
// value of V read once for the four). Then the head mean of the same rows (headavg.comp) and the
// output projection (linear.comp).
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, t, cap, first row p
    uvec4 u1; // dHead, heads (dispatched), ldv, ldc
    uvec4 u2; // group, causal, -, -
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) readonly buffer VBuf { float V[]; };
layout(std430, binding = 3) writeonly buffer CBuf { float C[]; };

void main()
{
    uint col = gl_GlobalInvocationID.x, r0 = 4u * gl_GlobalInvocationID.y;
    uint dh = p.u1.x;
    if (r0 >= p.u0.x || col >= p.u1.y * dh)
        return;
    uint t = p.u0.y, cap = p.u0.z, i0 = p.u0.w + r0;
    uint last = i0 + min(4u, p.u0.x - r0) - 1u; // the invocation's rows: i0 .. last
    uint h = col / dh, c = col % dh, g = h / p.u2.x;
    uint keys = p.u2.y != 0u ? last + 1u : t; // an earlier row's weights are 0 past its own keys
    uint wBase = h * cap * cap, vBase = g * dh + c;
    uint w0 = wBase + i0 * cap, w1 = wBase + min(i0 + 1u, last) * cap, w2 = wBase + min(i0 + 2u, last) * cap,
         w3 = wBase + last * cap;
    vec4 s = vec4(0.0);
    for (uint j = 0u; j < keys; ++j)
        s += vec4(Wt[w0 + j], Wt[w1 + j], Wt[w2 + j], Wt[w3 + j]) * V[j * p.u1.z + vBase];
    uint out0 = i0 * p.u1.w + col;
    C[out0] = s.x;
    if (i0 + 1u <= last)
        C[out0 + p.u1.w] = s.y;
    if (i0 + 2u <= last)
        C[out0 + 2u * p.u1.w] = s.z;
    if (i0 + 3u <= last)
        C[out0 + 3u * p.u1.w] = s.w;
}
