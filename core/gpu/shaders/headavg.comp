// SPDX-License-Identifier: GPL-3.0-or-later
// The mean over heads of rows [p, p + rows) of one layer's weights (heads, cap, cap), summed head
// after head and divided by the heads as the CPU forward does; the whole stride of each row, so
// the columns past t stay 0 for the rows a longer text appends.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, heads, cap, first row p
    uvec4 u1;
    uvec4 u2;
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) writeonly buffer ABuf { float Avg[]; };

void main()
{
    uint j = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    uint cap = p.u0.z;
    if (r >= p.u0.x || j >= cap)
        return;
    uint i = p.u0.w + r;
    float s = Wt[i * cap + j];
    for (uint h = 1u; h < p.u0.y; ++h)
        s += Wt[h * cap * cap + i * cap + j];
    Avg[i * cap + j] = s / float(p.u0.y);
}
