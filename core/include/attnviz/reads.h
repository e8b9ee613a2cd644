// SPDX-License-Identifier: GPL-3.0-or-later
// What the model reads, computed from a trace it made: the logit lens (each layer's residual stream
// through the final norm and the unembedding), norm-weighted attention (Kobayashi et al. 2020,
// "Attention is not only a weight": ||a_ij v_j W_O^h||), direct logit attribution (each head's and
// each MLP's share of one logit) and generation (greedy or sampled, one token at a time through the
// causal incremental path). Real checkpoints only (Model::readout); every family the one forward
// runs. Float and float64 traces: the float64 ones read the float64 weights (the tests' reference).
#pragma once

#include "attnviz/model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace attnviz {

// ---------------------------------------------------------------------------------------------
// Logit lens. Row l of the grid is the residual stream after layer l (resid_post) read as if it
// were the last layer's: through the final norm (where the model has one) and the unembedding
// (bias, Gemma's final soft-capping), softmax over the whole vocabulary. A masked LM (BERT) reads it
// through its MLM head (transform, activation, LayerNorm, decoder). The last row is the model's own
// prediction. "Actual": for a causal model the token that follows position i (none at the last),
// for a masked LM the token at i itself (what its head reconstructs there).
struct LensCell {
    std::vector<TokenProb> top; // best first
    double actualP = std::numeric_limits<double>::quiet_NaN(); // NaN: no actual token
    int actualRank = 0;    // 1 = the top token; 0: no actual token
    double entropy = std::numeric_limits<double>::quiet_NaN(); // nats; NaN: not computed yet
    bool computed() const { return !top.empty(); }
};

struct LensGrid {
    int layers = 0, positions = 0, topK = 0;
    std::vector<LensCell> cells; // layer-major: cells[layer * positions + position]
    const LensCell &at(int layer, int position) const { return cells[size_t(layer) * size_t(positions) + size_t(position)]; }
    LensCell &at(int layer, int position) { return cells[size_t(layer) * size_t(positions) + size_t(position)]; }
};

// One position: out[layer] for every layer. Fast path for the selected position.
template <typename T>
Status lensColumn(const Model &model, const Trace<T> &trace, int position, int topK, std::vector<LensCell> &out);

struct LensOptions {
    int topK = 5;
    int chunk = 16; // positions per step (all layers each)
    // After each step: positions [first, first + count) of every layer are filled in `grid`.
    // Return false to stop (Status Cancelled, what was filled stays).
    std::function<bool(const LensGrid &grid, int first, int count)> progress;
    const std::atomic<bool> *cancel = nullptr;
};

// Every layer x position, in chunks of positions; `out` is sized first, cells filled as they come.
template <typename T>
Status lensGrid(const Model &model, const Trace<T> &trace, const LensOptions &options, LensGrid &out);

// ---------------------------------------------------------------------------------------------
// Norm-weighted attention. f_h(x_j) = v_j^h W_O^h (head h's value of key j through its slice of
// the output projection, without the bias, before a sandwich model's post-attention norm); with
// grouped-query attention v_j^h is the key/value head that query head h reads. The trace alone is
// enough (its projections and values).

// (t_k, H): ||v_j^h W_O^h|| for every key j and head h of `layer`.
template <typename T>
Status valueNorms(const Trace<T> &trace, int layer, Mat<T> &out);

// (t_q, t_k): ||a_ij v_j^h W_O^h|| = a_ij ||v_j^h W_O^h||; head -1: the mean over heads.
template <typename T>
Status normWeighted(const Trace<T> &trace, int layer, int head, Mat<T> &out);

