// SPDX-License-Identifier: GPL-3.0-or-later
// Finds the bundled model folder: installed beside the program, else the source tree of a build.
#include "bundledmodel.h"

#include "attnviz/pretrained.h"
#include "localmodels.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace attnviz {

QString bundledModelTitle() { return QStringLiteral("attnviz-tiny (bundled)"); }

QString bundledModelDir()
{
    QStringList candidates;
    if (QCoreApplication::instance()) {
        // bin/attnviz -> share/attnviz/models/attnviz-tiny (the .deb's /usr and the relocatable .tar.gz)
        const QDir bin(QCoreApplication::applicationDirPath());
        candidates << bin.filePath(QStringLiteral(ATTNVIZ_MODELS_FROM_BIN "/attnviz-tiny"));
    }
    candidates << QStringLiteral(ATTNVIZ_SOURCE_MODELS_DIR "/attnviz-tiny"); // a build tree
    for (const QString &c : candidates)
        if (QFileInfo(c + QStringLiteral("/config.json")).isFile())
            return QDir::cleanPath(QFileInfo(c).absoluteFilePath());
    return {};
}

bool resolveModelFolder(const QString &arg, QString &dir, QString *error)
{
    if (arg != kBundledModelArg) // hf:ORG/NAME and ollama:NAME[:TAG] resolved, anything else as it is
        return resolveLocalModel(arg, dir, error);
    dir = bundledModelDir();
    if (dir.isEmpty() && error)
        *error = QStringLiteral("bundled: this installation has no bundled model (share/attnviz/models/attnviz-tiny "
                                "beside the program is missing); open a model folder instead");
    return !dir.isEmpty();
}

Status openModelSource(const QString &arg, std::unique_ptr<Model> &out, const LoadProgress &progress)
{
    QString dir, error;
    if (!resolveModelFolder(arg, dir, &error))
        return Status::error(StatusCode::IoError, error.toStdString());
    PretrainedLoadOptions options;
    options.progress = progress;
    return openPretrained(dir.toStdString(), options, out);
}

} // namespace attnviz
