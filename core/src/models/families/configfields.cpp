// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigFields (family.h): config.json's fields read with bounds and one message naming the file
// and the field; the rotary parameters in both of Hugging Face's spellings (rope_theta +
// rope_scaling, and the newer rope_parameters).
#include "family.h"
#include "../../formats/jsonread.h"

#include <cmath>

namespace attnviz::families {

namespace {

// A value from the file quoted in a message: short, one line.
std::string quoted(const nlohmann::json &v)
{
    std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > 60)
        s = s.substr(0, 57) + "...";
    return detail::oneLine(s);
}

std::string withCommas(long long v)
{
    std::string s = std::to_string(v < 0 ? -v : v);
    for (int i = int(s.size()) - 3; i > 0; i -= 3)
        s.insert(size_t(i), ",");
    return (v < 0 ? "-" : "") + s;
}

} // namespace

Status ConfigFields::bad(const std::string &field, const std::string &message) const
{
    return Status::error(StatusCode::InvalidInput, detail::oneLine(m_file + ": " + field + ": " + message));
}

Status ConfigFields::integer(std::initializer_list<const char *> names, int &v, int lo, int hi, const int *fallback) const
{
    for (const char *n : names) {
        if (!has(n))
            continue;
        const nlohmann::json &x = m_j[n];
        if (!x.is_number_integer() || x.get<int64_t>() < lo || x.get<int64_t>() > hi)
            return bad(n, "must be an integer in [" + std::to_string(lo) + ", " + withCommas(hi) + "], got " + quoted(x));
        v = x.get<int>();
        return {};
    }
    if (fallback) {
        v = *fallback;
        return {};
    }
    return bad(*names.begin(), "missing");
}

Status ConfigFields::number(const char *name, double &v, double lo, double hi, double fallback) const
{
    if (!has(name)) {
        v = fallback;
        return {};
    }
    const nlohmann::json &x = m_j[name];
    if (!x.is_number() || !(x.get<double>() >= lo) || !(x.get<double>() <= hi))
        return bad(name, "must be a number in [" + quoted(lo) + ", " + quoted(hi) + "], got " + quoted(x));
    v = x.get<double>();
    return {};
}

Status ConfigFields::optionalPositive(const char *name, double &v) const
{
    v = 0;
    if (!has(name))
        return {};
    const nlohmann::json &x = m_j[name];
    if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>()))
        return bad(name, "must be a positive number or null, got " + quoted(x));
    v = x.get<double>();
    return {};
}

Status ConfigFields::boolean(const char *name, bool &v, bool fallback) const
{
    if (!has(name)) {
        v = fallback;
        return {};
    }
    if (!m_j[name].is_boolean())
        return bad(name, "must be true or false, got " + quoted(m_j[name]));
    v = m_j[name].get<bool>();
    return {};
}

Status ConfigFields::activation(std::initializer_list<const char *> names, Activation &v, const char *fallback) const
{
    std::string a = fallback;
    const char *field = *names.begin();
    for (const char *n : names)
        if (has(n)) {
            if (!m_j[n].is_string())
                return bad(n, "must be a name such as \"silu\", got " + quoted(m_j[n]));
            a = m_j[n].get<std::string>();
            field = n;
            break;
        }
    if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast" || a == "gelu_python_tanh")
        v = Activation::GeluTanh;
    else if (a == "gelu")
        v = Activation::GeluErf;
    else if (a == "relu")
        v = Activation::Relu;
    else if (a == "silu" || a == "swish")
        v = Activation::Silu;
    else
        return bad(field, quoted(nlohmann::json(a)) + " is not an activation attnviz knows (gelu, gelu_new, "
                                                      "gelu_pytorch_tanh, relu, silu)");
    return {};
}

Status ConfigFields::layerTypes(int layers, std::vector<bool> &sliding, bool &present) const
{
    present = false;
    if (!has("layer_types"))
        return {};
    const nlohmann::json &x = m_j["layer_types"];
    if (!x.is_array() || int(x.size()) != layers)
        return bad("layer_types", "must list one type per layer (" + std::to_string(layers) + ")");
    sliding.assign(size_t(layers), false);
    for (int l = 0; l < layers; ++l) {
        const nlohmann::json &e = x[size_t(l)];
        const std::string s = e.is_string() ? e.get<std::string>() : std::string();
        if (s == "sliding_attention")
            sliding[size_t(l)] = true;
        else if (s != "full_attention")
            return bad("layer_types[" + std::to_string(l) + "]",
                       quoted(e) + " is not a layer type attnviz knows (full_attention, sliding_attention)");
    }
    present = true;
    return {};
}

Status ConfigFields::slidingWindows(Architecture &a, int fallback, int pattern) const
{
    int window = fallback;
    if (Status st = integer({"sliding_window"}, window, 1, 1 << 30, &fallback); !st)
        return st;
    std::vector<bool> sliding;
    bool present = false;
    if (Status st = layerTypes(a.layers, sliding, present); !st)
        return st;
    a.window.assign(size_t(a.layers), 0);
    for (int l = 0; l < a.layers; ++l) {
        const bool slides = present ? bool(sliding[size_t(l)]) : pattern <= 0 || (l + 1) % pattern != 0;
        a.window[size_t(l)] = slides ? window : 0;
    }
    return {};
}

