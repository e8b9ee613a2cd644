// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF file's architecture and tensor names (ggufmodel.h). The {arch}.* keys llama.cpp writes
// (llama-arch.cpp: embedding_length, block_count, attention.head_count ...) are translated into the
// config.json fields of the matching Hugging Face family and read by that family's own reader
// (families/), so that a GGUF file and a model folder of the same model give the same Architecture;
// what the converter changed is then put back:
//   - `llama` files: q and k rows permuted for llama.cpp's adjacent-pair rotary (convert_hf_to_gguf's
//     LlamaModel.permute); marked on the archive so that reads give Hugging Face's half-split order.
//   - Llama 3's RoPE scaling: a rope_freqs tensor of per-frequency divisors, used as they are (a
//     rope whose inverse frequencies are base^(-2i/d) / rope_freqs[i]; LongRope with one factor list).
//   - Phi-3's LongRoPE: rope_factors_short / rope_factors_long tensors and rope.scaling.attn_factor.
//   - Gemma 2 / 3: the file's norm weights are 1 + w already (the converter adds 1), so the norms
//     multiply by the stored weight (NormKind::RmsNorm, not RmsNormPlusOne); the embeddings are
//     scaled by sqrt(d_model) in float32, as llama.cpp does.
//   - Gemma 3: the sliding pattern (5 sliding layers, then a global one) and the sliding layers'
//     rotary base 10,000 are not in the file; llama.cpp hard-codes both, and so does this reader
//     (an {arch}.attention.sliding_window_pattern key, where a file has one, is used instead).
//     Gemma 2 / 3's query scale is not stored either: llama.cpp takes 1/sqrt(head_dim), and
//     1/sqrt(d_model / heads) for the 27B models (46 and 62 layers); so does this reader.
//   - T5 (`t5`): an encoder-decoder model, its enc.blk.N / dec.blk.N tensors; what llama.cpp
//     assumes of such a file is written at t5ArchitectureOf. `t5encoder` files (the encoder alone,
//     the same keys under t5encoder.*) read the same way; pretrained.cpp opens them encoder-only.
#include "ggufmodel.h"

#include "attnviz/fileio.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace attnviz::detail {

