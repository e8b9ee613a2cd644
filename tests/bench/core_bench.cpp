// SPDX-License-Identifier: GPL-3.0-or-later
// A Qt-free driver of the core's benchmark (bench.h), for comparing ways of building the core:
// run_tables.sh compiles the core's arithmetic with this file once per option
// (-march levels, EIGEN_USE_BLAS over OpenBLAS). It takes the arguments of `attnviz bench --json`
// that torch_peer.py passes and prints the same JSON rows, so torch_peer.py --attnviz can run it.
//   core_bench [bench] [--json] [--backend cpu] [--seconds S] [--stack DEPTH] --sizes t:d:h|b:t:d:h,...
#include "attnviz/bench.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char **argv)
{
    using namespace attnviz;
    int depth = 0;
    double seconds = 1.0;
    std::string sizes;
    for (int i = 1; i < argc; ++i) {
        const bool hasValue = i + 1 < argc;
        if (std::strcmp(argv[i], "--stack") == 0 && hasValue)
            depth = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--seconds") == 0 && hasValue)
            seconds = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--sizes") == 0 && hasValue)
            sizes = argv[++i];
        else if (std::strcmp(argv[i], "--backend") == 0 && hasValue)
            ++i; // the CPU only
    }
    size_t pos = 0;
    while (pos < sizes.size()) {
        const size_t end = std::min(sizes.find(',', pos), sizes.size());
        const std::string item = sizes.substr(pos, end - pos);
        pos = end + 1;
        BenchSize s;
        int n[4];
        const int k = std::sscanf(item.c_str(), "%d:%d:%d:%d", &n[0], &n[1], &n[2], &n[3]);
        if (k == 3)
            s = {1, n[0], n[1], n[2]};
        else if (k == 4)
            s = {n[0], n[1], n[2], n[3]};
        else {
            std::fprintf(stderr, "core_bench: '%s' is not t:d:h or b:t:d:h\n", item.c_str());
            return 2;
        }
        CpuBackend cpu;
        BenchRow row;
        const Status st = depth ? runStackBench(s, depth, row, seconds) : runBench(cpu, s, row, seconds);
        if (!st) {
            std::fprintf(stderr, "core_bench: %s\n", st.message.c_str());
            return 1;
        }
        std::printf("%s\n", benchRowJson(row).c_str());
        std::fflush(stdout);
    }
    return 0;
}
