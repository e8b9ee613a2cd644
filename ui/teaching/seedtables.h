// SPDX-License-Identifier: GPL-3.0-or-later
// The small hand-written embedding tables the seed notebooks type in, so that a preset or a
// comparison can reproduce their printed numbers in the window.
#pragma once

#include "attnviz/embeddings.h"

#include <QString>

#include <memory>

namespace attnviz::ui {

// Seed 001: "Your journey starts with one step", six words x 3 dimensions.
std::shared_ptr<const EmbeddingTable> journeyTable();
QString journeySentence();

// Seed 002: the first sequence of the printed x = torch.randn(2, 3, 4), as the words x1 x2 x3.
std::shared_ptr<const EmbeddingTable> bloemTable();
QString bloemSentence();

} // namespace attnviz::ui