// ---------------------------------------------------------------------------------------------
// Direct logit attribution for one position and one target token. The final residual stream is a
// sum of parts (pre-norm and sandwich blocks): the input (embeddings and positions), each head's
// output z_h W_O^h, each layer's attention bias, each MLP's output. Each part goes through the final
// norm with its scale frozen (computed once from the final residual; LayerNorm's centring applied to
// each part, it is linear) and the target's unembedding row; the final norm's bias and the output
// bias are terms of their own. The parts sum to the logit. A sandwich block (Gemma) normalizes the
// attention's sum before adding it: each head is scaled by that norm's frozen scale too. Gemma 2's
// final soft-capping tanh(x / c) * c comes after: `logit` is the pre-cap logit the parts sum to,
// `cappedLogit` what the softmax reads. Post-norm models (BERT) have no such sum: Unavailable.
struct Attribution {
    int position = 0, target = -1;
    std::string targetToken;
    int layers = 0, heads = 0;
    double logit = 0;       // pre-cap logit (what the parts sum to)
    double cappedLogit = 0; // after the final soft-capping (= logit without one)
    double softcap = 0;     // the cap; 0: none
    double input = 0;       // embeddings (+ positions)
    std::vector<double> head;     // layers x heads, layer-major
    std::vector<double> attnBias; // per layer: b_O
    std::vector<double> mlp;      // per layer: the MLP's output (its bias included)
    double normBias = 0;   // the final norm's bias (beta) through the unembedding
    double outputBias = 0; // the unembedding's own bias
    double headAt(int layer, int h) const { return head[size_t(layer) * size_t(heads) + size_t(h)]; }
    double sum() const;    // every part: equals `logit`
};

template <typename T>
Status attribute(const Model &model, const Trace<T> &trace, int position, int target, Attribution &out);

// A token the user typed, as a vocabulary id: the exact spelling ("Ġcat"), else the text's own
// single token (" cat" -> "Ġcat"). InvalidInput naming the text when it is neither.
Status vocabularyId(const Model &model, const std::string &token, int &id);

// The model's spelling and display of an id (TokenProb's token and display).
TokenProb tokenOf(const Model &model, int id);
// Ids as text (the tokenizer's decoder): what generation appends to the text.
std::string decodeIds(const Model &model, const std::vector<int> &ids);

// ---------------------------------------------------------------------------------------------
// Generation. After each token the text's trace is extended by one row through the causal path
// (Model::trace handed back its own trace recomputes only the new position). Greedy: the most
// probable token (the lowest id on a tie). Sampled: logits / temperature, softmax, tokens sorted by
// probability (ties by id), the first top_k kept (0: all), then the shortest prefix whose
// probability reaches top_p (at least one), renormalized; u = one torch-compatible double draw
// (TorchGenerator(seed).uniformDouble(), as torch.manual_seed(seed); torch.rand((),
// dtype=torch.float64)) per token, the first token whose cumulative probability exceeds u.
struct GenerateOptions {
    int tokens = 20;
    double temperature = 0; // <= 0: greedy
    int topK = 0;           // 0: no limit
    double topP = 1.0;      // 1: no limit
    uint64_t seed = 0;
    int traceTopK = 10;     // predictions kept per position in the trace
    const std::atomic<bool> *cancel = nullptr; // checked between tokens: Stop keeps what was made
    // After each token: its id (the trace handed to generate() now ends with it). False: stop there.
    std::function<bool(int id)> onToken;
};

struct GenerateResult {
    std::vector<int> ids;       // prompt then generated
    int promptTokens = 0;
    std::vector<int> generated; // the new ids
    std::string text;           // the generated text, decoded
    bool stopped = false;       // cancelled / onToken said stop
    std::string note;           // a cut at the model's positions, said in words; empty otherwise
};

// Continues `prompt` (text) or `promptIds` (non-empty: used instead) into `trace` (handed back
// between tokens). Causal LMs only; the total is cut at the model's positions (the note says so).
Status generate(Model &model, const std::string &prompt, const std::vector<int> &promptIds, const GenerateOptions &options,
                Trace<float> &trace, GenerateResult &out);
Status generate(Model &model, const std::string &prompt, const std::vector<int> &promptIds, const GenerateOptions &options,
                Trace<double> &trace, GenerateResult &out);

// The token that would follow the last position of `trace` (one this model made), by the rule
// above with `u` as the draw (ignored when greedy). Reads the weights and the trace only: a window
// may call it on a snapshot's trace while its compute thread traces the next text with the model.
template <typename T>
Status nextTokenOf(const Model &model, const Trace<T> &trace, const GenerateOptions &options, double u, int &id);

// The one sampling rule above over a row of logits (already soft-capped), for tests and the UI.
int sampleToken(const std::vector<double> &logits, double temperature, int topK, double topP, double u);

} // namespace attnviz
