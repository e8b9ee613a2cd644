// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps (patching.h): the clean and corrupted runs, then the corrupted run once
// per cell with one of the clean run's activations patched in (TraceRequest::edits, over the
// corrupted trace: TraceRequest::unedited), scored by the request's metric. Each forward runs on the
// pool (its products split over the cores). A heads sweep whose forward stackedcells.h covers runs a
// layer's cells together instead, their rows stacked in one pass from that layer on.
#include "attnviz/patching.h"
#include "readout.h"
#include "../models/forward/stackedcells.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz {

const char *patchSweepName(PatchSweep s)
{
    switch (s) {
    case PatchSweep::ResidPre: return "resid_pre";
    case PatchSweep::HeadsAllPositions: return "heads";
    case PatchSweep::HeadsByPosition: return "heads_by_pos";
    case PatchSweep::MlpOut: return "mlp_out";
    case PatchSweep::Path: return "path";
    }
    return "";
}

const char *patchMetricName(PatchMetric m)
{
    switch (m) {
    case PatchMetric::LogitDiff: return "logit_diff";
    case PatchMetric::Prob: return "prob";
    case PatchMetric::Kl: return "kl";
    }
    return "";
}

namespace {

template <typename T>
Status causalReadout(const Model &model, const Trace<T> &trace, std::shared_ptr<const ReadoutWeights> &r)
{
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    if (r->arch.head != LmHead::CausalLm)
        return Status::error(StatusCode::Unavailable, model.info().name + ": the patching metrics read next-token logits (a causal language model)");
    return {};
}

Status checkToken(int id, int V)
{
    if (id < 0 || id >= V)
        return Status::error(StatusCode::InvalidInput, "token id " + std::to_string(id) + " is not in the vocabulary (0.." +
                                                           std::to_string(V - 1) + ")");
    return {};
}

} // namespace

namespace {

// The logit difference and the next token's log-probabilities from a run's last final row (1, d), as
// the trace's own functions below read it.
template <typename T>
double rowLogitDifference(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &last, int answer, int wrong)
{
    Mat<T> h(2, last.cols());
    h.row(0) = last.row(0);
    h.row(1) = last.row(0);
    std::vector<reads::ScanRow> rows;
    reads::scanLogits(r, w, h, {answer, wrong}, 1, rows);
    return rows[0].targetLogit - rows[1].targetLogit;
}

template <typename T>
void rowLogProbs(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &last, std::vector<double> &out)
{
    reads::allLogits(r, w, last, out);
    double mx = -std::numeric_limits<double>::infinity();
    for (double z : out)
        mx = std::max(mx, z);
    double sum = 0;
    for (double z : out)
        sum += std::exp(z - mx);
    const double lse = mx + std::log(sum);
    for (double &z : out)
        z -= lse;
}

} // namespace

template <typename T>
Status logitDifference(const Model &model, const Trace<T> &trace, int answer, int wrong, double &out)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    if (r->arch.head != LmHead::CausalLm)
        return Status::error(StatusCode::Unavailable, model.info().name + ": the logit difference reads next-token logits (a causal language model)");
    const ModelWeights<T> *w = r->weights<T>();
    const int V = int(w->outputEmbedding().rows());
    for (int id : {answer, wrong})
        if (Status st = checkToken(id, V); !st)
            return st;
    out = rowLogitDifference<T>(*r, *w, trace.final.bottomRows(1), answer, wrong);
    return {};
}

template <typename T>
Status nextLogProbs(const Model &model, const Trace<T> &trace, std::vector<double> &out)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = causalReadout(model, trace, r); !st)
        return st;
    rowLogProbs<T>(*r, *r->weights<T>(), trace.final.bottomRows(1), out);
    return {};
}

