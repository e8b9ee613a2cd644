// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma 3 (gemma3_text, and the text model inside the multimodal `gemma3` wrapper's text_config):
// Gemma 2's block without attention soft-capping (Hugging Face's Gemma 3 attention ignores the field), with q_norm / k_norm ((1 + w) RMSNorm over each
// head), five sliding layers to one global (sliding_window_pattern 6: layer l slides unless
// (l + 1) % 6 == 0; or layer_types), and two rotary bases: rope_local_base_freq (10,000) on sliding
// layers, rope_theta (1,000,000, with rope_scaling) on global ones.
// Wrapper tensors: language_model.model.* (older files) or model.language_model.* (newer ones);
// the wrapper's dtype applies to its text model (the embedding scale's rounding, gemma2.cpp).
#include "family.h"

namespace attnviz::families {

Status readGemmaShared(const ConfigFields &c, Architecture &a, double softcapAttn, double softcapFinal);
double roundToDtype(double x, const std::string &dtype);
std::string configDtype(const nlohmann::json &j);
TensorNames gemmaTensorNames(const Architecture &a);

namespace {

Status readText(const ConfigFields &c, Architecture &a)
{
    LlamaDefaults d;
    d.tied = true;
    d.maxPositions = 131072;
    d.headDim = 256;
    d.theta = 1e6;
    d.activation = "gelu_pytorch_tanh";
    a.qkNorm = true;
    if (Status st = readLlamaLike(c, a, d); !st)
        return st;
    if (Status st = readGemmaShared(c, a, 0.0, 0.0); !st)
        return st;
    a.attentionSoftcap = 0; // Gemma3Attention never passes attn_logit_softcapping on, whatever the file says
    // Global layers: rope_theta with rope_scaling (or rope_parameters.full_attention).
    if (Status st = c.rope(a.rope, a.rope.dims, d.theta, a.maxPositions, "full_attention"); !st)
        return st;
    // Sliding layers: their own base, no scaling.
    double local = 10000;
    if (Status st = c.number("rope_local_base_freq", local, 1.0001, 1e12, 10000); !st)
        return st;
    a.ropeLocal = Rope();
    a.ropeLocal.dims = a.rope.dims;
    a.ropeLocal.theta = local;
    a.ropeLocal.originalMaxPositions = a.maxPositions;
    if (c.has("rope_parameters") && c.json()["rope_parameters"].contains("sliding_attention"))
        if (Status st = c.rope(a.ropeLocal, a.rope.dims, local, a.maxPositions, "sliding_attention"); !st)
            return st;
    a.localRope = true;
    int pattern = 6;
    if (Status st = c.integer({"sliding_window_pattern"}, pattern, 1, 1 << 20, &pattern); !st)
        return st;
    return c.slidingWindows(a, 4096, pattern);
}

Status readGemma3(const ConfigFields &c, Architecture &a)
{
    if (a.modelType != "gemma3")
        return readText(c, a);
    if (!c.has("text_config") || !c.json()["text_config"].is_object())
        return c.bad("text_config", "missing (a gemma3 folder keeps its language model's fields there)");
    const ConfigFields text(c.json()["text_config"], c.file() + ": text_config");
    if (Status st = readText(text, a); !st)
        return st;
    if (configDtype(text.json()).empty())
        a.embeddingScale = roundToDtype(a.embeddingScale, configDtype(c.json()));
    return {};
}

TensorNames gemma3Names(const Architecture &a)
{
    TensorNames n = gemmaTensorNames(a);
    if (a.modelType == "gemma3") {
        n.prefixes = {"language_model.model.", "model.language_model."};
        if (!n.lmHead.empty())
            n.lmHead = "language_model.lm_head.weight";
    }
    return n;
}

} // namespace

const Family kGemma3{"gemma3", {"gemma3_text", "gemma3"}, readGemma3, gemma3Names};

} // namespace attnviz::families
