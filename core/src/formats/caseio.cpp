// SPDX-License-Identifier: GPL-3.0-or-later
// Reading attention cases (parseCase, loadCase) and writing results (resultToJson).
#include "attnviz/caseio.h"
#include "attnviz/attention.h"
#include "attnviz/fileio.h"

#include "jsonread.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace attnviz {

using json = nlohmann::json;

namespace {

struct FieldError {
    std::string message;
};

[[noreturn]] void fail(const std::string &field, const std::string &what) { throw FieldError{field + ": " + what}; }

double number(const json &v, const std::string &field, bool allowNonFinite)
{
    if (v.is_number())
        return v.get<double>();
    if (v.is_string()) {
        const auto &s = v.get_ref<const std::string &>();
        if (s == "NaN" || s == "Infinity" || s == "-Infinity") {
            if (!allowNonFinite)
                fail(field, "contains " + s + " (inputs must be finite)");
            if (s == "NaN")
                return std::numeric_limits<double>::quiet_NaN();
            return s == "Infinity" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
        }
    }
    fail(field, "expected a number, found " + std::string(v.type_name()));
}

// Reads a nested list of numbers into shape + values.
void flatten(const json &v, const std::string &field, NdArray &out, size_t depth, bool allowNonFinite)
{
    if (v.is_array()) {
        if (out.shape.size() <= depth)
            out.shape.push_back(int(v.size()));
        else if (out.shape[depth] != int(v.size()))
            fail(field, "ragged array (length " + std::to_string(v.size()) + " at depth " + std::to_string(depth) +
                            ", expected " + std::to_string(out.shape[depth]) + ")");
        for (const auto &e : v)
            flatten(e, field, out, depth + 1, allowNonFinite);
        return;
    }
    if (depth != out.shape.size())
        fail(field, "ragged array (a number where a list was expected)");
    out.values.push_back(number(v, field, allowNonFinite));
}

// A list that grew a dimension after numbers were read at a shallower depth ([[1], [[2, 3]]])
// passes the per-depth checks: the count of numbers must be the product of the shape.
void checkComplete(const std::vector<int> &shape, size_t count, const std::string &field)
{
    size_t n = 1;
    for (int d : shape)
        n *= size_t(d); // each d <= the numbers read, so no overflow while n <= count
    if (n != count)
        fail(field, "ragged array (" + std::to_string(count) + " numbers do not fill the shape)");
}

NdArray array(const json &v, const std::string &field, size_t rank, bool allowNonFinite = false)
{
    if (!v.is_array())
        fail(field, "expected an array, found " + std::string(v.type_name()));
    NdArray a;
    flatten(v, field, a, 0, allowNonFinite);
    if (a.shape.size() != rank)
        fail(field, "expected " + std::to_string(rank) + " dimensions, found " + std::to_string(a.shape.size()));
    checkComplete(a.shape, a.values.size(), field);
    return a;
}

std::string shapeText(const std::vector<int> &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

Mat<double> toMat(const NdArray &a, size_t offset, int rows, int cols)
{
    Mat<double> m(rows, cols);
    std::memcpy(m.data(), a.values.data() + offset, sizeof(double) * size_t(rows) * size_t(cols));
    return m;
}

void boolArray(const json &v, const std::string &field, std::vector<int> &shape, std::vector<uint8_t> &vals, size_t depth)
{
    if (v.is_array()) {
        if (shape.size() <= depth)
            shape.push_back(int(v.size()));
        else if (shape[depth] != int(v.size()))
            fail(field, "ragged array");
        for (const auto &e : v)
            boolArray(e, field, shape, vals, depth + 1);
        return;
    }
    if (v.is_boolean())
        vals.push_back(v.get<bool>() ? 1 : 0);
    else if (v.is_number_integer() && (v.get<long long>() == 0 || v.get<long long>() == 1))
        vals.push_back(uint8_t(v.get<long long>()));
    else
        fail(field, "expected booleans (true = masked out), found " + std::string(v.type_name()));
}

int optInt(const json &cfg, const char *key, int fallback)
{
    if (!cfg.contains(key) || cfg[key].is_null())
        return fallback;
    if (!cfg[key].is_number_integer())
        fail(std::string("config.") + key, "expected an integer");
    const long long v = cfg[key].get<long long>();
    if (v <= 0 || v > 1'000'000)
        fail(std::string("config.") + key, "must be a positive size, got " + std::to_string(v));
    return int(v);
}

std::string optString(const json &obj, const char *key, const std::string &prefix, const std::string &fallback)
{
    if (!obj.contains(key) || obj[key].is_null())
        return fallback;
    if (!obj[key].is_string())
        fail(prefix + key, "expected a string");
    return obj[key].get<std::string>();
}

void checkKnown(const json &obj, const std::set<std::string> &known, const std::string &prefix)
{
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (!known.count(it.key()))
            fail(prefix + it.key(), "unknown field");
}

void parseConfig(const json &cfg, CaseFile &c)
{
    static const std::set<std::string> known = {
        "batch", "num_heads", "d_model", "d_head", "t_q", "t_k", "kdim", "vdim", "d_out", "self_attention", "scale",
        "scale_rule", "temperature", "normalization", "mask_type", "mask_method", "causal_alignment", "projections",
        "has_in_proj_bias", "has_out_proj_bias", "dropout", "dropout_seed", "dropout_stream", "fully_masked", "init", "init_seed",
        "draw_order"};
    checkKnown(cfg, known, "config.");
    AttentionConfig &a = c.config;
    a.numHeads = optInt(cfg, "num_heads", 1);
    a.dHead = cfg.contains("d_head") && !cfg["d_head"].is_null() ? optInt(cfg, "d_head", 0) : 0;
    c.selfAttention = cfg.value("self_attention", false);

    const std::string rule = optString(cfg, "scale_rule", "config.", "");
    if (cfg.contains("temperature") && !cfg["temperature"].is_null())
        a.temperature = number(cfg["temperature"], "config.temperature", false);
    static const std::set<std::string> rules = {"", "1/sqrt(d_head)", "1/sqrt(d_model)", "1.0", "none", "temperature"};
    if (!rules.count(rule))
        fail("config.scale_rule", "unknown rule \"" + rule + "\" (1/sqrt(d_head), 1/sqrt(d_model), 1.0, temperature)");
    if (cfg.contains("scale") && !cfg["scale"].is_null()) {
        a.scaleRule = ScaleRule::Explicit; // the schema: "the numeric factor ... use this number"
        a.explicitScale = number(cfg["scale"], "config.scale", false);
    } else if (rule.empty() || rule == "1/sqrt(d_head)") {
        a.scaleRule = ScaleRule::InvSqrtDHead;
    } else if (rule == "1/sqrt(d_model)") {
        a.scaleRule = ScaleRule::InvSqrtDModel;
    } else if (rule == "1.0" || rule == "none") {
        a.scaleRule = ScaleRule::None;
    } else if (rule == "temperature") {
        a.scaleRule = ScaleRule::Temperature;
        if (!(a.temperature > 0))
            fail("config.temperature", "must be positive for scale_rule \"temperature\"");
    } else {
        fail("config.scale_rule", "unknown rule \"" + rule + "\" (1/sqrt(d_head), 1/sqrt(d_model), 1.0, temperature)");
    }

    const std::string norm = optString(cfg, "normalization", "config.", "softmax");
    if (norm == "softmax")
        a.normalization = Normalization::Softmax;
    else if (norm == "sum")
        a.normalization = Normalization::Sum;
    else if (norm == "cosine")
        a.normalization = Normalization::Cosine;
    else
        fail("config.normalization", "unknown \"" + norm + "\" (softmax, sum, cosine)");

    const std::string method = optString(cfg, "mask_method", "config.", "additive_neg_inf");
    if (method == "additive_neg_inf")
        a.maskMethod = MaskMethod::NegInf;
    else if (method == "multiply_renormalize")
        a.maskMethod = MaskMethod::MultiplyRenormalize;
    else
        fail("config.mask_method", "unknown \"" + method + "\" (additive_neg_inf, multiply_renormalize)");

    const std::string fm = optString(cfg, "fully_masked", "config.", "nan");
    if (fm == "nan")
        a.fullyMasked = FullyMaskedPolicy::NaN;
    else if (fm == "zero")
        a.fullyMasked = FullyMaskedPolicy::Zero;
    else if (fm == "uniform")
        a.fullyMasked = FullyMaskedPolicy::Uniform;
    else
        fail("config.fully_masked", "unknown \"" + fm + "\" (nan, zero, uniform)");

    if (cfg.contains("dropout") && !cfg["dropout"].is_null()) {
        a.dropout = number(cfg["dropout"], "config.dropout", false);
        if (!(a.dropout >= 0 && a.dropout < 1))
            fail("config.dropout", "rate must be in [0, 1)");
    }
    if (cfg.contains("dropout_seed") && !cfg["dropout_seed"].is_null()) {
        if (!cfg["dropout_seed"].is_number_integer() || cfg["dropout_seed"].get<long long>() < 0)
            fail("config.dropout_seed", "expected a non-negative integer");
        a.dropoutSeed = cfg["dropout_seed"].get<uint64_t>();
    }
    const std::string stream = optString(cfg, "dropout_stream", "config.", "torch_mkl");
    if (stream == "torch_mkl")
        a.dropoutStream = DropoutStream::TorchMkl;
    else if (stream == "torch_cpu")
        a.dropoutStream = DropoutStream::TorchCpu;
    else
        fail("config.dropout_stream", "unknown \"" + stream + "\" (torch_mkl, torch_cpu)");
    const std::string align = optString(cfg, "causal_alignment", "config.", "top-left");
    if (align.rfind("top-left", 0) != 0)
        fail("config.causal_alignment", "only top-left alignment is defined (key j masked for query i when j > i)");
}

template <typename T>
void appendNumber(std::string &out, T v)
{
    if (std::isnan(v)) {
        out += "\"NaN\"";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// The matrices of one sequence that make up a stage: one for q k v weights_avg context output,
// one per head for scores and weights; none for an unknown name. Copies: a case is small, and
// weights may be stored as a triangle (WeightMatrix).
template <typename T>
std::vector<Mat<T>> stageMatrices(const SequenceResult<T> &s, const std::string &stage)
{
    if (stage == "scores")
        return s.scores;
    if (stage == "weights")
        return {s.weights.begin(), s.weights.end()};
    Mat<T> wide; // kept in 16 bits (a long text): widened
    if (stage == "q")
        return {widenedOr(s.q, s.q16, wide)};
    if (stage == "k")
        return {widenedOr(s.k, s.k16, wide)};
    if (stage == "v")
        return {widenedOr(s.v, s.v16, wide)};
    if (stage == "weights_avg")
        return {s.weightsAvg.toDense()};
    if (stage == "context")
        return {s.context};
    if (stage == "output")
        return {s.output};
    return {};
}

template <typename T>
void appendStage(std::string &out, const AttentionResult<T> &r, const std::string &stage)
{
    // Written from T directly so that float results print in float's shortest form.
    const size_t B = r.batch.size();
    const bool perHead = stage == "scores" || stage == "weights";
    out += '[';
    for (size_t b = 0; b < B; ++b) {
        if (b)
            out += ',';
        const auto list = stageMatrices(r.batch[b], stage);
        if (perHead)
            out += '[';
        for (size_t h = 0; h < list.size(); ++h) {
            if (h)
                out += ',';
            const Mat<T> &m = list[h];
            out += '[';
            for (Eigen::Index i = 0; i < m.rows(); ++i) {
                if (i)
                    out += ',';
                out += '[';
                for (Eigen::Index j = 0; j < m.cols(); ++j) {
                    if (j)
                        out += ',';
                    appendNumber(out, m(i, j));
                }
                out += ']';
            }
            out += ']';
        }
        if (perHead)
            out += ']';
    }
    out += ']';
}

} // namespace

const std::vector<std::string> &stageNames()
{
    static const std::vector<std::string> names = {"q", "k", "v", "scores", "weights", "weights_avg", "context", "output"};
    return names;
}

namespace {
Status parseCaseFields(const std::string &text, const std::string &sourceName, CaseFile &out);
}

Status parseCase(const std::string &text, const std::string &sourceName, CaseFile &out)
{
    Status st = parseCaseFields(text, sourceName, out);
    st.message = detail::oneLine(std::move(st.message)); // keys and strings from the file may hold line breaks
    return st;
}

namespace {

Status parseCaseFields(const std::string &text, const std::string &sourceName, CaseFile &out)
{
    json doc;
    if (Status st = detail::parseJson(text, sourceName, doc); !st)
        return st;
    CaseFile c;
    try {
        if (!doc.is_object())
            fail("(top level)", "expected a JSON object");
        checkKnown(doc, {"schema", "name", "description", "notes", "generator", "config", "inputs", "expected", "checks",
                         "suggested_tolerance"},
                   "");
        if (doc.contains("schema") && doc["schema"] != "attn-golden/1")
            fail("schema", "unsupported \"" + doc["schema"].dump() + "\" (this build reads attn-golden/1)");
        c.name = optString(doc, "name", "", sourceName);
        if (!doc.contains("config") || !doc["config"].is_object())
            fail("config", "missing or not an object");
        if (!doc.contains("inputs") || !doc["inputs"].is_object())
            fail("inputs", "missing or not an object");
        const json &cfg = doc["config"];
        const json &in = doc["inputs"];
        parseConfig(cfg, c);
        checkKnown(in, {"query", "key", "value", "W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o", "attn_mask",
                        "key_padding_mask", "sentence", "key_sentence"},
                   "inputs.");

        const std::string maskType = optString(cfg, "mask_type", "config.", "none");
        static const std::set<std::string> maskTypes = {"none", "causal", "key_padding", "arbitrary", "causal+key_padding"};
        if (!maskTypes.count(maskType))
            fail("config.mask_type", "unknown \"" + maskType + "\"");
        const bool wantsCausal = maskType == "causal" || maskType == "causal+key_padding";

        // Sizes, when declared, must agree with the arrays.
        const int B = optInt(cfg, "batch", 0), tq = optInt(cfg, "t_q", 0), tk = optInt(cfg, "t_k", 0);
        const int dModel = optInt(cfg, "d_model", 0), kdim = optInt(cfg, "kdim", 0), vdim = optInt(cfg, "vdim", 0);
        const int dOutDecl = optInt(cfg, "d_out", 0);
        c.declaredTq = tq;
        c.declaredTk = tk;
        c.declaredDModel = dModel;

        const bool hasSentence = in.contains("sentence") && !in["sentence"].is_null();
        if (hasSentence) {
            if (!in["sentence"].is_string())
                fail("inputs.sentence", "expected a string");
            c.fromSentence = true;
            c.sentence = in["sentence"].get<std::string>();
            if (in.contains("key_sentence") && !in["key_sentence"].is_null()) {
                if (!in["key_sentence"].is_string())
                    fail("inputs.key_sentence", "expected a string");
                c.keySentence = in["key_sentence"].get<std::string>();
            }
            for (const char *f : {"query", "key", "value"})
                if (in.contains(f) && !in[f].is_null())
                    fail(std::string("inputs.") + f, "give either a sentence or matrices, not both");
        } else {
            if (!in.contains("query") || in["query"].is_null())
                fail("inputs.query", "missing (give query/key/value matrices or a sentence)");
            NdArray q = array(in["query"], "inputs.query", 3);
            const bool self = c.selfAttention;
            NdArray k = in.contains("key") && !in["key"].is_null() ? array(in["key"], "inputs.key", 3)
                                                                   : (self ? q : (fail("inputs.key", "missing"), q));
            NdArray v = in.contains("value") && !in["value"].is_null() ? array(in["value"], "inputs.value", 3)
                                                                       : (self ? k : (fail("inputs.value", "missing"), k));
            auto expect = [&](const NdArray &a, const char *f, int b, int t, int d) {
                if ((b && a.shape[0] != b) || (t && a.shape[1] != t) || (d && a.shape[2] != d))
                    fail(std::string("inputs.") + f, "shape " + shapeText(a.shape) + ", expected " +
                                                         shapeText({b ? b : a.shape[0], t ? t : a.shape[1], d ? d : a.shape[2]}) +
                                                         " from config");
            };
            expect(q, "query", B, tq, dModel);
            expect(k, "key", B ? B : q.shape[0], tk, kdim);
            expect(v, "value", B ? B : q.shape[0], k.shape[1], vdim);
            if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0])
                fail("inputs.key", "batch size differs from the query's");
            for (int b = 0; b < q.shape[0]; ++b) {
                SequenceInput<double> s;
                s.query = toMat(q, size_t(b) * q.shape[1] * q.shape[2], q.shape[1], q.shape[2]);
                s.key = toMat(k, size_t(b) * k.shape[1] * k.shape[2], k.shape[1], k.shape[2]);
                s.value = toMat(v, size_t(b) * v.shape[1] * v.shape[2], v.shape[1], v.shape[2]);
                c.input.batch.push_back(std::move(s));
            }
        }

        auto linear = [&](const char *w, const char *bn, Linear<double> &l) {
            if (in.contains(w) && !in[w].is_null()) {
                NdArray a = array(in[w], std::string("inputs.") + w, 2);
                l.W = toMat(a, 0, a.shape[0], a.shape[1]);
            }
            if (in.contains(bn) && !in[bn].is_null()) {
                NdArray a = array(in[bn], std::string("inputs.") + bn, 1);
                l.b = Eigen::Map<Vec<double>>(a.values.data(), a.shape[0]);
            }
        };
        linear("W_q", "b_q", c.input.proj.q);
        linear("W_k", "b_k", c.input.proj.k);
        linear("W_v", "b_v", c.input.proj.v);
        linear("W_o", "b_o", c.input.proj.o);
        const std::string projections = optString(cfg, "projections", "config.", "linear");
        if (projections != "identity" && projections != "linear")
            fail("config.projections", "unknown \"" + projections + "\" (identity, linear)");
        if (projections == "identity")
            for (auto *l : {&c.input.proj.q, &c.input.proj.k, &c.input.proj.v, &c.input.proj.o})
                if (!l->isIdentity())
                    fail("config.projections", "is \"identity\" but inputs hold weight matrices");
        {
            // Heads split the projected width (d_model in the schema): say so before any shape error.
            const int wRows = c.input.proj.q.isIdentity() ? 0 : int(c.input.proj.q.W.rows());
            const int width = wRows                   ? wRows
                              : dModel                ? dModel
                              : c.input.batch.empty() ? 0
                                                      : int(c.input.batch[0].query.cols());
            const bool consistentFreeWidth = c.config.dHead && c.config.dHead * c.config.numHeads == width;
            const bool weightShapeWrong = wRows && dModel && wRows != dModel;
            if (width && !consistentFreeWidth && !weightShapeWrong) {
                if (width % c.config.numHeads != 0)
                    fail("config.num_heads", std::to_string(c.config.numHeads) + " does not divide d_model " +
                                                 std::to_string(width));
                if (c.config.dHead)
                    fail("config.d_head", std::to_string(c.config.dHead) + " x " + std::to_string(c.config.numHeads) +
                                              " heads does not match the projected width " + std::to_string(width));
            }
        }
        if (dOutDecl && !c.input.proj.o.isIdentity() && c.input.proj.o.W.rows() != dOutDecl)
            fail("inputs.W_o", "has " + std::to_string(c.input.proj.o.W.rows()) + " rows, config.d_out is " +
                                   std::to_string(dOutDecl));

        if (in.contains("attn_mask") && !in["attn_mask"].is_null()) {
            std::vector<int> shape;
            std::vector<uint8_t> vals;
            boolArray(in["attn_mask"], "inputs.attn_mask", shape, vals, 0);
            if (shape.size() != 2)
                fail("inputs.attn_mask", "expected a (t_q, t_k) matrix");
            checkComplete(shape, vals.size(), "inputs.attn_mask");
            c.input.attnMask = Eigen::Map<BoolMat>(vals.data(), shape[0], shape[1]);
        } else if (wantsCausal) {
            c.config.causal = true;
        }
        if (in.contains("key_padding_mask") && !in["key_padding_mask"].is_null()) {
            std::vector<int> shape;
            std::vector<uint8_t> vals;
            boolArray(in["key_padding_mask"], "inputs.key_padding_mask", shape, vals, 0);
            if (shape.size() != 2)
                fail("inputs.key_padding_mask", "expected a (batch, t_k) matrix");
            checkComplete(shape, vals.size(), "inputs.key_padding_mask");
            if (!c.fromSentence && shape[0] != int(c.input.batch.size()))
                fail("inputs.key_padding_mask", "has " + std::to_string(shape[0]) + " rows, batch is " +
                                                    std::to_string(c.input.batch.size()));
            for (int b = 0; b < shape[0] && b < int(c.input.batch.size()); ++b)
                c.input.batch[size_t(b)].keyPadding.assign(vals.begin() + b * shape[1], vals.begin() + (b + 1) * shape[1]);
            if (c.fromSentence) {
                c.input.batch.resize(1);
                c.input.batch[0].keyPadding.assign(vals.begin(), vals.begin() + shape[1]);
            }
        }

        if (doc.contains("expected") && doc["expected"].is_object()) {
            static const std::map<std::string, size_t> ranks = {{"q", 3}, {"k", 3}, {"v", 3}, {"scores", 4}, {"weights", 4},
                                                                {"weights_avg", 3}, {"context", 3}, {"output", 3}};
            for (auto it = doc["expected"].begin(); it != doc["expected"].end(); ++it) {
                auto r = ranks.find(it.key());
                if (r == ranks.end() || it.value().is_null())
                    continue;
                c.expected[it.key()] = array(it.value(), "expected." + it.key(), r->second, true);
            }
        }

        if (!c.fromSentence) {
            ResolvedShape s;
            if (Status st = resolveShape(c.config, c.input, s); !st) {
                std::string m = st.message;
                if (m.rfind("num_heads", 0) == 0 || m.rfind("d_head", 0) == 0 || m.rfind("dropout", 0) == 0 ||
                    m.rfind("temperature", 0) == 0)
                    m = "config." + m;
                return Status::error(st.code, sourceName + ": " + m);
            }
        }
    } catch (const FieldError &e) {
        return Status::error(StatusCode::InvalidInput, sourceName + ": " + e.message);
    } catch (const json::exception &e) { // a type or range the checks above did not expect
        return Status::error(StatusCode::ParseError, sourceName + ": " + detail::jsonMessage(e));
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::InvalidInput, sourceName + ": out of memory while reading the case");
    }
    out = std::move(c);
    return {};
}

} // namespace