template <typename T>
Status patchFor(PatchSweep sweep, const Trace<T> &clean, int row, int col, Intervention &out)
{
    out = Intervention();
    if (sweep == PatchSweep::Path)
        return Status::error(StatusCode::InvalidInput, "a path patching cell reads both runs: pathPatchFor gives its edit");
    out.kind = EditKind::Value;
    out.layer = row;
    const int layers = clean.numLayers(), heads = clean.numHeads(), tokens = int(clean.tokens.size());
    const int cols = sweep == PatchSweep::HeadsAllPositions ? heads : sweep == PatchSweep::HeadsByPosition ? tokens * heads : tokens;
    if (row < 0 || row >= layers)
        return Status::error(StatusCode::InvalidInput, "layer " + std::to_string(row) + " is out of range (the model has " +
                                                           std::to_string(layers) + " layers: 0.." + std::to_string(layers - 1) + ")");
    if (col < 0 || col >= cols) {
        const char *what = sweep == PatchSweep::HeadsAllPositions ? "head" : sweep == PatchSweep::HeadsByPosition ? "cell" : "position";
        return Status::error(StatusCode::InvalidInput, std::string(what) + " " + std::to_string(col) + " is out of range (0.." +
                                                           std::to_string(cols - 1) + ")");
    }
    switch (sweep) {
    case PatchSweep::ResidPre:
        out.hook = HookPoint::ResidPre;
        out.positions = {col};
        break;
    case PatchSweep::HeadsAllPositions:
        out.hook = HookPoint::AttnZ;
        out.head = col;
        break;
    case PatchSweep::HeadsByPosition:
        out.hook = HookPoint::AttnZ;
        out.head = col % heads;
        out.positions = {col / heads};
        break;
    case PatchSweep::MlpOut:
        out.hook = HookPoint::MlpOut;
        out.positions = {col};
        break;
    case PatchSweep::Path: break;
    }
    return hookValue(clean, out.hook, row, out.value);
}

