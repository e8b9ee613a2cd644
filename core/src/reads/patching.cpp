// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps (patching.h): the clean and corrupted runs, then the corrupted run once
// per cell with one of the clean run's activations patched in (TraceRequest::edits), scored by the
// normalised logit difference. Each forward runs on the pool (its products split over the cores).
#include "attnviz/patching.h"
#include "readout.h"

#include <cmath>
#include <limits>

namespace attnviz {

const char *patchSweepName(PatchSweep s) { return s == PatchSweep::ResidPre ? "resid_pre" : "heads"; }

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
        if (id < 0 || id >= V)
            return Status::error(StatusCode::InvalidInput, "token id " + std::to_string(id) + " is not in the vocabulary (0.." +
                                                               std::to_string(V - 1) + ")");
    const Eigen::Index last = trace.final.rows() - 1;
    Mat<T> h(2, trace.final.cols());
    h.row(0) = trace.final.row(last);
    h.row(1) = trace.final.row(last);
    std::vector<reads::ScanRow> rows;
    reads::scanLogits(*r, *w, h, {answer, wrong}, 1, rows);
    out = rows[0].targetLogit - rows[1].targetLogit;
    return {};
}

template <typename T>
Status patchFor(PatchSweep sweep, const Trace<T> &clean, int row, int col, Intervention &out)
{
    out = Intervention();
    out.kind = EditKind::Value;
    out.layer = row;
    if (sweep == PatchSweep::ResidPre) {
        out.hook = HookPoint::ResidPre;
        out.positions = {col};
    } else {
        out.hook = HookPoint::AttnZ;
        out.head = col;
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

} // namespace

template <typename T>
Status patchSweep(Model &model, const PatchRequest &request, PatchResult &out)
{
    out = PatchResult();
    out.sweep = request.sweep;
    TraceRequest cr;
    cr.text = request.clean;
    cr.ids = request.cleanIds;
    cr.cancel = request.cancel;
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
    if (Status st = logitDifference(model, clean, request.answer, request.wrong, out.cleanDiff); !st)
        return st;
    if (Status st = logitDifference(model, corrupted, request.answer, request.wrong, out.corruptedDiff); !st)
        return st;
    const double span = out.cleanDiff - out.corruptedDiff;
    if (!(std::abs(span) > 0))
        return Status::error(StatusCode::InvalidInput, "the clean and corrupted prompts give the same logit difference (" +
                                                           std::to_string(out.cleanDiff) + "): nothing to normalise by");
    out.rows = clean.numLayers();
    out.cols = request.sweep == PatchSweep::ResidPre ? int(clean.tokens.size()) : clean.numHeads();
    const int total = out.rows * out.cols;
    out.metric.assign(size_t(total), std::numeric_limits<double>::quiet_NaN());
    TraceRequest pr = kr;
    pr.edits.resize(1);
    Trace<T> patched;
    for (int r = 0; r < out.rows; ++r)
        for (int c = 0; c < out.cols; ++c) {
            if (request.cancel && request.cancel->load())
                return Status::error(StatusCode::Cancelled, "patching cancelled after " + std::to_string(out.done) + " of " +
                                                                std::to_string(total) + " cells");
            if (Status st = patchFor(request.sweep, clean, r, c, pr.edits[0]); !st)
                return st;
            if (Status st = model.trace(pr, patched); !st)
                return st;
            double d = 0;
            if (Status st = logitDifference(model, patched, request.answer, request.wrong, d); !st)
                return st;
            out.metric[size_t(r) * size_t(out.cols) + size_t(c)] = (d - out.corruptedDiff) / span;
            ++out.done;
            if (request.progress)
                request.progress(out.done, total);
        }
    return {};
}

template Status logitDifference<float>(const Model &, const Trace<float> &, int, int, double &);
template Status logitDifference<double>(const Model &, const Trace<double> &, int, int, double &);
template Status patchFor<float>(PatchSweep, const Trace<float> &, int, int, Intervention &);
template Status patchFor<double>(PatchSweep, const Trace<double> &, int, int, Intervention &);
template Status patchSweep<float>(Model &, const PatchRequest &, PatchResult &);
template Status patchSweep<double>(Model &, const PatchRequest &, PatchResult &);

} // namespace attnviz
