// SPDX-License-Identifier: GPL-3.0-or-later
// The benchmarks behind `attnviz bench`: nn.MultiheadAttention's work (projections with biases,
// softmax attention, W_o, every per-head weight kept) timed as the median of repeated runs, and a
// model's traces (`bench --model / --seeded`).
#pragma once

#include "attnviz/backend.h"
#include "attnviz/model.h"

#include <functional>
#include <string>
#include <vector>

namespace attnviz {

struct BenchSize {
    int batch = 1, t = 16, d = 64, h = 4;
};

struct BenchRow {
    std::string backend, device;
    int depth = 0; // > 0: a transformer stack of this many layers
    BenchSize size;
    double medianMs = 0, minMs = 0, gflops = 0;
    int reps = 0;
};

// (16,64,4) (128,256,4) (512,768,12) (2048,768,12) (4096,768,12) and seed 000's (32 x 1000, 256, 4).
std::vector<BenchSize> defaultBenchSizes();

// 8*B*t*d^2 (four projections) + 4*B*t^2*d (q k^T and weights v over all heads).
double attentionFlops(const BenchSize &s);

// Times `backend` on random inputs (fixed seed) of this size. Runs at least `minReps` and until
// `minSeconds` have passed (at most 200 runs), after `warmup` untimed runs.
// `readbackHeads` is passed on in AttentionConfig::readbackHeads (GPU backends: heads read back).
Status runBench(Backend &backend, const BenchSize &size, BenchRow &row, double minSeconds = 1.0, int minReps = 5,
                int warmup = 1, const std::vector<int> &readbackHeads = {});

// A stack of `depth` transformer blocks (seeded weights, post-norm, ReLU, sinusoidal positions) on
// t random tokens: the time of one full recompute, as a keystroke in stack mode costs. CPU only.
Status runStackBench(const BenchSize &size, int depth, BenchRow &row, double minSeconds = 1.0, int minReps = 3);

std::string benchRowJson(const BenchRow &row);

// One row of a model benchmark: a fresh full trace of `tokens` ids, or (causal models) one token
// appended to a trace of tokens - 1 that the model made (the incremental path).
struct ModelBenchRow {
    std::string what; // "full trace", "one token appended (incremental)"
    int tokens = 0;
    double ms = 0;    // median of the runs
};

// Times `model` on ids drawn from a fixed seed, at each size: a full trace into a fresh Trace
// (median of `repeat`), then for causal models below their limit one token appended (median of
// `repeat`; between runs the trace goes back to `size` tokens, untimed). Every layer's attention
// weights are kept; scores when `keepScores`; a causal model's LM head at the last position.
// With a `device` (device.h), on it, reading back what `observe` asks for; an error where the
// device left a trace to the CPU (the message says why). `typed`: causal models also get a row typed
// as the window types (two traces, a token longer each keystroke); it holds two traces, so a run that
// weighs one trace's peak memory leaves it out. `map` > 0: on the last full trace, a map x map pooled
// (max) map of the middle layer's first head over the whole text and its last 256 x 256 weights
// (AttentionTiles; the cache cleared before each run). `appended` false: no appended-token rows.
// `headsMap` > 0: on the last full trace, the middle layer's maps as the Heads tab computes them:
// every head's and then their mean's headsMap x headsMap pooled (max) map over the whole text, in turn.
// `rollout`: on the last full trace, the rollout row of the last position up to the last layer
// (rolloutrow.h: every layer's head-mean rows streamed through AttentionTiles), and of the middle one.
// `readings`: on the last full trace, the Layers x heads grid's readings as a long text asks them
// (headroles.h headReadings: the four role scores and the sink mass in one pass), plain and then
// norm-weighted (every row of every head summed); each once, its wall time and the process's CPU time.
// `mapDevice` (with `map` > 0): the same map and zoom also computed by another device (the GPU's,
// GpuBackend::pooledMap in the gpu library), each run timed; its rows name the device and the largest
// relative difference from the CPU's map. A device that cannot draw them (Unavailable) gets one row
// saying why, and the bench goes on.
struct MapDevice {
    std::string name; // "vulkan (NVIDIA H100 ...)"
    // The pooled (max) map of `head` of `layer` over rows [r0, r1) x keys [c0, c1) into `out`.
    std::function<Status(const Trace<float> &trace, int layer, int head, int r0, int r1, int c0, int c1, int outRows,
                         int outCols, Mat<float> &out)>
        pooled;
};
Status runModelBench(Model &model, const std::vector<int> &sizes, int repeat, bool keepScores,
                     std::vector<ModelBenchRow> &rows, ForwardDevice *device = nullptr, const Observe &observe = {},
                     bool typed = false, int map = 0, bool appended = true, int headsMap = 0, bool rollout = false,
                     bool readings = false, const MapDevice *mapDevice = nullptr);

// An encoder-decoder model (seededShape's "t5-small", "opus-mt-en-de"): `source` and `target` ids
// from a fixed seed; a full trace of both (every attention kept, the next token at every decoder
// position, as the window traces), then one generated step: the decoder at the position after the
// target's last token, the keys and values before it kept (generateTarget's step). Medians of `repeat`.
Status runSeq2SeqBench(Model &model, int source, int target, int repeat, std::vector<ModelBenchRow> &rows);

// What `--observe WHAT` of `attnviz bench` and `model_bench` asks a trace to keep: all (everything),
// attention (every layer's weights, no other stage), layer (the first layer's weights and stages),
// tiles (every stage, no t x t weights: Observe::weights false), tiles-attention (neither) or
// tiles-attention-16 (neither, q, k and v in the model's 16 bits: Observe::sixteenBit).
// False for another name (out untouched).
bool benchObserve(const std::string &what, Observe &out);

// This process's peak resident memory so far, in MB (getrusage; 0 where unknown).
double peakRssMb();

} // namespace attnviz
