// SPDX-License-Identifier: GPL-3.0-or-later
// The one seam between whatever computes and every view: a Model turns text into tokens and tokens
// into a Trace. Every kind of model attnviz knows implements it — the word-vector attention of the
// seed notebooks (one layer, cross-attention included), the transformer stack (seeded or loaded
// weights), real checkpoints (GPT-2, BERT) and the bundled trained model. A single attention layer
// is a one-layer trace. Views take a trace plus a (layer, head, query) selection and never ask which
// kind of model made it. The backend (CPU / GPU) is the model's business, beneath this interface.
//
// Names follow TransformerLens' hooks where they exist: per layer the residual stream entering it
// (resid_pre), what attention reads (ln1 output in a pre-norm block), q/k/v, scores, pattern
// (weights), z (context), attn_out, resid_mid (afterAttention), resid_post (output).
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/interventions.h"
#include "attnviz/status.h"
#include "attnviz/types.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnviz {

// One token as a model sees it.
struct TraceToken {
    std::string text;    // as the vocabulary spells it ("Ġcat", "##ing", "[CLS]") or the word ("ship")
    std::string display; // for labels: "␣cat" / "##ing" / "ship" (the space marker made visible)
    int id = -1;         // vocabulary id; -1 where the model has no vocabulary ids (word vectors)
    size_t begin = 0, end = 0; // byte range in the text it came from; begin == end for added specials
    bool special = false; // [CLS], [SEP], <|endoftext|> ... added by the tokenizer
    bool unknown = false; // out of vocabulary ([UNK], or a word vector stood in for a missing word)
};

// One scored vocabulary entry.
struct TokenProb {
    int id = -1;
    std::string token; // as in the vocabulary
    double p = 0.0;
    std::string display; // for labels: the decoded text ("’" for GPT-2's "âĢĻ"), spaces as "␣"
};

// What a causal language model predicts after one position: the top-k next tokens, the
// probability it gave the token that actually follows (NaN at the last position) and the log of
// its softmax's sum (NaN: not computed). One position of Predictions below.
struct NextTokens {
    std::vector<TokenProb> top; // best first
    double actualNext = std::numeric_limits<double>::quiet_NaN();
    double logNormalizer = std::numeric_limits<double>::quiet_NaN();
};

// What the model says about the text, when it has a head for it (optional parts of a trace).
struct Predictions {
    // Causal language models: per position i, the top-k next tokens after token i, and the
    // probability the model gave to the token that actually follows (NaN at the last position).
    // Both have one entry per token, but trace() runs the LM head (a t x vocabulary product, a
    // third of GPT-2 small's work at 128 tokens) only where asked: the last position always, every
    // position with TraceRequest::allPredictions. An empty next[i] (actualNext[i] NaN) is a
    // position not computed yet: Model::nextTokens computes it for a trace that is only read (a
    // view's hover), Model::predictAt fills it in. A trace handed back keeps
    // the positions before the first changed token; the one just before it keeps its top-k and gets
    // actualNext anew from its logNormalizer (one dot product, not a scan of the vocabulary).
    std::vector<std::vector<TokenProb>> next;
    std::vector<double> actualNext;
    std::vector<double> logNormalizer; // per position: log of the softmax's sum; NaN where not computed
    int topK = 0; // entries per computed position (TraceRequest::topK, at most the vocabulary)
    // Masked language models: one entry per [MASK] position, its top fills.
    struct Masked {
        int position = 0;
        std::vector<TokenProb> top;
    };
    std::vector<Masked> masked;
    bool empty() const { return next.empty() && masked.empty(); }
    // Position i of a causal model as one NextTokens (NaN and an empty top where not computed).
    NextTokens at(size_t i) const
    {
        NextTokens n;
        if (i < next.size())
            n.top = next[i];
        if (i < actualNext.size())
            n.actualNext = actualNext[i];
        if (i < logNormalizer.size())
            n.logNormalizer = logNormalizer[i];
        return n;
    }
    // Writes position i (next and actualNext have an entry for it; logNormalizer gets one).
    void set(size_t i, NextTokens n)
    {
        logNormalizer.resize(next.size(), std::numeric_limits<double>::quiet_NaN());
        next[i] = std::move(n.top);
        actualNext[i] = n.actualNext;
        logNormalizer[i] = n.logNormalizer;
    }
};

