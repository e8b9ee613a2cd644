// SPDX-License-Identifier: GPL-3.0-or-later
// One request -> one snapshot: tokenize, embed, build the attention input from the controls,
// compute through a Backend. Used by the live worker and by the headless `attnviz export`,
// so that both show the same numbers.
#pragma once

#include "livetypes.h"
#include "stackcompute.h"

#include "attnviz/backend.h"
#include "attnviz/projections.h"

#include <QString>

#include <cstdint>
#include <memory>

namespace attnviz::ui {

// Random projections are drawn once per (seed, sizes) and reused while typing; the attention
// input (with its copy of the projections) is kept between requests so that a keystroke copies
// no weight matrices.
class ProjectionCache {
public:
    std::shared_ptr<const Projections<float>> get(const RandomProjectionSpec &spec, Status &status);

    AttentionInput<float> input;
    std::shared_ptr<const Projections<float>> inputProj; // what input.proj holds; null = identity
    StackWeightsCache stackWeights;                      // stack mode (depth >= 2)

private:
    RandomProjectionSpec m_spec;
    bool m_valid = false;
    std::shared_ptr<const Projections<float>> m_proj;
};

// Why `heads` cannot be used with this d_model and projection mode, in a sentence; empty if fine.
QString headsProblem(int dModel, int heads, int dHead, ProjectionMode mode);

// Divisors of n, for the explanation.
QString divisorsOf(int n);

std::shared_ptr<ComputeSnapshot> computeSnapshot(const ComputeRequest &request, Backend &backend,
                                                 ProjectionCache &cache);

// Reads projections from JSON: {"W_q": [[...]], "b_q": [...], "W_k", "b_k", "W_v", "b_v", "W_o", "b_o"}
// in the torch.nn.Linear convention (W is (out, in)); a missing or null entry = identity / no bias.
// The same names as the case files' inputs. Errors name the file and the field.
Status loadProjectionsFile(const QString &path, Projections<float> &out);

} // namespace attnviz::ui
