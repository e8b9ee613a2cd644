// SPDX-License-Identifier: GPL-3.0-or-later
#include "commands.h"
#include "output.h"

#include "attnviz/attention.h"
#include "attnviz/backend.h"
#include "attnviz/bench.h"
#include "attnviz/caseio.h"
#include "attnviz/gpubackend.h"
#include "attnviz/memorybudget.h"
#include "bundledvectors.h"

#include <QCommandLineParser>
#include <QFile>

#include <chrono>
#include <cstdio>
#include <memory>

namespace attnviz::cli {

namespace {

FullyMaskedPolicy parsePolicy(const QString &s, bool &ok)
{
    ok = true;
    if (s == QLatin1String("nan"))
        return FullyMaskedPolicy::NaN;
    if (s == QLatin1String("zero"))
        return FullyMaskedPolicy::Zero;
    if (s == QLatin1String("uniform"))
        return FullyMaskedPolicy::Uniform;
    ok = false;
    return FullyMaskedPolicy::NaN;
}

template <typename T>
AttentionInput<T> castInput(const AttentionInput<double> &in)
{
    AttentionInput<T> out;
    out.attnMask = in.attnMask;
    for (const auto &s : in.batch) {
        SequenceInput<T> t;
        t.query = s.query.cast<T>();
        t.key = s.key.cast<T>();
        t.value = s.value.cast<T>();
        t.keyPadding = s.keyPadding;
        out.batch.push_back(std::move(t));
    }
    auto lin = [](const Linear<double> &l) {
        Linear<T> o;
        o.W = l.W.cast<T>();
        o.b = l.b.cast<T>();
        return o;
    };
    out.proj = {lin(in.proj.q), lin(in.proj.k), lin(in.proj.v), lin(in.proj.o)};
    return out;
}

// `auto` tries the GPU from this many attention weights (B * H * t_q * t_k) on: below it the CPU
// core answers before a GPU device has even started.
constexpr double kAutoGpuMinWeights = 1 << 20;

void note(const char *verb, const std::string &text)
{
    std::fprintf(stderr, "attnviz %s: note: %s\n", verb, text.c_str());
}

} // namespace

int compute(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Computes every attention stage of a case file (schema attn-golden/1) and writes them as JSON\n"
        "under the case's field names: q k v scores weights weights_avg context output."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("case"), QStringLiteral("The case file (JSON)."));
    QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("output")},
                              QStringLiteral("Write the result here (default: standard output)."), QStringLiteral("file"));
    QCommandLineOption backendOpt(QStringLiteral("backend"), QStringLiteral("cpu, gpu or auto (default cpu)."),
                                  QStringLiteral("name"), QStringLiteral("cpu"));
    QCommandLineOption precisionOpt(QStringLiteral("precision"),
                                    QStringLiteral("float64 (default on the CPU) or float32."), QStringLiteral("p"));
    QCommandLineOption embOpt(QStringLiteral("embeddings"),
                              QStringLiteral("Embedding table for sentence cases (.txt/.vec/.bin/.avec; default: the bundled "
                                             "English table)."),
                              QStringLiteral("file"));
    QCommandLineOption policyOpt(QStringLiteral("fully-masked"),
                                 QStringLiteral("Rows with every key masked: nan (as torch; default), zero, uniform."),
                                 QStringLiteral("policy"));
    QCommandLineOption checkOpt(QStringLiteral("check"),
                                QStringLiteral("Compare with the case's expected stages (float64: rtol 1e-10, "
                                               "atol 1e-12; float32: rtol 1e-4, atol 1e-5); exit 1 on a mismatch."));
    p.addOptions({outOpt, backendOpt, precisionOpt, embOpt, policyOpt, checkOpt});
    if (!p.parse(args))
        return fail("compute", p.errorText(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.positionalArguments().size() != 1)
        return fail("compute", QStringLiteral("expected one case file (see --help)"), 2);

    const QString backend = p.value(backendOpt);
    if (backend != QLatin1String("cpu") && backend != QLatin1String("gpu") && backend != QLatin1String("auto"))
        return fail("compute", QStringLiteral("--backend: unknown '%1' (cpu, gpu, auto)").arg(backend), 2);
    const bool wantGpu = backend == QLatin1String("gpu");
    // The GPU computes in float32: the default there; float64 is the CPU's.
    QString precision = p.isSet(precisionOpt) ? p.value(precisionOpt)
                                              : (wantGpu ? QStringLiteral("float32") : QStringLiteral("float64"));
    if (precision != QLatin1String("float64") && precision != QLatin1String("float32"))
        return fail("compute", QStringLiteral("--precision: unknown '%1' (float64, float32)").arg(precision), 2);
    if (wantGpu && precision == QLatin1String("float64"))
        return fail("compute", QStringLiteral("--precision float64: the GPU backend computes in float32"), 2);

    CaseFile c;
    const std::string casePath = p.positionalArguments().first().toStdString();
    if (Status st = loadCase(casePath, c); !st)
        return fail("compute", st.message, exitCodeFor(st));
    if (p.isSet(policyOpt)) {
        bool ok;
        c.config.fullyMasked = parsePolicy(p.value(policyOpt), ok);
        if (!ok)
            return fail("compute", QStringLiteral("--fully-masked: unknown '%1' (nan, zero, uniform)").arg(p.value(policyOpt)), 2);
    }
    if (c.fromSentence) {
        EmbeddingTable table;
        if (!p.isSet(embOpt)) {
            if (Status st = loadBundledEmbeddings(table); !st)
                return fail("compute", "inputs.sentence: " + st.message + " (--embeddings FILE)", exitCodeFor(st));
        } else if (Status st = loadEmbeddings(p.value(embOpt).toStdString(), table); !st) {
            return fail("compute", "--embeddings: " + st.message, exitCodeFor(st));
        }
        if (Status st = embedCaseSentences(c, table); !st)
            return fail("compute", st.message, exitCodeFor(st));
    }
    // Every stage is kept and written as JSON text (up to ~25 bytes a number): refuse, before
    // allocating, what would not fit. Cutting the input would change the numbers asked for.
    if (ResolvedShape shape; resolveShape(c.config, c.input, shape).ok()) {
        constexpr size_t kJsonBytesPerNumber = 25;
        const size_t scalar = precision == QLatin1String("float64") ? 8 : 4;
        if (Status st = checkAttentionMemory(shape, c.config.dropout > 0, scalar, casePath, kJsonBytesPerNumber); !st)
            return fail("compute", st.message, exitCodeFor(st));
    }

    // Backend choice. gpu: the GPU or a clear failure. auto: the GPU where one starts, is not a
    // software rasterizer and the problem is large enough; else the CPU, saying why.
    std::unique_ptr<GpuBackend> gpu;
    if (wantGpu || backend == QLatin1String("auto")) {
        ResolvedShape shape;
        const bool sized = resolveShape(c.config, c.input, shape).ok();
        const double weights = sized ? double(shape.batch) * shape.numHeads * shape.tq * shape.tk : 0.0;
        if (!wantGpu && p.isSet(precisionOpt) && precision == QLatin1String("float64")) {
            note("compute", "--backend auto: float64 asked for, computing on the CPU");
        } else if (!wantGpu && weights < kAutoGpuMinWeights) {
            note("compute", "--backend auto: small problem, computing on the CPU");
        } else {
            gpu = std::make_unique<GpuBackend>();
            const Status st = gpu->start();
            if (!st) {
                if (wantGpu)
                    return fail("compute", "--backend gpu: " + st.message, 1);
                note("compute", "--backend auto: " + st.message + "; computing on the CPU");
                gpu.reset();
            } else if (!wantGpu && gpu->isSoftware()) {
                note("compute", "--backend auto: " + gpu->device() + " is a software rasterizer; computing on the CPU");
                gpu.reset();
            } else if (!wantGpu) {
                precision = QStringLiteral("float32");
                note("compute", "--backend auto: computing on " + gpu->name() + " (" + gpu->device() + "), float32");
            }
        }
    }

    ResultMeta meta;
    meta.backend = "cpu";
    meta.device = cpuDeviceName();
    meta.precision = precision.toStdString();
    std::string text;
    bool checked = true;
    std::string checkReport;
    auto run = [&](auto tag) -> int {
        using T = decltype(tag);
        AttentionResult<T> r;
        const auto t0 = std::chrono::steady_clock::now();
        Status st;
        if constexpr (std::is_same_v<T, double>) {
            st = computeAttention(c.config, c.input, r);
        } else {
            const AttentionInput<float> in = castInput<float>(c.input);
            if (gpu) {
                st = gpu->compute(c.config, in, r);
                if (st) {
                    meta.backend = gpu->name();
                    meta.device = gpu->device();
                } else if (wantGpu || st.code == StatusCode::InvalidInput || st.code == StatusCode::NonFinite) {
                    return fail("compute", c.name + ": " + gpu->name() + ": " + st.message, exitCodeFor(st));
                } else {
                    note("compute", "--backend auto: the GPU failed (" + st.message + "); computing on the CPU");
                }
            }
            if (!gpu || !st) {
                CpuBackend cpu;
                st = cpu.compute(c.config, in, r);
            }
        }
        meta.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!st)
            return fail("compute", c.name + ": " + st.message, exitCodeFor(st));
        for (const auto &b : r.batch)
            if (!b.fullyMaskedRows.empty() || !b.degenerateRows.empty()) {
                std::fprintf(stderr,
                             "attnviz compute: note: %zu query row(s) have every key masked, %zu have a zero row sum; "
                             "their weights follow the '%s' policy (listed in fully_masked_rows / degenerate_rows)\n",
                             b.fullyMaskedRows.size(), b.degenerateRows.size(),
                             c.config.fullyMasked == FullyMaskedPolicy::NaN    ? "nan"
                             : c.config.fullyMasked == FullyMaskedPolicy::Zero ? "zero"
                                                                               : "uniform");
                break;
            }
        text = resultToJson(c, r, meta);
        if (p.isSet(checkOpt)) {
            const bool f64 = std::is_same_v<T, double>;
            for (const auto &stage : stageNames()) {
                if (!c.expected.count(stage))
                    continue;
                bool ok = false;
                std::string detail;
                const double d = compareStage(c, r, stage, f64 ? 1e-10 : 1e-4, f64 ? 1e-12 : 1e-5, ok, &detail);
                char line[256];
                std::snprintf(line, sizeof line, "%-12s max|diff| %.3g  %s\n", stage.c_str(), d, ok ? "ok" : "MISMATCH");
                checkReport += line;
                if (!ok) {
                    checked = false;
                    checkReport += "  " + detail + "\n";
                }
            }
        }
        return 0;
    };
    const int rc = precision == QLatin1String("float64") ? run(double{}) : run(float{});
    if (rc)
        return rc;
    std::string error;
    if (!writeOutput(p.value(outOpt), text, error))
        return fail("compute", error, 1);
    if (p.isSet(checkOpt)) {
        std::fputs(checkReport.c_str(), stderr);
        if (!checked)
            return fail("compute", c.name + ": differs from the expected values", 1);
    }
    return 0;
}

