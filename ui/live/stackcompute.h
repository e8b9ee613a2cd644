// SPDX-License-Identifier: GPL-3.0-or-later
// Stack mode (depth >= 2) of the live window: the stack controls' settings as the core's
// WordStackModel takes them, the stack's part of every title, the residual-stream numbers (norms,
// cosines) the residual view plots, and reading stack weights from a safetensors file. The stack
// itself runs in core (attnviz/wordvectormodel.h).
#pragma once

#include "live/livetypes.h"

#include "attnviz/transformer.h"
#include "attnviz/wordvectormodel.h"

#include <QString>

#include <memory>

namespace attnviz::ui {

// The core's stack settings from the stack controls.
StackModelSettings stackModelSettings(const StackSettings &s);

// Why `heads` cannot be used in a stack of width dModel; empty if fine.
QString stackHeadsProblem(int dModel, int heads);

// Residual stream per token, layer by layer: row 0 is the trace's input (token vectors + positions),
// row l + 1 the stream after layer l. `norms` (layers + 1, t): Euclidean norm of each token's vector;
// `cosines` (layers + 1, t): cosine of each token's vector to its input vector (row 0 is 1).
struct ResidualMetrics {
    Mat<double> norms, cosines;
};
ResidualMetrics residualMetrics(const Trace<float> &trace);

// "post-norm, ReLU, sinusoidal positions · seeded weights (seed 0)"
QString describeStack(const StackSettings &s);

// Reads a safetensors file with GPT-2 tensor names. On error `out` is untouched and `error` names
// the file and the tensor.
bool loadStackWeightsFile(const QString &path, StackWeights<float> &out, int &depth, QString *error);

QString normPlacementName(NormPlacement n);
QString activationName(Activation a);
QString positionEncodingName(PositionEncoding p);

} // namespace attnviz::ui
