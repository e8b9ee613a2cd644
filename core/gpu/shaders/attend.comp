// SPDX-License-Identifier: GPL-3.0-or-later
// One row of one head's attention, as the CPU forward's attend() and the attention core's
// normalizeRows(): scores of query i against every key, q_h . k_g * scale (g the key/value head of
// query head h: grouped-query attention reads the compact k), soft-capped, then the masks (causal,
// the sliding window keeping keys j with i - w < j <= i, the user's cells and padding as bits) and
// the normalization of the keys left (mode):
//   0 softmax;
//   1 softmax over every key, the masked zeroed, divided by what is left (and where that underflows,
//     the softmax over the keys left, as the core does);
//   2 sum: the masked zeroed, divided by the row sum (x / 0 as IEEE, the row flagged degenerate);
//   3 cosine: scaled dot / (scale |q_i| |k_j|), the masked 0.
// A row with every key masked gets the policy (0 zero, 1 NaN, 2 uniform 1 / t). Zeros fill the rest
// of the row up to its stride. Weights of the dispatched heads h (gl_WorkGroupID.y, query head
// headBase + h) are at h headStride + i cap (the model: (heads, cap, cap); the attention op: one
// storage buffer's heads of (t_q, t_k)). With keepScores, the scaled and capped scores of every key,
// masked or not, go to S (same layout). With flags, Flags[(headBase + h) rows + r] = degenerate.
// With given, Wt holds the raw dots q_h . k_h already (linear.comp's tiles: the attention op).
// One workgroup of 64 threads per (row, head), keys strided over the threads.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows (computed), t (keys), cap (row stride), first row p
    uvec4 u1; // dHead, ldq, ldk, group (query heads per key/value head)
    uvec4 u2; // causal, window (0 none), hasMask, maskWords
    uvec4 u3; // keepScores, mode | policy << 4 | flags << 8 | given << 9, headStride (0: cap^2), headBase
    vec4 f0;  // scale, softcap (0 none)
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer QBuf { float Q[]; };
layout(std430, binding = 2) readonly buffer KBuf { float K[]; };
layout(std430, binding = 3) readonly buffer MaskBuf { uint maskBits[]; };
layout(std430, binding = 4) buffer WBuf { float Wt[]; };
layout(std430, binding = 5) writeonly buffer SBuf { float S[]; };
layout(std430, binding = 6) writeonly buffer FlagBuf { uint Flags[]; };

shared vec4 red[64];

// Reductions over the workgroup, called from main() by every invocation, outside any branch: each
// writes its parts, then reads all 64 (two barriers instead of log2(64) + 1: barriers are what
// software rasterizers pay most for). Up to four values per reduction for the price of one.
vec4 reduceSum(vec4 v, uint lid)
{
    red[lid] = v;
    barrier();
    vec4 r = vec4(0.0);
    for (uint k = 0u; k < 64u; ++k)
        r += red[k];
    barrier();
    return r;
}

vec4 reduceMax(vec4 v, uint lid)
{
    red[lid] = v;
    barrier();
    vec4 r = red[0];
    for (uint k = 1u; k < 64u; ++k)
        r = max(r, red[k]);
    barrier();
    return r;
}

