// SPDX-License-Identifier: GPL-3.0-or-later
// Random numbers that match PyTorch's CPU generator, so that the seeds' seeded examples
// (torch.manual_seed(123); torch.rand(...), nn.Linear init, nn.Dropout) come out bit for bit.
//
// - torch.manual_seed(s) seeds a standard 32-bit Mersenne Twister (std::mt19937(s)).
// - float uniform_(from, to): u = (r & 0xFFFFFF) * 2^-24 from one 32-bit draw, then u*(to-from)+from in float.
// - builds without MKL (Debian's python3-torch): element kept when uniformDouble() < 1-p.
// - nn.Dropout / bernoulli_(1-p) in the released (MKL) builds that printed the seeds' numbers:
//   one 32-bit draw seeds MKL's MCG31m1 stream (x0 = seed mod (2^31-1), x_{n+1} = 1132489760 x_n mod m),
//   element n is kept when x_n / m < 1-p. Verified against seed 001's printed 6x6 dropout mask.
#pragma once

#include <cstdint>
#include <random>

namespace attnviz {

class TorchGenerator {
public:
    explicit TorchGenerator(uint64_t seed = 67280421310721ull) : m_engine(static_cast<uint32_t>(seed)) {}

    uint32_t random() { return m_engine(); }

    // torch's float uniform_(from, to).
    float uniformFloat(float from, float to)
    {
        const float u = static_cast<float>(random() & 0xFFFFFFu) * (1.0f / 16777216.0f);
        return u * (to - from) + from;
    }

    // torch's double uniform in [0, 1) (bernoulli_ without MKL): 53 bits of two 32-bit draws, first = high word.
    double uniformDouble()
    {
        const uint64_t hi = random(), lo = random();
        return double(((hi << 32) | lo) & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
    }

    // nn.init.kaiming_uniform_(w, a=sqrt(5)) bound, as nn.Linear.reset_parameters computes it.
    static double linearWeightBound(int fanIn);
    // nn.Linear bias bound 1/sqrt(fan_in).
    static double linearBiasBound(int fanIn);
    // nn.init.xavier_uniform_ bound.
    static double xavierBound(int fanIn, int fanOut);

private:
    std::mt19937 m_engine;
};

// MKL VSL_BRNG_MCG31 Bernoulli stream as torch's bernoulli_(p) uses it (ICDF method).
class Mcg31Bernoulli {
public:
    explicit Mcg31Bernoulli(uint32_t seed)
    {
        m_x = seed % kModulus;
        if (m_x == 0)
            m_x = 1;
    }
    // True (1) with probability p.
    bool next(double p)
    {
        const double u = static_cast<double>(m_x) / static_cast<double>(kModulus);
        m_x = (kMultiplier * m_x) % kModulus;
        return u < p;
    }

private:
    static constexpr uint64_t kModulus = 2147483647ull;
    static constexpr uint64_t kMultiplier = 1132489760ull;
    uint64_t m_x;
};

} // namespace attnviz
