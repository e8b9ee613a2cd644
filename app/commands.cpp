// SPDX-License-Identifier: GPL-3.0-or-later
#include "commands.h"

#include "attnviz/attention.h"
#include "attnviz/backend.h"
#include "attnviz/bench.h"
#include "attnviz/caseio.h"

#include <QCommandLineParser>
#include <QFile>
#include <QSaveFile>

#include <chrono>
#include <cstdio>
#include <memory>

namespace attnviz::cli {

namespace {

int fail(const char *verb, const QString &message, int code)
{
    std::fprintf(stderr, "attnviz %s: %s\n", verb, qPrintable(message));
    return code;
}

int fail(const char *verb, const std::string &message, int code)
{
    return fail(verb, QString::fromStdString(message), code);
}

int exitCodeFor(StatusCode c)
{
    switch (c) {
    case StatusCode::InvalidInput:
    case StatusCode::NonFinite:
    case StatusCode::ParseError:
        return 2;
    default:
        return 1;
    }
}

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

bool writeOut(const QString &path, const std::string &text, QString &error)
{
    if (path.isEmpty() || path == QLatin1String("-")) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return true;
    }
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        error = path + QStringLiteral(": cannot write (") + f.errorString() + QLatin1Char(')');
        return false;
    }
    f.write(text.data(), qint64(text.size()));
    if (!f.commit()) {
        error = path + QStringLiteral(": cannot write (") + f.errorString() + QLatin1Char(')');
        return false;
    }
    return true;
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
                              QStringLiteral("Embedding table for sentence cases (.txt/.vec/.bin/.avec)."),
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
    if (backend == QLatin1String("gpu"))
        return fail("compute", QStringLiteral("--backend gpu: no GPU backend could start (this build has none)"), 1);

    QString precision = p.isSet(precisionOpt) ? p.value(precisionOpt) : QStringLiteral("float64");
    if (precision != QLatin1String("float64") && precision != QLatin1String("float32"))
        return fail("compute", QStringLiteral("--precision: unknown '%1' (float64, float32)").arg(precision), 2);

    CaseFile c;
    if (Status st = loadCase(p.positionalArguments().first().toStdString(), c); !st)
        return fail("compute", st.message, exitCodeFor(st.code));
    if (p.isSet(policyOpt)) {
        bool ok;
        c.config.fullyMasked = parsePolicy(p.value(policyOpt), ok);
        if (!ok)
            return fail("compute", QStringLiteral("--fully-masked: unknown '%1' (nan, zero, uniform)").arg(p.value(policyOpt)), 2);
    }
    if (c.fromSentence) {
        if (!p.isSet(embOpt))
            return fail("compute", QStringLiteral("inputs.sentence: needs an embedding table (--embeddings FILE)"), 2);
        EmbeddingTable table;
        if (Status st = loadEmbeddings(p.value(embOpt).toStdString(), table); !st)
            return fail("compute", "--embeddings: " + st.message, exitCodeFor(st.code));
        if (Status st = embedCaseSentences(c, table); !st)
            return fail("compute", st.message, exitCodeFor(st.code));
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
            CpuBackend cpu;
            st = cpu.compute(c.config, castInput<float>(c.input), r);
        }
        meta.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!st)
            return fail("compute", c.name + ": " + st.message, exitCodeFor(st.code));
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
    QString error;
    if (!writeOut(p.value(outOpt), text, error))
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
        "median of repeated runs after a warm-up. Compare with PyTorch: tests/bench/torch_peer.py."));
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
    if (backend != QLatin1String("cpu"))
        return fail("bench", QStringLiteral("--backend %1: no GPU backend in this build").arg(backend), 1);

    CpuBackend cpu;
    const bool json = p.isSet(jsonOpt);
    if (!json) {
        std::printf("attnviz bench: %s on %s\n", cpu.name().c_str(), cpu.device().c_str());
        std::printf("%-8s %5s %6s %5s %4s %5s %12s %12s %10s %5s\n", "backend", "batch", "t", "d", "h", "depth",
                    "median_ms", "min_ms", "GFLOP/s", "reps");
    }
    for (const auto &s : sizes) {
        BenchRow row;
        if (Status st = depth ? runStackBench(s, depth, row, seconds) : runBench(cpu, s, row, seconds); !st)
            return fail("bench", st.message, exitCodeFor(st.code));
        if (json)
            std::printf("%s\n", benchRowJson(row).c_str());
        else
            std::printf("%-8s %5d %6d %5d %4d %5d %12.4f %12.4f %10.2f %5d\n", row.backend.c_str(), s.batch, s.t, s.d,
                        s.h, std::max(1, row.depth), row.medianMs, row.minMs, row.gflops, row.reps);
        std::fflush(stdout);
    }
    return 0;
}

} // namespace attnviz::cli