bool isMasked(uint i, uint j, uint keys, uint lo)
{
    if (j >= keys || j < lo)
        return true;
    if (p.u2.z != 0u)
        return (maskBits[i * p.u2.w + j / 32u] & (1u << (j % 32u))) != 0u;
    return false;
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

// No return before a barrier() and no barrier() in a branch (GLSL ES and some OpenGL drivers).
void main()
{
    uint r = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    bool live = r < p.u0.x;
    uint t = p.u0.y, cap = p.u0.z, i = p.u0.w + r;
    uint dh = p.u1.x, hq = p.u3.w + h, g = hq / p.u1.w;
    uint keys = p.u2.x != 0u ? i + 1u : t;
    uint window = p.u2.y;
    uint lo = window > 0u && i + 1u > window ? i + 1u - window : 0u;
    uint mode = p.u3.y & 15u, policy = (p.u3.y >> 4u) & 15u;
    bool given = ((p.u3.y >> 9u) & 1u) != 0u;
    uint headStride = p.u3.z != 0u ? p.u3.z : cap * cap;
    uint qBase = i * p.u1.y + hq * dh, wBase = h * headStride + i * cap;
    float scale = p.f0.x, softcap = p.f0.y;

    // Pass 1: the scores; the maxima over the keys left (x) and over every key (y, mode 1).
    float mx = -1.0 / 0.0, mxAll = -1.0 / 0.0;
    for (uint j = lid; live && j < t; j += 64u) {
        uint kBase = j * p.u1.z + g * dh;
        float s = 0.0;
        if (given)
            s = Wt[wBase + j] * scale;
        else
            for (uint c = 0u; c < dh; ++c)
                s += (scale * Q[qBase + c]) * K[kBase + c];
        if (softcap > 0.0)
            s = tanh(clamp(s / softcap, -15.0, 15.0)) * softcap;
        if (p.u3.x != 0u)
            S[wBase + j] = s;
        Wt[wBase + j] = s;
        if (!isMasked(i, j, keys, lo))
            mx = max(mx, s);
        mxAll = max(mxAll, s);
    }
    vec4 m = reduceMax(vec4(mx, mxAll, 0.0, 0.0), lid);
    mx = m.x;
    mxAll = m.y;
    bool none = isinf(mx); // every key masked: the policy

    // Pass 2: x the sum the row is divided by; mode 1: y the kept part of the softmax over every
    // key, z the sum of the softmax over the keys left.
    float qn = 0.0;
    if (mode == 3u) {
        for (uint c = 0u; c < dh; ++c)
            qn += Q[qBase + c] * Q[qBase + c];
        qn = sqrt(qn);
    }
    vec4 sum = vec4(0.0);
    for (uint j = lid; live && j < t; j += 64u) {
        bool masked = isMasked(i, j, keys, lo);
        float s = Wt[wBase + j];
        if (mode == 0u) {
            float e = none || masked ? 0.0 : exp(s - mx);
            Wt[wBase + j] = e;
            sum.x += e;
        } else if (mode == 1u) { // the scores stay: pass 3 needs them
            float e = exp(s - mxAll);
            sum.x += e;
            if (!masked) {
                sum.y += e;
                sum.z += exp(s - mx);
            }
        } else if (mode == 2u) {
            float e = masked ? 0.0 : s;
            Wt[wBase + j] = e;
            sum.x += e;
        } else {
            uint kBase = j * p.u1.z + g * dh;
            float kk = 0.0, dot = 0.0;
            for (uint c = 0u; c < dh; ++c) {
                kk += K[kBase + c] * K[kBase + c];
                dot += Q[qBase + c] * K[kBase + c];
            }
            float den = qn * sqrt(kk);
            Wt[wBase + j] = masked || den == 0.0 ? 0.0 : (scale != 0.0 ? s / (scale * den) : dot / den);
        }
    }
    sum = reduceSum(sum, lid);

    // Pass 3: the weights, the policy's fill for a row with every key masked, zeros past t.
    float fill = policy == 1u ? nanValue() : (policy == 2u ? 1.0 / float(t) : 0.0);
    float kept = sum.y / sum.x;
    bool fallback = kept <= 1.17549435e-38; // the kept part underflowed (FLT_MIN)
    for (uint j = lid; live && j < cap; j += 64u) {
        float w = 0.0;
        if (j >= t) {
            w = 0.0;
        } else if (none) {
            w = fill;
        } else if (mode == 0u) {
            w = Wt[wBase + j] / sum.x;
        } else if (mode == 1u) {
            float s = Wt[wBase + j];
            if (isMasked(i, j, keys, lo))
                w = 0.0;
            else if (fallback)
                w = exp(s - mx) / sum.z;
            else
                w = (exp(s - mxAll) / sum.x) / kept;
        } else if (mode == 2u) {
            w = safeDiv(Wt[wBase + j], sum.x);
        } else {
            w = Wt[wBase + j];
        }
        Wt[wBase + j] = w;
    }
    if (live && lid == 0u && ((p.u3.y >> 8u) & 1u) != 0u)
        Flags[hq * p.u0.x + r] = !none && mode == 2u && sum.x == 0.0 ? 1u : 0u;
}