Status loadCase(const std::string &path, CaseFile &out)
{
    std::string text;
    if (Status st = readRegularFile(path, kMaxCaseFileBytes, text); !st)
        return st;
    return parseCase(text, path, out);
}

Status embedCaseSentences(CaseFile &c, const EmbeddingTable &table)
{
    if (!c.fromSentence)
        return {};
    if (table.empty())
        return Status::error(StatusCode::InvalidInput, "inputs.sentence: no embedding table loaded");
    if (c.declaredDModel && c.declaredDModel != table.dim())
        return Status::error(StatusCode::InvalidInput,
                             c.name + ": config.d_model: " + std::to_string(c.declaredDModel) +
                                 ", but the embedding table's vectors have " + std::to_string(table.dim()) +
                                 " dimensions (" + table.source() + ")");
    c.queryTokens = embedSentence(table, c.sentence);
    if (c.queryTokens.tokens.empty())
        return Status::error(StatusCode::InvalidInput, "inputs.sentence: no tokens in the sentence");
    std::vector<uint8_t> pad = c.input.batch.empty() ? std::vector<uint8_t>{} : c.input.batch[0].keyPadding;
    c.input.batch.assign(1, {});
    auto &s = c.input.batch[0];
    s.query = c.queryTokens.matrix.cast<double>();
    if (!c.keySentence.empty()) {
        c.keyTokens = embedSentence(table, c.keySentence);
        if (c.keyTokens.tokens.empty())
            return Status::error(StatusCode::InvalidInput, "inputs.key_sentence: no tokens in the sentence");
        s.key = c.keyTokens.matrix.cast<double>();
    }
    s.keyPadding = pad;
    // Sizes a sentence case declares must be the ones its text and the table give.
    const int tq = int(c.queryTokens.tokens.size());
    const int tk = c.keySentence.empty() ? tq : int(c.keyTokens.tokens.size());
    const char *keyField = c.keySentence.empty() ? "inputs.sentence" : "inputs.key_sentence";
    if (c.declaredTq && c.declaredTq != tq)
        return Status::error(StatusCode::InvalidInput, c.name + ": config.t_q: " + std::to_string(c.declaredTq) +
                                                           ", but inputs.sentence has " + std::to_string(tq) + " tokens");
    if (c.declaredTk && c.declaredTk != tk)
        return Status::error(StatusCode::InvalidInput, c.name + ": config.t_k: " + std::to_string(c.declaredTk) +
                                                           ", but " + keyField + " has " + std::to_string(tk) + " tokens");
    ResolvedShape shape;
    if (Status st = resolveShape(c.config, c.input, shape); !st)
        return Status::error(st.code, c.name + ": " + st.message);
    return {};
}