int bench(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Times nn.MultiheadAttention's work (projections with biases, softmax, W_o, all per-head weights kept):\n"
        "median of repeated runs after a warm-up. Compare with PyTorch: tests/bench/torch_peer.py.\n"
        "With --model or --seeded it times a model instead (attnviz bench --seeded gpt2-small --help lists\n"
        "those options); with --ui, a keystroke in the window (attnviz bench --ui --help)."));
    p.addHelpOption();
    QCommandLineOption sizesOpt(QStringLiteral("sizes"),
                                QStringLiteral("Comma-separated t:d:h or b:t:d:h (default: 16:64:4,128:256:4,512:768:12,"
                                               "2048:768:12,4096:768:12,32:1000:256:4)."),
                                QStringLiteral("list"));
    QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("One JSON object per line."));
    QCommandLineOption secondsOpt(QStringLiteral("seconds"), QStringLiteral("Minimum timed seconds per size (default 1)."),
                                  QStringLiteral("s"), QStringLiteral("1"));
    QCommandLineOption backendOpt(QStringLiteral("backend"), QStringLiteral("cpu (default), gpu or all."),
                                  QStringLiteral("name"), QStringLiteral("cpu"));
    QCommandLineOption stackOpt(QStringLiteral("stack"),
                                QStringLiteral("Time a transformer stack of this many layers per size instead "
                                               "(default sizes then: 128:768:12,512:768:12)."),
                                QStringLiteral("depth"));
    p.addOptions({sizesOpt, jsonOpt, secondsOpt, backendOpt, stackOpt});
    if (!p.parse(args))
        return fail("bench", p.errorText(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    int depth = 0;
    if (p.isSet(stackOpt)) {
        bool okDepth = false;
        depth = p.value(stackOpt).toInt(&okDepth);
        if (!okDepth || depth <= 0 || depth > 200)
            return fail("bench", QStringLiteral("--stack: expected a depth between 1 and 200"), 2);
    }
    std::vector<BenchSize> sizes = depth ? std::vector<BenchSize>{{1, 128, 768, 12}, {1, 512, 768, 12}} : defaultBenchSizes();
    if (p.isSet(sizesOpt)) {
        sizes.clear();
        for (const QString &item : p.value(sizesOpt).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QStringList f = item.split(QLatin1Char(':'));
            QVector<int> n;
            for (const QString &x : f) {
                bool ok = false;
                const int v = x.toInt(&ok);
                if (!ok || v <= 0)
                    return fail("bench", QStringLiteral("--sizes: '%1' is not a positive size list").arg(item), 2);
                n.push_back(v);
            }
            if (n.size() == 3)
                sizes.push_back({1, n[0], n[1], n[2]});
            else if (n.size() == 4)
                sizes.push_back({n[0], n[1], n[2], n[3]});
            else
                return fail("bench", QStringLiteral("--sizes: '%1' must be t:d:h or b:t:d:h").arg(item), 2);
        }
    }
    bool ok = false;
    const double seconds = p.value(secondsOpt).toDouble(&ok);
    if (!ok || seconds < 0)
        return fail("bench", QStringLiteral("--seconds: expected a non-negative number"), 2);
    const QString backend = p.value(backendOpt);
    if (backend != QLatin1String("cpu") && backend != QLatin1String("gpu") && backend != QLatin1String("all"))
        return fail("bench", QStringLiteral("--backend: unknown '%1' (cpu, gpu, all)").arg(backend), 2);

    CpuBackend cpu;
    std::unique_ptr<GpuBackend> gpu;
    if (backend != QLatin1String("cpu")) {
        gpu = std::make_unique<GpuBackend>();
        if (Status st = gpu->start(); !st) {
            if (backend == QLatin1String("gpu"))
                return fail("bench", "--backend gpu: " + st.message, 1);
            note("bench", st.message + "; CPU rows only");
            gpu.reset();
        }
    }
    const bool json = p.isSet(jsonOpt);
    if (!json) {
        std::printf("attnviz bench: %s on %s\n", cpu.name().c_str(), cpu.device().c_str());
        if (gpu)
            std::printf("attnviz bench: %s on %s (GPU rows: all heads' weights read back; /1head: one head)\n",
                        gpu->name().c_str(), gpu->device().c_str());
        std::printf("%-14s %5s %6s %5s %4s %5s %12s %12s %10s %5s %8s\n", "backend", "batch", "t", "d", "h", "depth",
                    "median_ms", "min_ms", "GFLOP/s", "reps", "vs_cpu");
    }
    auto print = [&](const BenchRow &row, double cpuMs) {
        if (json) {
            std::printf("%s\n", benchRowJson(row).c_str());
        } else {
            std::printf("%-14s %5d %6d %5d %4d %5d %12.4f %12.4f %10.2f %5d %7.2fx\n", row.backend.c_str(),
                        row.size.batch, row.size.t, row.size.d, row.size.h, std::max(1, row.depth), row.medianMs,
                        row.minMs, row.gflops, row.reps, cpuMs / row.medianMs);
        }
        std::fflush(stdout);
    };
    for (const auto &s : sizes) {
        BenchRow row;
        if (Status st = depth ? runStackBench(s, depth, row, seconds) : runBench(cpu, s, row, seconds); !st)
            return fail("bench", st.message, exitCodeFor(st));
        const double cpuMs = row.medianMs;
        print(row, cpuMs);
        if (!gpu)
            continue;
        if (depth) {
            note("bench", "transformer stacks run on the CPU only; no GPU rows for --stack");
            gpu.reset();
            continue;
        }
        for (const bool oneHead : {false, true}) {
            BenchRow g;
            const Status st = runBench(*gpu, s, g, seconds, 5, 1, oneHead ? std::vector<int>{0} : std::vector<int>{});
            if (!st) {
                note("bench", gpu->name() + " at t " + std::to_string(s.t) + ": " + st.message);
                if (st.code == StatusCode::BackendFailed)
                    gpu.reset();
                break;
            }
            if (oneHead)
                g.backend += "/1head";
            print(g, cpuMs);
        }
    }
    return 0;
}

} // namespace attnviz::cli