namespace {

using json = nlohmann::json;

// A number as a message shows it: the digits that tell it apart (1e-30, not 0.000000).
std::string shown(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

class Keys {
public:
    Keys(const GgufFile &f, std::string arch) : m_f(f), m_arch(std::move(arch)) {}

    Status bad(const std::string &key, const std::string &what) const
    {
        return Status::error(StatusCode::InvalidInput, m_f.path + ": metadata " + quoteText(key, 100) + ": " + what);
    }
    std::string full(const std::string &k) const { return k.rfind("general.", 0) == 0 || k.rfind("tokenizer.", 0) == 0 ? k : m_arch + "." + k; }
    const GgufValue *find(const std::string &k) const { return m_f.find(full(k)); }
    bool has(const std::string &k) const { return find(k) != nullptr; }

    // An integer in [lo, hi]; a per-layer array whose entries are all equal counts as that value.
    Status integer(const std::string &k, int64_t &v, int64_t lo, int64_t hi, bool required = true) const
    {
        const GgufValue *x = find(k);
        if (!x) {
            if (required)
                return bad(full(k), "missing");
            return {};
        }
        int64_t got = 0;
        if (x->isInteger()) {
            got = x->i;
        } else if (x->isArrayOf(isIntegerType) && !x->numbers.empty()) {
            if (std::any_of(x->numbers.begin(), x->numbers.end(), [&](double n) { return n != x->numbers.front(); }))
                return bad(full(k), "differs between layers, which attnviz does not compute");
            got = int64_t(x->numbers.front());
        } else { // llama.cpp refuses a float or bool here as well (its get_key_or_arr: uint32 or int32)
            return bad(full(k), "type " + x->typeName() +
                                    (x->type == GgufValueType::Array && x->count == 0 ? " (empty)" : "") +
                                    ", expected uint32 (or an array of uint32, one per layer)");
        }
        if (got < lo || got > hi)
            return bad(full(k), std::to_string(got) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
        v = got;
        return {};
    }
    Status number(const std::string &k, double &v, double lo, double hi, bool required = false) const
    {
        const GgufValue *x = find(k);
        if (!x)
            return required ? bad(full(k), "missing") : Status();
        if (!x->isNumber())
            return bad(full(k), "type " + x->typeName() + ", expected float32");
        if (!std::isfinite(x->f) || x->f < lo || x->f > hi)
            return bad(full(k), shown(x->f) + " is outside " + shown(lo) + ".." + shown(hi));
        v = x->f;
        return {};
    }
    // A string; "" when the key is absent.
    Status text(const std::string &k, std::string &v) const
    {
        const GgufValue *x = find(k);
        if (x && x->type != GgufValueType::String)
            return bad(full(k), "type " + x->typeName() + ", expected string");
        v = x ? x->s : std::string();
        return {};
    }

private:
    const GgufFile &m_f;
    std::string m_arch;
};

// A 1-D F32 tensor of `n` values (rope factors) read into a JSON list.
Status factorList(const GgufModelParts &p, const std::string &name, int n, json &out)
{
    const TensorEntry *e = p.archive.find(name);
    if (!e)
        return Status::error(StatusCode::InvalidInput, p.file.path + ": tensor " + quoteText(name) + ": missing");
    if (e->shape != std::vector<int64_t>{n})
        return Status::error(StatusCode::InvalidInput, p.file.path + ": tensor " + quoteText(name) + ": " +
                                                           std::to_string(e->count) + " values, expected " + std::to_string(n) +
                                                           " (one per rotary frequency)");
    std::vector<double> v(static_cast<size_t>(n));
    if (Status st = p.archive.read(*e, v.data()); !st)
        return st;
    for (size_t i = 0; i < v.size(); ++i)
        if (!(v[i] > 0))
            return Status::error(StatusCode::InvalidInput, p.file.path + ": tensor " + quoteText(name) + ": value " +
                                                               std::to_string(i) + " is not positive");
    out = v;
    return {};
}

// `t5` files (llama.cpp's LLM_ARCH_T5; convert_hf_to_gguf.py's T5Model) read as T5's config.json
// and then by the t5 family (families/t5.cpp). What llama.cpp's llama-model.cpp (llama_model_t5),
// llama-graph.cpp and the converter mean by such a file:
//   - t5.block_count is the encoder's layers, t5.decoder_block_count the decoder's (absent: the
//     same); t5.attention.key_length = value_length = d_kv (absent: embedding_length / head_count);
//     t5.attention.layer_norm_rms_epsilon and t5.attention.relative_buckets_count are required.
//   - the relative attention's max distance is not in the file: llama.cpp hard-codes 128
//     (llama_relative_position_bucket, "move to hparams if a T5 variant appears that uses a
//     different value"); so does this reader. Every T5 / FLAN-T5 / mT5 checkpoint has 128.
//   - the bias is {enc,dec}.blk.0.attn_rel_b, shared by the stack's layers (llama.cpp takes a
//     layer's own where it has one: UMT5's per-layer bias, refused here); dec.blk.N.cross_attn_rel_b,
//     which Hugging Face never uses, is not read (llama.cpp loads it but passes no bias to the
//     cross-attention either).
//   - the MLP: ffn_gate present means gated-GELU (llama.cpp's LLM_FFN_GELU, ggml's tanh form:
//     Hugging Face's "gated-gelu" = gelu_new), absent ReLU (v1.0).
//   - the LM head: `output` where the file has it, else token_embd. Hugging Face's T5 with tied
//     embeddings scales the final states by d_model^-0.5 before the head; llama.cpp's graph never
//     does (its logits of a tied T5 are sqrt(d_model) times Hugging Face's: the same argmax, sharper
//     probabilities). This reader follows Hugging Face, the model as trained: a file without
//     `output`, or whose `output` holds token_embd's bytes (a tied checkpoint that stored
//     lm_head.weight too), is read as tied and scaled.
//   - ids: t5.decoder_start_token_id (absent: the pad id, as T5Config), tokenizer.ggml.eos_token_id
//     (absent: 1) and padding_token_id (absent: 0), llama.cpp's defaults for a "t5" vocabulary.
Status t5ArchitectureOf(GgufModelParts &p, const Keys &k)
{
    const GgufFile &f = p.file;
    const int64_t widthCap = 65536;
    int64_t layers = 0, decoderLayers = 0, d = 0, heads = 0, ff = 0, ctx = 0, buckets = 0;
    Status st;
    if (!(st = k.integer("block_count", layers, 1, 1024)) || !(st = k.integer("embedding_length", d, 1, widthCap)) ||
        !(st = k.integer("attention.head_count", heads, 1, widthCap)) ||
        !(st = k.integer("feed_forward_length", ff, 1, 16 * widthCap)) ||
        !(st = k.integer("context_length", ctx, 1, 16'777'216)) ||
        !(st = k.integer("attention.relative_buckets_count", buckets, 4, 1 << 16)))
        return st;
    decoderLayers = layers;
    if (!(st = k.integer("decoder_block_count", decoderLayers, 1, 1024, false)))
        return st;
    int64_t headDim = d % heads == 0 ? d / heads : 0, valueDim = 0;
    if (!(st = k.integer("attention.key_length", headDim, 1, widthCap, headDim == 0)))
        return st;
    valueDim = headDim;
    if (!(st = k.integer("attention.value_length", valueDim, 1, widthCap, false)))
        return st;
    if (valueDim != headDim)
        return k.bad("t5.attention.value_length", std::to_string(valueDim) + " differs from key_length " +
                                                      std::to_string(headDim) + ", which attnviz does not compute");
    if (int64_t kv = heads; !(st = k.integer("attention.head_count_kv", kv, 1, widthCap, false)) || kv != heads)
        return st ? k.bad("t5.attention.head_count_kv", std::to_string(kv) + " differs from head_count " +
                                                            std::to_string(heads) + " (T5 has no grouped keys)")
                  : st;
    double eps = 0;
    if (!(st = k.number("attention.layer_norm_rms_epsilon", eps, 1e-30, 0.5, true)))
        return st;
    // the float32 key holds config.json's decimal rounded: the shortest decimal that rounds to it
    // is what the folder says (1e-06, not 9.99999997e-07)
    for (int digits = 1; digits <= 9; ++digits) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.*g", digits, eps);
        if (float(std::strtod(buf, nullptr)) == float(eps)) {
            eps = std::strtod(buf, nullptr);
            break;
        }
    }
    const TensorEntry *tok = p.archive.find("token_embd.weight");
    if (!tok)
        return Status::error(StatusCode::InvalidInput, f.path + ": tensor \"token_embd.weight\": missing");
    if (tok->shape.size() != 2 || tok->shape[1] != d)
        return Status::error(StatusCode::InvalidInput, f.path + ": tensor \"token_embd.weight\": not (vocabulary, " +
                                                           std::to_string(d) + ")");
    // a relative bias in another layer than 0: UMT5's, one per layer
    for (const auto &[name, e] : p.archive.entries())
        if (name.size() > 18 && name.compare(name.size() - 18, 18, ".attn_rel_b.weight") == 0 &&
            name.rfind("enc.blk.0.", 0) != 0 && name.rfind("dec.blk.0.", 0) != 0 && name.find("cross_attn_rel_b") == std::string::npos)
            return Status::error(StatusCode::InvalidInput, f.path + ": tensor " + quoteText(name) +
                                                               ": a relative position bias in a layer other than 0 (UMT5's, "
                                                               "one per layer) is not computed by attnviz (T5 shares block 0's)");
    bool tied = true;
    if (const TensorEntry *out = p.archive.find("output.weight")) {
        tied = false;
        if (out->shape == tok->shape && out->dtype == tok->dtype) {
            std::vector<uint8_t> a, b;
            if (!(st = p.archive.readEncoded(*out, a)) || !(st = p.archive.readEncoded(*tok, b)))
                return st;
            tied = a == b;
        }
    }
    int64_t pad = 0, eos = 1, start = -1;
    if (!(st = k.integer("tokenizer.ggml.padding_token_id", pad, 0, tok->shape[0] - 1, false)) ||
        !(st = k.integer("tokenizer.ggml.eos_token_id", eos, 0, tok->shape[0] - 1, false)) ||
        !(st = k.integer("decoder_start_token_id", start, 0, tok->shape[0] - 1, false)))
        return st;
    json c;
    c["model_type"] = "t5";
    c["vocab_size"] = tok->shape[0];
    c["d_model"] = d;
    c["d_kv"] = headDim;
    c["d_ff"] = ff;
    c["num_layers"] = layers;
    c["num_decoder_layers"] = decoderLayers;
    c["num_heads"] = heads;
    c["relative_attention_num_buckets"] = buckets;
    c["relative_attention_max_distance"] = 128; // llama.cpp's llama_relative_position_bucket
    c["layer_norm_epsilon"] = eps;
    c["feed_forward_proj"] = p.archive.find("enc.blk.0.ffn_gate.weight") ? "gated-gelu" : "relu";
    c["tie_word_embeddings"] = tied;
    c["pad_token_id"] = pad;
    c["eos_token_id"] = eos;
    c["decoder_start_token_id"] = start >= 0 ? start : pad;
    Architecture a;
    if (Status s = parseArchitecture(c.dump(), f.path + " (its t5.* keys read as config.json)", a); !s)
        return s;
    p.arch = std::move(a);
    return {};
}

Status architectureOf(GgufModelParts &p)
{
    const GgufFile &f = p.file;
    const GgufValue *archKey = f.find("general.architecture");
    if (!archKey)
        return Status::error(StatusCode::InvalidInput, f.path + ": metadata \"general.architecture\": missing");
    if (archKey->type != GgufValueType::String)
        return Status::error(StatusCode::InvalidInput, f.path + ": metadata \"general.architecture\": type " +
                                                           archKey->typeName() + ", expected string");
    const std::string arch = archKey->s;
    static const std::set<std::string> kKnown{"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "gpt2", "t5", "t5encoder"};
    if (!kKnown.count(arch))
        return Status::error(StatusCode::InvalidInput, f.path + ": metadata \"general.architecture\": " + quoteText(arch) +
                                                           " is not one attnviz computes (llama, qwen2, qwen3, gemma2, "
                                                           "gemma3, phi3, gpt2, t5, t5encoder)");
    const Keys k(f, arch);
    if (arch == "t5" || arch == "t5encoder")
        return t5ArchitectureOf(p, k);
    int64_t layers = 0, d = 0, heads = 0, kv = 0, ff = 0, ctx = 0, headDim = 0, valueDim = 0, ropeDims = 0;
    const int64_t widthCap = 65536;
    Status st;
    if (!(st = k.integer("block_count", layers, 1, 1024)) || !(st = k.integer("embedding_length", d, 1, widthCap)) ||
        !(st = k.integer("attention.head_count", heads, 1, widthCap)) ||
        !(st = k.integer("feed_forward_length", ff, 1, 16 * widthCap)) ||
        !(st = k.integer("context_length", ctx, 1, 16'777'216)))
        return st;
    kv = heads;
    if (!(st = k.integer("attention.head_count_kv", kv, 1, widthCap, false)))
        return st;
    headDim = heads > 0 && d % heads == 0 ? d / heads : 0;
    if (!(st = k.integer("attention.key_length", headDim, 1, widthCap, headDim == 0)))
        return st;
    valueDim = headDim;
    if (!(st = k.integer("attention.value_length", valueDim, 1, widthCap, false)))
        return st;
    if (valueDim != headDim)
        return k.bad(arch + ".attention.value_length", std::to_string(valueDim) + " differs from key_length " +
                                                           std::to_string(headDim) + ", which attnviz does not compute");
    ropeDims = headDim;
    if (!(st = k.integer("rope.dimension_count", ropeDims, 2, headDim, false)))
        return st;
    // The vocabulary: the embeddings' rows.
    const TensorEntry *tok = p.archive.find("token_embd.weight");
    if (!tok)
        return Status::error(StatusCode::InvalidInput, f.path + ": tensor \"token_embd.weight\": missing");
    if (tok->shape.size() != 2 || tok->shape[1] != d)
        return Status::error(StatusCode::InvalidInput, f.path + ": tensor \"token_embd.weight\": not (vocabulary, " +
                                                           std::to_string(d) + ")");
    const bool tied = !p.archive.find("output.weight");

    json c;
    c["vocab_size"] = tok->shape[0];
    c["tie_word_embeddings"] = tied;
    double eps = 0;
    if (arch == "gpt2") {
        c["model_type"] = "gpt2";
        c["n_layer"] = layers;
        c["n_head"] = heads;
        c["n_embd"] = d;
        c["n_positions"] = ctx;
        c["n_inner"] = ff;
        if (!(st = k.number("attention.layer_norm_epsilon", eps, 1e-30, 0.5, true)))
            return st;
        c["layer_norm_epsilon"] = eps;
        c["activation_function"] = "gelu_new";
    } else {
        c["model_type"] = arch == "gemma3" ? "gemma3_text" : arch;
        c["num_hidden_layers"] = layers;
        c["hidden_size"] = d;
        c["num_attention_heads"] = heads;
        c["num_key_value_heads"] = kv;
        c["head_dim"] = headDim;
        c["intermediate_size"] = ff;
        c["max_position_embeddings"] = ctx;
        if (!(st = k.number("attention.layer_norm_rms_epsilon", eps, 1e-30, 0.5, true)))
            return st;
        c["rms_norm_eps"] = eps;
        double theta = arch == "gemma3" || arch == "qwen2" || arch == "qwen3" ? 1e6 : 10000;
        if (arch == "gemma2")
            theta = 10000;
        if (!(st = k.number("rope.freq_base", theta, 1.0001, 1e12)))
            return st;
        c["rope_theta"] = theta;
        if (ropeDims != headDim)
            c["partial_rotary_factor"] = double(ropeDims) / double(headDim);
        c["hidden_act"] = arch == "gemma2" || arch == "gemma3" ? "gelu_pytorch_tanh" : "silu";
        c["hidden_activation"] = c["hidden_act"];
        if (arch == "llama" && p.archive.find("blk.0.attn_q.bias"))
            c["attention_bias"] = true;
        // RoPE scaling keys (llama.cpp's rope.scaling.*).
        std::string scaling;
        if (!(st = k.text("rope.scaling.type", scaling)))
            return st;
        double factor = 1;
        if (!(st = k.number("rope.scaling.factor", factor, 1e-6, 1e6)))
            return st;
        int64_t original = 0;
        if (!(st = k.integer("rope.scaling.original_context_length", original, 1, 16'777'216, false)))
            return st;
        if (scaling == "linear" && factor != 1) {
            c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor}};
        } else if (scaling == "yarn") {
            json y = {{"rope_type", "yarn"}, {"factor", factor}};
            if (original > 0)
                y["original_max_position_embeddings"] = original;
            double bf = 0, bs = 0;
            if (!(st = k.number("rope.scaling.yarn_beta_fast", bf, 0, 1e6)) ||
                !(st = k.number("rope.scaling.yarn_beta_slow", bs, 0, 1e6)))
                return st;
            if (bf > 0)
                y["beta_fast"] = bf;
            if (bs > 0)
                y["beta_slow"] = bs;
            c["rope_scaling"] = y;
        } else if (!scaling.empty() && scaling != "none" && scaling != "linear" && scaling != "longrope") {
            return k.bad(arch + ".rope.scaling.type", quoteText(scaling) + " is not a scaling attnviz computes (linear, yarn)");
        }
        // Per-frequency factors as tensors: Llama 3 (rope_freqs), Phi-3 (rope_factors_short/long).
        const int half = int(ropeDims / 2);
        if (p.archive.find("rope_freqs.weight")) {
            json list;
            if (!(st = factorList(p, "rope_freqs.weight", half, list)))
                return st;
            c["rope_scaling"] = {{"rope_type", "longrope"}, {"short_factor", list}, {"long_factor", list},
                                 {"original_max_position_embeddings", ctx}, {"attention_factor", 1.0}};
        } else if (p.archive.find("rope_factors_long.weight")) {
            json shortList, longList;
            if (!(st = factorList(p, "rope_factors_long.weight", half, longList)))
                return st;
            shortList = longList;
            if (p.archive.find("rope_factors_short.weight"))
                if (!(st = factorList(p, "rope_factors_short.weight", half, shortList)))
                    return st;
            json r = {{"rope_type", "longrope"}, {"short_factor", shortList}, {"long_factor", longList}};
            double attn = 0;
            if (!(st = k.number("rope.scaling.attn_factor", attn, 1e-6, 1e6)))
                return st;
            if (attn > 0)
                r["attention_factor"] = attn;
            if (original > 0)
                c["original_max_position_embeddings"] = original;
            c["rope_scaling"] = r;
        }
        int64_t window = 0;
        if (!(st = k.integer("attention.sliding_window", window, 0, 1 << 30, false)))
            return st;
        if (arch == "qwen2" || arch == "qwen3") {
            c["use_sliding_window"] = false;
        } else if (arch == "phi3") {
            if (window > 0)
                c["sliding_window"] = window;
        } else if (arch == "gemma2" || arch == "gemma3") {
            c["sliding_window"] = window > 0 ? window : 4096;
            const bool big = (arch == "gemma2" && layers == 46) || (arch == "gemma3" && layers == 62);
            c["query_pre_attn_scalar"] = big ? d / heads : headDim;
            if (arch == "gemma2") {
                double a = 0, fin = 0;
                if (!(st = k.number("attn_logit_softcapping", a, 0, 1e6)) || !(st = k.number("final_logit_softcapping", fin, 0, 1e6)))
                    return st;
                c["attn_logit_softcapping"] = a > 0 ? json(a) : json(nullptr);
                c["final_logit_softcapping"] = fin > 0 ? json(fin) : json(nullptr);
            } else {
                int64_t pattern = 6; // llama.cpp's hparams.set_swa_pattern(6)
                if (!(st = k.integer("attention.sliding_window_pattern", pattern, 1, 1 << 20, false)))
                    return st;
                c["sliding_window_pattern"] = pattern;
                c["rope_local_base_freq"] = 10000.0; // llama.cpp's rope_freq_base_train_swa
            }
        }
    }
    Architecture a;
    if (Status s = parseArchitecture(c.dump(), f.path + " (its " + arch + ".* keys read as config.json)", a); !s)
        return s;
    if (arch == "gemma2" || arch == "gemma3") {
        a.norm = NormKind::RmsNorm; // the stored weights are 1 + w
        a.embeddingScale = double(float(std::sqrt(double(d))));
    }
    p.arch = std::move(a);
    return {};
}

// llama.cpp's T5 tensors (gguf-py's MODEL_TENSOR.ENC_* / DEC_*): enc.blk.N.* and dec.blk.N.*.
families::TensorNames t5NamesOf(const Architecture &a)
{
    families::TensorNames n;
    n.prefixes = {""};
    n.tokens = "token_embd.weight";
    n.lmHead = a.tiedEmbeddings ? std::string() : std::string("output.weight");
    n.layer = "dec.blk.{L}.";
    n.encoderLayer = "enc.blk.{L}.";
    n.attnNorm = "attn_norm";
    n.q = "attn_q";
    n.k = "attn_k";
    n.v = "attn_v";
    n.o = "attn_o";
    n.relativeBias = "attn_rel_b.weight";
    n.crossNorm = "cross_attn_norm";
    n.crossQ = "cross_attn_q";
    n.crossK = "cross_attn_k";
    n.crossV = "cross_attn_v";
    n.crossO = "cross_attn_o";
    n.ffnNorm = n.encoderFfnNorm = "ffn_norm";
    if (a.gatedMlp)
        n.gate = n.encoderGate = "ffn_gate";
    n.up = n.encoderUp = "ffn_up";
    n.down = n.encoderDown = "ffn_down";
    n.finalNorm = "dec.output_norm";
    n.encoderFinalNorm = "enc.output_norm";
    return n;
}

families::TensorNames namesOf(const GgufModelParts &p)
{
    const Architecture &a = p.arch;
    if (a.encoderDecoder)
        return t5NamesOf(a);
    families::TensorNames n;
    n.prefixes = {""};
    n.tokens = "token_embd.weight";
    if (a.positions == PositionKind::Learned)
        n.positions = "position_embd.weight";
    n.finalNorm = "output_norm";
    n.lmHead = a.tiedEmbeddings ? std::string() : std::string("output.weight");
    n.layer = "blk.{L}.";
    n.attnNorm = "attn_norm";
    if (p.archive.find("blk.0.attn_qkv.weight")) {
        n.qkv = "attn_qkv";
    } else {
        n.q = "attn_q";
        n.k = "attn_k";
        n.v = "attn_v";
    }
    n.o = "attn_output";
    if (a.qkNorm) {
        n.qNorm = "attn_q_norm";
        n.kNorm = "attn_k_norm";
    }
    n.ffnNorm = "ffn_norm";
    if (a.placement == NormPlacement::Sandwich) {
        n.postAttnNorm = "post_attention_norm";
        n.postFfnNorm = "post_ffw_norm";
    }
    if (a.gatedMlp && !p.archive.find("blk.0.ffn_gate.weight")) {
        n.gateUp = "ffn_up"; // Phi-3: [gate; up] rows in one tensor
    } else {
        if (a.gatedMlp)
            n.gate = "ffn_gate";
        n.up = "ffn_up";
    }
    n.down = "ffn_down";
    return n;
}

// The type most of the weights' elements have ("Q4_K"), for files without general.file_type.
std::string dominantType(const GgufFile &f)
{
    std::map<uint32_t, uint64_t> n;
    for (const GgufTensorInfo &t : f.tensors)
        if (t.ne.size() >= 2)
            n[t.type] += t.count;
    if (n.empty())
        return "";
    return ggmlTypeName(std::max_element(n.begin(), n.end(), [](const auto &x, const auto &y) { return x.second < y.second; })->first);
}

} // namespace

