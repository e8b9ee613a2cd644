// SPDX-License-Identifier: GPL-3.0-or-later
// Path patching (patching.h pathPatchFor): a sender head's clean output carried to one receiver
// head's q, k or v alone, as the corrupted run's attn.hook_z edit of the receiver; and the receiver
// names ("1.3:k") of the CLI and the window.
#include "attnviz/patching.h"
#include "../attention/scoreblock.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz {

const char *headInputName(HeadInput i)
{
    switch (i) {
    case HeadInput::Q: return "q";
    case HeadInput::K: return "k";
    case HeadInput::V: return "v";
    }
    return "?";
}

std::string pathReceiverName(const PathReceiver &r)
{
    return std::to_string(r.layer) + "." + std::to_string(r.head) + ":" + headInputName(r.input);
}

bool parsePathReceiver(const std::string &text, PathReceiver &out, std::string &error)
{
    const std::string form = "the receiver '" + text + "' is not LAYER.HEAD:q, :k or :v (layer and head from 0, e.g. 1.3:k)";
    const size_t dot = text.find('.'), colon = text.find(':');
    if (dot == std::string::npos || colon == std::string::npos || colon < dot || dot == 0 || colon == dot + 1) {
        error = form;
        return false;
    }
    auto number = [](const std::string &s, int &v) {
        if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
        v = std::stoi(s);
        return true;
    };
    PathReceiver r;
    if (!number(text.substr(0, dot), r.layer) || !number(text.substr(dot + 1, colon - dot - 1), r.head)) {
        error = form;
        return false;
    }
    const std::string in = text.substr(colon + 1);
    if (in == "q" || in == "Q")
        r.input = HeadInput::Q;
    else if (in == "k" || in == "K")
        r.input = HeadInput::K;
    else if (in == "v" || in == "V")
        r.input = HeadInput::V;
    else {
        error = "the receiver's input '" + in + "' is not q, k or v";
        return false;
    }
    out = r;
    return true;
}

Status checkPathReceiver(const PathReceiver &r, int layers, int heads)
{
    if (r.layer == 0 && layers > 0)
        return Status::error(StatusCode::InvalidInput, "receiver layer 0 has no sender before it (a receiver is in layer 1.." +
                                                           std::to_string(layers - 1) + ")");
    if (r.layer < 1 || r.layer >= layers)
        return Status::error(StatusCode::InvalidInput, "receiver layer " + std::to_string(r.layer) + " is out of range (the model has " +
                                                           std::to_string(layers) + " layers; a receiver is in layer 1.." +
                                                           std::to_string(layers - 1) + ")");
    if (r.head < 0 || r.head >= heads)
        return Status::error(StatusCode::InvalidInput, "receiver head " + std::to_string(r.head) + " is out of range (0.." +
                                                           std::to_string(heads - 1) + ")");
    return {};
}

namespace {

// Trace `ids` as `corrupted` was traced (keepHookOutputs), with `edits`, over `corrupted` (the rows
// no edit reaches copied).
template <typename T>
Status traceEdited(Model &model, const Trace<T> &corrupted, std::vector<Intervention> edits, Trace<T> &out)
{
    TraceRequest r;
    for (const TraceToken &tok : corrupted.tokens)
        r.ids.push_back(tok.id);
    r.keepHookOutputs = true;
    r.edits = std::move(edits);
    if constexpr (std::is_same_v<T, float>)
        r.unedited = &corrupted;
    else
        r.uneditedDouble = &corrupted;
    return model.trace(r, out);
}

} // namespace

