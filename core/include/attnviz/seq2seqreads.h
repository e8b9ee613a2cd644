// SPDX-License-Identifier: GPL-3.0-or-later
// The logit lens and direct logit attribution of an encoder-decoder model's decoder (T5, BART,
// mBART, Marian), its three sub-layers told apart: per decoder layer the residual stream after
// self-attention, after cross-attention and after the MLP, each read through the model's own head
// (its final norm where it has one, T5's d_model^-0.5 on a tied head, the logits bias), and one
// logit split into the decoder's input, each self-attention head, each cross-attention head and
// each MLP. Computed from a trace the model made (float32 or float64: the float64 one reads the
// float64 weights).
#pragma once

#include "attnviz/model.h"
#include "attnviz/reads.h"

#include <string>
#include <vector>

namespace attnviz {

// The decoder's sub-layer boundaries, three per layer: row 3l is the stream after layer l's
// self-attention add, 3l + 1 after its cross-attention add, 3l + 2 after its MLP add (the layer's
// output). In a post-norm model (BART, Marian) each is the stream after that add's LayerNorm: what
// the next sub-layer reads, on the scale the head reads the last one.
enum class DecoderStage { Self, Cross, Mlp };

// "L2 self", "L2 cross", "L2 MLP" (layers counted from 0, as the other views do).
std::string decoderStageName(int layer, DecoderStage stage);
inline int decoderStageRow(int layer, DecoderStage stage) { return 3 * layer + int(stage); }

// Rows are the stages above (3 x layers), columns the decoder's positions (the start token, then
// the target); cells[row * positions + position]. A cell's "actual" token is the target token that
// follows the position (none at the last). The last row is the model's own prediction.
struct Seq2SeqLens {
    int layers = 0, positions = 0, topK = 0;
    std::vector<LensCell> cells;
    int rows() const { return 3 * layers; }
    const LensCell &at(int row, int position) const { return cells[size_t(row) * size_t(positions) + size_t(position)]; }
    LensCell &at(int row, int position) { return cells[size_t(row) * size_t(positions) + size_t(position)]; }
};

// Every stage x position. Unavailable for a model that is not an encoder-decoder one (or a trace
// it did not make); `cancel` is checked between chunks of positions.
template <typename T>
Status seq2seqLens(const Model &model, const Trace<T> &trace, int topK, Seq2SeqLens &out,
                   const std::atomic<bool> *cancel = nullptr);

// One position: out[row] for every stage row.
template <typename T>
Status seq2seqLensColumn(const Model &model, const Trace<T> &trace, int position, int topK, std::vector<LensCell> &out);

// Direct logit attribution of one decoder position and one target token. A pre-norm decoder (T5,
// mBART) ends x_L = input + sum over layers of (self-attention out + cross-attention out + MLP out),
// each attention's out the sum of its heads' z_h W_O^h and its output bias; the final norm's scale
// is frozen from x_L (its centring, for a LayerNorm, applied to each part: it is linear), so each
// part c gives outputScale * centre(c) . (gain * e_target), the norm's bias and the logits bias are
// terms of their own, and the parts sum to the logit. A post-norm decoder (BART, Marian) normalizes
// the whole stream after every add, so every part is rescaled and re-centred by each LayerNorm after
// it, whose scale depends on every other part: its logit is no sum of direct paths, and attribution
// answers Unavailable saying so (the lens still reads each stage).
struct Seq2SeqAttribution {
    int position = 0;
    int target = -1;
    std::string targetToken;   // its spelling in the vocabulary
    std::string targetDisplay; // as labels show it (spaces as "␣")
    int layers = 0, heads = 0;
    double logit = 0;       // the model's logit of the target at the position
    double input = 0;       // the decoder's input: token vectors (+ positions, + its input norm)
    std::vector<double> selfHead, crossHead; // layers x heads, layer-major
    std::vector<double> selfBias, crossBias; // per layer: the attention's output bias (0 where none)
    std::vector<double> mlp;                 // per layer: the MLP's output
    double normBias = 0;   // the final norm's bias through the head
    double logitsBias = 0; // final_logits_bias of the target (0 where none)
    double sum() const;    // every part: equals `logit`
};

template <typename T>
Status seq2seqAttribute(const Model &model, const Trace<T> &trace, int position, int target, Seq2SeqAttribution &out);

} // namespace attnviz
