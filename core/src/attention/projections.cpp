// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnviz/projections.h"
#include "attnviz/torchrng.h"

#include <cmath>

namespace attnviz {

double TorchGenerator::linearWeightBound(int fanIn)
{
    // torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5)), computed in the same order as torch does.
    const double a = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double stdv = gain / std::sqrt(double(fanIn));
    return std::sqrt(3.0) * stdv;
}

double TorchGenerator::linearBiasBound(int fanIn) { return fanIn > 0 ? 1.0 / std::sqrt(double(fanIn)) : 0.0; }

double TorchGenerator::xavierBound(int fanIn, int fanOut)
{
    const double stdv = 1.0 * std::sqrt(2.0 / double(fanIn + fanOut));
    return std::sqrt(3.0) * stdv;
}

namespace {

// Fills (rows, cols) row-major with torch's uniform_(from, to), i.e. in storage order.
template <typename T>
Mat<T> uniformMatrix(TorchGenerator &g, int rows, int cols, double bound)
{
    Mat<T> m(rows, cols);
    const float from = float(-bound), to = float(bound);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = T(g.uniformFloat(from, to));
    return m;
}

template <typename T>
Vec<T> uniformVector(TorchGenerator &g, int n, double bound)
{
    Vec<T> v(n);
    const float from = float(-bound), to = float(bound);
    for (Eigen::Index i = 0; i < n; ++i)
        v[i] = T(g.uniformFloat(from, to));
    return v;
}

// nn.Linear(in, out, bias): weight (out, in) then bias (out).
template <typename T>
Linear<T> torchLinear(TorchGenerator &g, int in, int out, bool bias)
{
    Linear<T> l;
    l.W = uniformMatrix<T>(g, out, in, TorchGenerator::linearWeightBound(in));
    if (bias)
        l.b = uniformVector<T>(g, out, TorchGenerator::linearBiasBound(in));
    return l;
}

// torch.rand(in, out) used as x @ W: stored transposed into the (out, in) convention.
template <typename T>
Linear<T> rand01Linear(TorchGenerator &g, int in, int out, bool bias)
{
    Mat<T> w(in, out);
    for (Eigen::Index i = 0; i < w.size(); ++i)
        w.data()[i] = T(g.uniformFloat(0.0f, 1.0f));
    Linear<T> l;
    l.W = w.transpose();
    if (bias) {
        l.b.resize(out);
        for (int i = 0; i < out; ++i)
            l.b[i] = T(g.uniformFloat(0.0f, 1.0f));
    }
    return l;
}

template <typename T>
Linear<T> drawLinear(TorchGenerator &g, InitScheme scheme, int in, int out, bool bias)
{
    return scheme == InitScheme::Uniform01 ? rand01Linear<T>(g, in, out, bias) : torchLinear<T>(g, in, out, bias);
}

template <typename T>
void stackRows(Linear<T> &dst, const Linear<T> &part, int row)
{
    dst.W.middleRows(row, part.W.rows()) = part.W;
    if (part.hasBias())
        dst.b.segment(row, part.b.size()) = part.b;
}

} // namespace

template <typename T>
Status randomProjections(const RandomProjectionSpec &sp, Projections<T> &out)
{
    if (sp.dModel <= 0 || sp.kdim <= 0 || sp.vdim <= 0 || sp.numHeads <= 0 || sp.dHead <= 0)
        return Status::error(StatusCode::InvalidInput, "projections: sizes must be positive");
    const int inner = sp.numHeads * sp.dHead;
    const int dOut = sp.dOut > 0 ? sp.dOut : inner;
    if (!sp.outProj && dOut != inner)
        return Status::error(StatusCode::InvalidInput, "projections: without W_o the output width is H*d_head");
    TorchGenerator g(sp.seed);
    Projections<T> p;

    if (sp.scheme == InitScheme::XavierUniform) {
        // nn.MultiheadAttention.__init__: out_proj (a Linear) is built first, then _reset_parameters
        // draws xavier_uniform_ for in_proj_weight (packed, 3*inner x d) or for q/k/v separately; biases zeroed.
        Linear<T> o;
        if (sp.outProj) {
            o = torchLinear<T>(g, inner, dOut, sp.outBias);
            if (sp.outBias)
                o.b.setZero();
        }
        if (sp.kdim == sp.dModel && sp.vdim == sp.dModel) {
            Mat<T> packed = uniformMatrix<T>(g, 3 * inner, sp.dModel, TorchGenerator::xavierBound(sp.dModel, 3 * inner));
            p.q.W = packed.topRows(inner);
            p.k.W = packed.middleRows(inner, inner);
            p.v.W = packed.bottomRows(inner);
        } else {
            p.q.W = uniformMatrix<T>(g, inner, sp.dModel, TorchGenerator::xavierBound(sp.dModel, inner));
            p.k.W = uniformMatrix<T>(g, inner, sp.kdim, TorchGenerator::xavierBound(sp.kdim, inner));
            p.v.W = uniformMatrix<T>(g, inner, sp.vdim, TorchGenerator::xavierBound(sp.vdim, inner));
        }
        if (sp.qkvBias) {
            p.q.b = Vec<T>::Zero(inner);
            p.k.b = Vec<T>::Zero(inner);
            p.v.b = Vec<T>::Zero(inner);
        }
        p.o = o;
        out = std::move(p);
        return {};
    }

    if (sp.order == DrawOrder::Fused) {
        p.q = drawLinear<T>(g, sp.scheme, sp.dModel, inner, sp.qkvBias);
        p.k = drawLinear<T>(g, sp.scheme, sp.kdim, inner, sp.qkvBias);
        p.v = drawLinear<T>(g, sp.scheme, sp.vdim, inner, sp.qkvBias);
    } else {
        p.q.W.resize(inner, sp.dModel);
        p.k.W.resize(inner, sp.kdim);
        p.v.W.resize(inner, sp.vdim);
        if (sp.qkvBias) {
            p.q.b.resize(inner);
            p.k.b.resize(inner);
            p.v.b.resize(inner);
        }
        for (int h = 0; h < sp.numHeads; ++h) {
            stackRows(p.q, drawLinear<T>(g, sp.scheme, sp.dModel, sp.dHead, sp.qkvBias), h * sp.dHead);
            stackRows(p.k, drawLinear<T>(g, sp.scheme, sp.kdim, sp.dHead, sp.qkvBias), h * sp.dHead);
            stackRows(p.v, drawLinear<T>(g, sp.scheme, sp.vdim, sp.dHead, sp.qkvBias), h * sp.dHead);
        }
    }
    if (sp.outProj)
        p.o = drawLinear<T>(g, sp.scheme, inner, dOut, sp.outBias);
    out = std::move(p);
    return {};
}

template <typename T>
Linear<T> drawTorchLinear(TorchGenerator &g, int in, int out, bool bias)
{
    return torchLinear<T>(g, in, out, bias);
}
template Linear<float> drawTorchLinear<float>(TorchGenerator &, int, int, bool);
template Linear<double> drawTorchLinear<double>(TorchGenerator &, int, int, bool);

template Status randomProjections<float>(const RandomProjectionSpec &, Projections<float> &);
template Status randomProjections<double>(const RandomProjectionSpec &, Projections<double> &);

} // namespace attnviz