// Memory a model holds right after some of a trace's matrices so that, when the trace is handed back
// with a few more tokens, they grow in place instead of being copied (pretrainedforward.cpp says why
// and how). Each entry is a malloc'd block and the data pointer of the matrix it follows. Not part of
// the trace's values: a copy starts with none (the copied matrices live elsewhere); a move keeps them
// (the matrices' memory moves along). Only the thread computing the trace touches it.
class GrowthRoom {
public:
    GrowthRoom() = default;
    GrowthRoom(const GrowthRoom &) {}
    GrowthRoom(GrowthRoom &&o) noexcept : m_held(std::exchange(o.m_held, {})) {}
    GrowthRoom &operator=(const GrowthRoom &o)
    {
        if (this != &o)
            release();
        return *this;
    }
    GrowthRoom &operator=(GrowthRoom &&o) noexcept
    {
        if (this != &o) {
            release();
            m_held = std::exchange(o.m_held, {});
        }
        return *this;
    }
    ~GrowthRoom() { release(); }
    // The block held after `data`, handed over (the caller frees it); null if none.
    void *take(const void *data)
    {
        for (size_t i = 0; i < m_held.size(); ++i)
            if (m_held[i].first == data) {
                void *block = m_held[i].second;
                m_held[i] = m_held.back();
                m_held.pop_back();
                return block;
            }
        return nullptr;
    }
    void hold(const void *data, void *block) { m_held.emplace_back(data, block); }
    size_t size() const { return m_held.size(); }
    // Whether this build of the core holds any room: glibc's malloc, not a sanitizer's, Eigen 3.4.
    static bool heldInThisBuild();
    void release()
    {
        for (auto &h : m_held)
            std::free(h.second);
        m_held.clear();
    }

private:
    std::vector<std::pair<const void *, void *>> m_held;
};

// Where a layer's attention projections come from when the weights do not hold them in T: a model
// that keeps them as its file stores them (16 bits, ggml blocks) widens one layer when it is asked.
template <typename T>
struct ProjectionProvider {
    virtual ~ProjectionProvider() = default;
    virtual std::shared_ptr<const Projections<T>> projections() const = 0;
};

// A layer's attention projections as a trace refers to them: held in T, or a source that widens
// them on demand; null: identity projections. get() returns them (null for identity); a caller
// holds what it returns while it reads, as that may be the only owner of a widened copy.
template <typename T>
class ProjectionsRef {
public:
    ProjectionsRef() = default;
    ProjectionsRef(std::nullptr_t) {} // NOLINT: null is identity projections
    ProjectionsRef(std::shared_ptr<const Projections<T>> held) : m_held(std::move(held)) {} // NOLINT: held ones are a reference
    explicit ProjectionsRef(std::shared_ptr<const ProjectionProvider<T>> source) : m_source(std::move(source)) {}
    std::shared_ptr<const Projections<T>> get() const { return m_source ? m_source->projections() : m_held; }
    explicit operator bool() const { return m_held || m_source; }
    // What names them (the same layer's weights, widened or not): caches key on it while `owner` lives.
    const void *key() const { return m_source ? static_cast<const void *>(m_source.get()) : m_held.get(); }
    std::shared_ptr<const void> owner() const
    {
        if (m_source)
            return m_source;
        return m_held;
    }
    bool operator==(const ProjectionsRef &o) const { return key() == o.key(); }
    bool operator!=(const ProjectionsRef &o) const { return !(*this == o); }

private:
    std::shared_ptr<const Projections<T>> m_held;
    std::shared_ptr<const ProjectionProvider<T>> m_source;
};

