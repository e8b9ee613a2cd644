// SPDX-License-Identifier: GPL-3.0-or-later
// Architecture (architecture.h): its checks, its rotary tables (Hugging Face's
// modeling_rope_utils.py: default, linear, dynamic NTK, llama3, YaRN, LongRoPE), config.json read
// through the family registry, and the seeded shapes of real checkpoints for benchmarks.
#include "attnviz/architecture.h"
#include "attnviz/fileio.h"
#include "families/family.h"
#include "../formats/jsonread.h"

#include <algorithm>
#include <cmath>

namespace attnviz {

double Architecture::scale() const { return attentionScale > 0 ? attentionScale : 1.0 / std::sqrt(double(dHead)); }

const Rope &Architecture::ropeOf(int layer) const { return localRope && windowOf(layer) > 0 ? ropeLocal : rope; }

int RelativeBuckets::bucket(int relative, bool bidirectional) const
{
    // as modeling_t5.py computes it, the log-spaced part in float32 (torch's .float()) and truncated
    int n = buckets, out = 0;
    if (bidirectional) {
        n /= 2;
        if (relative > 0)
            out += n;
        relative = std::abs(relative);
    } else {
        relative = -std::min(relative, 0);
    }
    const int maxExact = n / 2;
    if (relative < maxExact)
        return out + relative;
    const float ratio = float(relative) / float(maxExact);
    const float large = std::log(ratio) / float(std::log(double(maxDistance) / maxExact)) * float(n - maxExact);
    return out + std::min(maxExact + int(large), n - 1);
}

bool Architecture::slides() const
{
    return std::any_of(window.begin(), window.end(), [](int w) { return w > 0; });
}

Status Architecture::validate() const
{
    auto bad = [&](const std::string &m) { return Status::error(StatusCode::InvalidInput, m); };
    if (layers < 1 || heads < 1 || dModel < 1 || dHead < 1 || dFeedForward < 1 || vocabulary < 1 || maxPositions < 1)
        return bad("layers, heads, widths, vocabulary and positions must be positive");
    if (kvHeads < 1 || heads % kvHeads)
        return bad("num_key_value_heads: " + std::to_string(kvHeads) + " does not divide the " + std::to_string(heads) +
                   " attention heads");
    if (positions == PositionKind::Rotary)
        for (const Rope *r : {&rope, &ropeLocal}) {
            if (r == &ropeLocal && !localRope)
                continue;
            if (r->dims < 2 || r->dims > dHead || r->dims % 2)
                return bad("rotary dimensions: " + std::to_string(r->dims) + " must be even and at most head_dim " +
                           std::to_string(dHead));
        }
    if (encoderDecoder && seq2seq.encoderLayers < 1)
        return bad("num_layers: the encoder needs at least one layer");
    if (positions == PositionKind::RelativeBuckets && (relative.buckets < 4 || relative.maxDistance <= relative.buckets / 2))
        return bad("relative_attention_max_distance: " + std::to_string(relative.maxDistance) + " must exceed half of " +
                   "relative_attention_num_buckets (" + std::to_string(relative.buckets) + "), which must be at least 4");
    if (encoderDecoder && seq2seq.positionOffset < 0)
        return bad("positions: a negative offset");
    if (int(window.size()) != layers)
        return bad("sliding windows: one per layer expected");
    if (int64_t(heads) * dHead > (int64_t(1) << 20))
        return bad("heads x head_dim: too wide");
    return {};
}

std::vector<float> marianPositions(int rows, int d)
{
    std::vector<float> out(size_t(std::max(rows, 0)) * size_t(std::max(d, 0)));
    const int sines = d % 2 == 0 ? d / 2 : d / 2 + 1; // MarianSinusoidalPositionalEmbedding's `sentinel`
    for (int p = 0; p < rows; ++p) {
        float *row = out.data() + size_t(p) * size_t(d);
        for (int i = 0; i < sines; ++i)
            row[i] = float(std::sin(double(p) / std::pow(10000.0, double(2 * i) / double(d))));
        for (int i = 0; i < d / 2; ++i)
            row[sines + i] = float(std::cos(double(p) / std::pow(10000.0, double(2 * i) / double(d))));
    }
    return out;
}

RopeTable ropeTable(const Rope &r, int length)
{
    RopeTable out;
    const int dim = r.dims, half = dim / 2;
    out.invFreq.resize(size_t(half));
    double base = r.theta;
    if (r.type == RopeType::Dynamic && length > r.originalMaxPositions && r.originalMaxPositions > 0)
        base = r.theta * std::pow(r.factor * length / r.originalMaxPositions - (r.factor - 1), double(dim) / (dim - 2));
    for (int i = 0; i < half; ++i)
        out.invFreq[size_t(i)] = 1.0 / std::pow(base, double(2 * i) / dim);
    switch (r.type) {
    case RopeType::Default:
    case RopeType::Dynamic: break;
    case RopeType::Linear:
        for (double &f : out.invFreq)
            f /= r.factor;
        break;
    case RopeType::Llama3: {
        const double orig = r.originalMaxPositions;
        const double lowWavelen = orig / r.lowFreqFactor, highWavelen = orig / r.highFreqFactor;
        for (double &f : out.invFreq) {
            const double wavelen = 2 * M_PI / f;
            if (wavelen > lowWavelen) {
                f = f / r.factor;
            } else if (!(wavelen < highWavelen)) {
                const double smooth = (orig / wavelen - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
                f = (1 - smooth) * f / r.factor + smooth * f;
            }
        }
        break;
    }
    case RopeType::Yarn: {
        auto mscaleOf = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
        if (r.attentionFactor > 0)
            out.attentionScaling = r.attentionFactor;
        else if (r.mscale > 0 && r.mscaleAllDim > 0)
            out.attentionScaling = mscaleOf(r.factor, r.mscale) / mscaleOf(r.factor, r.mscaleAllDim);
        else
            out.attentionScaling = mscaleOf(r.factor, 1.0);
        const double orig = r.originalMaxPositions;
        auto correctionDim = [&](double rotations) {
            return (dim * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(r.theta));
        };
        double low = correctionDim(r.betaFast), high = correctionDim(r.betaSlow);
        if (r.truncate) {
            low = std::floor(low);
            high = std::ceil(high);
        }
        low = std::max(low, 0.0);
        high = std::min(high, double(dim - 1));
        if (low == high)
            high += 0.001;
        for (int i = 0; i < half; ++i) {
            const double posFreq = std::pow(r.theta, double(2 * i) / dim);
            const double extrapolation = 1.0 / posFreq, interpolation = 1.0 / (r.factor * posFreq);
            const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
            const double extrapolationFactor = 1 - ramp;
            out.invFreq[size_t(i)] = interpolation * (1 - extrapolationFactor) + extrapolation * extrapolationFactor;
        }
        break;
    }
    case RopeType::LongRope: {
        const double orig = r.originalMaxPositions;
        if (r.attentionFactor > 0)
            out.attentionScaling = r.attentionFactor;
        else
            out.attentionScaling = r.factor <= 1 ? 1.0 : std::sqrt(1 + std::log(r.factor) / std::log(orig));
        const std::vector<double> &ext = length > r.originalMaxPositions ? r.longFactor : r.shortFactor;
        for (int i = 0; i < half; ++i)
            out.invFreq[size_t(i)] = 1.0 / (ext[size_t(i)] * std::pow(r.theta, double(2 * i) / dim));
        break;
    }
    }
    return out;
}

namespace {

// config.json's object read as an Architecture (parseArchitecture, readArchitecture).
Status architectureOf(const nlohmann::json &j, const std::string &name, Architecture &out)
{
    if (!j.is_object())
        return Status::error(StatusCode::ParseError, name + ": not a JSON object");
    families::ConfigFields fields(j, name);
    std::string known;
    for (const std::string &t : knownModelTypes())
        known += (known.empty() ? "" : ", ") + t;
    if (!fields.has("model_type") || !j["model_type"].is_string())
        return fields.bad("model_type", "missing (" + known + ")");
    const std::string type = j["model_type"].get<std::string>();
    const families::Family *f = families::familyFor(type);
    if (!f)
        return fields.bad("model_type", quoteText(type) + " is not a family attnviz knows (" + known + ")");
    Architecture a;
    a.family = f->name;
    a.modelType = type;
    if (Status st = f->readConfig(fields, a); !st)
        return st;
    if (a.window.empty())
        a.window.assign(size_t(std::max(0, a.layers)), 0);
    if (Status st = a.validate(); !st)
        return Status::error(StatusCode::InvalidInput, name + ": " + st.message);
    out = std::move(a);
    return {};
}

} // namespace

Status parseArchitecture(const std::string &configJson, const std::string &name, Architecture &out)
{
    nlohmann::json j;
    if (Status st = detail::parseJson(configJson, name, j); !st)
        return st;
    return architectureOf(j, name, out);
}

Status readArchitecture(const std::string &dir, Architecture &out)
{
    const std::string path = dir + "/config.json";
    nlohmann::json j;
    if (Status st = detail::readJsonFile(path, 10ull * 1000 * 1000, j); !st)
        return st;
    return architectureOf(j, path, out);
}

std::vector<std::string> knownModelTypes()
{
    std::vector<std::string> r;
    for (const families::Family &f : families::registry())
        for (const std::string &t : f.modelTypes)
            r.push_back(t);
    return r;
}

namespace {

Architecture llamaShape(int layers, int heads, int kv, int d, int dh, int ff, int vocab, double theta, bool tied)
{
    Architecture a;
    a.family = a.modelType = "llama";
    a.layers = layers;
    a.heads = heads;
    a.kvHeads = kv;
    a.dModel = d;
    a.dHead = dh;
    a.dFeedForward = ff;
    a.vocabulary = vocab;
    a.maxPositions = 8192;
    a.norm = NormKind::RmsNorm;
    a.normEps = 1e-5;
    a.positions = PositionKind::Rotary;
    a.rope.theta = theta;
    a.rope.dims = dh;
    a.activation = Activation::Silu;
    a.gatedMlp = true;
    a.qkvBias = a.outBias = a.mlpBias = false;
    a.tiedEmbeddings = tied;
    a.window.assign(size_t(layers), 0);
    return a;
}

} // namespace

bool seededShape(const std::string &name, Architecture &a, std::string *dtype)
{
    if (dtype)
        *dtype = name == "gpt2-small" || name == "bert-base" ? "F32" : "BF16";
    if (name == "gpt2-small" || name == "bert-base") {
        a = Architecture();
        const bool bert = name == "bert-base";
        a.family = a.modelType = bert ? "bert" : "gpt2";
        a.layers = a.heads = a.kvHeads = 12;
        a.dModel = 768;
        a.dHead = 64;
        a.dFeedForward = 3072;
        a.vocabulary = bert ? 30522 : 50257;
        a.maxPositions = bert ? 512 : 1024;
        a.typeVocabulary = bert ? 2 : 0;
        a.normEps = bert ? 1e-12 : 1e-5;
        a.placement = bert ? NormPlacement::Post : NormPlacement::Pre;
        a.embeddingNorm = bert;
        a.finalNorm = !bert;
        a.activation = bert ? Activation::GeluErf : Activation::GeluTanh;
        a.causal = !bert;
        a.head = bert ? LmHead::MaskedLm : LmHead::CausalLm;
        a.window.assign(12, 0);
        return true;
    }
    if (name == "smollm2-135m") {
        a = llamaShape(30, 9, 3, 576, 64, 1536, 49152, 100000, true);
        return true;
    }
    if (name == "qwen3-0.6b") {
        a = llamaShape(28, 16, 8, 1024, 128, 3072, 151936, 1000000, true);
        a.family = a.modelType = "qwen3";
        a.qkNorm = true;
        a.normEps = 1e-6;
        return true;
    }
    // encoder-decoder shapes (not in seededShapeNames: runSeq2SeqBench times them), float32, read
    // from their config.json as the families read it
    if (name == "t5-small" || name == "opus-mt-en-de") {
        const char *t5 = R"({"model_type": "t5", "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
            "num_decoder_layers": 6, "num_heads": 8, "relative_attention_num_buckets": 32,
            "relative_attention_max_distance": 128, "vocab_size": 32128, "feed_forward_proj": "relu",
            "layer_norm_epsilon": 1e-6, "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0})";
        const char *marian = R"({"model_type": "marian", "d_model": 512, "encoder_layers": 6, "decoder_layers": 6,
            "encoder_attention_heads": 8, "decoder_attention_heads": 8, "encoder_ffn_dim": 2048,
            "decoder_ffn_dim": 2048, "vocab_size": 58101, "activation_function": "swish",
            "max_position_embeddings": 512, "scale_embedding": true, "pad_token_id": 58100, "eos_token_id": 0,
            "decoder_start_token_id": 58100})";
        if (dtype)
            *dtype = "F32";
        return parseArchitecture(name == "t5-small" ? t5 : marian, name, a).ok();
    }
    if (name == "llama3.2-1b") {
        a = llamaShape(16, 32, 8, 2048, 64, 8192, 128256, 500000, true);
        a.rope.type = RopeType::Llama3;
        a.rope.factor = 32;
        a.rope.lowFreqFactor = 1;
        a.rope.highFreqFactor = 4;
        a.rope.originalMaxPositions = 8192;
        return true;
    }
    return false;
}

std::vector<std::string> seededShapeNames() { return {"gpt2-small", "bert-base", "smollm2-135m", "qwen3-0.6b", "llama3.2-1b"}; }

} // namespace attnviz
