// SPDX-License-Identifier: GPL-3.0-or-later
// Batched, tiled matrix product for every GEMM of attention (row-major, element offsets):
//   transB == 1:  C[z] (M, N) = alpha * A[z] (M, K) * B[z]^T, B[z] is (N, K)   projections x W^T, q_h k_h^T, W_o
//   transB == 0:  C[z] (M, N) = alpha * A[z] (M, K) * B[z],   B[z] is (K, N)   weights_h v_h
//   C += bias (length N) when hasBias; z = gl_WorkGroupID.z (the head) moves each base by its stride.
// One workgroup computes a 64x64 tile of C with 16x16 threads, 4x4 outputs each. K is walked in
// slices of 16 through shared memory, so one invocation's loops run about K + K/16 * 8 iterations
// in total (Mesa's software GPUs stop an invocation after 65535): fine for K up to tens of thousands.
#version 440

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

// Host struct: GemmParams in rhiattention.cpp (std140: 16 scalars of 4 bytes, 64 bytes).
layout(std140, binding = 0) uniform Params {
    uint M;
    uint N;
    uint K;
    uint lda;
    uint ldb;
    uint ldc;
    uint aOff;
    uint bOff;
    uint cOff;
    uint aStrideZ;
    uint bStrideZ;
    uint cStrideZ;
    uint transB;
    uint hasBias;
    float alpha;
    uint pad0;
} p;

layout(std430, binding = 1) readonly buffer ABuf { float A[]; };
layout(std430, binding = 2) readonly buffer BBuf { float B[]; };
layout(std430, binding = 3) readonly buffer BiasBuf { float bias[]; };
layout(std430, binding = 4) writeonly buffer CBuf { float C[]; };

const uint TM = 64u;
const uint TN = 64u;
const uint TK = 16u;

shared float As[TK * TM]; // As[kk * TM + row]
shared float Bs[TK * TN]; // Bs[kk * TN + col]

void main()
{
    const uint tx = gl_LocalInvocationID.x;
    const uint ty = gl_LocalInvocationID.y;
    const uint tid = ty * 16u + tx;
    const uint m0 = gl_WorkGroupID.y * TM;
    const uint n0 = gl_WorkGroupID.x * TN;
    const uint z = gl_WorkGroupID.z;
    const uint aBase = p.aOff + z * p.aStrideZ;
    const uint bBase = p.bOff + z * p.bStrideZ;
    const uint cBase = p.cOff + z * p.cStrideZ;

    // Four rows (ty + 16 i) x four columns (tx + 16 j) per invocation, as vec4 rows: no dynamically
    // indexed local arrays (software rasterizers would spill them to memory).
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);

    for (uint k0 = 0u; k0 < p.K; k0 += TK) {
        // 1024 elements of each tile, 4 per thread. A (and B^T): contiguous along k.
        for (uint r = 0u; r < 4u; ++r) {
            const uint idx = tid + 256u * r;
            const uint row = idx / TK;
            const uint kk = idx % TK;
            const uint gm = m0 + row;
            const uint gk = k0 + kk;
            As[kk * TM + row] = (gm < p.M && gk < p.K) ? A[aBase + gm * p.lda + gk] : 0.0;
            if (p.transB != 0u) {
                const uint gn = n0 + row;
                Bs[kk * TN + row] = (gn < p.N && gk < p.K) ? B[bBase + gn * p.ldb + gk] : 0.0;
            } else {
                const uint kb = idx / TN;
                const uint col = idx % TN;
                const uint gkb = k0 + kb;
                const uint gn = n0 + col;
                Bs[kb * TN + col] = (gn < p.N && gkb < p.K) ? B[bBase + gkb * p.ldb + gn] : 0.0;
            }
        }
        barrier();
        for (uint kk = 0u; kk < TK; ++kk) {
            const uint bo = kk * TN + tx;
            const uint ao = kk * TM + ty;
            const vec4 b = vec4(Bs[bo], Bs[bo + 16u], Bs[bo + 32u], Bs[bo + 48u]);
            acc0 = fma(vec4(As[ao]), b, acc0);
            acc1 = fma(vec4(As[ao + 16u]), b, acc1);
            acc2 = fma(vec4(As[ao + 32u]), b, acc2);
            acc3 = fma(vec4(As[ao + 48u]), b, acc3);
        }
        barrier();
    }

    for (uint i = 0u; i < 4u; ++i) {
        const uint gm = m0 + ty + 16u * i;
        if (gm >= p.M)
            continue;
        const vec4 rowAcc = i == 0u ? acc0 : (i == 1u ? acc1 : (i == 2u ? acc2 : acc3));
        for (uint j = 0u; j < 4u; ++j) {
            const uint gn = n0 + tx + 16u * j;
            if (gn >= p.N)
                continue;
            const float a = j == 0u ? rowAcc.x : (j == 1u ? rowAcc.y : (j == 2u ? rowAcc.z : rowAcc.w));
            float v = p.alpha * a;
            if (p.hasBias != 0u)
                v += bias[gn];
            C[cBase + gm * p.ldc + gn] = v;
        }
    }
}
