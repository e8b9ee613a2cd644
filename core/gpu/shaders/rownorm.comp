// SPDX-License-Identifier: GPL-3.0-or-later
// One norm per row, as the CPU forward's normRow: LayerNorm (biased variance), RMSNorm (x / rms * w)
// or Gemma's RMSNorm (x / rms * (1 + w)). A row is any contiguous run of `width` floats: the rows
// of a (t, d) stream, or each head's d_head slice of q or k (the q/k norms). One workgroup a row,
// 64 threads striding it and reducing in shared memory.
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, width, inOff, ldIn
    uvec4 u1; // outOff, ldOut, kind (0 LayerNorm, 1 RMSNorm, 2 RMSNorm (1 + w)), flags (1 beta, 2 gamma)
    uvec4 u2;
    uvec4 u3;
    vec4 f0;  // eps
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(std430, binding = 2) readonly buffer GammaBuf { float gamma[]; };
layout(std430, binding = 3) readonly buffer BetaBuf { float beta[]; };
layout(std430, binding = 4) writeonly buffer YBuf { float Y[]; };

shared float red[64];

// Reductions over the workgroup, called from main() by every invocation, outside any branch: each
// writes its part, then reads all 64 (two barriers instead of log2(64) + 1: barriers are what
// software rasterizers pay most for).
float reduceSum(float v, uint lid)
{
    red[lid] = v;
    barrier();
    float r = 0.0;
    for (uint k = 0u; k < 64u; ++k)
        r += red[k];
    barrier();
    return r;
}

// Both sums are reduced whatever the kind, in main() outside any branch: GLSL ES and some OpenGL
// drivers want barrier() nowhere else (the mean is not used by the RMS norms).
void main()
{
    uint row = gl_WorkGroupID.x;
    uint width = p.u0.y, lid = gl_LocalInvocationID.x;
    bool live = row < p.u0.x;
    uint inBase = p.u0.z + row * p.u0.w, outBase = p.u1.x + row * p.u1.y;
    uint kind = p.u1.z;
    float d = float(width);
    float s = 0.0;
    for (uint k = lid; live && k < width; k += 64u)
        s += X[inBase + k];
    float total = reduceSum(s, lid);
    float mean = kind == 0u ? total / d : 0.0;
    float q = 0.0;
    for (uint k = lid; live && k < width; k += 64u) {
        float x = X[inBase + k] - mean;
        q += x * x;
    }
    float inv = 1.0 / sqrt(reduceSum(q, lid) / d + p.f0.x);
    for (uint k = lid; live && k < width; k += 64u) {
        float x = (X[inBase + k] - mean) * inv;
        float w = (p.u1.w & 2u) != 0u ? gamma[k] : (kind == 2u ? 0.0 : 1.0); // absent: ones (zeros for 1 + w)
        float y = x * (kind == 2u ? 1.0 + w : w);
        if ((p.u1.w & 1u) != 0u)
            y += beta[k];
        Y[outBase + k] = y;
    }
}
