// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attnviz/embeddings.h"

namespace attnviz {

// The English word vectors compiled into this program (resources/embeddings/attnviz-en50.avec,
// served as the Qt resource :/attnviz/embeddings/attnviz-en50.avec). Unavailable in a build
// made without that file, with a message saying so.
Status loadBundledEmbeddings(EmbeddingTable &out);
bool hasBundledEmbeddings();
const char *bundledEmbeddingsName();

} // namespace attnviz