// One layer of a trace.
template <typename T>
struct LayerTrace {
    AttentionResult<T> attention; // every stage of this layer's attention, a batch of one
    Mat<T> residualIn;     // (t, d) the residual stream entering the layer (resid_pre)
    Mat<T> attentionIn;    // (t, d) what the Q projection multiplies (= residualIn, or LN1 of it)
    Mat<T> keyIn;          // cross-attention: what the K/V projections multiply; empty = attentionIn
    Mat<T> afterAttention; // (t, d) residual stream after the attention sub-block (resid_mid); empty
                           // for a bare attention layer
    Mat<T> output;         // (t, d) the layer's output (resid_post; a bare layer: attention.output)
    // A gated MLP's (SwiGLU, GeGLU) two products before the gate's activation, (t, d_ff) each, when
    // TraceRequest::keepMlp asks: x·W_gateᵀ (TransformerLens' hook_pre) and x·W_upᵀ (hook_pre_linear),
    // x the normalized stream; the MLP reads act(pre) * preLinear. Empty otherwise.
    Mat<T> mlpPre, mlpPreLinear;
    // What the attention and MLP sub-blocks add to the residual stream (hook_attn_out, mlp_out; a
    // sandwich-norm model's after its post norms), (t, d) each, when TraceRequest::keepHookOutputs asks
    // (after any edit at those hooks). Empty otherwise.
    Mat<T> attnOut, mlpOut;
    // The weights the attention was computed with, for explanations; null = identity projections.
    ProjectionsRef<T> projections;
};

// What a trace of a real checkpoint keeps (TraceRequest::observe): the stages the visible views
// read; the rest is left empty in the trace (on a device, ForwardDevice in device.h, it stays there).
// The CPU also keeps every layer's k, v, mask and each row's log-sum-exp, which the next token reads
// (in a layer whose stages are left out, k and v per key/value head: SequenceResult::k).
struct Observe {
    std::vector<int> layers; // layers whose attention comes back (weights, their mean); empty: every layer
    std::vector<int> heads;  // heads of those layers whose weights come back; empty: every head
    bool stages = true;      // q, k, v, context, output and the residual streams of those layers too
    // Every layer's t x t weights, their mean and mask stored (the CPU forward). False: none, so that
    // a trace's memory is linear in its length; every layer keeps q (with k, v and each row's
    // log-sum-exp) and AttentionTiles (attentiontiles.h) computes any weight where it is read.
    bool weights = true;
    // With `weights` false, for a model whose weights are 16-bit (BF16, F16) in the float32 forward:
    // each layer whose stages are left out rounds q, k and v to that type right after projection and
    // rotation, computes its attention from them (as the model's own 16-bit runtime holds them), and
    // keeps them so (SequenceResult::q16): half the bytes of a long text's trace, its weights within
    // rounding of the float forward's and exactly what AttentionTiles recomputes. No effect otherwise.
    bool sixteenBit = false;
    bool everything() const { return layers.empty() && heads.empty() && stages && weights; }
    // Whether every layer's q is kept: with the stages, or in place of the weights.
    bool queries() const { return stages || !weights; }
    bool operator==(const Observe &o) const
    {
        return layers == o.layers && heads == o.heads && stages == o.stages && weights == o.weights &&
               sixteenBit == o.sixteenBit;
    }
    bool operator!=(const Observe &o) const { return !(*this == o); }
    bool layer(int l) const { return layers.empty() || std::find(layers.begin(), layers.end(), l) != layers.end(); }
    bool head(int h) const { return heads.empty() || std::find(heads.begin(), heads.end(), h) != heads.end(); }
    // Whether a trace that holds this holds everything `need` asks for.
    bool covers(const Observe &need) const
    {
        if (everything())
            return true;
        if (need.stages && !stages)
            return false;
        if ((need.weights && !weights) || (need.queries() && !queries()))
            return false;
        if (need.layers.empty() && !layers.empty())
            return false;
        for (int l : need.layers)
            if (!layer(l))
                return false;
        if (need.heads.empty())
            return heads.empty();
        for (int h : need.heads)
            if (!head(h))
                return false;
        return true;
    }
};

// A trace's attentions: its own layers (Trace::layers: a decoder-only or encoder-only model's, an
// encoder-decoder model's decoder self-attention), and an encoder-decoder model's encoder
// self-attention and cross-attention (Trace::seq2seq).
enum class AttentionKind { Self, Encoder, Cross };

