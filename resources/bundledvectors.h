// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attnviz/embeddings.h"

#include <memory>

namespace attnviz {

// The English word vectors compiled into this program (resources/embeddings/attnviz-en50.avec,
// served as the Qt resource :/attnviz/embeddings/attnviz-en50.avec). Unavailable in a build
// made without that file, with a message saying so.
Status loadBundledEmbeddings(EmbeddingTable &out);
// The same table read once per process and shared, read only, by every window and comparison that
// shows it (each new window parsed the 50-d table again). Null, with loadBundledEmbeddings' message
// in `error` when given, where it cannot be read.
std::shared_ptr<const EmbeddingTable> sharedBundledEmbeddings(Status *error = nullptr);
bool hasBundledEmbeddings();
const char *bundledEmbeddingsName();

} // namespace attnviz
