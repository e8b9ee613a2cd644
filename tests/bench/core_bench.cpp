// SPDX-License-Identifier: GPL-3.0-or-later
// A Qt-free driver of the core's benchmark (bench.h), for comparing ways of building the core
// (issue 15): run_tables.sh compiles the core's arithmetic with this file once per option
// (-march levels, EIGEN_USE_BLAS over OpenBLAS) and prints the same JSON rows as `attnviz bench`.
//   core_bench [--stack DEPTH] t:d:h|b:t:d:h ...
#include "attnviz/bench.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv)
{
    using namespace attnviz;
    int depth = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--stack") == 0 && i + 1 < argc) {
            depth = std::atoi(argv[++i]);
            continue;
        }
        BenchSize s;
        int n[4];
        const int k = std::sscanf(argv[i], "%d:%d:%d:%d", &n[0], &n[1], &n[2], &n[3]);
        if (k == 3)
            s = {1, n[0], n[1], n[2]};
        else if (k == 4)
            s = {n[0], n[1], n[2], n[3]};
        else {
            std::fprintf(stderr, "core_bench: '%s' is not t:d:h or b:t:d:h\n", argv[i]);
            return 2;
        }
        CpuBackend cpu;
        BenchRow row;
        const Status st = depth ? runStackBench(s, depth, row) : runBench(cpu, s, row);
        if (!st) {
            std::fprintf(stderr, "core_bench: %s\n", st.message.c_str());
            return 1;
        }
        std::printf("%s\n", benchRowJson(row).c_str());
        std::fflush(stdout);
    }
    return 0;
}