Status ConfigFields::rope(Rope &r, int dims, double defaultTheta, int maxPositions, const char *layerType) const
{
    r = Rope();
    r.dims = dims;
    r.theta = defaultTheta;
    const nlohmann::json *scaling = nullptr;
    std::string where = "rope_scaling";
    if (has("rope_parameters")) {
        const nlohmann::json *p = &m_j["rope_parameters"];
        where = "rope_parameters";
        if (!p->is_object())
            return bad(where, "must be an object");
        if (layerType && p->contains(layerType)) { // per layer type (Gemma 3 in newer files)
            p = &(*p)[layerType];
            where += std::string(".") + layerType;
            if (!p->is_object())
                return bad(where, "must be an object");
        }
        scaling = p;
        if (p->contains("rope_theta")) {
            const nlohmann::json &t = (*p)["rope_theta"];
            if (!t.is_number() || !(t.get<double>() > 1) || !std::isfinite(t.get<double>()))
                return bad(where + ".rope_theta", "must be a number above 1, got " + quoted(t));
            r.theta = t.get<double>();
        }
    } else {
        if (Status st = number("rope_theta", r.theta, 1.0001, 1e12, defaultTheta); !st)
            return st;
        if (has("rope_scaling")) {
            if (!m_j["rope_scaling"].is_object())
                return bad("rope_scaling", "must be an object or null");
            scaling = &m_j["rope_scaling"];
        }
    }
    r.originalMaxPositions = maxPositions;
    if (!scaling)
        return {};
    const nlohmann::json &s = *scaling;
    std::string type = "default";
    for (const char *k : {"rope_type", "type"})
        if (s.contains(k) && !s[k].is_null()) {
            if (!s[k].is_string())
                return bad(where + "." + k, "must be a name, got " + quoted(s[k]));
            type = s[k].get<std::string>();
            break;
        }
    auto num = [&](const char *k, double &v, double lo, double hi) -> Status {
        if (!s.contains(k) || s[k].is_null())
            return {};
        if (!s[k].is_number() || !(s[k].get<double>() >= lo) || !(s[k].get<double>() <= hi))
            return bad(where + "." + k, "must be a number in [" + quoted(lo) + ", " + quoted(hi) + "], got " + quoted(s[k]));
        v = s[k].get<double>();
        return {};
    };
    auto factors = [&](const char *k, std::vector<double> &v) -> Status {
        if (!s.contains(k) || !s[k].is_array() || int(s[k].size()) != dims / 2)
            return bad(where + "." + k, "must list " + std::to_string(dims / 2) + " numbers (half the rotary dimensions)");
        for (const auto &e : s[k]) {
            if (!e.is_number() || !(e.get<double>() > 0) || !std::isfinite(e.get<double>()))
                return bad(where + "." + k, "must hold positive numbers, got " + quoted(e));
            v.push_back(e.get<double>());
        }
        return {};
    };
    Status st;
    if (!(st = num("factor", r.factor, 1e-6, 1e6)))
        return st;
    double orig = 0;
    if (!(st = num("original_max_position_embeddings", orig, 1, 1e9)))
        return st;
    if (has("original_max_position_embeddings")) // Phi-3 writes it at the top level
        if (!(st = number("original_max_position_embeddings", orig, 1, 1e9, orig)))
            return st;
    if (orig > 0)
        r.originalMaxPositions = int(orig);
    if (type == "default") {
        r.type = RopeType::Default;
    } else if (type == "linear") {
        r.type = RopeType::Linear;
    } else if (type == "dynamic") {
        r.type = RopeType::Dynamic;
    } else if (type == "llama3") {
        r.type = RopeType::Llama3;
        if (!(st = num("low_freq_factor", r.lowFreqFactor, 1e-6, 1e6)) || !(st = num("high_freq_factor", r.highFreqFactor, 1e-6, 1e6)))
            return st;
        if (!(r.highFreqFactor > r.lowFreqFactor))
            return bad(where + ".high_freq_factor", "must be above low_freq_factor");
    } else if (type == "yarn") {
        r.type = RopeType::Yarn;
        if (!(st = num("beta_fast", r.betaFast, 1e-6, 1e6)) || !(st = num("beta_slow", r.betaSlow, 1e-6, 1e6)) ||
            !(st = num("mscale", r.mscale, 0, 1e6)) || !(st = num("mscale_all_dim", r.mscaleAllDim, 0, 1e6)) ||
            !(st = num("attention_factor", r.attentionFactor, 1e-6, 1e6)))
            return st;
        if (s.contains("truncate") && s["truncate"].is_boolean())
            r.truncate = s["truncate"].get<bool>();
    } else if (type == "longrope" || type == "su") {
        r.type = RopeType::LongRope;
        if (!(st = num("attention_factor", r.attentionFactor, 1e-6, 1e6)) || !(st = factors("short_factor", r.shortFactor)) ||
            !(st = factors("long_factor", r.longFactor)))
            return st;
        // Phi-3: the factor is max_position_embeddings over the original (HF derives it so)
        if (orig > 0)
            r.factor = double(maxPositions) / orig;
    } else {
        return bad(where + ".rope_type", quoted(nlohmann::json(type)) +
                                             " is not a RoPE variant attnviz knows (default, linear, dynamic, llama3, yarn, longrope)");
    }
    return {};
}

} // namespace attnviz::families