Status openGgufParts(const std::string &path, GgufModelParts &out)
{
    GgufModelParts p;
    if (Status st = p.archive.openGguf(path, &p.file); !st)
        return st;
    if (Status st = architectureOf(p); !st)
        return st;
    if (p.arch.family == "llama") // convert_hf_to_gguf permuted q and k for llama.cpp's rotary
        for (int l = 0; l < p.arch.layers; ++l) {
            p.archive.setRotaryHeads("blk." + std::to_string(l) + ".attn_q.weight", p.arch.heads);
            p.archive.setRotaryHeads("blk." + std::to_string(l) + ".attn_q.bias", p.arch.heads);
            p.archive.setRotaryHeads("blk." + std::to_string(l) + ".attn_k.weight", p.arch.kvHeads);
            p.archive.setRotaryHeads("blk." + std::to_string(l) + ".attn_k.bias", p.arch.kvHeads);
        }
    p.names = namesOf(p);
    if (const GgufValue *ft = p.file.find("general.file_type")) {
        if (!ft->isInteger())
            return Status::error(StatusCode::InvalidInput, p.file.path + ": metadata \"general.file_type\": type " +
                                                               ft->typeName() + ", expected uint32");
        p.quantization = ggufFileTypeName(ft->i);
    }
    if (p.quantization.empty())
        p.quantization = dominantType(p.file);
    out = std::move(p);
    return {};
}

