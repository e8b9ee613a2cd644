// SPDX-License-Identifier: GPL-3.0-or-later
// patch_bench: the time of an activation patching sweep (patching.h) on a seeded shape, core only.
//   patch_bench [--seeded gpt2-small] [--tokens 64] [--sweep heads|resid|mlp|both|all] [--json]
// The clean and corrupted prompts are seeded ids that differ at one position (the middle one); the
// answer and wrong tokens are two fixed ids. Prints the wall time of each sweep (one run: a sweep is
// hundreds of forwards), the CPU seconds of every thread (comparable where other work shares the
// cores) and the cells per second; tests/bench/torch_patch_peer.py times the same sweep
// as TransformerLens does it (one full PyTorch forward with a hook per cell) on the same shape.
#include "attnviz/parallel.h"
#include "attnviz/patching.h"
#include "attnviz/pretrained.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <string>
#include <vector>

using namespace attnviz;

int main(int argc, char **argv)
{
    std::string shape = "gpt2-small", sweeps = "both";
    int tokens = 64;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--seeded" && hasValue)
            shape = argv[++i];
        else if (a == "--tokens" && hasValue)
            tokens = std::atoi(argv[++i]);
        else if (a == "--sweep" && hasValue)
            sweeps = argv[++i];
        else if (a == "--json")
            json = true;
        else {
            std::fprintf(stderr, "patch_bench: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    Architecture arch;
    std::string dtype;
    if (!seededShape(shape, arch, &dtype)) {
        std::fprintf(stderr, "patch_bench: --seeded: not a shape attnviz knows: %s\n", shape.c_str());
        return 2;
    }
    if (!arch.causal) {
        std::fprintf(stderr, "patch_bench: --seeded %s: not a causal language model\n", shape.c_str());
        return 2;
    }
    if (tokens < 2 || tokens > arch.maxPositions) {
        std::fprintf(stderr, "patch_bench: --tokens: %d is not a length in [2, %d]\n", tokens, arch.maxPositions);
        return 2;
    }
    std::unique_ptr<Model> m;
    if (Status st = seededPretrained(arch, 1, m, dtype); !st) {
        std::fprintf(stderr, "patch_bench: %s\n", st.message.c_str());
        return 2;
    }
    PatchRequest req;
    for (int i = 0; i < tokens; ++i)
        req.cleanIds.push_back(int((uint64_t(i) * 7919u + 13u) % uint64_t(arch.vocabulary)));
    req.corruptedIds = req.cleanIds;
    req.corruptedIds[size_t(tokens / 2)] = (req.cleanIds[size_t(tokens / 2)] + 1) % arch.vocabulary;
    req.answer = 11;
    req.wrong = 12;
    nlohmann::json out = {{"shape", shape}, {"tokens", tokens}, {"threads", coreThreads()}, {"dtype", dtype}};
    { // one whole forward of the corrupted prompt (a fresh trace: nothing reused), the best of 5, as the
      // unit the peer's per-forward time compares with
        TraceRequest tr;
        tr.ids = req.corruptedIds;
        double best = 1e30;
        for (int i = 0; i < 5; ++i) {
            Trace<float> t;
            const auto t0 = std::chrono::steady_clock::now();
            if (Status st = m->trace(tr, t); !st) {
                std::fprintf(stderr, "patch_bench: %s\n", st.message.c_str());
                return 1;
            }
            best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        out["forward_ms"] = best;
        if (!json)
            std::printf("forward    %s, %d tokens: %.1f ms (best of 5, whole trace)\n", shape.c_str(), tokens, best);
    }
    for (PatchSweep s : {PatchSweep::HeadsAllPositions, PatchSweep::ResidPre, PatchSweep::MlpOut}) {
        const char *name = s == PatchSweep::ResidPre ? "resid" : s == PatchSweep::MlpOut ? "mlp" : "heads";
        const bool wanted = sweeps == "all" || sweeps == name || (sweeps == "both" && s != PatchSweep::MlpOut);
        if (!wanted)
            continue;
        req.sweep = s;
        PatchResult res;
        const std::clock_t c0 = std::clock(); // the process's CPU time, every thread's
        const auto t0 = std::chrono::steady_clock::now();
        if (Status st = patchSweep<float>(*m, req, res); !st) {
            std::fprintf(stderr, "patch_bench: %s\n", st.message.c_str());
            return 1;
        }
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
        const int cells = res.rows * res.cols;
        out[patchSweepName(s)] = {{"cells", cells}, {"seconds", sec}, {"cpu_seconds", cpu}, {"cells_per_second", cells / sec}};
        if (!json)
            std::printf("%-10s %s, %d tokens: %d x %d = %d cells in %.2f s (%.1f cells/s, %d threads)\n", patchSweepName(s),
                        shape.c_str(), tokens, res.rows, res.cols, cells, sec, cells / sec, coreThreads());
    }
    if (json)
        std::printf("%s\n", out.dump().c_str());
    return 0;
}
