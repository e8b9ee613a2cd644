// SPDX-License-Identifier: GPL-3.0-or-later
// The machine's arithmetic ceiling: float FMA throughput from registers only (no loads, no stores),
// with AVX2 (8 lanes) and AVX-512 (16 lanes), on 1 thread and on every hardware thread. No kernel
// that also reads its operands from memory can go faster, so this is the bound the "% of sgemm"
// columns of README "Performance" and the AVX2 rows are judged against.
// A benchmark, not a test: built and run by tests/bench/run_tables.sh (section 0), or by hand:
//   g++ -O2 -pthread tests/bench/fma_peak.cpp -o fma_peak && ./fma_peak [--seconds 1] [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace {

// 12 independent accumulators: more than the FMA latency (4 cycles) times the FMA ports (2) of any
// x86 core, so the loop is bound by FMA throughput. The empty asm keeps each accumulator in its
// register and stops the compiler from folding the chains.
#define ATTNVIZ_FMA_CHAINS(V, FMA)                                                                            \
    V c0 = s, c1 = s, c2 = s, c3 = s, c4 = s, c5 = s, c6 = s, c7 = s, c8 = s, c9 = s, c10 = s, c11 = s;      \
    for (long i = 0; i < iters; ++i) {                                                                        \
        c0 = FMA(a, b, c0), c1 = FMA(a, b, c1), c2 = FMA(a, b, c2), c3 = FMA(a, b, c3);                       \
        c4 = FMA(a, b, c4), c5 = FMA(a, b, c5), c6 = FMA(a, b, c6), c7 = FMA(a, b, c7);                       \
        c8 = FMA(a, b, c8), c9 = FMA(a, b, c9), c10 = FMA(a, b, c10), c11 = FMA(a, b, c11);                   \
        asm volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),     \
                     "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));                                               \
    }                                                                                                         \
    const V sum = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;                                \
    float out[sizeof(V) / sizeof(float)];                                                                     \
    std::memcpy(out, &sum, sizeof out);                                                                       \
    return out[0];

__attribute__((target("avx2,fma"), noinline)) float chainsAvx2(long iters, float x)
{
    const __m256 s = _mm256_set1_ps(x), a = s, b = s;
    ATTNVIZ_FMA_CHAINS(__m256, _mm256_fmadd_ps)
}

__attribute__((target("avx512f"), noinline)) float chainsAvx512(long iters, float x)
{
    const __m512 s = _mm512_set1_ps(x), a = s, b = s;
    ATTNVIZ_FMA_CHAINS(__m512, _mm512_fmadd_ps)
}

// GFLOP/s of `threads` threads each running `iters` iterations (12 FMAs of `lanes` floats, 2 flops each).
double rate(int threads, long iters, bool wide)
{
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<float> sink(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { sink[size_t(t)] = wide ? chainsAvx512(iters, 1e-9f) : chainsAvx2(iters, 1e-9f); });
    for (auto &th : pool)
        th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return double(threads) * double(iters) * 12.0 * (wide ? 16 : 8) * 2.0 / s / 1e9;
}

} // namespace

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--seconds"))
            seconds = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--rounds"))
            rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: fma_peak [--seconds S] [--rounds N]\n");
            return 2;
        }
    }
    if (seconds <= 0 || rounds <= 0) {
        std::fprintf(stderr, "fma_peak: --seconds and --rounds must be positive\n");
        return 2;
    }
    __builtin_cpu_init();
    const int all = int(std::max(1u, std::thread::hardware_concurrency()));
    std::printf("%-8s %8s %s\n", "isa", "threads", "GFLOP/s per round (register-only float FMA)");
    for (const bool wide : {false, true}) {
        if (!(wide ? __builtin_cpu_supports("avx512f") : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
            std::printf("%-8s %8s not on this CPU\n", wide ? "AVX-512" : "AVX2", "-");
            continue;
        }
        for (const int threads : {1, all}) {
            // Size one round to about `seconds` from a short calibration run on one thread.
            const long probe = 2000000;
            const double perIter = 12.0 * (wide ? 16 : 8) * 2.0 / (rate(1, probe, wide) * 1e9);
            const long iters = std::max(probe, long(seconds / perIter));
            std::printf("%-8s %8d", wide ? "AVX-512" : "AVX2", threads);
            for (int r = 0; r < rounds; ++r)
                std::printf(" %8.1f", rate(threads, iters, wide));
            std::printf("\n");
            if (all == 1)
                break;
        }
    }
    return 0;
}