template <typename T>
NdArray stageArray(const AttentionResult<T> &r, const std::string &stage)
{
    NdArray a;
    const bool perHead = stage == "scores" || stage == "weights";
    for (size_t b = 0; b < r.batch.size(); ++b) {
        const auto list = stageMatrices(r.batch[b], stage);
        for (const Mat<T> &m : list)
            for (Eigen::Index i = 0; i < m.size(); ++i)
                a.values.push_back(double(m.data()[i]));
        if (b == 0 && !list.empty()) {
            a.shape = {int(r.batch.size())};
            if (perHead)
                a.shape.push_back(int(list.size()));
            a.shape.push_back(int(list[0].rows()));
            a.shape.push_back(int(list[0].cols()));
        }
    }
    return a;
}

template <typename T>
double compareStage(const CaseFile &c, const AttentionResult<T> &r, const std::string &stage, double rtol, double atol,
                    bool &ok, std::string *detail)
{
    ok = false;
    auto it = c.expected.find(stage);
    if (it == c.expected.end()) {
        if (detail)
            *detail = stage + ": no expected values";
        return std::numeric_limits<double>::infinity();
    }
    const NdArray got = stageArray(r, stage);
    if (got.shape != it->second.shape) {
        if (detail)
            *detail = stage + ": shape " + shapeText(got.shape) + ", expected " + shapeText(it->second.shape);
        return std::numeric_limits<double>::infinity();
    }
    double maxDiff = 0;
    ok = true;
    for (size_t i = 0; i < got.values.size(); ++i) {
        const double e = it->second.values[i], g = got.values[i];
        if (std::isnan(e) || std::isnan(g)) {
            if (std::isnan(e) != std::isnan(g)) {
                ok = false;
                maxDiff = std::numeric_limits<double>::infinity();
                if (detail)
                    *detail = stage + "[" + std::to_string(i) + "]: NaN mismatch";
            }
            continue;
        }
        const double d = std::abs(g - e);
        if (d > maxDiff)
            maxDiff = d;
        if (d > atol + rtol * std::abs(e)) {
            if (ok && detail)
                *detail = stage + "[" + std::to_string(i) + "]: got " + std::to_string(g) + ", expected " + std::to_string(e);
            ok = false;
        }
    }
    return maxDiff;
}

