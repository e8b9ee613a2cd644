// SPDX-License-Identifier: GPL-3.0-or-later
// A transformer's architecture as data: one Architecture value says everything the forward pass
// (core/src/models/forward/) needs to know about a model — shapes, the norm and where it sits, how
// positions enter (learned tables or rotary, with every RoPE variant Hugging Face implements), the
// MLP, biases, q/k norms, scales, soft-capping, masks and sliding windows per layer, the head. Each
// family (core/src/models/families/) maps its config.json onto it; the forward and the views read
// the architecture and never a family's name. Names follow Hugging Face's config fields and
// TransformerLens' HookedTransformerConfig where they exist.
#pragma once

#include "attnviz/status.h"
#include "attnviz/types.h"

#include <string>
#include <vector>

namespace attnviz {

enum class NormKind {
    LayerNorm,      // (x - mean) / sqrt(var + eps) * w + b
    RmsNorm,        // x / sqrt(mean(x^2) + eps) * w            (Llama, Qwen, Mistral, Phi-3)
    RmsNormPlusOne, // x / sqrt(mean(x^2) + eps) * (1 + w)      (Gemma: the file stores w - 1)
};

// Where a block's norms sit.
enum class NormPlacement {
    Pre,      // x + Attn(N1(x)); x + MLP(N2(x))                                 (GPT-2, Llama ...)
    Post,     // N1(x + Attn(x)); N2(x + MLP(x))                                 (BERT)
    Sandwich, // x + N1'(Attn(N1(x))); x + N2'(MLP(N2(x))): four norms a block  (Gemma 2 / 3)
};

// Learned: a table of absolute positions added to the embeddings; Rotary: RoPE on q and k;
// RelativeBuckets: T5's bucketed relative position bias, one learned scalar per (bucket, head) added
// to the scores (Architecture::relative), nothing added to the embeddings; Sinusoidal: Marian's fixed
// table (marianPositions), computed rather than stored, added to the embeddings.
enum class PositionKind { Learned, Rotary, RelativeBuckets, Sinusoidal };

// Hugging Face's rope_type values (modeling_rope_utils.py).
enum class RopeType { Default, Linear, Dynamic, Llama3, Yarn, LongRope };

struct Rope {
    double theta = 10000.0;
    int dims = 0; // rotated dimensions of each head (partial rotary: fewer than d_head); even
    RopeType type = RopeType::Default;
    double factor = 1.0;
    int originalMaxPositions = 0; // llama3, yarn, longrope, dynamic
    double lowFreqFactor = 1.0, highFreqFactor = 4.0; // llama3
    double betaFast = 32.0, betaSlow = 1.0;           // yarn
    double mscale = 0.0, mscaleAllDim = 0.0;          // yarn (0: absent)
    bool truncate = true;                             // yarn
    double attentionFactor = 0.0;                     // yarn, longrope: 0 = derived as HF derives it
    std::vector<double> shortFactor, longFactor;      // longrope, dims / 2 each
    // Whether the angles depend on the text's length (dynamic NTK and longrope switch above the
    // original positions): the prefix of an earlier trace is then reused only below that length.
    bool dependsOnLength() const { return type == RopeType::Dynamic || type == RopeType::LongRope; }
};

enum class Activation { GeluTanh, GeluErf, Relu, Silu };

// How a row of scores becomes a row of weights. Checkpoints all use the default (softmax, masked
// keys at -inf, a row with every key masked left at 0, no dropout); the seed-002 teaching stack lets
// the user choose the rest of types.h's rules, and the forward then computes that layer's attention
// with computeAttention (attention.h), which implements them.
struct WeightRule {
    Normalization normalization = Normalization::Softmax;
    MaskMethod maskMethod = MaskMethod::NegInf;
    FullyMaskedPolicy fullyMasked = FullyMaskedPolicy::Zero;
    double dropout = 0.0;
    uint64_t dropoutSeed = 0;
    DropoutStream dropoutStream = DropoutStream::TorchMkl;
    // The default softmax, whatever a fully masked row gets (that is decided per text)
    bool softmax() const
    {
        return normalization == Normalization::Softmax && maskMethod == MaskMethod::NegInf && dropout == 0.0;
    }
};

// T5's relative position bias (modeling_t5.py, T5Attention._relative_position_bucket): key j of
// query i falls in a bucket of j - i; half the buckets are exact distances, the rest log-spaced up
// to maxDistance. Bidirectional (the encoder): separate buckets for keys after the query; otherwise
// (the decoder) keys after the query share bucket 0 (causality masks them anyway).
struct RelativeBuckets {
    int buckets = 32, maxDistance = 128;
    int bucket(int relative, bool bidirectional) const; // relative = key - query
};

// An encoder-decoder model (T5, BART, mBART, Marian): `layers` are the decoder's blocks, each
// self-attention (causal), cross-attention (decoder queries, keys and values from the encoder's
// output) and MLP; the encoder has `encoderLayers` blocks of self-attention (bidirectional) and MLP of
// the same widths. Both stacks share the token embeddings; positions (Learned, Sinusoidal) are added
// per stack from position 0, embeddingNorm normalizes each stack's input (BART's
// layernorm_embedding), finalNorm closes each stack (T5, mBART).
struct EncoderDecoderShape {
    int encoderLayers = 0;
    int decoderStartId = 0; // the decoder's first token (T5, Marian: the pad id; BART: </s>)
    int eosId = 1;          // what ends a generated target
    int padId = 0;
    int bosId = -1;          // what the tokenizer puts before a source (BART's <s>); -1 = nothing
    int positionOffset = 0;  // learned positions: position i reads row i + offset (BART: 2)
    bool logitsBias = false; // a bias added to every logit (BART, Marian: final_logits_bias; zeros when absent)
};

enum class LmHead {
    CausalLm, // next-token predictions through the (tied or separate) unembedding
    MaskedLm, // BERT's transform + LayerNorm + decoder, at [MASK] positions
    None,     // a bare encoder: no predictions
};

struct Architecture {
    std::string family;    // the registry's name for it: "gpt2", "bert", "llama", "gemma3" ...
    std::string modelType; // as config.json writes it ("gemma3_text", "distilbert" ...)