namespace {

std::string tokenList(const std::vector<TraceToken> &t)
{
    if (t.empty())
        return "(end)";
    std::string s;
    for (size_t i = 0; i < t.size(); ++i)
        s += (i ? " " : "") + quoteText(t[i].text);
    return s;
}

// Whether the edit's selected entries already hold these values in the run (the corrupted run's own
// activation `own` of the hook): then the patched forward is that run, bit for bit.
bool sameEntries(const Intervention &e, const Mat<double> &own, int dHead)
{
    const Eigen::Index c0 = e.head >= 0 ? Eigen::Index(e.head) * dHead : 0;
    const Eigen::Index cw = e.head >= 0 ? dHead : own.cols();
    auto same = [&](int i) { return e.value.row(i).segment(c0, cw) == own.row(i).segment(c0, cw); };
    if (e.positions.empty()) {
        for (int i = 0; i < int(own.rows()); ++i)
            if (!same(i))
                return false;
        return true;
    }
    return std::all_of(e.positions.begin(), e.positions.end(), same);
}

// A run's metric (patching.h PatchMetric); `cleanLogProbs` for Kl, `corruptedDiff` and `span` for LogitDiff.
template <typename T>
Status metricOf(const Model &model, const Trace<T> &trace, const PatchRequest &request, const std::vector<double> &cleanLogProbs,
                double corruptedDiff, double span, double &out)
{
    switch (request.metric) {
    case PatchMetric::LogitDiff: {
        double d = 0;
        if (Status st = logitDifference(model, trace, request.answer, request.wrong, d); !st)
            return st;
        out = (d - corruptedDiff) / span;
        return {};
    }
    case PatchMetric::Prob:
    case PatchMetric::Kl: {
        std::vector<double> lp;
        if (Status st = nextLogProbs(model, trace, lp); !st)
            return st;
        if (request.metric == PatchMetric::Prob) {
            if (Status st = checkToken(request.answer, int(lp.size())); !st)
                return st;
            out = std::exp(lp[size_t(request.answer)]);
            return {};
        }
        double kl = 0;
        for (size_t v = 0; v < lp.size(); ++v)
            kl += std::exp(cleanLogProbs[v]) * (cleanLogProbs[v] - lp[v]);
        out = kl;
        return {};
    }
    }
    return {};
}

// Whether a trace keeps every layer's attention context and output (the stages a stacked pass starts from).
template <typename T>
bool keepsContexts(const Trace<T> &trace, int t)
{
    for (const LayerTrace<T> &lt : trace.layers)
        if (lt.attention.batch.empty() || lt.attention.batch.front().context.rows() != t || lt.output.rows() != t)
            return false;
    return trace.input.rows() == t;
}

// metricOf for a run known by its last final row (1, d); the answer tokens are checked already.
template <typename T>
double metricOfRow(const ReadoutWeights &r, const ModelWeights<T> &w, const Mat<T> &last, const PatchRequest &request,
                   const std::vector<double> &cleanLogProbs, double corruptedDiff, double span)
{
    if (request.metric == PatchMetric::LogitDiff)
        return (rowLogitDifference<T>(r, w, last, request.answer, request.wrong) - corruptedDiff) / span;
    std::vector<double> lp;
    rowLogProbs<T>(r, w, last, lp);
    if (request.metric == PatchMetric::Prob)
        return std::exp(lp[size_t(request.answer)]);
    double kl = 0;
    for (size_t v = 0; v < lp.size(); ++v)
        kl += std::exp(cleanLogProbs[v]) * (cleanLogProbs[v] - lp[v]);
    return kl;
}

// A heads sweep whose forward stackedCells covers (its readout's weights in `r`): a layer's cells
// kStackedCells at a time, their forwards from that layer on in one stacked pass; a cell whose patch
// is the corrupted run's own head is that run. The same numbers as one forward per cell.
constexpr int kStackedCells = 16;

template <typename T>
Status stackedHeadsSweep(const ReadoutWeights &r, const PatchRequest &request, const Trace<T> &clean,
                         const Trace<T> &corrupted, const std::vector<double> &cleanLogProbs, double span,
                         PatchResult &out)
{
    const ModelWeights<T> &w = *r.weights<T>();
    const int total = out.rows * out.cols, t = int(corrupted.tokens.size());
    // more cells a pass for short texts, up to ~1,024 stacked rows
    const int batch = std::clamp(1024 / std::max(1, (t + 15) / 16 * 16), 1, kStackedCells);
    const int dh = r.arch.dHead;
    std::vector<Mat<T>> contexts;
    std::vector<int> cols;
    Mat<T> last;
    for (int l = 0; l < out.rows; ++l) {
        const Mat<T> &own = corrupted.layers[size_t(l)].attention.batch.front().context;
        const Mat<T> &theirs = clean.layers[size_t(l)].attention.batch.front().context;
        auto flush = [&]() -> Status {
            if (cols.empty())
                return {};
            if (Status st = stackedCells<T>(r.arch, w, corrupted, l, contexts, last, request.cancel); !st)
                return st.code == StatusCode::Cancelled
                           ? Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) +
                                                                      " of " + std::to_string(total) + " cells")
                           : st;
            for (size_t i = 0; i < cols.size(); ++i) {
                if (request.cancel && request.cancel->load()) // the rest of the pass is dropped
                    return Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) +
                                                                    " of " + std::to_string(total) + " cells");
                const Mat<T> row = last.row(Eigen::Index(i));
                out.metric[size_t(l) * size_t(out.cols) + size_t(cols[i])] =
                    metricOfRow<T>(r, w, row, request, cleanLogProbs, out.corruptedDiff, span);
                ++out.done;
                if (request.progress)
                    request.progress(out.done, total);
            }
            contexts.clear();
            cols.clear();
            return {};
        };
        for (int h = 0; h < out.cols; ++h) {
            if (request.cancel && request.cancel->load())
                return Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) + " of " +
                                                                std::to_string(total) + " cells");
            if (own.middleCols(Eigen::Index(h) * dh, dh) == theirs.middleCols(Eigen::Index(h) * dh, dh)) {
                out.metric[size_t(l) * size_t(out.cols) + size_t(h)] = out.corruptedValue; // the corrupted run itself
                ++out.done;
                if (request.progress)
                    request.progress(out.done, total);
                continue;
            }
            Mat<T> z = own;
            z.middleCols(Eigen::Index(h) * dh, dh) = theirs.middleCols(Eigen::Index(h) * dh, dh);
            contexts.push_back(std::move(z));
            cols.push_back(h);
            if (int(cols.size()) == batch)
                if (Status st = flush(); !st)
                    return st;
        }
        if (Status st = flush(); !st)
            return st;
    }
    return {};
}

