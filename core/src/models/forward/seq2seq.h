// SPDX-License-Identifier: GPL-3.0-or-later
// The encoder-decoder forward (private to the core): T5's, BART's, mBART's and Marian's weights in
// one layout (an encoder stack, a decoder stack whose blocks add cross-attention; a relative position
// bias per stack or a table of absolute positions per stack; an optional norm on each stack's input
// and after each stack; an optional bias on the logits) read under a family's TensorNames, and the
// teacher-forced pass that fills a Trace with the encoder's
// self-attention, the decoder's self-attention and cross-attention of every layer and head, the
// hidden states and the decoder's next-token predictions; generation's halves (the encoder once, the
// decoder's last position re-run, or one token a step over kept keys and values: Seq2SeqSteps); and
// seeded random weights for benchmarks. Written for exactness first (one plain product per head);
// float32 and float64.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"
#include "attnviz/transformer.h"

#include <memory>
#include <vector>

namespace attnviz {

namespace families {
struct TensorNames;
}

template <typename T>
struct Seq2SeqBlock {
    std::shared_ptr<const Projections<T>> self, cross; // cross: decoder blocks only
    LayerNorm<T> selfNorm, crossNorm,
        ffnNorm; // each sub-block's norm (before it, or after its add: Architecture::placement)
    Linear<T> gate, up, down;                         // gate empty: down(act(up x))
};

template <typename T>
struct Seq2SeqWeights {
    Mat<T> tokens; // (V, d) shared by the encoder, the decoder and (tied) the LM head
    Mat<T> lmHead; // (V, d); empty = tied to tokens
    std::vector<Seq2SeqBlock<T>> encoder, decoder;
    Mat<T> encoderBias, decoderBias; // (buckets, heads): block 0's relative position bias of each stack
    Mat<T> encoderPositions, decoderPositions;               // (rows, d): learned tables or the sinusoids; empty = none
    LayerNorm<T> encoderEmbeddingNorm, decoderEmbeddingNorm; // on each stack's input; gamma empty = none
    LayerNorm<T> encoderFinal, decoderFinal;                 // after each stack; gamma empty = none
    Vec<T> logitsBias;                                       // (V) added to the logits; empty = none
    int64_t parameters = 0;
    const Mat<T> &output() const { return lmHead.size() ? lmHead : tokens; }
};

// Reads the tensors `names` gives; messages name the file and the tensor. withDecoder false: the
// encoder's alone (llama.cpp's t5encoder files: token vectors, encoder blocks, its bias and final norm).
template <typename T>
Status loadSeq2SeqWeights(const TensorArchive &archive, const Architecture &arch, const families::TensorNames &names,
                          Seq2SeqWeights<T> &out, bool withDecoder = true);

// Seeded random weights of `arch`'s shape (benchmarks): every matrix normal with sd 0.02, norms the
// identity, biases zero, Marian's sinusoids computed.
void seedSeq2SeqWeights(const Architecture &arch, uint64_t seed, Seq2SeqWeights<float> &out);

template <typename To, typename From>
std::shared_ptr<const Seq2SeqWeights<To>> castSeq2SeqWeights(const Seq2SeqWeights<From> &w);

struct Seq2SeqInput {
    std::vector<int> source;  // the encoder's ids
    std::vector<int> decoder; // the decoder's ids: the start token, then the target
    int topK = 10;
    bool allPredictions = false; // next tokens at every decoder position (else the last only)
    bool keepScores = false;
    const std::atomic<bool> *cancel = nullptr;
};

// Fills out.seq2seq (its sourceTokens' ids only), out.layers, out.embeddings, out.input, out.final and
// out.predictions (token strings left empty for the caller). Ids must be below the vocabulary.
template <typename T>
Status runSeq2Seq(const Architecture &arch, const Seq2SeqWeights<T> &w, const Seq2SeqInput &in, Trace<T> &out);
// The encoder stack alone over `source` (a T5 encoder without its decoder): out's sourceEmbeddings,
// encoder blocks and encoderFinal, the same arithmetic as runSeq2Seq's encoder.
template <typename T>
Status runSeq2SeqEncoder(const Architecture &arch, const Seq2SeqWeights<T> &w, const std::vector<int> &source,
                         bool keepScores, const std::atomic<bool> *cancel, EncoderDecoderTrace<T> &out);

// Generation's two halves, the same arithmetic as runSeq2Seq: the encoder's final states of
// `source` (computed once per generated target), then per step the decoder over `decoder` (the start
// token and the target so far) against them: the log-softmax of the last position's logits over the
// vocabulary and that position's cross-attention row, (layers × heads, source) layer-major.
template <typename T>
Status encodeSeq2Seq(const Architecture &arch, const Seq2SeqWeights<T> &w, const std::vector<int> &source, Mat<T> &memory);
template <typename T>
Status nextLogProbs(const Architecture &arch, const Seq2SeqWeights<T> &w, const Mat<T> &memory, const std::vector<int> &decoder,
                    std::vector<double> &logProbs, Mat<double> &cross);

// Generation one token at a time: what a decoder step needs from the steps before it. The encoder's
// final states and each decoder layer's cross-attention keys and values are computed once per source
// (shared by every beam); each layer's self-attention keys and values grow by a row per step (a beam
// copies them when it is chosen). Rows [0, length) of selfK / selfV are in use.
template <typename T>
struct Seq2SeqCross {
    Mat<T> memory;                    // (source, d): the encoder's final states
    std::vector<Mat<T>> keys, values; // per decoder layer (source, heads x d_head)
};

template <typename T>
struct Seq2SeqSteps {
    std::shared_ptr<const Seq2SeqCross<T>> cross;
    std::vector<Mat<T>> selfK, selfV; // per decoder layer (capacity, heads x d_head)
    int length = 0;                   // decoder positions done
};

// The encoder over `source`, then each decoder layer's cross-attention keys and values; `out`
// starts with no decoder position.
template <typename T>
Status startSeq2SeqSteps(const Architecture &arch, const Seq2SeqWeights<T> &w, const std::vector<int> &source,
                         Seq2SeqSteps<T> &out);

// The decoder at the next position (`length`) reading `token`, its keys and values appended: the
// log-softmax of its logits and its cross-attention row (layers x heads, source) layer-major, equal
// to nextLogProbs over every token so far. `cross` may be null.
template <typename T>
Status stepSeq2Seq(const Architecture &arch, const Seq2SeqWeights<T> &w, Seq2SeqSteps<T> &steps, int token,
                   std::vector<double> &logProbs, Mat<double> *cross);

} // namespace attnviz
