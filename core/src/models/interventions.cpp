// SPDX-License-Identifier: GPL-3.0-or-later
// Interventions (interventions.h): hook names, their check against a model and a text, and a hook's
// activation read out of a trace. The forward applies them (forward/forward.cpp).
#include "attnviz/interventions.h"
#include "attnviz/model.h"

#include <algorithm>

namespace attnviz {

namespace {

struct HookSpelling {
    HookPoint hook;
    const char *name;
};
// The first spelling of each hook is the one written; the others are read too (TransformerLens'
// full hook names and their short forms).
const HookSpelling kSpellings[] = {
    {HookPoint::ResidPre, "resid_pre"},      {HookPoint::ResidMid, "resid_mid"},
    {HookPoint::ResidPost, "resid_post"},    {HookPoint::AttnZ, "attn.hook_z"},
    {HookPoint::AttnOut, "hook_attn_out"},   {HookPoint::MlpOut, "mlp_out"},
    {HookPoint::ResidPre, "hook_resid_pre"}, {HookPoint::ResidMid, "hook_resid_mid"},
    {HookPoint::ResidPost, "hook_resid_post"}, {HookPoint::AttnZ, "hook_z"},
    {HookPoint::AttnZ, "z"},                 {HookPoint::AttnOut, "attn_out"},
    {HookPoint::MlpOut, "hook_mlp_out"},
};

std::string layerHead(const Intervention &e)
{
    std::string s = std::string(hookName(e.hook)) + " L" + std::to_string(e.layer);
    if (e.head >= 0)
        s += " H" + std::to_string(e.head);
    return s;
}

} // namespace

const char *hookName(HookPoint hook)
{
    for (const HookSpelling &s : kSpellings)
        if (s.hook == hook)
            return s.name;
    return "?";
}

bool hookNamed(const std::string &name, HookPoint &out)
{
    for (const HookSpelling &s : kSpellings)
        if (name == s.name) {
            out = s.hook;
            return true;
        }
    return false;
}

const char *editKindName(EditKind kind)
{
    switch (kind) {
    case EditKind::Zero: return "zero";
    case EditKind::MeanOverText: return "mean";
    case EditKind::Value: return "value";
    }
    return "?";
}

std::string describeEdit(const Intervention &e)
{
    std::string s = layerHead(e);
    if (!e.positions.empty()) {
        s += " pos ";
        for (size_t i = 0; i < e.positions.size(); ++i)
            s += (i ? "," : "") + std::to_string(e.positions[i]);
    }
    return s + " " + editKindName(e.kind);
}

Status checkEdits(const std::vector<Intervention> &edits, int layers, int heads, int dModel, int dHead, int tokens)
{
    for (size_t k = 0; k < edits.size(); ++k) {
        const Intervention &e = edits[k];
        const std::string what = "edit " + std::to_string(k + 1) + " (" + hookName(e.hook) + "): ";
        if (e.layer < 0 || e.layer >= layers)
            return Status::error(StatusCode::InvalidInput, what + "layer " + std::to_string(e.layer) + " is not one of the model's " +
                                                               std::to_string(layers) + " layers (0.." + std::to_string(layers - 1) + ")");
        if (e.head >= 0 && e.hook != HookPoint::AttnZ)
            return Status::error(StatusCode::InvalidInput, what + "head " + std::to_string(e.head) +
                                                               ": only attn.hook_z has heads (the others are d_model wide)");
        if (e.head < -1 || e.head >= heads)
            return Status::error(StatusCode::InvalidInput, what + "head " + std::to_string(e.head) + " is not one of the model's " +
                                                               std::to_string(heads) + " query heads (0.." + std::to_string(heads - 1) + ")");
        for (int i : e.positions)
            if (i < 0 || i >= tokens)
                return Status::error(StatusCode::InvalidInput, what + "position " + std::to_string(i) + " is not in the text's " +
                                                                   std::to_string(tokens) + " tokens (0.." + std::to_string(tokens - 1) + ")");
        if (e.kind == EditKind::Value) {
            const int width = e.hook == HookPoint::AttnZ ? heads * dHead : dModel;
            if (e.value.rows() != tokens || e.value.cols() != width)
                return Status::error(StatusCode::InvalidInput, what + "value is " + std::to_string(e.value.rows()) + " x " +
                                                                   std::to_string(e.value.cols()) + ", the hook is " + std::to_string(tokens) +
                                                                   " x " + std::to_string(width) + " (tokens x width)");
        }
    }
    return {};
}

template <typename T>
Status hookValue(const Trace<T> &trace, HookPoint hook, int layer, Mat<double> &out)
{
    const std::string what = std::string(hookName(hook)) + " of layer " + std::to_string(layer);
    if (layer < 0 || layer >= trace.numLayers())
        return Status::error(StatusCode::InvalidInput, what + ": the trace has " + std::to_string(trace.numLayers()) + " layers");
    const LayerTrace<T> &lt = trace.layers[size_t(layer)];
    const Mat<T> *m = nullptr;
    switch (hook) {
    case HookPoint::ResidPre: m = &lt.residualIn; break;
    case HookPoint::ResidMid: m = &lt.afterAttention; break;
    case HookPoint::ResidPost: m = &lt.output; break;
    case HookPoint::AttnZ: m = lt.attention.batch.empty() ? nullptr : &lt.attention.batch.front().context; break;
    case HookPoint::AttnOut: m = &lt.attnOut; break;
    case HookPoint::MlpOut: m = &lt.mlpOut; break;
    }
    if (!m || m->rows() != Eigen::Index(trace.tokens.size()) || m->cols() == 0) {
        const bool outputs = hook == HookPoint::AttnOut || hook == HookPoint::MlpOut;
        return Status::error(StatusCode::InvalidInput,
                             what + ": not kept in this trace (" +
                                 (outputs ? "TraceRequest::keepHookOutputs keeps it" : "its layer's stages were not observed") + ")");
    }
    out = m->template cast<double>();
    return {};
}

template Status hookValue<float>(const Trace<float> &, HookPoint, int, Mat<double> &);
template Status hookValue<double>(const Trace<double> &, HookPoint, int, Mat<double> &);

} // namespace attnviz
