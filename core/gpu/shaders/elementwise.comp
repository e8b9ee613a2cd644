// SPDX-License-Identifier: GPL-3.0-or-later
// Row-wise elementwise passes of the model forward, out of place (Y never aliases A or B):
//   mode 0  Y = A                 (a stage copied before it is rotated in place)
//   mode 1  Y = A + B             (the residual adds)
//   mode 2  Y = act(A) * B        (a gated MLP: act(x W_gate^T) * x W_up^T)
#version 440

layout(local_size_x = 64) in;

// Host struct: PassParams in rhiforward.cpp.
layout(std140, binding = 0) uniform Params {
    uvec4 u0; // rows, width, mode, activation (as linear.comp)
    uvec4 u1; // aOff, lda, bOff, ldb
    uvec4 u2; // yOff, ldy, -, -
    uvec4 u3;
    vec4 f0;
    vec4 f1;
} p;

layout(std430, binding = 1) readonly buffer ABuf { float A[]; };
layout(std430, binding = 2) readonly buffer BBuf { float B[]; };
layout(std430, binding = 3) writeonly buffer YBuf { float Y[]; };

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

// linear.comp's activate(), the same formulas.
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
    uint c = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    if (r >= p.u0.x || c >= p.u0.y)
        return;
    float a = A[p.u1.x + r * p.u1.y + c];
    float y = a;
    if (p.u0.z == 1u)
        y = a + B[p.u1.z + r * p.u1.w + c];
    else if (p.u0.z == 2u)
        y = activate(a, p.u0.w) * B[p.u1.z + r * p.u1.w + c];
    Y[p.u2.x + r * p.u2.y + c] = y;
}
