// SPDX-License-Identifier: GPL-3.0-or-later
// A window of positions of a long text with every layer's stages (positionwindow.h): the forward of
// the tokens [0, p1) continuing the long trace from p0 (its keys and values handed in layer by layer),
// each layer's rows [p0, p1) copied out as it finishes.
#include "attnviz/positionwindow.h"

#include "readout.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace attnviz {

namespace {

// Rows [0, n) of a kept k or v (or its 16-bit copy), in float, as the trace lays them out.
Mat<float> keptRows(const Mat<float> &m, const HalfRows &half, int n)
{
    if (m.size())
        return m.topRows(n);
    Mat<float> out;
    half.widen(0, n, 0, half.cols, out);
    return out;
}

// Rows [p0, p0 + n) of m (empty where m is).
Mat<float> rowsOf(const Mat<float> &m, int p0, int n) { return m.rows() >= p0 + n ? Mat<float>(m.middleRows(p0, n)) : Mat<float>(); }

// k or v rows laid out per query head (H d_head columns) from the key/value heads' own.
Mat<float> perQueryHead(const Mat<float> &m, int heads, int kvHeads, int dh)
{
    if (m.cols() == Eigen::Index(heads) * dh || kvHeads <= 0)
        return m;
    const int group = heads / kvHeads;
    Mat<float> out(m.rows(), Eigen::Index(heads) * dh);
    for (int h = 0; h < heads; ++h)
        out.middleCols(Eigen::Index(h) * dh, dh) = m.middleCols(Eigen::Index(h / group) * dh, dh);
    return out;
}

} // namespace