// The cells of a Path sweep (out shaped, the unpatched runs' metrics set): senders of the layers
// before the receiver's, each the corrupted run with pathPatchFor's edit; the rest stay NaN.
template <typename T>
Status pathSweep(Model &model, const PatchRequest &request, const Trace<T> &clean, const Trace<T> &corrupted,
                 const std::vector<double> &cleanLogProbs, double span, PatchResult &out)
{
    const int total = request.receiver.layer * out.cols;
    TraceRequest pr;
    for (const TraceToken &tok : corrupted.tokens)
        pr.ids.push_back(tok.id);
    pr.keepHookOutputs = true;
    pr.lmHead = false; // metricOf reads the logits it needs from the trace's final rows
    if constexpr (std::is_same_v<T, float>)
        pr.unedited = &corrupted;
    else
        pr.uneditedDouble = &corrupted;
    Trace<T> patched;
    for (int r = 0; r < request.receiver.layer; ++r)
        for (int c = 0; c < out.cols; ++c) {
            if (request.cancel && request.cancel->load())
                return Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) + " of " +
                                                                std::to_string(total) + " cells");
            if (Status st = pathPatchFor(model, clean, corrupted, r, c, request.receiver, {}, pr.edits); !st)
                return st;
            double v = out.corruptedValue; // nothing reached the receiver: the corrupted run itself
            if (!pr.edits.empty()) {
                if (Status st = model.trace(pr, patched); !st)
                    return st;
                if (Status st = metricOf(model, patched, request, cleanLogProbs, out.corruptedDiff, span, v); !st)
                    return st;
            }
            out.metric[size_t(r) * size_t(out.cols) + size_t(c)] = v;
            ++out.done;
            if (request.progress)
                request.progress(out.done, total);
        }
    return {};
}

} // namespace

