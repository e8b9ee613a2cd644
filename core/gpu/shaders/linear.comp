// SPDX-License-Identifier: GPL-3.0-or-later
// One dense layer of the model forward, rows of x through a weight kept as the file stores it:
//   Y[r, n] = act(sum_k X[r, k] W[n, k] + bias[n])     r < M rows, n < N outputs, k < K inputs
// W is (N, K) row-major in the nn.Linear convention, stored as float32, BF16 or F16 words and
// widened here, so a BF16 model holds its 16-bit bytes on the GPU. A matrix larger than one storage
// buffer comes in chunks of rows: each is a dispatch writing its columns of Y (yOff, biasOff). One
// workgroup computes a 64 x 64 tile of Y with 16 x 16 threads, 4 x 4 outputs each, K walked in
// slices of 16 through shared memory (about K + K / 16 * 4 loop iterations per invocation: Mesa's
// software GPUs stop one after 65,535). The attention op's products per head are this one too, a
// head per z: its raw scores q_h k_h^T (W is k, rows of stride ldw) and its context W_h v_h (W is
// v_h stored (K, N): format + 16).
#version 440

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

// Host struct: PassParams in rhiforward.cpp (std140: 4 uvec4 + 2 vec4, 96 bytes).
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // M, N, K, weight format (0 float32, 1 BF16, 2 F16; + 16: float32 stored (K, N))
    uvec4 u1; // xOff, ldx, yOff, ldy (elements)
    uvec4 u2; // hasBias, activation (0 none, 1 GELU tanh, 2 GELU erf, 3 ReLU, 4 SiLU), wOff, biasOff
    uvec4 u3; // ldw (0: K), and per z: the steps of xOff, wOff, yOff
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(std430, binding = 2) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 3) readonly buffer BiasBuf { float bias[]; };
layout(std430, binding = 4) writeonly buffer YBuf { float Y[]; };

shared float xs[16 * 64]; // xs[k * 64 + row]: a slice of 16 k of 64 rows of X
shared float ws[16 * 64]; // ws[k * 64 + n]: the same of 64 rows of W

float weightAt(uint idx)
{
    uint fmt = p.u0.w & 15u;
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
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint lid = ty * 16u + tx;
    uint row0 = gl_WorkGroupID.y * 64u, col0 = gl_WorkGroupID.x * 64u, z = gl_WorkGroupID.z;
    uint xOff = p.u1.x + z * p.u3.y, wOff = p.u2.z + z * p.u3.z, yOff = p.u1.z + z * p.u3.w;
    uint ldw = p.u3.x != 0u ? p.u3.x : K;
    // Rows ty + 16 i (acc i) by outputs tx + 16 j (component j): vec4s, no dynamically indexed local
    // arrays (software rasterizers spill those to memory).
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k0 = 0u; k0 < K; k0 += 16u) {
        for (uint e = lid; e < 1024u; e += 256u) {
            uint r = e / 16u, c = e % 16u;
            uint gk = k0 + c;
            uint gr = row0 + r;
            xs[c * 64u + r] = (gr < M && gk < K) ? X[xOff + gr * p.u1.y + gk] : 0.0;
            if ((p.u0.w & 16u) == 0u) {
                uint gn = col0 + r;
                ws[c * 64u + r] = (gn < N && gk < K) ? weightAt(wOff + gn * ldw + gk) : 0.0;
            } else { // (K, N): contiguous along n
                uint kb = e / 64u, n = e % 64u;
                uint gkb = k0 + kb, gn = col0 + n;
                ws[kb * 64u + n] = (gn < N && gkb < K) ? uintBitsToFloat(W[wOff + gkb * ldw + gn]) : 0.0;
            }
        }
        barrier();
        for (uint c = 0u; c < 16u; ++c) {
            uint wo = c * 64u + tx, xo = c * 64u + ty;
            vec4 b = vec4(ws[wo], ws[wo + 16u], ws[wo + 32u], ws[wo + 48u]);
            acc0 = fma(vec4(xs[xo]), b, acc0);
            acc1 = fma(vec4(xs[xo + 16u]), b, acc1);
            acc2 = fma(vec4(xs[xo + 32u]), b, acc2);
            acc3 = fma(vec4(xs[xo + 48u]), b, acc3);
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; ++i) {
        uint r = row0 + ty + 16u * i;
        if (r >= M)
            continue;
        vec4 a = i == 0u ? acc0 : (i == 1u ? acc1 : (i == 2u ? acc2 : acc3));
        for (uint j = 0u; j < 4u; ++j) {
            uint n = col0 + tx + 16u * j;
            if (n >= N)
                continue;
            float v = j == 0u ? a.x : (j == 1u ? a.y : (j == 2u ? a.z : a.w));
            if (p.u2.x != 0u)
                v += bias[p.u2.w + n];
            Y[yOff + r * p.u1.w + n] = activate(v, p.u2.y);
        }
    }
}
