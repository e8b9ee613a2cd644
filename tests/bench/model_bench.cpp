// SPDX-License-Identifier: GPL-3.0-or-later
// model_bench: `attnviz bench --seeded gpt2-small|bert-base --json` as a program that needs only the
// core (no Qt), for machines where the window's libraries are not installed (a quiet benchmark
// machine). Same timing code (runModelBench), same JSON fields; tests/bench/models_peer.py runs
// either. Its options are read by hand: QCommandLineParser would bring the Qt runtime back.
//   model_bench --seeded SHAPE [--tokens 128,1024] [--repeat 5] [--scores] [--dtype F32|BF16]
//               [--observe all|attention|layer] [--typed] [--json]
// --dtype overrides the precision the shape is published in (seededShape): F32 against BF16 is the
// A/B of 16-bit weights kept as stored. --observe attention: every layer's weights, keys and values
// kept, no other stage; layer: the first layer's weights and stages, every layer's keys and values
// (as `attnviz bench --observe`). Encoder-decoder shapes (t5-small, opus-mt-en-de): each --tokens size
// is the source's and the target's length; rows: the full trace and one generated step (runSeq2SeqBench).
#include "attnviz/bench.h"
#include "attnviz/parallel.h"
#include "attnviz/pretrained.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace attnviz;

int main(int argc, char **argv)
{
    std::string shape = "gpt2-small", tokens = "128,1024", dtypeOverride;
    int repeat = 5;
    bool scores = false, typed = false;
    Observe observe; // everything, unless --observe attention or layer
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--seeded" && hasValue)
            shape = argv[++i];
        else if (a == "--tokens" && hasValue)
            tokens = argv[++i];
        else if (a == "--repeat" && hasValue)
            repeat = std::atoi(argv[++i]);
        else if (a == "--dtype" && hasValue)
            dtypeOverride = argv[++i];
        else if (a == "--observe" && hasValue) {
            const std::string what = argv[++i];
            if (!benchObserve(what, observe)) {
                std::fprintf(stderr, "model_bench: --observe: all, attention or layer, not %s\n", what.c_str());
                return 2;
            }
        } else if (a == "--scores")
            scores = true;
        else if (a == "--typed")
            typed = true;
        else if (a != "--json" && a != "--no-scores") {
            std::fprintf(stderr, "model_bench: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    Architecture arch;
    std::string dtype;
    if (!seededShape(shape, arch, &dtype)) {
        std::fprintf(stderr, "model_bench: --seeded: not a shape attnviz knows: %s\n", shape.c_str());
        return 2;
    }
    std::unique_ptr<Model> m;
    const auto t0 = std::chrono::steady_clock::now();
    if (!dtypeOverride.empty())
        dtype = dtypeOverride;
    if (Status st = seededPretrained(arch, 1, m, dtype); !st) {
        std::fprintf(stderr, "model_bench: %s\n", st.message.c_str());
        return 2;
    }
    const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ModelInfo info = m->info();
    std::vector<int> sizes;
    for (size_t at = 0; at < tokens.size();) {
        const size_t comma = tokens.find(',', at);
        const int n = std::atoi(tokens.substr(at, comma - at).c_str());
        if (n < 2 || (info.maxPositions > 0 && n > info.maxPositions)) {
            std::fprintf(stderr, "model_bench: --tokens: %d is not a length in [2, %d]\n", n, info.maxPositions);
            return 2;
        }
        sizes.push_back(n);
        at = comma == std::string::npos ? tokens.size() : comma + 1;
    }
    std::vector<ModelBenchRow> rows;
    if (info.architecture.encoderDecoder) { // each size as the source and the target
        for (int n : sizes)
            if (Status st = runSeq2SeqBench(*m, n, n, repeat, rows); !st) {
                std::fprintf(stderr, "model_bench: %s\n", st.message.c_str());
                return 1;
            }
    } else if (Status st = runModelBench(*m, sizes, repeat, scores, rows, nullptr, observe, typed); !st) {
        std::fprintf(stderr, "model_bench: %s\n", st.message.c_str());
        return 1;
    }
    nlohmann::json out = {{"model",
                           {{"family", info.family},
                            {"name", info.name},
                            {"layers", info.layers},
                            {"heads", info.heads},
                            {"d_model", info.dModel}}},
                          {"threads", coreThreads()},
                          {"load_ms", loadMs},
                          {"scores_kept", scores},
                          {"stages_kept", observe.stages},
                          {"layers_kept", observe.layers.empty() ? "all" : "first"},
                          {"rows", nlohmann::json::array()},
                          {"peak_rss_mb", peakRssMb()}};
    for (const ModelBenchRow &r : rows)
        out["rows"].push_back({{"what", r.what}, {"tokens", r.tokens}, {"ms", r.ms}});
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
}
