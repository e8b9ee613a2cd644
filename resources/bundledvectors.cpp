// SPDX-License-Identifier: GPL-3.0-or-later
#include "bundledvectors.h"

#include <QFile>

namespace attnviz {

namespace {
const char *kResource = ":/attnviz/embeddings/attnviz-en50.avec";
}

const char *bundledEmbeddingsName() { return "attnviz-en50 (bundled)"; }

bool hasBundledEmbeddings() { return QFile::exists(QString::fromLatin1(kResource)); }

Status loadBundledEmbeddings(EmbeddingTable &out)
{
    QFile f(QString::fromLatin1(kResource));
    if (!f.open(QIODevice::ReadOnly))
        return Status::error(StatusCode::Unavailable,
                             "this build has no bundled word vectors (resources/embeddings/attnviz-en50.avec); "
                             "load a GloVe / word2vec / fastText table instead");
    const QByteArray bytes = f.readAll();
    return parseEmbeddings(std::string(bytes.constData(), size_t(bytes.size())), bundledEmbeddingsName(), out,
                           EmbeddingFormat::Avec);
}

std::shared_ptr<const EmbeddingTable> sharedBundledEmbeddings(Status *error)
{
    struct Loaded {
        Status status;
        std::shared_ptr<const EmbeddingTable> table;
    };
    static const Loaded loaded = [] {
        Loaded l;
        auto t = std::make_shared<EmbeddingTable>();
        l.status = loadBundledEmbeddings(*t);
        if (l.status.ok())
            l.table = std::move(t);
        return l;
    }();
    if (error)
        *error = loaded.status;
    return loaded.table;
}

} // namespace attnviz
