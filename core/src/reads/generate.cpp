// SPDX-License-Identifier: GPL-3.0-or-later
// Generation (reads.h): the text's trace extended one token at a time. Each new id is appended to
// the ids and the trace handed back to Model::trace, which recomputes only the new position (the
// causal prefix is kept). The sampling rule is written out here, not taken from a library, because
// the tests' float64 reference (tests/fixtures/reads/make_reads.py) repeats it step for step with
// torch's generator: the same seed gives the same ids in both.
#include "readout.h"

#include "attnviz/memorybudget.h"
#include "attnviz/torchrng.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnviz {

int sampleToken(const std::vector<double> &logits, double temperature, int topK, double topP, double u)
{
    const int V = int(logits.size());
    if (V == 0)
        return -1;
    if (temperature <= 0) {
        int best = 0;
        for (int j = 1; j < V; ++j)
            if (logits[size_t(j)] > logits[size_t(best)])
                best = j;
        return best;
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (double l : logits)
        mx = std::max(mx, l);
    std::vector<double> p(static_cast<size_t>(V));
    double sum = 0;
    for (int j = 0; j < V; ++j)
        sum += p[size_t(j)] = std::exp((logits[size_t(j)] - mx) / temperature);
    for (double &x : p)
        x /= sum;
    std::vector<int> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    int keep = topK > 0 ? std::min(topK, V) : V;
    if (topP < 1.0) {
        double c = 0;
        int n = 0;
        while (n < keep) {
            c += p[size_t(order[size_t(n)])];
            ++n;
            if (c >= topP)
                break;
        }
        keep = std::max(1, n);
    }
    double total = 0;
    for (int k = 0; k < keep; ++k)
        total += p[size_t(order[size_t(k)])];
    double c = 0;
    for (int k = 0; k < keep; ++k) {
        c += p[size_t(order[size_t(k)])];
        if (c > u * total)
            return order[size_t(k)];
    }
    return order[size_t(keep - 1)];
}

template <typename T>
Status nextTokenOf(const Model &model, const Trace<T> &trace, const GenerateOptions &options, double u, int &id)
{
    std::shared_ptr<const ReadoutWeights> r;
    if (Status st = reads::readoutFor(model, trace, r); !st)
        return st;
    if (r->arch.head != LmHead::CausalLm)
        return Status::error(StatusCode::Unavailable, r->name + ": generation needs a causal language model (this one fills [MASK])");
    const Predictions &pr = trace.predictions;
    if (options.temperature <= 0 && !pr.next.empty() && !pr.next.back().empty()) {
        id = pr.next.back().front().id; // best first, the lowest id on a tie
        return {};
    }
    std::vector<double> logits;
    reads::allLogits(*r, *r->weights<T>(), Mat<T>(trace.final.bottomRows(1)), logits);
    id = sampleToken(logits, options.temperature, options.topK, options.topP, u);
    return {};
}

template Status nextTokenOf<float>(const Model &, const Trace<float> &, const GenerateOptions &, double, int &);
template Status nextTokenOf<double>(const Model &, const Trace<double> &, const GenerateOptions &, double, int &);

namespace {

template <typename T>
Status generateImpl(Model &model, const std::string &prompt, const std::vector<int> &promptIds, const GenerateOptions &options,
                    Trace<T> &trace, GenerateResult &out)
{
    out = GenerateResult();
    std::shared_ptr<const ReadoutWeights> r = model.readout();
    if (!r && model.info().architecture.encoderDecoder)
        return Status::error(StatusCode::Unavailable, model.info().name + ": an encoder-decoder model (" + model.info().family +
                                                          ") generates through generateTarget (encoderdecoder.h)");
    if (!r)
        return Status::error(StatusCode::Unavailable, model.info().name + ": generation needs a checkpoint's language-model head");
    if (r->arch.head != LmHead::CausalLm)
        return Status::error(StatusCode::Unavailable, r->name + ": generation needs a causal language model (this one fills [MASK])");
    if (options.tokens < 0)
        return Status::error(StatusCode::InvalidInput, "tokens: " + std::to_string(options.tokens) + " is negative");
    if (options.temperature > 0 && !(options.topP > 0 && options.topP <= 1))
        return Status::error(StatusCode::InvalidInput, "top-p: must be in (0, 1]");
    std::vector<int> ids = promptIds;
    if (ids.empty()) {
        std::vector<TraceToken> tokens;
        if (Status st = model.tokenize(prompt, tokens); !st)
            return st;
        for (const TraceToken &t : tokens)
            ids.push_back(t.id);
    }
    if (ids.empty())
        return Status::error(StatusCode::InvalidInput, "text: no tokens to continue");
    const int limit = r->arch.maxPositions > 0 ? r->arch.maxPositions : std::numeric_limits<int>::max();
    if (int(ids.size()) > limit)
        ids.resize(size_t(limit));
    int n = options.tokens;
    if (int64_t(ids.size()) + n > limit) { // 64 bits: a count near INT_MAX must not wrap past the check
        n = limit - int(ids.size());
        out.note = r->name + " reads at most " + std::to_string(limit) + " positions: " + std::to_string(n) + " of the " +
                   std::to_string(options.tokens) + " tokens asked for fit after the text's " + std::to_string(ids.size());
    }
    out.promptTokens = int(ids.size());
    TraceRequest req;
    req.topK = std::max(1, options.traceTopK);
    req.ids = ids;
    // The whole request bounded up front: the trace of the last step must fit the memory one
    // computation may use, or nothing is generated (one line, with how many tokens would fit).
    if (Status st = checkTraceMemory(model.info(), int(ids.size()) + n, sizeof(T), req.keepScores, 0, req.keepMlp); !st)
        return st;
    if (Status st = model.trace(req, trace); !st)
        return st;
    TorchGenerator rng(options.seed);
    for (int k = 0; k < n; ++k) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
            out.stopped = true;
            break;
        }
        int id = -1;
        const double u = options.temperature > 0 ? rng.uniformDouble() : 0.0;
        if (Status st = nextTokenOf(model, trace, options, u, id); !st)
            return st;
        ids.push_back(id);
        out.generated.push_back(id);
        req.ids = ids;
        if (Status st = model.trace(req, trace); !st)
            return st;
        if (options.onToken && !options.onToken(id)) {
            out.stopped = true;
            break;
        }
    }
    out.ids = ids;
    out.text = r->decode(out.generated);
    return {};
}

} // namespace

Status generate(Model &model, const std::string &prompt, const std::vector<int> &promptIds, const GenerateOptions &options,
                Trace<float> &trace, GenerateResult &out)
{
    return generateImpl(model, prompt, promptIds, options, trace, out);
}

Status generate(Model &model, const std::string &prompt, const std::vector<int> &promptIds, const GenerateOptions &options,
                Trace<double> &trace, GenerateResult &out)
{
    return generateImpl(model, prompt, promptIds, options, trace, out);
}

} // namespace attnviz
