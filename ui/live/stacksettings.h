// SPDX-License-Identifier: GPL-3.0-or-later
// What the stack controls set: depth 1 is the single attention layer (no block around it), the
// default; depth >= 2 runs that many transformer blocks (seed 002) on the token vectors and keeps
// every layer. The heads, scaling, mask and normalization controls apply to every layer.
#pragma once

#include "attnviz/transformer.h"

#include <QString>

#include <memory>

namespace attnviz::ui {

enum class StackWeightsSource { Seeded, File };

struct StackSettings {
    int depth = 1; // 1: today's single layer; >= 2: a stack of blocks
    NormPlacement norm = NormPlacement::Post;
    Activation activation = Activation::Relu;
    PositionEncoding positions = PositionEncoding::None;
    StackWeightsSource source = StackWeightsSource::Seeded;
    quint64 seed = 0;
    std::shared_ptr<const StackWeights<float>> loaded; // StackWeightsSource::File
    QString loadedSource;                              // file name, for titles
    int loadedDepth = 0;                               // blocks in the loaded file

    bool enabled() const { return depth >= 2; }
    bool operator==(const StackSettings &o) const
    {
        return depth == o.depth && norm == o.norm && activation == o.activation && positions == o.positions &&
               source == o.source && seed == o.seed && loaded == o.loaded;
    }
    bool operator!=(const StackSettings &o) const { return !(*this == o); }
};

} // namespace attnviz::ui