// What an encoder-decoder model (T5) computed beyond its decoder's layers. Its Trace's tokens are the
// decoder's (the start token, then the target), its layers the decoder blocks' self-attention
// (residualIn the stream entering the block, afterAttention after self-attention's add, output the
// block's output after the MLP), final and predictions the decoder's.
template <typename T>
struct EncoderDecoderTrace {
    std::vector<TraceToken> sourceTokens; // what the encoder read
    Mat<T> sourceEmbeddings;              // (s, d) the source's token vectors (the encoder's input)
    std::vector<LayerTrace<T>> encoder;   // per encoder block: self-attention over the source and the MLP
    Mat<T> encoderFinal;                  // (s, d) the encoder's output after its final norm
    // Per decoder block: cross-attention, queries the decoder's tokens and keys the source.
    // residualIn: the stream after self-attention's add; attentionIn: its norm; keyIn: encoderFinal;
    // output (= afterAttention): the stream after cross-attention's add, which the MLP's norm reads.
    std::vector<LayerTrace<T>> cross;
    // Relative position biases (T5) are added to the scores (attention.scores hold them) and are not
    // recoverable from q and k: no log-sum-exp is kept, the weights are stored.
};

// Everything a model computed on one text.
template <typename T>
struct Trace {
    std::vector<TraceToken> tokens;    // queries
    std::vector<TraceToken> keyTokens; // cross-attention keys; empty = self-attention (= tokens)
    int totalTokens = 0, totalKeyTokens = 0; // before a cut at the model's limit
    std::string cutReason;             // why the text was cut ("GPT-2 reads at most 1,024 tokens")
    Mat<T> embeddings;                 // (t, d) token vectors as looked up
    Mat<T> keyEmbeddings;              // cross-attention: the key sentence's vectors
    Mat<T> input;                      // (t, d) what layer 0 reads (embeddings + positions ...)
    std::vector<LayerTrace<T>> layers;
    Mat<T> final;                      // (t, d) after the last layer (and a final LayerNorm if any)
    Predictions predictions;
    std::string device;                // what computed it: "cpu", "vulkan", ...
    std::string deviceNote;            // the device's name, and why the CPU computed where another
                                       // device was asked for ("" where nothing was asked)
    // The user masks it was computed with (TraceRequest's), and which model made it: a causal
    // model handed back a trace it made (the last one, or the one before: double buffers work)
    // recomputes only from the first token that changed.
    std::vector<int> paddedKeys;
    std::vector<std::pair<int, int>> maskedCells;
    uint64_t producer = 0; // 0: none; otherwise unique per model instance and precision
    // What it holds: everything, or what TraceRequest::observe asked for (the layers not observed
    // have empty matrices).
    Observe observed;
    GrowthRoom room;       // where its stage matrices may grow in place (real checkpoints' forward)
    // The interventions it was computed with (TraceRequest::edits): empty, the model as it is;
    // otherwise every stage is that of the edited model.
    std::vector<Intervention> edits;
    bool edited() const { return !edits.empty(); }

    EncoderDecoderTrace<T> seq2seq; // encoder-decoder models; empty otherwise

    int numLayers() const { return int(layers.size()); }
    int numHeads() const { return layers.empty() ? 0 : layers.front().attention.numHeads; }
    bool encoderDecoder() const { return !seq2seq.encoder.empty(); }
    // One of the trace's attentions (Encoder and Cross: empty unless encoderDecoder()), with the
    // tokens of its queries and keys.
    const std::vector<LayerTrace<T>> &attentions(AttentionKind kind) const
    {
        return kind == AttentionKind::Encoder ? seq2seq.encoder : kind == AttentionKind::Cross ? seq2seq.cross : layers;
    }
    const std::vector<TraceToken> &queriesOf(AttentionKind kind) const
    {
        return kind == AttentionKind::Encoder ? seq2seq.sourceTokens : tokens;
    }
    const std::vector<TraceToken> &keysOf(AttentionKind kind) const
    {
        return kind == AttentionKind::Self ? keys() : seq2seq.sourceTokens;
    }
    bool cross() const { return !keyTokens.empty(); }
    const std::vector<TraceToken> &keys() const { return cross() ? keyTokens : tokens; }
    bool cut() const { return int(tokens.size()) < totalTokens || int(keys().size()) < totalKeyTokens; }
    // Weights of (layer, head); head -1 = the mean over heads.
    const WeightMatrix<T> &weights(int layer, int head) const
    {
        const SequenceResult<T> &s = layers[size_t(layer)].attention.batch.front();
        return head < 0 || head >= int(s.weights.size()) ? s.weightsAvg : s.weights[size_t(head)];
    }
};

