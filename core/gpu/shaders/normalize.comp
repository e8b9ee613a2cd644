// SPDX-License-Identifier: GPL-3.0-or-later
// Scores and weights of one query row of one head, as the CPU core's normalizeHead():
//   in:  W[h, i, :] = q_h[i] . k_h[j] (raw dots, written by gemm.comp), mask bits (t_q, t_k)
//   out: S[h, i, :] = scale * dots (before masking, when keepScores), W[h, i, :] = weights
//   mode 0 softmax (masked -> -inf), 1 softmax then zero the masked and renormalize,
//        2 sum normalization (masked -> 0, divide by the row sum), 3 cosine: dots / (|q_i| |k_j|)
// A fully masked row gets the policy (0 NaN, 1 zero, 2 uniform 1/t_k); a zero row sum (modes 1, 2)
// divides as the CPU does (x/0 = +-inf, 0/0 = NaN) and sets Flags[h * t_q + i].
// W and S hold one chunk of heads; h is the head within it. Flags hold all heads.
// One workgroup of 64 per (row i = x, head h = y); each invocation walks its own columns
// j = lid, lid + 64, ... in three or four short passes (t_k / 64 iterations each; t_k/64 * d_head
// for cosine: 47 * 64 at t = 3000, far below Mesa's 65535) and the row's max and sum go through
// shared-memory reductions.
#version 440

layout(local_size_x = 64) in;

// Host struct: NormalizeParams in rhiattention.cpp (std140: 16 scalars of 4 bytes, 64 bytes).
layout(std140, binding = 0) uniform Params {
    uint tq;
    uint tk;
    uint maskWords;   // uints per mask row: (t_k + 31) / 32
    uint hasMask;
    uint mode;
    uint policy;
    uint keepScores;
    uint dHead;
    uint ldqk;        // row stride of q and k: H * d_head
    uint headBase;    // first head of this chunk (for Flags)
    uint pad1;
    uint pad2;
    float scale;
    float pad3;
    float pad4;
    float pad5;
} p;

layout(std430, binding = 1) buffer WBuf { float W[]; };
layout(std430, binding = 2) writeonly buffer SBuf { float S[]; };
layout(std430, binding = 3) readonly buffer MaskBuf { uint Mask[]; };
layout(std430, binding = 4) readonly buffer QBuf { float Q[]; };
layout(std430, binding = 5) readonly buffer KBuf { float Kx[]; };
layout(std430, binding = 6) writeonly buffer FlagBuf { uint Flags[]; };

const uint WG = 64u;
shared float redf[WG];
shared uint redu[WG];

// Reductions over the workgroup: every invocation writes its part, then reads all WG parts (two
// barriers instead of log2(WG) + 2: barriers are what software rasterizers pay most for).
float reduceMax(float v, uint lid)
{
    redf[lid] = v;
    barrier();
    float r = redf[0];
    for (uint k = 1u; k < WG; ++k)
        r = max(r, redf[k]);
    barrier();
    return r;
}

float reduceSum(float v, uint lid)
{
    redf[lid] = v;
    barrier();
    float r = 0.0;
    for (uint k = 0u; k < WG; ++k)
        r += redf[k];
    barrier();
    return r;
}

uint reduceSumU(uint v, uint lid)
{
    redu[lid] = v;
    barrier();
    uint r = 0u;
    for (uint k = 0u; k < WG; ++k)
        r += redu[k];
    barrier();
    return r;
}

float nanValue() { return uintBitsToFloat(0x7fc00000u); }

// As IEEE division, spelled out for a zero divisor so that no driver may shortcut it.
float safeDiv(float a, float b)
{
    if (b == 0.0) {
        if (a == 0.0 || isnan(a))
            return nanValue();
        return a > 0.0 ? uintBitsToFloat(0x7f800000u) : uintBitsToFloat(0xff800000u);
    }
    return a / b;
}

