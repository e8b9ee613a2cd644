// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnviz/bench.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/device.h"
#include "attnviz/headroles.h"
#include "attnviz/projections.h"
#include "attnviz/rolloutrow.h"
#include "attnviz/transformer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <functional>
#include <random>

namespace attnviz {

namespace {

// Runs `once` at least `minReps` times and until `minSeconds` have passed (at most `maxReps`),
// filling reps, min and median of `row`. Stops at the first failure.
Status timeRuns(const std::function<Status()> &once, double minSeconds, int minReps, size_t maxReps, BenchRow &row)
{
    using clock = std::chrono::steady_clock;
    std::vector<double> ms;
    const auto begin = clock::now();
    while (int(ms.size()) < minReps ||
           (std::chrono::duration<double>(clock::now() - begin).count() < minSeconds && ms.size() < maxReps)) {
        const auto t0 = clock::now();
        if (Status st = once(); !st)
            return st;
        ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    row.reps = int(ms.size());
    row.minMs = ms.front();
    row.medianMs = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    return {};
}

} // namespace

std::vector<BenchSize> defaultBenchSizes()
{
    return {{1, 16, 64, 4}, {1, 128, 256, 4}, {1, 512, 768, 12}, {1, 2048, 768, 12}, {1, 4096, 768, 12}, {32, 1000, 256, 4}};
}

double attentionFlops(const BenchSize &s)
{
    const double B = s.batch, t = s.t, d = s.d;
    return 8.0 * B * t * d * d + 4.0 * B * t * t * d;
}

Status runBench(Backend &backend, const BenchSize &size, BenchRow &row, double minSeconds, int minReps, int warmup,
                const std::vector<int> &readbackHeads)
{
    if (size.batch <= 0 || size.t <= 0 || size.d <= 0 || size.h <= 0)
        return Status::error(StatusCode::InvalidInput, "bench: sizes must be positive");
    if (size.d % size.h != 0)
        return Status::error(StatusCode::InvalidInput, "bench: h " + std::to_string(size.h) + " does not divide d " +
                                                           std::to_string(size.d));
    if (Status st = backend.start(); !st)
        return st;
    AttentionInput<float> in;
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    in.batch.resize(size_t(size.batch));
    for (auto &s : in.batch) {
        s.query.resize(size.t, size.d);
        for (Eigen::Index i = 0; i < s.query.size(); ++i)
            s.query.data()[i] = u(rng);
    }
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = size.d;
    spec.numHeads = size.h;
    spec.dHead = size.d / size.h;
    spec.qkvBias = true;
    spec.outBias = true;
    spec.seed = 7;
    if (Status st = randomProjections(spec, in.proj); !st)
        return st;
    AttentionConfig cfg;
    cfg.numHeads = size.h;
    cfg.keepScores = false;
    cfg.readbackHeads = readbackHeads;
    AttentionResult<float> result;
    for (int i = 0; i < warmup; ++i)
        if (Status st = backend.compute(cfg, in, result); !st)
            return st;
    if (Status st = timeRuns([&] { return backend.compute(cfg, in, result); }, minSeconds, minReps, 200, row); !st)
        return st;
    row.backend = backend.name();
    row.device = backend.device();
    row.size = size;
    row.gflops = attentionFlops(size) / (row.medianMs * 1e6);
    return {};
}

Status runStackBench(const BenchSize &size, int depth, BenchRow &row, double minSeconds, int minReps)
{
    if (size.t <= 0 || size.d <= 0 || size.h <= 0 || depth <= 0 || size.d % size.h != 0)
        return Status::error(StatusCode::InvalidInput, "bench: stack sizes must be positive, h must divide d");
    auto w = std::make_shared<StackWeights<float>>();
    if (Status st = seededStackWeights(size.d, depth, 7, PositionEncoding::None, 0, *w); !st)
        return st;
    StackConfig cfg;
    cfg.depth = depth;
    cfg.attention.numHeads = size.h;
    cfg.positions = PositionEncoding::Sinusoidal;
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    Mat<float> x(size.t, size.d);
    for (Eigen::Index i = 0; i < x.size(); ++i)
        x.data()[i] = u(rng);
    StackForward<float> forward; // the weights laid out once, as the window's stack does
    Trace<float> result;
    if (Status st = forward.run(cfg, w, x, result); !st)
        return st;
    if (Status st = timeRuns([&] { return forward.run(cfg, w, x, result); }, minSeconds, minReps, 100, row); !st)
        return st;
    row.backend = "cpu";
    row.device = cpuDeviceName();
    row.size = size;
    row.depth = depth;
    // per layer: attention (projections + scores) + feed-forward 2 * 2 * t * d * 4d
    const double perLayer = attentionFlops(size) + 16.0 * size.t * double(size.d) * size.d;
    row.gflops = perLayer * depth / (row.medianMs * 1e6);
    return {};
}

std::string benchRowJson(const BenchRow &r)
{
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "{\"backend\":\"%s\",\"device\":\"%s\",\"batch\":%d,\"t\":%d,\"d\":%d,\"h\":%d,%s"
                  "\"median_ms\":%.4f,\"min_ms\":%.4f,\"gflops\":%.2f,\"reps\":%d}",
                  r.backend.c_str(), r.device.c_str(), r.size.batch, r.size.t, r.size.d, r.size.h,
                  r.depth ? ("\"depth\":" + std::to_string(r.depth) + ",").c_str() : "", r.medianMs, r.minMs, r.gflops,
                  r.reps);
    return buf;
}

Status runModelBench(Model &model, const std::vector<int> &sizes, int repeat, bool keepScores,
                     std::vector<ModelBenchRow> &rows, ForwardDevice *device, const Observe &observe, bool typed, int map,
                     bool appended, int headsMap, bool rollout, bool readings, const MapDevice *mapDevice)
{
    using clock = std::chrono::steady_clock;
    const ModelInfo info = model.info();
    repeat = std::max(1, repeat);
    if (info.architecture.encoderDecoder) { // each size as the source and the target (runSeq2SeqBench)
        if (device)
            return Status::error(StatusCode::Unavailable, "encoder-decoder models do not run on a device yet");
        for (int n : sizes)
            if (Status st = runSeq2SeqBench(model, n, n, repeat, rows); !st)
                return st;
        return {};
    }
    std::mt19937 g(5);
    // ordinary tokens of a real vocabulary (past the first 1,000, before the last); every id of a small one
    const bool large = info.vocabulary > 2002;
    std::uniform_int_distribution<int> pick(large ? 1000 : 0, std::max(0, large ? info.vocabulary - 2 : info.vocabulary - 1));
    TraceRequest req;
    req.keepScores = keepScores;
    req.device = device;
    req.observe = observe;
    // a benchmark of a device times that device, never a quiet fallback to the CPU
    auto onDevice = [&](const Trace<float> &tr) -> Status {
        if (device && tr.device == "cpu")
            return Status::error(StatusCode::Unavailable, "the trace ran on the CPU: " + tr.deviceNote);
        return {};
    };
    auto median = [](std::vector<double> ms) {
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    };
    for (int n : sizes) {
        req.ids.clear();
        for (int i = 0; i < n; ++i)
            req.ids.push_back(pick(g));
        std::vector<double> ms;
        Trace<float> kept; // the last run's trace, where the map is timed on it
        for (int r = 0; r < repeat; ++r) {
            Trace<float> fresh; // a fresh trace: everything computed
            Trace<float> &tr = (map > 0 || headsMap > 0 || rollout || readings) && r + 1 == repeat ? kept : fresh;
            if (device)
                device->forgetText(); // the device's own copy of the last text too
            const auto a = clock::now();
            if (Status st = model.trace(req, tr); !st)
                return st;
            ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
            if (Status st = onDevice(tr); !st)
                return st;
        }
        rows.push_back({"full trace", n, median(ms)});
        if (headsMap > 0) { // the Heads tab: every head's map of the middle layer, then their mean's
            const int layer = kept.numLayers() / 2;
            AttentionTiles<float> tiles(kept, layer);
            if (!tiles.valid())
                return Status::error(StatusCode::Unavailable, "layer " + std::to_string(layer) + ": no weights to map");
            std::vector<double> all, first;
            for (int r = 0; r < repeat; ++r) {
                tiles.clearCache();
                const auto a = clock::now();
                for (int h = 0; h <= tiles.numHeads(); ++h) {
                    const Mat<float> m = tiles.pooled(h < tiles.numHeads() ? h : -1, 0, n, 0, n, headsMap, headsMap, Pooling::Max);
                    if (m.rows() != std::min(headsMap, n))
                        return Status::error(StatusCode::Unavailable, "the map came back empty");
                    if (h == 0)
                        first.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                }
                all.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
            }
            const std::string how = tiles.recomputes() ? " (from q, k)" : " (stored weights)";
            const std::string side = std::to_string(headsMap) + " x " + std::to_string(headsMap);
            rows.push_back({"Heads tab: the first head's " + side + " map" + how, n, median(first)});
            rows.push_back({"Heads tab: " + std::to_string(tiles.numHeads()) + " heads' and their mean's " + side +
                                " maps" + how,
                            n, median(all)});
        }
        if (rollout) { // the Rollout tab on a long text: one query's row up to the last layer
            std::vector<std::shared_ptr<const AttentionTiles<float>>> tiles;
            for (int l = 0; l < kept.numLayers(); ++l)
                tiles.push_back(std::make_shared<const AttentionTiles<float>>(kept, l, AttentionTiles<float>::Source::Auto, 0));
            RolloutRowRequest<float> rq;
            rq.layer = [&](int l) { return tiles[size_t(l)]; };
            rq.upTo = kept.numLayers() - 1;
            const bool recomputed = tiles.front()->recomputes();
            for (int query : {n - 1, n / 2}) {
                rq.query = query;
                std::vector<double> ms;
                for (int r = 0; r < repeat; ++r) {
                    std::vector<double> row;
                    const auto a = clock::now();
                    if (Status st = rolloutRow(rq, row); !st)
                        return st;
                    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                }
                rows.push_back({"rollout row of position " + std::to_string(query) + ", layers 0-" + std::to_string(rq.upTo) +
                                    (recomputed ? " (from q, k)" : " (stored weights)"),
                                n, median(ms)});
            }
        }
        if (readings) { // the Layers x heads grid on a long text: the roles and a reading in one pass
            const std::vector<HeadReading> asked = {HeadReading::PreviousToken, HeadReading::FirstToken,
                                                    HeadReading::SameToken, HeadReading::Self, HeadReading::SinkMass};
            for (const bool weighted : {false, true}) {
                ReadingOptions o;
                o.normWeighted = weighted;
                const std::clock_t c = std::clock(); // every thread of the process
                const auto a = clock::now();
                const std::vector<Mat<double>> got = headReadings(kept, asked, o);
                const double wall = std::chrono::duration<double, std::milli>(clock::now() - a).count();
                const double cpu = 1000.0 * double(std::clock() - c) / CLOCKS_PER_SEC;
                if (!std::isfinite(got.back()(0, 0)))
                    return Status::error(StatusCode::Unavailable, std::string("the ") + (weighted ? "norm-weighted " : "") +
                                                                      "readings came back empty");
                const std::string what = std::string("Layers x heads readings (4 roles + sink mass)") +
                                         (weighted ? ", norm-weighted" : "");
                rows.push_back({what, n, wall});
                rows.push_back({what + ": CPU time of the process", n, cpu});
            }
        }
        if (map > 0) { // the middle layer's first head, the whole text pooled (max), each run computed anew
            const int layer = kept.numLayers() / 2;
            AttentionTiles<float> tiles(kept, layer);
            if (!tiles.valid())
                return Status::error(StatusCode::Unavailable, "layer " + std::to_string(layer) + ": no weights to map");
            std::vector<double> pooled, block, zoom;
            const int side = std::min(256, n), at = n - side; // the last rows' block: a zoom to single cells
            // a zoom to side x side cells in the middle of the text, below the diagonal (every cell a
            // key the query reads), as the map's refine step computes it: nothing of it cached
            const int zr = std::min(n - side, std::max(side, n / 2)), zc = std::max(0, zr - side);
            for (int r = 0; r < repeat; ++r) {
                tiles.clearCache();
                auto a = clock::now();
                const Mat<float> m = tiles.pooled(0, 0, n, 0, n, map, map, Pooling::Max);
                pooled.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                a = clock::now();
                const Mat<float> b = tiles.tile(0, at, n, at, n);
                block.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                tiles.clearCache();
                a = clock::now();
                const Mat<float> z = tiles.pooled(0, zr, zr + side, zc, zc + side, side, side, Pooling::Max);
                zoom.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                if (m.rows() != std::min(map, n) || b.rows() != side || z.rows() != side)
                    return Status::error(StatusCode::Unavailable, "the map came back empty");
            }
            const std::string how = tiles.recomputes() ? " (from q, k)" : " (stored weights)";
            rows.push_back({"pooled map " + std::to_string(map) + " x " + std::to_string(map) + ", one head" + how, n,
                            median(pooled)});
            rows.push_back({std::to_string(side) + " x " + std::to_string(side) + " weights, one head" + how, n, median(block)});
            rows.push_back({"zoom to " + std::to_string(side) + " x " + std::to_string(side) + " cells mid-text" + how, n,
                            median(zoom)});
            if (mapDevice) { // the same map and zoom on the other device, against the CPU's
                const Mat<float> m = tiles.pooled(0, 0, n, 0, n, map, map, Pooling::Max);
                const Mat<float> z = tiles.pooled(0, zr, zr + side, zc, zc + side, side, side, Pooling::Max);
                // the largest |device - cpu| / |cpu| over the cells (a shape that differs: infinite)
                auto worst = [](const Mat<float> &dev, const Mat<float> &cpu) -> double {
                    if (dev.rows() != cpu.rows() || dev.cols() != cpu.cols())
                        return INFINITY;
                    double w = 0;
                    for (Eigen::Index i = 0; i < cpu.size(); ++i)
                        if (const double c = cpu.data()[i], d = dev.data()[i]; c != 0 || d != 0)
                            w = std::max(w, c != 0 ? std::abs(d - c) / std::abs(c) : double(INFINITY));
                    return w;
                };
                std::vector<double> devMap, devZoom;
                double diff = 0;
                Status st;
                for (int r = 0; r < repeat && st; ++r) {
                    Mat<float> dm, dz;
                    auto a = clock::now();
                    st = mapDevice->pooled(kept, layer, 0, 0, n, 0, n, map, map, dm);
                    devMap.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                    if (!st)
                        break;
                    a = clock::now();
                    st = mapDevice->pooled(kept, layer, 0, zr, zr + side, zc, zc + side, side, side, dz);
                    devZoom.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                    diff = std::max({diff, worst(dm, m), worst(dz, z)});
                }
                if (!st) {
                    rows.push_back({"pooled map on " + mapDevice->name + ": not drawn (" + st.message + ")", n, 0});
                } else {
                    char d[48];
                    std::snprintf(d, sizeof d, ", largest relative difference %.1e", diff);
                    rows.push_back({"pooled map " + std::to_string(map) + " x " + std::to_string(map) + ", one head on " +
                                        mapDevice->name + d,
                                    n, median(devMap)});
                    rows.push_back({"zoom to " + std::to_string(side) + " x " + std::to_string(side) + " cells mid-text on " +
                                        mapDevice->name,
                                    n, median(devZoom)});
                }
            }
            kept = Trace<float>(); // one trace at a time below
        }
        if (!appended || !info.causal || (info.maxPositions > 0 && n >= info.maxPositions))
            continue;
        Trace<float> tr;
        if (Status st = model.trace(req, tr); !st)
            return st;
        const std::vector<int> base = req.ids;
        std::vector<int> longer = base;
        longer.push_back(pick(g));
        ms.clear();
        for (int r = 0; r < repeat; ++r) {
            req.ids = longer;
            const auto a = clock::now();
            if (Status st = model.trace(req, tr); !st)
                return st;
            ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
            if (Status st = onDevice(tr); !st)
                return st;
            req.ids = base; // back to n tokens, untimed (the prefix is kept)
            if (Status st = model.trace(req, tr); !st)
                return st;
        }
        rows.push_back({"one token appended (incremental)", n + 1, median(ms)});
        // As the window types: two traces, each keystroke one token longer, computed into the older
        // one with the newer as prefixFrom. Unlike the row above, every kept matrix grows (a t x t
        // weight matrix is laid out again), as a KV cache that concatenates does.
        if (typed && (info.maxPositions <= 0 || n + repeat + 2 <= info.maxPositions)) {
            Trace<float> buffers[2];
            req.ids = base;
            if (Status st = model.trace(req, buffers[0]); !st)
                return st;
            ms.clear();
            for (int k = 1; k <= repeat + 2; ++k) { // the first two fill the second buffer: untimed
                req.ids.push_back(pick(g));
                req.prefixFrom = &buffers[(k + 1) % 2];
                const auto a = clock::now();
                if (Status st = model.trace(req, buffers[k % 2]); !st)
                    return st;
                if (k > 2)
                    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
                if (Status st = onDevice(buffers[k % 2]); !st)
                    return st;
            }
            req.prefixFrom = nullptr;
            rows.push_back({"one token typed (two traces, growing)", n + 3, median(ms)});
        }
        req.ids = base;
    }
    return {};
}

bool benchObserve(const std::string &what, Observe &out)
{
    Observe o;
    if (what == "attention")
        o.stages = false;
    else if (what == "layer")
        o.layers = {0};
    else if (what == "tiles") {
        o.weights = false;
    } else if (what == "tiles-attention" || what == "tiles-attention-16") {
        o.weights = false;
        o.stages = false;
        o.sixteenBit = what == "tiles-attention-16";
    } else if (what != "all")
        return false;
    out = o;
    return true;
}

double peakRssMb()
{
    struct rusage u {};
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return double(u.ru_maxrss) / 1024.0; // KiB on Linux
}

} // namespace attnviz
