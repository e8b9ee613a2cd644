// SPDX-License-Identifier: GPL-3.0-or-later
// linear.comp for a few rows (M <= 8: a token appended, the last row's logits): the same product
//   Y[r, n] = act(sum_k X[r, k] W[n, k] + bias[n])
// with one workgroup of 64 threads per 4 outputs reading those rows of W once, coalesced, for every
// row of x at once and reducing in shared memory. The 64 x 64 tiles of linear.comp would compute 64
// rows to keep one: this reads each weight once, which is all a single token's product needs.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp (as linear.comp's).
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // M (at most 8), N, K, weight format (0 float32, 1 BF16, 2 F16)
    uvec4 u1; // xOff, ldx, yOff, ldy (elements)
    uvec4 u2; // hasBias, activation, wOff, biasOff
    uvec4 u3; // workgroups per dispatch row (the grid is 2-D: outputs from 4 (y * u3.x + x))
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(std430, binding = 2) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 3) readonly buffer BiasBuf { float bias[]; };
layout(std430, binding = 4) writeonly buffer YBuf { float Y[]; };

shared float red[32][64]; // (row, output) x thread

// linear.comp's weightAt(), erfApprox() and activate(), the same formulas.
float weightAt(uint idx)
{
    uint fmt = p.u0.w;
    if (fmt == 0u)
        return uintBitsToFloat(W[idx]);
    uint word = W[idx >> 1u];
    if (fmt == 1u) // BF16: the high half of a float32
        return uintBitsToFloat((idx & 1u) == 0u ? (word << 16u) : (word & 0xFFFF0000u));
    vec2 h = unpackHalf2x16(word);
    return (idx & 1u) == 0u ? h.x : h.y;
}

// erf to about 1e-7 (Abramowitz & Stegun 7.1.26 has 1.5e-7; this is W. J. Cody's form for |x| < 0.5
// and the A&S one beyond, enough for float32 GELU).
float erfApprox(float x)
{
    float a = abs(x);
    float r;
    if (a < 0.5) {
        float z = x * x;
        r = a * (1.128379167 + z * (-0.376126602 + z * (0.112835404 + z * (-0.026866171 + z * 0.005217133))));
    } else {
        float t = 1.0 / (1.0 + 0.3275911 * a);
        float y = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        r = 1.0 - y * exp(-a * a);
    }
    return x < 0.0 ? -r : r;
}

// The same activations as the CPU forward's activate() (elementwise.comp has a copy).
float activate(float x, uint a)
{
    if (a == 1u) {
        float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
        return 0.5 * x * (1.0 + tanh(clamp(u, -15.0, 15.0)));
    }
    if (a == 2u)
        return 0.5 * x * (1.0 + erfApprox(x * 0.7071067811865476));
    if (a == 3u)
        return max(x, 0.0);
    if (a == 4u)
        return x / (1.0 + exp(-x));
    return x;
}

void main()
{
    uint M = p.u0.x, N = p.u0.y, K = p.u0.z;
    uint n0 = 4u * (gl_WorkGroupID.y * p.u3.x + gl_WorkGroupID.x), lid = gl_LocalInvocationID.x;
    float acc[32]; // row r, output o at 4 r + o
    for (uint i = 0u; i < 32u; ++i)
        acc[i] = 0.0;
    for (uint k = lid; n0 < N && k < K; k += 64u) {
        float w[4];
        for (uint o = 0u; o < 4u; ++o)
            w[o] = n0 + o < N ? weightAt(p.u2.z + (n0 + o) * K + k) : 0.0;
        for (uint r = 0u; r < M; ++r) {
            float x = X[p.u1.x + r * p.u1.y + k];
            for (uint o = 0u; o < 4u; ++o)
                acc[4u * r + o] += x * w[o];
        }
    }
    for (uint i = 0u; i < 32u; ++i)
        red[i][lid] = acc[i];
    barrier(); // one barrier, then each of the 32 sums read whole by one thread (barriers are what
               // software rasterizers pay most for)
    float total = 0.0;
    if (lid < 32u)
        for (uint k = 0u; k < 64u; ++k)
            total += red[lid][k];
    uint r = lid / 4u, n = n0 + lid % 4u;
    if (r < M && n < N) {
        float v = total;
        if (p.u2.x != 0u)
            v += bias[p.u2.w + n];
        Y[p.u1.z + r * p.u1.w + n] = activate(v, p.u2.y);
    }
}
