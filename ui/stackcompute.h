// SPDX-License-Identifier: GPL-3.0-or-later
// Stack mode (depth >= 2) of the live computation: seeded or loaded weights, computeStack on the
// token vectors, every layer kept in the snapshot, and the per-layer snapshot the main views show.
// Also the residual-stream numbers (norms, cosines) the residual view plots.
#pragma once

#include "livetypes.h"

#include "attnviz/transformer.h"

#include <QString>

#include <memory>

namespace attnviz::ui {

// Seeded stack weights are drawn once per (d, depth, seed, positions) and reused while typing.
class StackWeightsCache {
public:
    static constexpr int kMaxPositions = 4096; // rows of a seeded learned position table

    std::shared_ptr<const StackWeights<float>> seeded(int dModel, int depth, quint64 seed, PositionEncoding pos,
                                                      Status &status);

private:
    int m_d = 0, m_depth = 0;
    quint64 m_seed = 0;
    PositionEncoding m_pos = PositionEncoding::None;
    std::shared_ptr<const StackWeights<float>> m_weights;
};

// Largest token count computed live in stack mode: every layer keeps its heads' (t x t) weights.
int stackTokenLimit(int numHeads, int depth);

// Why `heads` cannot be used in a stack of width dModel; empty if fine.
QString stackHeadsProblem(int dModel, int heads);

// Runs the stack for a request whose snapshot already holds the embedded query. `attention` is the
// per-layer attention config; `keyPadding` / `attnMask` the masks (empty = none). Fills
// snap.stack, snap.layer, snap.result (that layer's attention) and snap.query / snap.key (the
// residual stream entering that layer). Nothing is filled on error.
Status computeStackSnapshot(const ComputeRequest &request, const AttentionConfig &attention,
                            const std::vector<uint8_t> &keyPadding, const BoolMat &attnMask, ComputeSnapshot &snap,
                            StackWeightsCache &cache);

// The same snapshot showing another layer (a copy that shares the stack); `s` itself if it already
// shows `layer` or is not a stack.
SnapshotPtr snapshotForLayer(const SnapshotPtr &s, int layer);

// Residual stream per token, layer by layer: row 0 is the stack's input (token vectors + positions),
// row l + 1 the stream after block l. `norms` (depth + 1, t): Euclidean norm of each token's vector;
// `cosines` (depth + 1, t): cosine of each token's vector to its input vector (row 0 is 1).
struct ResidualMetrics {
    Mat<double> norms, cosines;
};
ResidualMetrics residualMetrics(const StackResult<float> &stack);

// "layer 1 of 4 · post-norm, ReLU, sinusoidal positions, seeded weights (seed 0)"
QString describeStack(const ComputeSnapshot &s);

// Reads a safetensors file with GPT-2 tensor names. On error `out` is untouched and `error` names
// the file and the tensor.
bool loadStackWeightsFile(const QString &path, StackWeights<float> &out, int &depth, QString *error);

QString normPlacementName(NormPlacement n);
QString activationName(Activation a);
QString positionEncodingName(PositionEncoding p);

} // namespace attnviz::ui