    int layers = 0;
    int heads = 0;   // query heads
    int kvHeads = 0; // key/value heads (grouped-query attention when fewer than heads)
    int dModel = 0;
    int dHead = 0;   // may differ from dModel / heads (Qwen3, Gemma)
    int dFeedForward = 0;
    int vocabulary = 0;
    int maxPositions = 0;
    int typeVocabulary = 0; // BERT's token types

    NormKind norm = NormKind::LayerNorm;
    NormPlacement placement = NormPlacement::Pre;
    double normEps = 1e-5;
    bool embeddingNorm = false; // BERT: a LayerNorm on the embeddings
    bool finalNorm = true;      // a norm after the last block (GPT-2's ln_f, Llama's model.norm)

    PositionKind positions = PositionKind::Learned;
    Rope rope;      // rotary: global (full-attention) layers
    Rope ropeLocal; // rotary: sliding-window layers where they have their own base (Gemma 3)
    bool localRope = false;

    Activation activation = Activation::GeluTanh;
    bool gatedMlp = false; // down(act(gate(x)) * up(x)) (SwiGLU, GeGLU) instead of down(act(up(x)))

    bool qkvBias = true, outBias = true, mlpBias = true;
    bool qkNorm = false; // a norm over d_head on each head's q and k before rotation (Qwen3, Gemma 3)

    double embeddingScale = 1.0; // Gemma: sqrt(d_model) (Gemma 3: rounded to the checkpoint's dtype)
    double attentionScale = 0.0; // multiplied onto q·k; 0 = 1/sqrt(d_head)
    double attentionSoftcap = 0.0, finalSoftcap = 0.0; // Gemma 2: tanh(x / c) * c; 0 = none

    bool causal = true;
    WeightRule weightRule;
    std::vector<int> window; // per layer: 0 = full attention, w = keys j with i - w < j <= i

    bool tiedEmbeddings = true;
    LmHead head = LmHead::CausalLm;
    double outputScale = 1.0; // multiplied onto the final hidden states before the LM head (T5 tied: d_model^-0.5)

    RelativeBuckets relative;  // positions == RelativeBuckets
    bool encoderDecoder = false;
    EncoderDecoderShape seq2seq; // encoderDecoder only

    int kvGroup() const { return kvHeads > 0 ? heads / kvHeads : 1; } // query heads per key/value head
    int kvHeadOf(int head) const { return head / kvGroup(); }
    double scale() const;                          // attentionScale, or 1/sqrt(d_head)
    const Rope &ropeOf(int layer) const;           // the layer's rotary parameters
    int windowOf(int layer) const { return layer >= 0 && size_t(layer) < window.size() ? window[size_t(layer)] : 0; }
    bool slides() const;                           // some layer has a sliding window
    // Shapes that fit together (heads dividing, kv heads dividing heads, rotary dims within d_head);
    // the message names the config field.
    Status validate() const;
};

// Inverse frequencies (dims / 2) and the factor Hugging Face multiplies onto cos and sin
// ("attention_scaling"), for a text of `length` tokens (only dynamic and longrope read it).
struct RopeTable {
    std::vector<double> invFreq;
    double attentionScaling = 1.0;
};
RopeTable ropeTable(const Rope &rope, int length);

// Reads DIR/config.json through the family registry (core/src/models/families/). Errors name the
// file and the field ("DIR/config.json: num_key_value_heads: 3 does not divide num_attention_heads 8").
Status readArchitecture(const std::string &dir, Architecture &out);
// The same from config.json's text (fuzzing, tests); `name` stands for the file in messages.
Status parseArchitecture(const std::string &configJson, const std::string &name, Architecture &out);

// The model types attnviz reads, in registry order ("gpt2", "bert", "distilbert", "llama" ...).
std::vector<std::string> knownModelTypes();

// Shapes of real checkpoints for seeded benchmarks (no download): "gpt2-small", "bert-base",
// "smollm2-135m", "qwen3-0.6b", "llama3.2-1b". False for an unknown name. `dtype`: the precision
// the checkpoint is published in ("F32" for GPT-2 and BERT, "BF16" for the rotary decoders).
bool seededShape(const std::string &name, Architecture &out, std::string *dtype = nullptr);

// Marian's sinusoidal positions (MarianSinusoidalPositionalEmbedding._init_weight): row p, column j
// < ceil(d / 2): sin(p / 10000^(2j / d)); column ceil(d / 2) + j: cos(p / 10000^(2j / d)) — sines in
// the first half, cosines in the second, not interleaved as transformer.h's sinusoidalPositions —
// computed in float64 and stored as float32 (torch.FloatTensor), as the model adds them. (rows, d)
// row-major.
std::vector<float> marianPositions(int rows, int d);
std::vector<std::string> seededShapeNames();

} // namespace attnviz