template <typename T>
std::string resultToJson(const CaseFile &c, const AttentionResult<T> &r, const ResultMeta &meta)
{
    json head;
    head["schema"] = "attnviz-result/1";
    head["name"] = c.name;
    head["backend"] = meta.backend;
    head["device"] = meta.device;
    head["precision"] = meta.precision;
    head["compute_ms"] = meta.computeMs;
    const auto &cfg = c.config;
    json config;
    config["batch"] = r.batch.size();
    config["num_heads"] = r.numHeads;
    config["d_head"] = r.dHead;
    config["d_model"] = r.dModel;
    config["d_out"] = r.dOut;
    config["scale"] = r.scale;
    config["normalization"] = cfg.normalization == Normalization::Softmax ? "softmax"
                              : cfg.normalization == Normalization::Sum   ? "sum"
                                                                          : "cosine";
    config["mask_method"] = cfg.maskMethod == MaskMethod::NegInf ? "additive_neg_inf" : "multiply_renormalize";
    config["fully_masked"] = cfg.fullyMasked == FullyMaskedPolicy::NaN    ? "nan"
                             : cfg.fullyMasked == FullyMaskedPolicy::Zero ? "zero"
                                                                          : "uniform";
    config["dropout"] = cfg.dropout;
    head["config"] = config;
    json fully = json::array(), degenerate = json::array();
    for (size_t b = 0; b < r.batch.size(); ++b) {
        for (int i : r.batch[b].fullyMaskedRows)
            fully.push_back({{"batch", b}, {"query", i}});
        for (int i : r.batch[b].degenerateRows)
            degenerate.push_back({{"batch", b}, {"query", i}});
    }
    head["fully_masked_rows"] = fully;
    head["degenerate_rows"] = degenerate;
    if (c.fromSentence) {
        auto tokens = [](const EmbeddedSentence &e) {
            json t = json::array();
            for (const auto &tok : e.tokens)
                t.push_back(tok.text);
            return t;
        };
        auto flags = [](const EmbeddedSentence &e) {
            json t = json::array();
            for (uint8_t u : e.unknown)
                t.push_back(u != 0);
            return t;
        };
        head["tokens"] = tokens(c.queryTokens);
        head["unknown"] = flags(c.queryTokens);
        if (!c.keySentence.empty()) {
            head["key_tokens"] = tokens(c.keyTokens);
            head["key_unknown"] = flags(c.keyTokens);
        }
    }
    std::string out = head.dump();
    out.pop_back(); // reopen the object to append the stages
    for (const auto &stage : stageNames()) {
        if (stage == "scores" && r.batch[0].scores.empty())
            continue;
        out += ",\"" + stage + "\":";
        appendStage(out, r, stage);
    }
    out += "}\n";
    return out;
}

#define ATTNVIZ_CASEIO(T)                                                                                              \
    template std::string resultToJson<T>(const CaseFile &, const AttentionResult<T> &, const ResultMeta &);            \
    template double compareStage<T>(const CaseFile &, const AttentionResult<T> &, const std::string &, double, double, \
                                    bool &, std::string *);                                                            \
    template NdArray stageArray<T>(const AttentionResult<T> &, const std::string &);
ATTNVIZ_CASEIO(float)
ATTNVIZ_CASEIO(double)

} // namespace attnviz
