// SPDX-License-Identifier: GPL-3.0-or-later
// The mean over heads of rows [p, p + rows) of attention weights (heads at headStride, rows at cap),
// summed head after head and divided by the heads as the CPU forward and core do; the whole stride
// of each row, so the columns past t stay 0 for the rows a longer text appends. Heads in several
// storage buffers (the attention op) come one dispatch each: a later one adds onto the partial sum
// (mode bit 0), all but the last leave it undivided (mode bit 1).
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, heads (in this buffer), cap, first row p
    uvec4 u1; // headStride (0: cap^2), mode, divisor (0: heads)
    uvec4 u2;
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) buffer ABuf { float Avg[]; };

void main()
{
    uint j = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    uint cap = p.u0.z;
    if (r >= p.u0.x || j >= cap)
        return;
    uint i = p.u0.w + r;
    uint headStride = p.u1.x != 0u ? p.u1.x : cap * cap;
    float s = (p.u1.y & 1u) != 0u ? Avg[i * cap + j] + Wt[i * cap + j] : Wt[i * cap + j];
    for (uint h = 1u; h < p.u0.y; ++h)
        s += Wt[h * headStride + i * cap + j];
    if ((p.u1.y & 2u) == 0u)
        s = s / float(p.u1.z != 0u ? p.u1.z : p.u0.y);
    Avg[i * cap + j] = s;
}
