// SPDX-License-Identifier: GPL-3.0-or-later
// SeededNormal: the normal numbers seeded weights are drawn from (weights.cpp, seq2seq.cpp), from a
// std::mt19937_64. Written out rather than std::normal_distribution because that one's numbers are
// the standard library's choice (libc++ draws others than libstdc++) and its rounding the compiler's
// (whether x*x + y*y becomes one FMA depends on the compiler, its flags and what it inlined: g++ at
// -O2 and at -O3 draw numbers an ulp apart). This is libstdc++'s algorithm, generate_canonical then
// Marsaglia's polar method a pair at a time, with its two multiply-adds written as std::fma: a seed
// gives the same weights in every build (tst_models checks a seed's numbers), those of libstdc++
// where GCC fused both (an ulp apart in some draws where it did not). It also skips the
// long-double logarithm libstdc++'s generate_canonical takes on every call where the compiler does
// not fold it (clang: six times slower under the sanitizers).
#pragma once

#include <cmath>
#include <random>

namespace attnviz {

template <typename T>
class SeededNormal {
public:
    SeededNormal(T mean, T sd) : m_mean(mean), m_sd(sd) {}

    // generate_canonical<T, digits>: one 64-bit draw over 2^64, never 1
    static T canonical(std::mt19937_64 &g)
    {
        const T u = T(g() - std::mt19937_64::min()) / T(18446744073709551616.0L);
        return u >= T(1) ? std::nextafter(T(1), T(0)) : u;
    }

    T operator()(std::mt19937_64 &g)
    {
        T r;
        if (m_saved) {
            m_saved = false;
            r = m_keep;
        } else {
            T x, y, r2;
            do {
                x = T(2) * canonical(g) - 1.0; // in double, as libstdc++ writes it
                y = T(2) * canonical(g) - 1.0;
                r2 = std::fma(x, x, y * y);
            } while (r2 > 1.0 || r2 == 0.0);
            const T mult = std::sqrt(-2 * std::log(r2) / r2);
            m_keep = x * mult;
            m_saved = true;
            r = y * mult;
        }
        return std::fma(r, m_sd, m_mean);
    }

private:
    T m_mean, m_sd;
    bool m_saved = false;
    T m_keep = 0;
};

} // namespace attnviz