template <typename T>
Status pathPatchFor(Model &model, const Trace<T> &clean, const Trace<T> &corrupted, int senderLayer, int senderHead,
                    const PathReceiver &receiver, const std::vector<int> &positions, std::vector<Intervention> &out)
{
    out.clear();
    const ModelInfo info = model.info();
    if (!info.causal || info.architecture.encoderDecoder || corrupted.encoderDecoder() || info.architecture.layers == 0)
        return Status::error(StatusCode::Unavailable, info.name + ": path patching runs on decoder-only (causal) checkpoints");
    const int layers = corrupted.numLayers(), heads = corrupted.numHeads();
    if (Status st = checkPathReceiver(receiver, layers, heads); !st)
        return st;
    if (senderLayer < 0 || senderLayer >= receiver.layer)
        return Status::error(StatusCode::InvalidInput, "sender layer " + std::to_string(senderLayer) + " is not before the receiver's (0.." +
                                                           std::to_string(receiver.layer - 1) + ")");
    if (senderHead < 0 || senderHead >= heads)
        return Status::error(StatusCode::InvalidInput, "sender head " + std::to_string(senderHead) + " is out of range (0.." +
                                                           std::to_string(heads - 1) + ")");
    const int t = int(corrupted.tokens.size());
    if (int(clean.tokens.size()) != t || clean.numLayers() != layers)
        return Status::error(StatusCode::InvalidInput, "the clean and corrupted runs differ in shape (" + std::to_string(clean.tokens.size()) +
                                                           " and " + std::to_string(t) + " tokens)");
    for (int p : positions)
        if (p < 0 || p >= t)
            return Status::error(StatusCode::InvalidInput, "position " + std::to_string(p) + " is out of range (0.." +
                                                               std::to_string(t - 1) + ")");
    const SequenceResult<T> *rs = corrupted.layers[size_t(receiver.layer)].attention.batch.empty()
                                      ? nullptr
                                      : &corrupted.layers[size_t(receiver.layer)].attention.batch.front();
    const int dh = info.dHead;
    if (!rs || rs->lse.rows() != t || rs->q.cols() != Eigen::Index(heads) * dh || rs->k.cols() != Eigen::Index(heads) * dh)
        return Status::error(StatusCode::Unavailable, info.name + ": path patching needs the receiver layer's softmax attention with "
                                                                  "every stage kept (q, k and v per query head)");

    // the sender's clean output, only where it differs from the corrupted one: nothing else reaches
    Intervention sender;
    sender.hook = HookPoint::AttnZ;
    sender.layer = senderLayer;
    sender.head = senderHead;
    sender.positions = positions;
    sender.kind = EditKind::Value;
    if (Status st = hookValue(clean, HookPoint::AttnZ, senderLayer, sender.value); !st)
        return st;
    Mat<double> own;
    if (Status st = hookValue(corrupted, HookPoint::AttnZ, senderLayer, own); !st)
        return st;
    {
        std::vector<int> rows;
        for (int i = 0; i < t; ++i)
            if ((positions.empty() || std::find(positions.begin(), positions.end(), i) != positions.end()) &&
                sender.value.row(i).segment(Eigen::Index(senderHead) * dh, dh) != own.row(i).segment(Eigen::Index(senderHead) * dh, dh))
                rows.push_back(i);
        if (rows.empty())
            return {};
        sender.positions = rows;
    }
    Trace<T> run;
    if (Status st = traceEdited(model, corrupted, {sender}, run); !st)
        return st;
    const Mat<T> &a1 = run.layers[size_t(senderLayer)].attnOut, &a0 = corrupted.layers[size_t(senderLayer)].attnOut;
    if (a0.rows() != t || a1.rows() != t)
        return Status::error(StatusCode::InvalidInput, "path patching reads hook_attn_out: the corrupted run needs TraceRequest::keepHookOutputs");
    // resid' = resid_pre_corr[Lr] + delta, at the rows the sender changed
    Intervention stream;
    stream.hook = HookPoint::ResidPre;
    stream.layer = receiver.layer;
    stream.kind = EditKind::Value;
    const Mat<T> &resid = corrupted.layers[size_t(receiver.layer)].residualIn;
    stream.value = resid.template cast<double>();
    for (int i = 0; i < t; ++i) {
        if (a1.row(i) == a0.row(i))
            continue;
        const Eigen::Matrix<T, 1, Eigen::Dynamic> delta = a1.row(i) - a0.row(i);
        stream.value.row(i) = (resid.row(i) + delta).template cast<double>();
        stream.positions.push_back(i);
    }
    if (stream.positions.empty())
        return {};
    if (Status st = traceEdited(model, corrupted, {stream}, run); !st)
        return st;
    const SequenceResult<T> &ps = run.layers[size_t(receiver.layer)].attention.batch.front();
    // q, k and v of the receiver: the patched input from resid', the other two the corrupted run's
    const Eigen::Index c = Eigen::Index(receiver.head) * dh;
    const Mat<T> &q = receiver.input == HeadInput::Q ? ps.q : rs->q;
    const Mat<T> &k = receiver.input == HeadInput::K ? ps.k : rs->k;
    const Mat<T> &v = receiver.input == HeadInput::V ? ps.v : rs->v;
    const Mat<T> &in = receiver.input == HeadInput::Q ? ps.q : receiver.input == HeadInput::K ? ps.k : ps.v;
    const Mat<T> &was = receiver.input == HeadInput::Q ? rs->q : receiver.input == HeadInput::K ? rs->k : rs->v;
    // the rows whose z changes: a query that changed, or (causal) a query that sees a changed key/value
    std::vector<int> rows;
    int first = -1;
    for (int i = 0; i < t; ++i) {
        const bool changed = in.row(i).segment(c, dh) != was.row(i).segment(c, dh);
        if (changed && first < 0)
            first = i;
        if (receiver.input == HeadInput::Q ? changed : first >= 0)
            rows.push_back(i);
    }
    if (rows.empty())
        return {};
    Intervention z;
    z.hook = HookPoint::AttnZ;
    z.layer = receiver.layer;
    z.head = receiver.head;
    z.kind = EditKind::Value;
    z.positions = rows;
    z.value = rs->context.template cast<double>();
    const auto &A = corrupted.layers[size_t(receiver.layer)].attention;
    const T scale = T(A.scale), cap = T(A.softcap);
    Mat<T> s;
    for (int i : rows) {
        const int keys = A.causal ? i + 1 : t;
        scoreBlock(scale, q, i, 1, c, k, 0, keys, c, dh, s);
        if (cap > 0)
            s = ((s.array() / cap).tanh() * cap).matrix();
        const uint8_t *m = rs->mask.size() ? rs->mask.data() + Eigen::Index(i) * rs->mask.cols() : nullptr;
        T mx = -std::numeric_limits<T>::infinity();
        for (int j = 0; j < keys; ++j)
            if (!(m && m[j]) && s(0, j) > mx)
                mx = s(0, j);
        Eigen::Matrix<T, 1, Eigen::Dynamic> zi = Eigen::Matrix<T, 1, Eigen::Dynamic>::Zero(dh);
        if (mx != -std::numeric_limits<T>::infinity()) { // every key masked: z 0, as the forward gives
            T sum = 0;
            for (int j = 0; j < keys; ++j) {
                s(0, j) = m && m[j] ? T(0) : std::exp(s(0, j) - mx);
                sum += s(0, j);
            }
            for (int j = 0; j < keys; ++j)
                if (s(0, j) != T(0))
                    zi += (s(0, j) / sum) * v.row(j).segment(c, dh);
        }
        z.value.row(i).segment(c, dh) = zi.template cast<double>();
    }
    out.push_back(std::move(z));
    return {};
}

template Status pathPatchFor<float>(Model &, const Trace<float> &, const Trace<float> &, int, int, const PathReceiver &,
                                    const std::vector<int> &, std::vector<Intervention> &);
template Status pathPatchFor<double>(Model &, const Trace<double> &, const Trace<double> &, int, int, const PathReceiver &,
                                     const std::vector<int> &, std::vector<Intervention> &);

} // namespace attnviz
