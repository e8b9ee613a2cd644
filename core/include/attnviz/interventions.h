// SPDX-License-Identifier: GPL-3.0-or-later
// Interventions as data: edits of a forward pass at named hook points (TransformerLens' names), read
// by the one CPU forward of real checkpoints (TraceRequest::edits) for every family and precision.
// An edit sets a hook's activation, at some layer (and, for attn.hook_z, one query head's columns),
// at some positions, to zero, to its mean over the text's positions, or to a given matrix (the same
// hook of a source trace: activation patching). hookValue reads a hook's activation out of a trace.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <string>
#include <vector>

namespace attnviz {

template <typename T>
struct Trace;

// Where an edit applies, per layer (the forward's stages, model.h's LayerTrace):
//   ResidPre   resid_pre: the residual stream entering the layer (LayerTrace::residualIn)
//   ResidMid   resid_mid: after the attention sub-block (afterAttention; post-norm: normalized)
//   ResidPost  resid_post: the layer's output (output; post-norm: normalized)
//   AttnZ      attn.hook_z: each head's weighted values before W_O (attention.context, H*d_head wide)
//   AttnOut    hook_attn_out: what the attention sub-block adds to the residual (attention's output;
//              sandwich norms: after the post-attention norm)
//   MlpOut     mlp_out: what the MLP adds to the residual (sandwich norms: after its post norm)
enum class HookPoint { ResidPre, ResidMid, ResidPost, AttnZ, AttnOut, MlpOut };

enum class EditKind {
    Zero,         // the selected entries set to 0
    MeanOverText, // each selected column set to its mean over every position of the text (as computed)
    Value,        // the selected entries copied from Intervention::value
};

struct Intervention {
    HookPoint hook = HookPoint::AttnZ;
    int layer = 0;
    int head = -1;              // attn.hook_z: a query head (from 0), its d_head columns; -1: every column
    std::vector<int> positions; // rows edited; empty: every position
    EditKind kind = EditKind::Zero;
    // EditKind::Value: the hook's whole activation (t, width: d, or H*d_head for attn.hook_z) of which
    // the selected rows and columns are copied (hookValue of a source trace of the same token count)
    Mat<double> value;
    bool operator==(const Intervention &o) const
    {
        return hook == o.hook && layer == o.layer && head == o.head && positions == o.positions && kind == o.kind &&
               value.rows() == o.value.rows() && value.cols() == o.value.cols() && value == o.value;
    }
    bool operator!=(const Intervention &o) const { return !(*this == o); }
};

// "resid_pre", "resid_mid", "resid_post", "attn.hook_z", "hook_attn_out", "mlp_out".
const char *hookName(HookPoint hook);
// The hook named so (also "hook_z", "attn_out", "hook_mlp_out", "hook_resid_pre" ...); false if none.
bool hookNamed(const std::string &name, HookPoint &out);
const char *editKindName(EditKind kind); // "zero", "mean", "value"

// One line per edit for people: "attn.hook_z L1 H2 zero", "resid_pre L0 pos 3,4 value".
std::string describeEdit(const Intervention &e);

// Whether `edits` fit a model of `layers` layers and `heads` query heads and a text of `tokens` tokens
// (with the width `dModel`, `dHead`); one clear line naming the edit and the field otherwise.
Status checkEdits(const std::vector<Intervention> &edits, int layers, int heads, int dModel, int dHead, int tokens);

// A hook's activation in `trace` (t, width), as the forward computed it (after any edit at that hook);
// an error naming what is missing where the trace did not keep it (Observe left the layer's stages
// out; hook_attn_out of a sandwich-norm model and mlp_out need TraceRequest::keepHookOutputs).
template <typename T>
Status hookValue(const Trace<T> &trace, HookPoint hook, int layer, Mat<double> &out);

} // namespace attnviz