std::string ggufQuantizationByKind(const GgufFile &f)
{
    // Kinds by the tensor name's last part before .weight.
    auto kindOf = [](const std::string &name) -> std::string {
        if (name == "token_embd.weight" || name == "position_embd.weight")
            return "embeddings";
        if (name == "output.weight")
            return "output";
        if (name.find("norm") != std::string::npos)
            return "norms";
        if (name.find(".attn_") != std::string::npos || name.find(".cross_attn_") != std::string::npos)
            return "attention";
        if (name.find(".ffn_") != std::string::npos)
            return "MLP";
        return "other";
    };
    std::map<std::string, std::map<std::string, uint64_t>> kinds; // kind -> type -> elements
    for (const GgufTensorInfo &t : f.tensors)
        kinds[kindOf(t.name)][ggmlTypeName(t.type)] += t.count;
    std::string s;
    for (const char *kind : {"attention", "MLP", "embeddings", "output", "norms", "other"}) {
        const auto it = kinds.find(kind);
        if (it == kinds.end())
            continue;
        std::string types;
        for (const auto &[type, n] : it->second)
            types += (types.empty() ? "" : " / ") + type;
        s += (s.empty() ? "" : ", ") + std::string(kind) + " " + types;
    }
    return s;
}

} // namespace attnviz::detail