void main()
{
    const uint lid = gl_LocalInvocationID.x;
    const uint i = gl_WorkGroupID.x;
    const uint h = gl_WorkGroupID.y;
    const uint base = (h * p.tq + i) * p.tk;
    const uint maskRow = i * p.maskWords;
    const float negInf = uintBitsToFloat(0xff800000u);

    // Pass 0: scale, keep the scores, count the unmasked keys, row max.
    uint unmasked = 0u;
    float mx = negInf;
    for (uint j = lid; j < p.tk; j += WG) {
        const bool m = p.hasMask != 0u && ((Mask[maskRow + j / 32u] >> (j % 32u)) & 1u) != 0u;
        const float s = W[base + j] * p.scale;
        if (p.keepScores != 0u)
            S[base + j] = s;
        if (p.mode != 3u)
            W[base + j] = s;
        if (!m)
            unmasked += 1u;
        if (!m || p.mode == 1u)
            mx = max(mx, s);
    }
    if (p.hasMask != 0u && reduceSumU(unmasked, lid) == 0u) {
        const float fill = p.policy == 0u ? nanValue() : (p.policy == 1u ? 0.0 : 1.0 / float(p.tk));
        for (uint j = lid; j < p.tk; j += WG)
            W[base + j] = fill;
        if (lid == 0u)
            Flags[(p.headBase + h) * p.tq + i] = 0u;
        return;
    }

    uint degenerate = 0u;
    if (p.mode == 0u || p.mode == 1u) {
        mx = reduceMax(mx, lid);
        float sum = 0.0;
        for (uint j = lid; j < p.tk; j += WG) {
            const bool m = p.hasMask != 0u && ((Mask[maskRow + j / 32u] >> (j % 32u)) & 1u) != 0u;
            const float e = (m && p.mode == 0u) ? 0.0 : exp(W[base + j] - mx);
            W[base + j] = e;
            sum += e;
        }
        sum = reduceSum(sum, lid);
        if (p.mode == 0u) {
            for (uint j = lid; j < p.tk; j += WG)
                W[base + j] = W[base + j] / sum;
        } else {
            // Softmax over every key, then zero the masked ones and divide by what is left.
            float kept = 0.0;
            for (uint j = lid; j < p.tk; j += WG) {
                const bool m = p.hasMask != 0u && ((Mask[maskRow + j / 32u] >> (j % 32u)) & 1u) != 0u;
                const float q = m ? 0.0 : W[base + j] / sum;
                W[base + j] = q;
                kept += q;
            }
            kept = reduceSum(kept, lid);
            degenerate = kept == 0.0 ? 1u : 0u;
            for (uint j = lid; j < p.tk; j += WG)
                W[base + j] = safeDiv(W[base + j], kept);
        }
    } else if (p.mode == 2u) {
        float sum = 0.0;
        for (uint j = lid; j < p.tk; j += WG) {
            const bool m = p.hasMask != 0u && ((Mask[maskRow + j / 32u] >> (j % 32u)) & 1u) != 0u;
            if (m)
                W[base + j] = 0.0;
            else
                sum += W[base + j];
        }
        sum = reduceSum(sum, lid);
        degenerate = sum == 0.0 ? 1u : 0u;
        for (uint j = lid; j < p.tk; j += WG)
            W[base + j] = safeDiv(W[base + j], sum);
    } else {
        // Cosine: W holds the raw dots; norms are recomputed per row / column (d_head terms).
        const uint qBase = i * p.ldqk + (p.headBase + h) * p.dHead;
        float qq = 0.0;
        for (uint d = 0u; d < p.dHead; ++d)
            qq += Q[qBase + d] * Q[qBase + d];
        const float qn = sqrt(qq);
        for (uint j = lid; j < p.tk; j += WG) {
            const bool m = p.hasMask != 0u && ((Mask[maskRow + j / 32u] >> (j % 32u)) & 1u) != 0u;
            const uint kBase = j * p.ldqk + (p.headBase + h) * p.dHead;
            float kk = 0.0;
            for (uint d = 0u; d < p.dHead; ++d)
                kk += Kx[kBase + d] * Kx[kBase + d];
            const float den = qn * sqrt(kk);
            W[base + j] = (m || den == 0.0) ? 0.0 : W[base + j] / den;
        }
    }
    if (lid == 0u)
        Flags[(p.headBase + h) * p.tq + i] = degenerate;
}
