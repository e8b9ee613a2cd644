// SPDX-License-Identifier: GPL-3.0-or-later
// Rotary positions on q or k in place, Hugging Face's rotate_half layout: in each head the pairs
// (k, k + dims / 2) of its first `dims` entries turn by position i's angle. cos and sin come from the
// host (one row of dims / 2 per computed position, the RoPE variant's attention scaling included),
// as the CPU forward's rotaryRows makes them.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, heads, dHead, ld (elements a row)
    uvec4 u1; // off (first row's element), half (dims / 2), -, -
    uvec4 u2;
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) buffer QBuf { float Q[]; };
layout(std430, binding = 2) readonly buffer CosBuf { float cosT[]; };
layout(std430, binding = 3) readonly buffer SinBuf { float sinT[]; };

void main()
{
    uint half_ = p.u1.y;
    uint idx = gl_GlobalInvocationID.x; // (head, k) of one row
    uint row = gl_GlobalInvocationID.y;
    if (row >= p.u0.x || idx >= p.u0.y * half_)
        return;
    uint h = idx / half_, k = idx % half_;
    uint base = p.u1.x + row * p.u0.w + h * p.u0.z;
    float c = cosT[row * half_ + k], s = sinT[row * half_ + k];
    float x1 = Q[base + k], x2 = Q[base + k + half_];
    Q[base + k] = x1 * c - x2 * s;
    Q[base + k + half_] = x2 * c + x1 * s;
}