template <typename T>
Status patchSweep(Model &model, const PatchRequest &request, PatchResult &out)
{
    out = PatchResult();
    out.sweep = request.sweep;
    out.metricKind = request.metric;
    const bool path = request.sweep == PatchSweep::Path;
    if (path) {
        out.receiver = request.receiver;
        const ModelInfo info = model.info();
        if (!info.causal || info.architecture.encoderDecoder || info.architecture.layers == 0)
            return Status::error(StatusCode::Unavailable, info.name + ": path patching runs on decoder-only (causal) checkpoints");
        if (Status st = checkPathReceiver(request.receiver, info.layers, info.heads); !st)
            return st;
    }
    TraceRequest cr;
    cr.text = request.clean;
    cr.ids = request.cleanIds;
    cr.cancel = request.cancel;
    // mlp_out read from the clean trace; path patching reads both runs' hook_attn_out
    cr.keepHookOutputs = request.sweep == PatchSweep::MlpOut || path;
    Trace<T> clean, corrupted;
    if (Status st = model.trace(cr, clean); !st)
        return Status::error(st.code, "clean prompt: " + st.message);
    TraceRequest kr = cr;
    kr.text = request.corrupted;
    kr.ids = request.corruptedIds;
    if (Status st = model.trace(kr, corrupted); !st)
        return Status::error(st.code, "corrupted prompt: " + st.message);
    out.cleanTokens = clean.tokens;
    out.corruptedTokens = corrupted.tokens;
    if (clean.tokens.size() != corrupted.tokens.size()) {
        size_t i = 0;
        while (i < clean.tokens.size() && i < corrupted.tokens.size() && clean.tokens[i].id == corrupted.tokens[i].id)
            ++i;
        return Status::error(StatusCode::InvalidInput,
                             "the clean prompt has " + std::to_string(clean.tokens.size()) + " tokens and the corrupted " +
                                 std::to_string(corrupted.tokens.size()) + "; they differ from token " + std::to_string(i) +
                                 " on (clean: " + tokenList({clean.tokens.begin() + long(i), clean.tokens.end()}) +
                                 "; corrupted: " + tokenList({corrupted.tokens.begin() + long(i), corrupted.tokens.end()}) + ")");
    }
    double span = 1;
    std::vector<double> cleanLogProbs;
    if (request.metric == PatchMetric::LogitDiff) {
        if (Status st = logitDifference(model, clean, request.answer, request.wrong, out.cleanDiff); !st)
            return st;
        if (Status st = logitDifference(model, corrupted, request.answer, request.wrong, out.corruptedDiff); !st)
            return st;
        span = out.cleanDiff - out.corruptedDiff;
        if (!(std::abs(span) > 0))
            return Status::error(StatusCode::InvalidInput, "the clean and corrupted prompts give the same logit difference (" +
                                                               std::to_string(out.cleanDiff) + "): nothing to normalise by");
        out.cleanValue = 1;
        out.corruptedValue = 0;
    } else {
        if (Status st = nextLogProbs(model, clean, cleanLogProbs); !st)
            return st;
        if (Status st = metricOf(model, clean, request, cleanLogProbs, 0, 1, out.cleanValue); !st)
            return st;
        if (Status st = metricOf(model, corrupted, request, cleanLogProbs, 0, 1, out.corruptedValue); !st)
            return st;
    }
    const int tokens = int(clean.tokens.size());
    out.rows = clean.numLayers();
    out.heads = clean.numHeads();
    switch (request.sweep) {
    case PatchSweep::ResidPre:
    case PatchSweep::MlpOut: out.cols = tokens; break;
    case PatchSweep::HeadsAllPositions:
    case PatchSweep::Path: out.cols = out.heads; break;
    case PatchSweep::HeadsByPosition: out.cols = tokens * out.heads; break;
    }
    out.metric.assign(size_t(out.rows) * size_t(out.cols), std::numeric_limits<double>::quiet_NaN());
    if (path)
        return pathSweep(model, request, clean, corrupted, cleanLogProbs, span, out);
    if (request.sweep == PatchSweep::HeadsAllPositions) {
        std::shared_ptr<const ReadoutWeights> r;
        if (reads::readoutFor(model, corrupted, r).ok() && r->weights<T>() &&
            stackedCellsCover(r->arch, *r->weights<T>(), tokens) && keepsContexts(clean, tokens) &&
            keepsContexts(corrupted, tokens))
            return stackedHeadsSweep(*r, request, clean, corrupted, cleanLogProbs, span, out);
    }
    const int total = out.rows * out.cols;
    TraceRequest pr = kr;
    pr.edits.resize(1);
    pr.lmHead = false; // metricOf reads the logits it needs from the trace's final rows
    if constexpr (std::is_same_v<T, float>)
        pr.unedited = &corrupted;
    else
        pr.uneditedDouble = &corrupted;
    const int dHead = model.info().dHead;
    Trace<T> patched;
    Mat<double> own;
    int ownLayer = -1;
    for (int r = 0; r < out.rows; ++r)
        for (int c = 0; c < out.cols; ++c) {
            if (request.cancel && request.cancel->load())
                return Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) + " of " +
                                                                std::to_string(total) + " cells");
            Intervention &e = pr.edits[0];
            if (Status st = patchFor(request.sweep, clean, r, c, e); !st)
                return st;
            if (ownLayer != r) {
                if (Status st = hookValue(corrupted, e.hook, r, own); !st)
                    return st;
                ownLayer = r;
            }
            double v = 0;
            if (sameEntries(e, own, dHead)) {
                v = out.corruptedValue; // the corrupted run itself
            } else {
                if (Status st = model.trace(pr, patched); !st)
                    return st;
                if (Status st = metricOf(model, patched, request, cleanLogProbs, out.corruptedDiff, span, v); !st)
                    return st;
            }
            out.metric[size_t(r) * size_t(out.cols) + size_t(c)] = v;
            ++out.done;
            if (request.progress)
                request.progress(out.done, total);
        }
    return {};
}

template Status logitDifference<float>(const Model &, const Trace<float> &, int, int, double &);
template Status logitDifference<double>(const Model &, const Trace<double> &, int, int, double &);
template Status nextLogProbs<float>(const Model &, const Trace<float> &, std::vector<double> &);
template Status nextLogProbs<double>(const Model &, const Trace<double> &, std::vector<double> &);
template Status patchFor<float>(PatchSweep, const Trace<float> &, int, int, Intervention &);
template Status patchFor<double>(PatchSweep, const Trace<double> &, int, int, Intervention &);
template Status patchSweep<float>(Model &, const PatchRequest &, PatchResult &);
template Status patchSweep<double>(Model &, const PatchRequest &, PatchResult &);

} // namespace attnviz
