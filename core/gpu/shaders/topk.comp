// SPDX-License-Identifier: GPL-3.0-or-later
// The LM head's top-k of one logits row, as the CPU forward's nextFromLogits(): the logits soft-
// capped (Gemma 2), the k largest (ties: the lower id first), the row's max and the sum of
// exp(logit - max), and the logit of the token that actually follows. Only these 2k + 4 numbers
// of a row come back, not the vocabulary's logits. One workgroup of 64 per row: each invocation
// keeps the top-k and an online max / sum of its own columns j = lid, lid + 64, ... (V / 64
// iterations: 4,096 for a 262k vocabulary, far below Mesa's 65,535), then invocation 0 merges the
// 64 lists and sums. Row r's output at r * (2 K + 4): K logits (as bits), K ids, max, sum, the
// actual next token's logit (0 when none), the entries written.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, V, k (<= K), -
    uvec4 u1;
    uvec4 u2;
    uvec4 u3;
    vec4 f0;  // final softcap (0 none)
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer LBuf { float L[]; };
layout(std430, binding = 2) readonly buffer NBuf { uint nextId[]; }; // per row; 0xffffffff: none
layout(std430, binding = 3) writeonly buffer OBuf { uint O[]; }; // floats as their bits: ids stay exact

const uint WG = 64u;
const uint K = 16u;

shared float candV[WG * K];
shared uint candI[WG * K];
shared uint candN[WG];
shared float partMax[WG];
shared float partSum[WG];

float capped(float v)
{
    float c = p.f0.x;
    return c > 0.0 ? tanh(clamp(v / c, -15.0, 15.0)) * c : v;
}

// No return before a barrier() and no barrier() in a branch (GLSL ES and some OpenGL drivers).
void main()
{
    uint r = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    uint V = p.u0.y, k = min(p.u0.z, K);
    bool live = r < p.u0.x;
    uint base = r * V;

    float tv[K];
    uint ti[K];
    uint n = 0u;
    float mx = -1.0 / 0.0, sum = 0.0;
    for (uint j = lid; live && j < V; j += WG) {
        float v = capped(L[base + j]);
        if (v > mx) { // online softmax normalizer: rescale the sum to the new max
            sum = sum * exp(mx - v) + 1.0;
            mx = v;
        } else if (!isinf(mx)) {
            sum += exp(v - mx);
        }
        if (n == k && !(v > tv[k - 1u]))
            continue;
        // columns come in increasing j: an equal value stays behind the earlier (lower) id
        uint at = n < k ? n : k - 1u;
        while (at > 0u && tv[at - 1u] < v) {
            tv[at] = tv[at - 1u];
            ti[at] = ti[at - 1u];
            --at;
        }
        tv[at] = v;
        ti[at] = j;
        if (n < k)
            ++n;
    }
    for (uint e = 0u; e < n; ++e) {
        candV[lid * K + e] = tv[e];
        candI[lid * K + e] = ti[e];
    }
    candN[lid] = n;
    partMax[lid] = mx;
    partSum[lid] = sum;
    barrier();
    if (!live || lid != 0u)
        return;

    float M = -1.0 / 0.0;
    for (uint w = 0u; w < WG; ++w)
        M = max(M, partMax[w]);
    float S = 0.0;
    for (uint w = 0u; w < WG; ++w)
        S += isinf(partMax[w]) && partMax[w] < 0.0 ? 0.0 : partSum[w] * exp(partMax[w] - M);
    n = 0u;
    for (uint w = 0u; w < WG; ++w) {
        for (uint e = 0u; e < candN[w]; ++e) {
            float v = candV[w * K + e];
            uint id = candI[w * K + e];
            if (n == k && !(v > tv[k - 1u] || (v == tv[k - 1u] && id < ti[k - 1u])))
                break; // this list is sorted: the rest of it is no better
            uint at = n < k ? n : k - 1u;
            while (at > 0u && (tv[at - 1u] < v || (tv[at - 1u] == v && ti[at - 1u] > id))) {
                tv[at] = tv[at - 1u];
                ti[at] = ti[at - 1u];
                --at;
            }
            tv[at] = v;
            ti[at] = id;
            if (n < k)
                ++n;
        }
    }
    uint o = r * (2u * K + 4u);
    for (uint e = 0u; e < n; ++e) {
        O[o + e] = floatBitsToUint(tv[e]);
        O[o + K + e] = ti[e];
    }
    uint next = nextId[r];
    O[o + 2u * K] = floatBitsToUint(M);
    O[o + 2u * K + 1u] = floatBitsToUint(S);
    O[o + 2u * K + 2u] = floatBitsToUint(next < V ? capped(L[base + next]) : 0.0);
    O[o + 2u * K + 3u] = n;
}
