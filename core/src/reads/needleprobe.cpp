// SPDX-License-Identifier: GPL-3.0-or-later
// The needle-in-a-haystack probe and the retrieval score (needleprobe.h).
#include "attnviz/needleprobe.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/fileio.h"
#include "attnviz/reads.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace attnviz {

template <typename T>
Mat<double> retrievalScores(const Trace<T> &trace, int promptTokens, int needleBegin, int needleEnd,
                            const std::vector<int> &answer)
{
    const int L = trace.numLayers(), H = trace.numHeads(), t = int(trace.tokens.size());
    Mat<double> out = Mat<double>::Constant(L, H, std::numeric_limits<double>::quiet_NaN());
    const int needle = needleEnd - needleBegin;
    if (needle <= 0 || needleBegin < 0 || needleEnd > promptTokens || promptTokens > t)
        return out;
    // answer token k came from the logits of row promptTokens - 1 + k
    std::vector<int> rows;
    for (int k = 0; k < int(answer.size()) && promptTokens - 1 + k < t; ++k)
        rows.push_back(promptTokens - 1 + k);
    for (int l = 0; l < L; ++l) {
        const AttentionTiles<T> tiles(trace, l, AttentionTiles<T>::Source::Auto, 0);
        if (!tiles.valid())
            continue;
        for (int h = 0; h < std::min(H, tiles.numHeads()); ++h) {
            const Mat<T> w = tiles.wholeRows(h, rows);
            std::set<int> copied;
            for (int k = 0; k < int(rows.size()); ++k) {
                int best = 0;
                for (int j = 1; j < promptTokens; ++j)
                    if (w(k, j) > w(k, best))
                        best = j;
                if (best >= needleBegin && best < needleEnd && trace.tokens[size_t(best)].id == answer[size_t(k)])
                    copied.insert(best);
            }
            out(l, h) = double(copied.size()) / needle;
        }
    }
    return out;
}

template Mat<double> retrievalScores<float>(const Trace<float> &, int, int, int, const std::vector<int> &);
template Mat<double> retrievalScores<double>(const Trace<double> &, int, int, int, const std::vector<int> &);

namespace {

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// s without leading and trailing white space
std::string trimmed(const std::string &s)
{
    size_t a = 0, b = s.size();
    while (a < b && isSpace(s[a]))
        ++a;
    while (b > a && isSpace(s[b - 1]))
        --b;
    return s.substr(a, b - a);
}

} // namespace

Status readHaystackFile(const std::string &path, std::string &out)
{
    constexpr uint64_t kCap = uint64_t(16) << 20;
    std::string text;
    if (Status st = readRegularFile(path, kCap, text); !st)
        return st;
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
        return Status::error(StatusCode::ParseError,
                             path + ": a NUL byte at offset " + std::to_string(nul) + ": not a text file");
    out = std::move(text);
    return {};
}

Status needleProbe(Model &model, const NeedleRequest &request, NeedleProbe &out)
{
    out = NeedleProbe();
    const ModelInfo info = model.info();
    if (!info.causal || info.architecture.encoderDecoder)
        return Status::error(StatusCode::Unavailable, info.name + ": the needle probe needs a causal language model");
    const std::string needle = trimmed(request.needle), question = trimmed(request.question),
                      hay = trimmed(request.haystack);
    if (needle.empty())
        return Status::error(StatusCode::InvalidInput, "needle: empty");
    if (question.empty())
        return Status::error(StatusCode::InvalidInput, "question: empty");
    if (!(request.depth >= 0 && request.depth <= 1))
        return Status::error(StatusCode::InvalidInput, "depth: must be in [0, 1]");
    // the haystack cut at `depth`, moved on to the next space (no word split)
    size_t cut = size_t(std::floor(request.depth * double(hay.size())));
    while (cut < hay.size() && !isSpace(hay[cut]))
        ++cut;
    const std::string before = trimmed(hay.substr(0, cut)), after = trimmed(hay.substr(cut));
    std::string text = before;
    if (!text.empty())
        text += ' ';
    // the needle's bytes from the space before it (a token " word" begins there)
    const size_t needleFrom = text.empty() ? 0 : text.size() - 1;
    text += needle;
    const size_t needleTo = text.size();
    if (!after.empty())
        text += ' ' + after;
    text += ' ' + question;
    std::vector<TraceToken> tokens;
    if (Status st = model.tokenize(text, tokens); !st)
        return st;
    int nb = -1, ne = -1;
    for (int i = 0; i < int(tokens.size()); ++i) {
        const TraceToken &tk = tokens[size_t(i)];
        if (tk.special || tk.end <= tk.begin || tk.begin < needleFrom || tk.end > needleTo)
            continue;
        if (nb < 0)
            nb = i;
        ne = i + 1;
    }
    if (nb < 0)
        return Status::error(StatusCode::InvalidInput, "needle: no token of its own in the probe's text");
    std::vector<int> ids;
    for (const TraceToken &tk : tokens)
        ids.push_back(tk.id);
    const int answerTokens = request.answerTokens > 0 ? request.answerTokens : ne - nb;
    if (info.maxPositions > 0 && int(ids.size()) + answerTokens > info.maxPositions)
        return Status::error(StatusCode::InvalidInput,
                             info.name + " reads at most " + std::to_string(info.maxPositions) + " positions: the probe's " +
                                 std::to_string(ids.size()) + " tokens and " + std::to_string(answerTokens) +
                                 " answer tokens do not fit (shorten the haystack)");
    out.text = text;
    out.promptTokens = int(ids.size());
    out.needleBegin = nb;
    out.needleEnd = ne;
    TraceRequest req;
    req.ids = ids;
    req.topK = 1;
    req.observe.weights = false; // q, k, v and each row's log-sum-exp: linear in the text
    req.observe.stages = false;
    req.cancel = request.cancel;
    const int layers = std::max(info.layers, 1), total = layers + answerTokens;
    if (request.progress)
        req.progress = [&request, total](int done, int) { request.progress(done, total); };
    Trace<float> trace;
    if (Status st = model.trace(req, trace); !st)
        return st;
    req.progress = nullptr; // each answer token's trace counts as one step
    GenerateOptions greedy;
    for (int k = 0; k < answerTokens; ++k) {
        if (request.cancel && request.cancel->load())
            return Status::error(StatusCode::Cancelled, "cancelled after " + std::to_string(k) + " answer tokens");
        int id = -1;
        if (Status st = nextTokenOf(model, trace, greedy, 0.0, id); !st)
            return st;
        out.answer.push_back(id);
        if (request.progress)
            request.progress(layers + k + 1, total);
        if (k + 1 == answerTokens)
            break; // its own row reads nothing the score needs
        ids.push_back(id);
        req.ids = ids;
        if (Status st = model.trace(req, trace); !st)
            return st;
    }
    out.ids = ids;
    if (out.ids.size() < size_t(out.promptTokens) + out.answer.size())
        out.ids.push_back(out.answer.back());
    out.answerText = decodeIds(model, out.answer);
    for (int id : out.answer)
        for (int j = nb; j < ne; ++j)
            if (ids[size_t(j)] == id) {
                ++out.answerFromNeedle;
                break;
            }
    out.retrieval = retrievalScores(trace, out.promptTokens, nb, ne, out.answer);
    return {};
}

} // namespace attnviz