Status positionWindow(const Model &model, const Trace<float> &longTrace, int p0, int p1, PositionWindow &out,
                      const std::atomic<bool> *cancel)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, longTrace, r); !st)
        return st;
    const Architecture &arch = r->arch;
    const int t = int(longTrace.tokens.size());
    if (!arch.causal || !arch.weightRule.softmax())
        return Status::error(StatusCode::Unavailable, "window: only a causal softmax model's trace continues from its keys");
    if (longTrace.device != "cpu" || longTrace.edited())
        return Status::error(StatusCode::Unavailable, "window: the trace was not computed on the CPU without edits");
    if (p0 < 0 || p1 <= p0 || p1 > t)
        return Status::error(StatusCode::InvalidInput, "window: positions " + std::to_string(p0) + ".." +
                                                           std::to_string(p1) + " are not in the text (0.." +
                                                           std::to_string(t) + ")");
    const int n = p1 - p0;
    ForwardInput in;
    in.ids.reserve(size_t(p1));
    for (int i = 0; i < p1; ++i)
        in.ids.push_back(longTrace.tokens[size_t(i)].id);
    in.paddedKeys = longTrace.paddedKeys;
    in.maskedCells = longTrace.maskedCells;
    in.lmHead = false;
    in.cancel = cancel;
    // the long trace's own forward for the new rows (16-bit q, k and v where it rounded them), every
    // layer through the spare buffers: only the window's rows are kept, copied out below
    in.observe.weights = false;
    in.observe.stages = false;
    in.observe.sixteenBit = longTrace.observed.sixteenBit;

    Trace<float> win;
    win.layers.resize(size_t(arch.layers));
    Status failed;
    const std::function<void(int, bool, LayerTrace<float> &)> byLayer = [&](int l, bool done, LayerTrace<float> &lt) {
        lt.attention.batch.resize(1);
        SequenceResult<float> &s = lt.attention.batch[0];
        if (!done) { // the long trace's keys and values of rows [0, p0), as a continued trace holds them
            const LayerTrace<float> &from = longTrace.layers[size_t(l)];
            const SequenceResult<float> *f = from.attention.batch.empty() ? nullptr : &from.attention.batch.front();
            s = SequenceResult<float>();
            if (p0 == 0)
                return;
            if (!f || (f->k.size() == 0 && f->k16.empty()) || (f->v.size() == 0 && f->v16.empty())) {
                failed = Status::error(StatusCode::Unavailable, "window: layer " + std::to_string(l) + " kept no keys");
                return;
            }
            s.k = keptRows(f->k, f->k16, p0);
            s.v = keptRows(f->v, f->v16, p0);
            return;
        }
        LayerTrace<float> &w = win.layers[size_t(l)];
        for (Mat<float> LayerTrace<float>::*m : {&LayerTrace<float>::residualIn, &LayerTrace<float>::attentionIn,
                                                 &LayerTrace<float>::afterAttention, &LayerTrace<float>::output})
            w.*m = rowsOf(lt.*m, p0, n);
        w.projections = lt.projections;
        AttentionResult<float> &a = w.attention;
        const AttentionResult<float> &la = lt.attention;
        a.numHeads = la.numHeads;
        a.kvHeads = la.kvHeads;
        a.dHead = la.dHead;
        a.dModel = la.dModel;
        a.dOut = la.dOut;
        a.scale = la.scale;
        a.softcap = la.softcap;
        a.causal = la.causal;
        a.window = la.window;
        a.batch.assign(1, SequenceResult<float>());
        SequenceResult<float> &ws = a.batch[0];
        Mat<float> scratch;
        ws.q = rowsOf(widenedOr(s.q, s.q16, scratch), p0, n);
        ws.k = perQueryHead(rowsOf(widenedOr(s.k, s.k16, scratch), p0, n), la.numHeads, la.kvHeads, la.dHead);
        ws.v = perQueryHead(rowsOf(widenedOr(s.v, s.v16, scratch), p0, n), la.numHeads, la.kvHeads, la.dHead);
        ws.context = rowsOf(s.context, p0, n);
        ws.output = rowsOf(s.output, p0, n);
        ws.lse = rowsOf(s.lse, p0, n);
        s = SequenceResult<float>(); // nothing reads this layer's keys again: one layer's at a time
    };
    in.rowsByLayer = &byLayer;
    Trace<float> work;
    if (Status st = runForward<float>(arch, r->floatWeights, in, p0, work); !st)
        return st;
    if (!failed)
        return failed;

    win.tokens.assign(longTrace.tokens.begin() + p0, longTrace.tokens.begin() + p1);
    win.totalTokens = n;
    win.embeddings = rowsOf(work.embeddings, p0, n);
    win.input = rowsOf(work.input, p0, n);
    win.final = rowsOf(work.final, p0, n);
    win.device = longTrace.device;
    win.producer = longTrace.producer;
    win.observed.weights = false;
    // each row's next tokens (the one after the window's last: the long text's next token, if any)
    Predictions &pr = win.predictions;
    pr.topK = longTrace.predictions.topK > 0 ? longTrace.predictions.topK : 10;
    pr.next.assign(size_t(n), {});
    pr.actualNext.assign(size_t(n), std::numeric_limits<double>::quiet_NaN());
    pr.logNormalizer.assign(size_t(n), std::numeric_limits<double>::quiet_NaN());
    // the ids from p0 on, and the token after the window where the text has one (its actualNext)
    std::vector<int> ids(in.ids.begin() + p0, in.ids.end()), at;
    if (p1 < t)
        ids.push_back(longTrace.tokens[size_t(p1)].id);
    for (int i = 0; i < n; ++i)
        at.push_back(i);
    std::vector<NextTokens> next;
    if (p1 < t) { // predictNext scores the token after a row that has one after it: a row of padding
        Mat<float> padded = Mat<float>::Zero(n + 1, win.final.cols());
        padded.topRows(n) = win.final;
        predictNext(arch, *r->floatWeights, padded, ids, at, pr.topK, next);
    } else {
        predictNext(arch, *r->floatWeights, win.final, ids, at, pr.topK, next);
    }
    for (int i = 0; i < n; ++i) {
        for (TokenProb &p : next[size_t(i)].top) {
            const TokenProb named = r->token(p.id);
            p.token = named.token;
            p.display = named.display;
        }
        pr.set(size_t(i), std::move(next[size_t(i)]));
    }
    out.first = p0;
    out.total = t;
    out.trace = std::move(win);
    return {};
}

} // namespace attnviz
