// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma 2: embeddings scaled by sqrt(hidden_size), RMSNorm with (1 + w), four norms a block
// (input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
// post_feedforward_layernorm), q·k scaled by query_pre_attn_scalar^-1/2, attention and final
// logits soft-capped (tanh(x / c) * c), a sliding window on every other layer (layers 0, 2, 4 ...,
// or as layer_types says), GeGLU with the tanh GELU, tied. Gemma2Config's defaults otherwise.
// The embedding scale sqrt(hidden_size) is taken in the checkpoint's dtype (torch_dtype / dtype),
// as the original implementations and Hugging Face's default load ("auto": the file's dtype) compute
// it: sqrt(640) = 25.298 is 25.25 in bfloat16 (Gemma 2 casts it to the hidden states' dtype, Gemma
// 3 keeps it in a buffer of the dtype it is loaded in; transformers 5.17 checked on gemma3-tiny).
#include "family.h"

#include <Eigen/Core>

#include <cmath>

namespace attnviz::families {

double roundToDtype(double x, const std::string &dtype)
{
    if (dtype == "bfloat16")
        return double(float(Eigen::bfloat16(float(x))));
    if (dtype == "float16")
        return double(float(Eigen::half(float(x))));
    return dtype == "float32" ? double(float(x)) : x;
}

std::string configDtype(const nlohmann::json &j)
{
    for (const char *key : {"dtype", "torch_dtype"}) // transformers 5 writes `dtype`
        if (j.contains(key) && j[key].is_string())
            return j[key].get<std::string>();
    return std::string();
}

namespace {

// What Gemma 2 and Gemma 3 share beyond Llama's fields.
Status readGemmaCommon(const ConfigFields &c, Architecture &a, double softcapAttn, double softcapFinal)
{
    double scalar = 0;
    if (Status st = c.number("query_pre_attn_scalar", scalar, 1e-6, 1e9, 256); !st)
        return st;
    a.attentionScale = 1.0 / std::sqrt(scalar);
    if (Status st = c.activation({"hidden_activation", "hidden_act"}, a.activation, "gelu_pytorch_tanh"); !st)
        return st;
    a.attentionSoftcap = softcapAttn;
    a.finalSoftcap = softcapFinal;
    if (c.has("attn_logit_softcapping") || c.json().contains("attn_logit_softcapping"))
        if (Status st = c.optionalPositive("attn_logit_softcapping", a.attentionSoftcap); !st)
            return st;
    if (c.has("final_logit_softcapping") || c.json().contains("final_logit_softcapping"))
        if (Status st = c.optionalPositive("final_logit_softcapping", a.finalSoftcap); !st)
            return st;
    a.norm = NormKind::RmsNormPlusOne;
    a.placement = NormPlacement::Sandwich;
    a.embeddingScale = roundToDtype(std::sqrt(double(a.dModel)), configDtype(c.json()));
    return {};
}

Status readGemma2(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.tied = true;
    d.maxPositions = 8192;
    d.headDim = 256;
    d.activation = "gelu_pytorch_tanh";
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    if (Status st = readGemmaCommon(c, a, 50.0, 30.0); !st)
        return st;
    return c.slidingWindows(a, 4096, 2);
}

TensorNames gemmaNames(const Architecture &a)
{
    TensorNames n = llamaNames(a);
    n.ffnNorm = "pre_feedforward_layernorm";
    n.postAttnNorm = "post_attention_layernorm";
    n.postFfnNorm = "post_feedforward_layernorm";
    return n;
}

} // namespace

// Shared with gemma3.cpp.
Status readGemmaShared(const ConfigFields &c, Architecture &a, double softcapAttn, double softcapFinal)
{
    return readGemmaCommon(c, a, softcapAttn, softcapFinal);
}
TensorNames gemmaTensorNames(const Architecture &a) { return gemmaNames(a); }

const Family kGemma2{"gemma2", {"gemma2"}, readGemma2, gemmaNames};

} // namespace attnviz::families
