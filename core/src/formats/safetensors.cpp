// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors decoded whole into doubles (the seed-002 stack's weights): the header is checked by
// safetensorsheader.h, the reader the memory-mapped TensorArchive uses too, before anything is decoded.
#include "attnviz/fileio.h"
#include "attnviz/transformer.h"

#include "safetensorsheader.h"

namespace attnviz {

Status parseSafetensors(const std::string &bytes, const std::string &name, SafetensorsFile &out)
{
    const auto *data = reinterpret_cast<const unsigned char *>(bytes.data());
    detail::SafetensorsHeader head;
    if (Status st = detail::parseSafetensorsHeader(data, bytes.size(), name, 0, head); !st)
        return st;
    SafetensorsFile f;
    f.metadata = std::move(head.metadata);
    for (const auto &kv : head.entries) {
        Tensor t;
        t.dtype = kv.second.dtype;
        t.shape = kv.second.shape;
        t.values.resize(size_t(kv.second.count));
        detail::convertTensor(data + kv.second.offset, kv.second, t.values.data());
        f.tensors.emplace(kv.first, std::move(t));
    }
    out = std::move(f);
    return {};
}

Status readSafetensors(const std::string &path, SafetensorsFile &out)
{
    std::string bytes;
    if (Status st = readRegularFile(path, kMaxSafetensorsFileBytes, bytes); !st)
        return st;
    try {
        return parseSafetensors(bytes, path, out);
    } catch (const std::bad_alloc &) { // sizes are checked against the file; the machine may still be smaller
        return Status::error(StatusCode::IoError, path + ": not enough memory to decode the tensors");
    }
}

template <typename T>
Status stackWeightsFromGpt2(const SafetensorsFile &file, StackWeights<T> &out, int &depth)
{
    std::string prefix;
    if (!file.tensors.count("h.0.attn.c_attn.weight") && file.tensors.count("transformer.h.0.attn.c_attn.weight"))
        prefix = "transformer.";
    auto find = [&](const std::string &n) -> const Tensor * {
        auto it = file.tensors.find(prefix + n);
        return it == file.tensors.end() ? nullptr : &it->second;
    };
    auto missing = [&](const std::string &n) {
        return Status::error(StatusCode::InvalidInput, prefix + n + ": missing from the file");
    };
    auto wrongShape = [&](const std::string &n, const Tensor &t, const std::vector<int64_t> &want) {
        return Status::error(StatusCode::InvalidInput,
                             prefix + n + ": shape " + detail::shapeText(t.shape) + ", expected " + detail::shapeText(want));
    };
    const Tensor *first = find("h.0.attn.c_attn.weight");
    if (!first)
        return missing("h.0.attn.c_attn.weight");
    if (first->shape.size() != 2 || first->shape[1] != 3 * first->shape[0])
        return wrongShape("h.0.attn.c_attn.weight", *first, {first->shape.empty() ? 0 : first->shape[0],
                                                           3 * (first->shape.empty() ? 0 : first->shape[0])});
    if (first->shape[0] <= 0)
        return wrongShape("h.0.attn.c_attn.weight", *first, {1, 3});
    const int d = int(first->shape[0]);
    StackWeights<T> w;
    // Conv1D (in, out) with y = x W + b  ->  Linear W^T.
    auto matrix = [&](const std::string &n, int rows, int cols, Mat<T> &m) -> Status {
        const Tensor *t = find(n);
        if (!t)
            return missing(n);
        if (t->shape != std::vector<int64_t>{rows, cols})
            return wrongShape(n, *t, {rows, cols});
        m.resize(rows, cols);
        for (Eigen::Index i = 0; i < m.size(); ++i)
            m.data()[i] = T(t->values[size_t(i)]);
        if (!m.allFinite())
            return Status::error(StatusCode::NonFinite, prefix + n + ": contains NaN or Inf");
        return {};
    };
    auto vector = [&](const std::string &n, int len, Vec<T> &v, bool optional) -> Status {
        const Tensor *t = find(n);
        if (!t)
            return optional ? Status{} : missing(n);
        if (t->shape != std::vector<int64_t>{len})
            return wrongShape(n, *t, {len});
        v.resize(len);
        for (int i = 0; i < len; ++i)
            v[i] = T(t->values[size_t(i)]);
        if (!v.allFinite())
            return Status::error(StatusCode::NonFinite, prefix + n + ": contains NaN or Inf");
        return {};
    };
    for (int l = 0;; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        if (!find(h + "attn.c_attn.weight"))
            break;
        BlockWeights<T> b;
        Mat<T> cAttn, cProj, fc, fcProj;
        Vec<T> cAttnB, cProjB, fcB, fcProjB;
        if (Status st = matrix(h + "attn.c_attn.weight", d, 3 * d, cAttn); !st)
            return st;
        if (Status st = vector(h + "attn.c_attn.bias", 3 * d, cAttnB, true); !st)
            return st;
        if (Status st = matrix(h + "attn.c_proj.weight", d, d, cProj); !st)
            return st;
        if (Status st = vector(h + "attn.c_proj.bias", d, cProjB, true); !st)
            return st;
        const Tensor *fcT = find(h + "mlp.c_fc.weight");
        if (!fcT)
            return missing(h + "mlp.c_fc.weight");
        const int f = fcT->shape.size() == 2 ? int(fcT->shape[1]) : 0;
        if (f <= 0)
            return wrongShape(h + "mlp.c_fc.weight", *fcT, {d, 4 * d});
        if (Status st = matrix(h + "mlp.c_fc.weight", d, f, fc); !st)
            return st;
        if (Status st = vector(h + "mlp.c_fc.bias", f, fcB, true); !st)
            return st;
        if (Status st = matrix(h + "mlp.c_proj.weight", f, d, fcProj); !st)
            return st;
        if (Status st = vector(h + "mlp.c_proj.bias", d, fcProjB, true); !st)
            return st;
        for (const char *ln : {"ln_1", "ln_2"}) {
            LayerNorm<T> &norm = std::string(ln) == "ln_1" ? b.ln1 : b.ln2;
            if (Status st = vector(h + ln + ".weight", d, norm.gamma, false); !st)
                return st;
            if (Status st = vector(h + ln + ".bias", d, norm.beta, false); !st)
                return st;
        }
        b.attn.q.W = cAttn.middleCols(0, d).transpose();
        b.attn.k.W = cAttn.middleCols(d, d).transpose();
        b.attn.v.W = cAttn.middleCols(2 * d, d).transpose();
        if (cAttnB.size()) {
            b.attn.q.b = cAttnB.segment(0, d);
            b.attn.k.b = cAttnB.segment(d, d);
            b.attn.v.b = cAttnB.segment(2 * d, d);
        }
        b.attn.o.W = cProj.transpose();
        b.attn.o.b = cProjB;
        b.ff1.W = fc.transpose();
        b.ff1.b = fcB;
        b.ff2.W = fcProj.transpose();
        b.ff2.b = fcProjB;
        w.blocks.push_back(std::move(b));
    }
    if (const Tensor *wpe = find("wpe.weight")) {
        if (wpe->shape.size() != 2 || wpe->shape[1] != d)
            return wrongShape("wpe.weight", *wpe, {wpe->shape.empty() ? 0 : wpe->shape[0], d});
        if (Status st = matrix("wpe.weight", int(wpe->shape[0]), d, w.positions); !st)
            return st;
    }
    if (find("ln_f.weight")) {
        if (Status st = vector("ln_f.weight", d, w.lnFinal.gamma, false); !st)
            return st;
        if (Status st = vector("ln_f.bias", d, w.lnFinal.beta, false); !st)
            return st;
    }
    depth = int(w.blocks.size());
    out = std::move(w);
    return {};
}

template Status stackWeightsFromGpt2<float>(const SafetensorsFile &, StackWeights<float> &, int &);
template Status stackWeightsFromGpt2<double>(const SafetensorsFile &, StackWeights<double> &, int &);

} // namespace attnviz