// Facts about a model (attnviz model info).
struct ModelInfo {
    std::string family;    // "word-vectors", "stack", or a checkpoint's family: "gpt2", "llama", "gemma3" ...
    std::string name;      // "gpt2", "attnviz-tiny", the folder's name ...
    std::string source;    // folder or file it was read from; empty for built-ins
    int layers = 0, heads = 0, dModel = 0, dHead = 0, dFeedForward = 0;
    int kvHeads = 0;       // key/value heads; fewer than heads: grouped-query attention
    int vocabulary = 0;    // 0: no vocabulary ids (word vectors)
    int maxPositions = 0;  // 0: no limit of its own
    int64_t parameters = 0;
    std::string tokenizer; // "byte-level BPE (50,257)", "WordPiece, lower case (30,522)", "words"
    std::string dtype;     // of the file: F32, F16, BF16; empty for built-ins
    int64_t weightBytes = 0; // the float weights' memory: 16-bit files keep their MLP, embedding and
                             // LM-head matrices in 16 bits; 0 for built-ins
    bool causal = false;   // attends only backwards (GPT-2): next-token predictions
    bool maskedLm = false; // has a masked-LM head (BERT): [MASK] fills
    // Real checkpoints: the architecture the forward pass read (norms, positions, windows ...);
    // views read it, never the family's name. Empty (layers 0) for the word-vector models.
    Architecture architecture;
};

class ForwardDevice; // device.h


// What to compute. Masks beyond the model's own (causal models are always causal) come from the
// user's clicks: padded key positions and custom (query, key) cells.
struct TraceRequest {
    std::string text;
    std::string keyText;            // cross-attention (only models that support it); empty = self
    std::vector<int> paddedKeys;    // key positions masked as padding
    std::vector<std::pair<int, int>> maskedCells; // (query, key) masked by hand
    int maxTokens = 0;              // 0: the model's own limit
    int topK = 10;                  // predictions kept per position
    std::vector<int> ids;           // non-empty: trace these vocabulary ids instead of the text
                                    // (specials as given: nothing is added)
    bool keepScores = false;        // true: attention.scores kept too (t^2 x heads a layer more; the
                                    // pipeline view derives scores from q and k and needs none)
    bool keepMlp = false;           // gated MLPs: LayerTrace::mlpPre and mlpPreLinear kept too (2 x t x
                                    // d_ff a layer more)
    bool allPredictions = false;    // causal models: next tokens at every position, not only the last
    // Causal language models: false leaves the LM head out altogether (no position's next tokens:
    // Predictions::next empty, as not computed), for a caller that reads the logits it needs from
    // Trace::final itself (patching.h's metrics: a scan of the vocabulary fewer per cell).
    bool lmHead = true;
                                    // (see Predictions::next; Model::nextTokens / predictAt compute one
                                    // on demand)
    // Causal models, float traces: another trace this model made (the one on screen, while the trace
    // handed back is an older one of a double buffer). Where it shares a longer prefix with the new
    // tokens than the trace handed back does, those rows are copied from it instead of recomputed.
    // Only read; the caller keeps it alive and unchanged during the call. Null: none.
    const Trace<float> *prefixFrom = nullptr;
    const std::atomic<bool> *cancel = nullptr; // set by the caller to stop early (Status Cancelled)
    // Real decoder-only and encoder-only checkpoints on the CPU: called on the calling thread as each layer
    // starts (done = the layers finished, of `layers`) and once all are done (layers, layers); a long
    // text's prefill takes minutes on a large model. Empty: none.
    std::function<void(int done, int layers)> progress;
    // Real checkpoints, float traces: compute on this device where it supports the model (null: the
    // CPU); Trace::device and deviceNote say what did. Only read during the call.
    ForwardDevice *device = nullptr;
    Observe observe; // what the trace keeps (real checkpoints; everything by default)
    // Real checkpoints: edits of the forward at hook points (interventions.h), applied in order (an
    // edit reads the hook as the edits before it left it). A trace with edits is computed whole on
    // the CPU (a device asked for is not used: Trace::deviceNote says so) and never continues, nor is
    // continued by, a trace without the same edits. Other models refuse a request with edits.
    std::vector<Intervention> edits;
    // Real checkpoints, causal models, with edits: the trace of this same request without its edits
    // (made by this model on the CPU: the same tokens, masks and stages). What no edit can reach is
    // copied from it instead of computed: every layer before the first edited one, and in the others
    // the positions before the first edited position (edits of listed positions, zero or value; any
    // other edit reads every position). The numbers stay those of the whole forward, bit for bit (the
    // copied rows start where the products' row blocks do: runForward). The sweeps of patching.h run
    // their cells so. Only read; the caller keeps it alive and unchanged during the call. Null: none.
    const Trace<float> *unedited = nullptr;
    const Trace<double> *uneditedDouble = nullptr;
    // Real checkpoints: LayerTrace::attnOut and mlpOut kept too (hook_attn_out, mlp_out; 2 x t x d a
    // layer more), so that hookValue can read them (patching from this trace).
    bool keepHookOutputs = false;
    // Encoder-decoder models: `text` (or `ids`) is the source the encoder reads; the decoder reads its
    // start token and then the target, teacher-forced: targetIds where given (nothing added), else
    // `target` tokenized (without the end token the source gets).
    std::string target;
    std::vector<int> targetIds;
};

