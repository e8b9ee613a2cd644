// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's block encodings widened to float (ggufquants.h). Block layouts as ggml-common.h defines
// them (all little-endian, fp16 scales):
//   Q4_0   { fp16 d; u8 qs[16] }                       x = (q - 8) d
//   Q4_1   { fp16 d, m; u8 qs[16] }                    x = q d + m
//   Q5_0   { fp16 d; u8 qh[4]; u8 qs[16] }             x = (q | h << 4) - 16) d
//   Q5_1   { fp16 d, m; u8 qh[4]; u8 qs[16] }          x = (q | h << 4) d + m
//   Q8_0   { fp16 d; i8 qs[32] }                       x = q d
//   Q4_K   { fp16 d, dmin; u8 scales[12]; u8 qs[128] } 8 sub-blocks of 32 with 6-bit scale and min
//   Q5_K   { fp16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }
//   Q6_K   { u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d }
//   IQ4_NL { fp16 d; u8 qs[16] }                       x = d kvalues[q]
// Written from the format's definition rather than linked: Debian ships no libggml.
#include "ggufquants.h"

#include "attnviz/gguf.h"
#include "safetensorsheader.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnviz::detail {

namespace {

// fp16 -> fp32 for all 65,536 patterns, exact (ggml's GGML_FP16_TO_FP32 is exact too).
const float *halfTable()
{
    static const float *table = [] {
        static float t[65536];
        for (uint32_t h = 0; h < 65536; ++h)
            t[h] = halfToFloat(uint16_t(h));
        return t;
    }();
    return table;
}

inline float half(const unsigned char *p, const float *table)
{
    uint16_t h;
    std::memcpy(&h, p, 2);
    return table[h];
}

// ggml-quants.c: get_scale_min_k4, the 6-bit scale and min of sub-block j.
inline void scaleMinK4(int j, const unsigned char *q, uint8_t &d, uint8_t &m)
{
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

// ggml-common.h: kvalues_iq4nl.
constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void q4_0(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 18, y += 32) {
        const float d = half(x, t);
        const unsigned char *qs = x + 2;
        for (int j = 0; j < 16; ++j) {
            const int x0 = (qs[j] & 0x0F) - 8;
            const int x1 = (qs[j] >> 4) - 8;
            y[j] = float(x0) * d;
            y[j + 16] = float(x1) * d;
        }
    }
}

void q4_1(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 20, y += 32) {
        const float d = half(x, t), m = half(x + 2, t);
        const unsigned char *qs = x + 4;
        for (int j = 0; j < 16; ++j) {
            const int x0 = qs[j] & 0x0F;
            const int x1 = qs[j] >> 4;
            y[j] = float(x0) * d + m;
            y[j + 16] = float(x1) * d + m;
        }
    }
}

void q5_0(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 22, y += 32) {
        const float d = half(x, t);
        uint32_t qh;
        std::memcpy(&qh, x + 2, 4);
        const unsigned char *qs = x + 6;
        for (int j = 0; j < 16; ++j) {
            const uint8_t xh0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10);
            const uint8_t xh1 = uint8_t((qh >> (j + 12)) & 0x10);
            const int32_t x0 = ((qs[j] & 0x0F) | xh0) - 16;
            const int32_t x1 = ((qs[j] >> 4) | xh1) - 16;
            y[j] = float(x0) * d;
            y[j + 16] = float(x1) * d;
        }
    }
}

void q5_1(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 24, y += 32) {
        const float d = half(x, t), m = half(x + 2, t);
        uint32_t qh;
        std::memcpy(&qh, x + 4, 4);
        const unsigned char *qs = x + 8;
        for (int j = 0; j < 16; ++j) {
            const uint8_t xh0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10);
            const uint8_t xh1 = uint8_t((qh >> (j + 12)) & 0x10);
            const int x0 = (qs[j] & 0x0F) | xh0;
            const int x1 = (qs[j] >> 4) | xh1;
            y[j] = float(x0) * d + m;
            y[j + 16] = float(x1) * d + m;
        }
    }
}

void q8_0(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 34, y += 32) {
        const float d = half(x, t);
        for (int j = 0; j < 32; ++j)
            y[j] = float(int8_t(x[2 + j])) * d;
    }
}

