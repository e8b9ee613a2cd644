// SPDX-License-Identifier: GPL-3.0-or-later
// A pooled map of one head's attention weights over a region, recomputed from q, k and each row's
// log-sum-exp as AttentionTiles (core/src/attention/attentiontiles.cpp) computes them on the CPU:
//   s_ij = cap(scale q_i · k_j)  (the scaled q rounded first, then one multiply-add chain over d)
//   w_ij = exp(s_ij - lse_i), 0 where (i, j) is masked (causal, window, padded key, masked cell) or
//   lse_i is -inf (every key of the row masked).
// Shapes (region rows R, keys C, head dim dh): Q (R, dh), K (C, dh), Lse (R), block edges
// (outRows + 1 row edges, then outCols + 1 key edges, relative to the region).
// One workgroup per output cell (x = its column b, y = its row a) and slice z of the cell's rows
// (slices of floor(z n / S) rows, n the cell's rows): its 64 invocations take the slice's weights
// row after row, 64 apart, and write the slice's max (from 0: masked cells weigh 0, weights are >= 0)
// or sum to Out[(z outRows + a) outCols + b]; the host combines the slices. The host sizes S so that
// no loop runs more than a few hundred iterations (lavapipe stops a loop after 65,535).
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // R, C, outRows, outCols
    uvec4 u1; // dh, rowBegin, colBegin (absolute positions, for the masks), flags
    uvec4 u2; // window (0: none), slices S, -, -
    uvec4 u3;
    vec4 f0;  // scale, soft-cap (0: none)
    vec4 f1;
} p;

// flags: bit 0 max (else sum), bit 1 causal, bit 2 padded keys given, bit 3 masked cells given
layout(std430, binding = 1) readonly buffer QBuf { float Q[]; };
layout(std430, binding = 2) readonly buffer KBuf { float K[]; };
layout(std430, binding = 3) readonly buffer LBuf { float Lse[]; };
layout(std430, binding = 4) readonly buffer EBuf { uint Edges[]; };
// Padded: one word per key of the region (nonzero: padded). Cells: R + 1 row starts into the sorted
// absolute keys that follow (a row's masked cells).
layout(std430, binding = 5) readonly buffer PBuf { uint Padded[]; };
layout(std430, binding = 6) readonly buffer CBuf { uint Cells[]; };
layout(std430, binding = 7) writeonly buffer OBuf { float Out[]; };

shared float red[64];

bool cellMasked(uint r, uint j)
{
    uint lo = Cells[r], hi = Cells[r + 1u];
    uint base = p.u0.x + 1u;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        uint v = Cells[base + mid];
        if (v == j)
            return true;
        if (v < j)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return false;
}

void main()
{
    uint b = gl_WorkGroupID.x, a = gl_WorkGroupID.y, z = gl_WorkGroupID.z;
    uint lid = gl_LocalInvocationID.x;
    uint outRows = p.u0.z, outCols = p.u0.w;
    uint dh = p.u1.x, rowBegin = p.u1.y, colBegin = p.u1.z, flags = p.u1.w;
    uint window = p.u2.x, S = p.u2.y;
    float scale = p.f0.x, cap = p.f0.y;
    bool isMax = (flags & 1u) != 0u, causal = (flags & 2u) != 0u, padded = (flags & 4u) != 0u,
         cells = (flags & 8u) != 0u;

    uint ra = Edges[a], rb = Edges[a + 1u];
    uint ca = Edges[outRows + 1u + b], cb = Edges[outRows + 1u + b + 1u];
    uint n = rb - ra;
    uint r0 = ra + (z * n) / S, r1 = ra + ((z + 1u) * n) / S;

    float acc = 0.0;
    uint nc = cb - ca;
    // a slice every cell of which causality or the window hides weighs 0 (all invocations alike)
    bool hidden = r1 <= r0 || nc == 0u || (causal && colBegin + ca > rowBegin + r1 - 1u) ||
                  (window > 0u && colBegin + cb - 1u + window <= rowBegin + r0);
    uint cellsHere = hidden ? 0u : (r1 - r0) * nc;
    // the slice's cells row by row, 64 apart: every invocation busy however narrow the cell
    for (uint e = lid; e < cellsHere; e += 64u) {
        uint r = r0 + e / nc, c = ca + e % nc;
        uint i = rowBegin + r, j = colBegin + c;
        if ((causal && j > i) || (window > 0u && j + window <= i))
            continue;
        float lse = Lse[r];
        if (isinf(lse) && lse < 0.0)
            continue; // every key of the row masked: it weighs 0
        if (padded && Padded[c] != 0u)
            continue;
        if (cells && cellMasked(r, j))
            continue;
        float s = 0.0;
        for (uint d = 0u; d < dh; ++d)
            s = fma(scale * Q[r * dh + d], K[c * dh + d], s);
        if (cap > 0.0) {
            float x = s / cap;
            float e2 = exp(-2.0 * abs(x));
            s = sign(x) * ((1.0 - e2) / (1.0 + e2)) * cap;
        }
        acc = isMax ? max(acc, exp(s - lse)) : acc + exp(s - lse);
    }
    red[lid] = acc;
    barrier();
    for (uint step = 32u; step > 0u; step >>= 1u) {
        if (lid < step)
            red[lid] = isMax ? max(red[lid], red[lid + step]) : red[lid] + red[lid + step];
        barrier();
    }
    if (lid == 0u)
        Out[(z * outRows + a) * outCols + b] = red[0];
}