struct ReadoutWeights; // core/src/reads/readout.h: what reads.h needs of a checkpoint's weights

class Model {
public:
    virtual ~Model() = default;
    virtual ModelInfo info() const = 0;
    // Text -> tokens, exactly as trace() will see them (specials included).
    virtual Status tokenize(std::string_view text, std::vector<TraceToken> &out) const = 0;
    // Tokens -> trace. May keep state between calls (a causal model keeps the keys and values of
    // the unchanged prefix), so one Model is used by one thread at a time. Real checkpoints keep
    // that state in `out` itself: pass back a trace the same model made (see Trace::producer) and
    // only the tokens from the first change on are computed; any other `out` is recomputed whole.
    virtual Status trace(const TraceRequest &request, Trace<float> &out) = 0;
    // The float64 reference path, where a model has one (model run --precision float64).
    virtual Status trace(const TraceRequest &request, Trace<double> &out)
    {
        (void)request;
        (void)out;
        return Status::error(StatusCode::Unavailable, info().name + ": no float64 path");
    }
    // Causal language models: fills trace.predictions.next[position] and actualNext[position] where
    // trace() left them out (see Predictions::next); nothing to do where they are filled. `trace`
    // must be one this model made (Trace::producer) and is otherwise left alone.
    virtual Status predictAt(Trace<float> &trace, int position) const
    {
        (void)trace;
        (void)position;
        return Status::error(StatusCode::Unavailable, info().name + ": no next-token predictions");
    }
    virtual Status predictAt(Trace<double> &trace, int position) const
    {
        (void)trace;
        (void)position;
        return Status::error(StatusCode::Unavailable, info().name + ": no next-token predictions");
    }
    // The same position computed for a trace that is only read: what predictAt would fill in, into
    // `out` (a copy where the trace holds it already), `trace` untouched. It reads the weights and
    // the trace alone, never what trace() writes, so a view may call it from its own thread on a
    // snapshot's trace (shared, const) while the compute thread traces the next text with this
    // model. Float traces; the float64 one only where no float64 trace() runs beside it.
    virtual Status nextTokens(const Trace<float> &trace, int position, NextTokens &out) const
    {
        (void)trace;
        (void)position;
        (void)out;
        return Status::error(StatusCode::Unavailable, info().name + ": no next-token predictions");
    }
    virtual Status nextTokens(const Trace<double> &trace, int position, NextTokens &out) const
    {
        (void)trace;
        (void)position;
        (void)out;
        return Status::error(StatusCode::Unavailable, info().name + ": no next-token predictions");
    }
    // The final norm, unembedding and tokenizer that the logit lens, attribution and generation
    // (reads.h) read; null where the model has none (word vectors, the seeded stack). Valid while
    // the model lives.
    virtual std::shared_ptr<const ReadoutWeights> readout() const { return nullptr; }
    // The text of `ids` as the model's tokenizer writes it (what generation appends); "" where the
    // model has no tokenizer to decode with. By default the readout's.
    virtual std::string decode(const std::vector<int> &ids) const;
};

} // namespace attnviz