// Q4_K and Q5_K share their scales and mins; Q5_K adds a fifth bit per value from qh.
template <bool fifth>
void kquant(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    const int blockBytes = fifth ? 176 : 144;
    for (int64_t i = 0; i < nb; ++i, x += blockBytes) {
        const float d = half(x, t), min = half(x + 2, t);
        const unsigned char *scales = x + 4, *qh = x + 16, *ql = x + (fifth ? 48 : 16);
        int is = 0;
        uint8_t sc, m;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < 256; j += 64) {
            scaleMinK4(is + 0, scales, sc, m);
            const float d1 = d * float(sc), m1 = min * float(m);
            scaleMinK4(is + 1, scales, sc, m);
            const float d2 = d * float(sc), m2 = min * float(m);
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * float((ql[l] & 0xF) + (fifth && (qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * float((ql[l] >> 4) + (fifth && (qh[l] & u2) ? 16 : 0)) - m2;
            ql += 32;
            is += 2;
            u1 = uint8_t(u1 << 2);
            u2 = uint8_t(u2 << 2);
        }
    }
}

void q6_k(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 210) {
        const float d = half(x + 208, t);
        const unsigned char *ql = x, *qh = x + 128;
        const int8_t *sc = reinterpret_cast<const int8_t *>(x + 192);
        for (int n = 0; n < 256; n += 128) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int8_t q1 = int8_t((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = int8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = int8_t((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = int8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * float(sc[is + 0]) * float(q1);
                y[l + 32] = d * float(sc[is + 2]) * float(q2);
                y[l + 64] = d * float(sc[is + 4]) * float(q3);
                y[l + 96] = d * float(sc[is + 6]) * float(q4);
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

void iq4_nl(const unsigned char *x, int64_t nb, float *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 18, y += 32) {
        const float d = half(x, t);
        const unsigned char *qs = x + 2;
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(kIq4nl[qs[j] & 0xF]);
            y[j + 16] = d * float(kIq4nl[qs[j] >> 4]);
        }
    }
}

uint16_t toHalf(float f)
{
    // round to nearest even (as ggml's GGML_FP32_TO_FP16 on F16C hardware)
    return Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
}

int nearestInt(float x) { return int(std::lrintf(x)); }

void quantQ8_0(const float *x, int64_t nb, uint8_t *y)
{
    for (int64_t i = 0; i < nb; ++i, x += 32, y += 34) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j)
            amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t h = toHalf(d);
        std::memcpy(y, &h, 2);
        for (int j = 0; j < 32; ++j)
            y[2 + j] = uint8_t(int8_t(std::round(x[j] * id)));
    }
}

void quantQ4_K(const float *x, int64_t nb, uint8_t *y, const float *t)
{
    for (int64_t i = 0; i < nb; ++i, x += 256, y += 144) {
        float scale[8], mins[8], maxScale = 0.0f, maxMin = 0.0f;
        for (int j = 0; j < 8; ++j) {
            float lo = 0.0f, hi = x[32 * j];
            for (int l = 0; l < 32; ++l) {
                lo = std::min(lo, x[32 * j + l]);
                hi = std::max(hi, x[32 * j + l]);
            }
            scale[j] = hi > lo ? (hi - lo) / 15.0f : 0.0f;
            mins[j] = -lo;
            maxScale = std::max(maxScale, scale[j]);
            maxMin = std::max(maxMin, mins[j]);
        }
        const float invS = maxScale > 0 ? 63.0f / maxScale : 0.0f, invM = maxMin > 0 ? 63.0f / maxMin : 0.0f;
        uint8_t *scales = y + 4;
        std::memset(scales, 0, 12);
        for (int j = 0; j < 8; ++j) {
            const uint8_t ls = uint8_t(std::min(63, nearestInt(invS * scale[j])));
            const uint8_t lm = uint8_t(std::min(63, nearestInt(invM * mins[j])));
            if (j < 4) {
                scales[j] = ls;
                scales[j + 4] = lm;
            } else {
                scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
                scales[j - 4] |= uint8_t((ls >> 4) << 6);
                scales[j] |= uint8_t((lm >> 4) << 6);
            }
        }
        const uint16_t d = toHalf(maxScale / 63.0f), dmin = toHalf(maxMin / 63.0f);
        std::memcpy(y, &d, 2);
        std::memcpy(y + 2, &dmin, 2);
        uint8_t L[256];
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            scaleMinK4(j, scales, sc, m);
            const float dd = t[d] * float(sc), dm = t[dmin] * float(m);
            for (int l = 0; l < 32; ++l)
                L[32 * j + l] = dd != 0.0f ? uint8_t(std::clamp(nearestInt((x[32 * j + l] + dm) / dd), 0, 15)) : 0;
        }
        uint8_t *q = y + 16;
        for (int j = 0; j < 256; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    }
}

} // namespace

bool ggmlQuantize(uint32_t type, const float *x, int64_t n, uint8_t *dst)
{
    if (type == ggml::Q8_0) {
        quantQ8_0(x, n / 32, dst);
        return true;
    }
    if (type == ggml::Q4_K) {
        quantQ4_K(x, n / 256, dst, halfTable());
        return true;
    }
    return false;
}

bool ggmlDequantizes(uint32_t type)
{
    switch (type) {
    case ggml::F32: case ggml::F16: case ggml::BF16: case ggml::Q4_0: case ggml::Q4_1: case ggml::Q5_0:
    case ggml::Q5_1: case ggml::Q8_0: case ggml::Q4_K: case ggml::Q5_K: case ggml::Q6_K: case ggml::IQ4_NL:
        return true;
    default:
        return false;
    }
}

bool ggmlDequantize(uint32_t type, const unsigned char *src, int64_t n, float *dst)
{
    const float *t = halfTable();
    switch (type) {
    case ggml::F32:
        std::memcpy(dst, src, size_t(n) * 4);
        return true;
    case ggml::F16:
        for (int64_t i = 0; i < n; ++i)
            dst[i] = half(src + 2 * i, t);
        return true;
    case ggml::BF16:
        for (int64_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            dst[i] = bf16ToFloat(h);
        }
        return true;
    case ggml::Q4_0: q4_0(src, n / 32, dst, t); return true;
    case ggml::Q4_1: q4_1(src, n / 32, dst, t); return true;
    case ggml::Q5_0: q5_0(src, n / 32, dst, t); return true;
    case ggml::Q5_1: q5_1(src, n / 32, dst, t); return true;
    case ggml::Q8_0: q8_0(src, n / 32, dst, t); return true;
    case ggml::Q4_K: kquant<false>(src, n / 256, dst, t); return true;
    case ggml::Q5_K: kquant<true>(src, n / 256, dst, t); return true;
    case ggml::Q6_K: q6_k(src, n / 256, dst, t); return true;
    case ggml::IQ4_NL: iq4_nl(src, n / 32, dst, t); return true;
    default: return false;
    }
}

} // namespace attnviz::detail
