// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [r, c], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// then the data block; offsets are relative to the data block. Every claim of the header is checked
// against the file before anything is decoded.
#include "attnviz/fileio.h"
#include "attnviz/transformer.h"

#include "jsonread.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

namespace attnviz {

namespace {

double halfToDouble(uint16_t h)
{
    const int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    double v;
    if (exp == 0)
        v = std::ldexp(double(mant), -24);
    else if (exp == 31)
        v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else
        v = std::ldexp(double(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

std::string shapeText(const std::vector<int64_t> &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

} // namespace

namespace {

Status parseHeaderAndTensors(const std::string &bytes, const std::string &name, SafetensorsFile &out);

} // namespace

Status parseSafetensors(const std::string &bytes, const std::string &name, SafetensorsFile &out)
{
    Status st = parseHeaderAndTensors(bytes, name, out);
    st.message = detail::oneLine(std::move(st.message)); // tensor names may hold line breaks
    return st;
}

namespace {

Status parseHeaderAndTensors(const std::string &bytes, const std::string &name, SafetensorsFile &out)
{
    using json = nlohmann::json;
    auto bad = [&](const std::string &m) { return Status::error(StatusCode::ParseError, name + ": " + m); };
    if (bytes.size() < 8)
        return bad("truncated (no header length)");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(bytes[size_t(i)]);
    if (n > bytes.size() - 8 || n > 100'000'000)
        return bad("header length " + std::to_string(n) + " exceeds the file (" + std::to_string(bytes.size()) + " bytes)");
    json head;
    if (Status st = detail::parseJson(bytes.substr(8, size_t(n)), name, head, "JSON header"); !st)
        return st;
    if (!head.is_object())
        return bad("header is not a JSON object");
    const size_t dataStart = 8 + size_t(n);
    const size_t dataSize = bytes.size() - dataStart;
    SafetensorsFile f;
    for (auto it = head.begin(); it != head.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (it->is_object())
                for (auto m = it->begin(); m != it->end(); ++m)
                    f.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
            continue;
        }
        const std::string tn = it.key();
        const json &e = it.value();
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            return bad(tn + ": entry needs dtype, shape and data_offsets");
        Tensor t;
        if (!e["dtype"].is_string())
            return bad(tn + ": dtype is not a string");
        t.dtype = e["dtype"].get<std::string>();
        size_t width = 0;
        if (t.dtype == "F64")
            width = 8;
        else if (t.dtype == "F32")
            width = 4;
        else if (t.dtype == "F16" || t.dtype == "BF16")
            width = 2;
        else
            return bad(tn + ": dtype " + t.dtype + " is not supported (F64, F32, F16, BF16)");
        // Element counts in overflow-checked 64-bit arithmetic: [2^32, 3*2^32] must not wrap to 0.
        uint64_t numel = 1;
        if (!e["shape"].is_array())
            return bad(tn + ": shape is not a list");
        for (const auto &dim : e["shape"]) {
            if (!dim.is_number_unsigned()) // nlohmann parses every non-negative integer as unsigned
                return bad(tn + ": shape holds a negative or non-integer size");
            t.shape.push_back(int64_t(std::min(dim.get<uint64_t>(), uint64_t(std::numeric_limits<int64_t>::max()))));
        }
        for (const int64_t size : t.shape) {
            if (size > INT_MAX)
                return bad(tn + ": dimension " + std::to_string(size) + " of shape " + shapeText(t.shape) +
                           " is larger than " + std::to_string(INT_MAX) + ", the largest this reader accepts");
            if (__builtin_mul_overflow(numel, uint64_t(size), &numel))
                return bad(tn + ": shape " + shapeText(t.shape) + " holds more elements than 64 bits can count");
        }
        uint64_t needBytes = 0;
        if (__builtin_mul_overflow(numel, uint64_t(width), &needBytes))
            return bad(tn + ": shape " + shapeText(t.shape) + " of " + t.dtype + " needs more bytes than 64 bits can count");
        const json &off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            return bad(tn + ": data_offsets must be [begin, end]");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > dataSize)
            return bad(tn + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) + "] lie outside the " +
                       std::to_string(dataSize) + "-byte data block (truncated file?)");
        if (en - b != needBytes)
            return bad(tn + ": data_offsets span " + std::to_string(en - b) + " bytes, " + t.dtype + " " +
                       shapeText(t.shape) + " needs " + std::to_string(needBytes));
        const char *p = bytes.data() + dataStart + b;
        t.values.resize(size_t(numel));
        for (uint64_t i = 0; i < numel; ++i) {
            if (width == 8) {
                double v;
                std::memcpy(&v, p + i * 8, 8);
                t.values[i] = v;
            } else if (width == 4) {
                float v;
                std::memcpy(&v, p + i * 4, 4);
                t.values[i] = v;
            } else {
                uint16_t h;
                std::memcpy(&h, p + i * 2, 2);
                if (t.dtype == "F16") {
                    t.values[i] = halfToDouble(h);
                } else {
                    const uint32_t bits = uint32_t(h) << 16;
                    float v;
                    std::memcpy(&v, &bits, 4);
                    t.values[i] = v;
                }
            }
        }
        f.tensors.emplace(tn, std::move(t));
    }
    out = std::move(f);
    return {};
}

} // namespace

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
                             prefix + n + ": shape " + shapeText(t.shape) + ", expected " + shapeText(want));
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
