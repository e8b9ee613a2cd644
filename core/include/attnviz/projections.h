// SPDX-License-Identifier: GPL-3.0-or-later
// Seeded projections, drawn in the order PyTorch draws them, so a seed reproduces a notebook.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <cstdint>

namespace attnviz {

enum class InitScheme {
    TorchLinear,   // nn.Linear default: kaiming_uniform(a=sqrt(5)) weights, U(+-1/sqrt(fan_in)) biases
    Uniform01,     // torch.rand(d_in, d_out) used as x @ W (seed 001's SelfAttention_v1)
    XavierUniform, // nn.MultiheadAttention: out_proj drawn as nn.Linear first, then xavier in_proj; biases 0
};

enum class DrawOrder {
    Fused,   // W_q (all heads), W_k, W_v, then W_o: one Linear per role (seed 001's MultiHeadAttention)
    PerHead, // head 0's q, k, v, then head 1's ...: a ModuleList of single heads (MultiHeadAttentionWrapper)
};

struct RandomProjectionSpec {
    int dModel = 0, kdim = 0, vdim = 0; // input widths of query, key, value
    int numHeads = 1, dHead = 0;        // dInner = numHeads * dHead
    int dOut = 0;                       // width of W_o's output; 0: no W_o (identity, needs dOut == dInner)
    bool outProj = true;
    bool qkvBias = false;
    bool outBias = true;
    InitScheme scheme = InitScheme::TorchLinear;
    DrawOrder order = DrawOrder::Fused;
    uint64_t seed = 0; // torch.manual_seed(seed) just before construction
};

template <typename T>
Status randomProjections(const RandomProjectionSpec &spec, Projections<T> &out);

class TorchGenerator;
// One nn.Linear(in, out, bias) as torch draws it (weight, then bias) from `g`.
template <typename T>
Linear<T> drawTorchLinear(TorchGenerator &g, int in, int out, bool bias);

// Identity projections (Q = K = V = X, output = context): seed 003's "by-passing the dense layers".
template <typename T>
Projections<T> identityProjections() { return {}; }

} // namespace attnviz
