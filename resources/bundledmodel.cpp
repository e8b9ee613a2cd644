// SPDX-License-Identifier: GPL-3.0-or-later
// Finds the bundled model folders: installed beside the program, else the source tree of a build.
#include "bundledmodel.h"

#include "attnviz/pretrained.h"
#include "localmodels.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace attnviz {

namespace {

// The folder name under models/ of each bundled model.
QString folderName(const QString &arg)
{
    if (arg == kBundledModelArg)
        return QStringLiteral("attnviz-tiny-2");
    if (arg == kBundledGpt2Arg)
        return QStringLiteral("attnviz-tiny");
    if (arg == kBundledDatesArg)
        return QStringLiteral("attnviz-dates");
    return {};
}

} // namespace

bool isBundledModelArg(const QString &arg) { return !folderName(arg).isEmpty(); }

QString bundledModelTitle(const QString &arg)
{
    if (arg == kBundledDatesArg)
        return QStringLiteral("attnviz-dates T5 (bundled)");
    return arg == kBundledGpt2Arg ? QStringLiteral("attnviz-tiny GPT-2 (bundled)")
                                  : QStringLiteral("attnviz-tiny 2 (bundled)");
}

QString bundledModelDir(const QString &arg)
{
    const QString name = folderName(arg);
    if (name.isEmpty())
        return {};
    QStringList candidates;
    if (QCoreApplication::instance()) {
        // bin/attnviz -> share/attnviz/models/NAME (the .deb's /usr and the relocatable .tar.gz)
        const QDir bin(QCoreApplication::applicationDirPath());
        candidates << bin.filePath(QStringLiteral(ATTNVIZ_MODELS_FROM_BIN "/") + name);
    }
    candidates << QStringLiteral(ATTNVIZ_SOURCE_MODELS_DIR "/") + name; // a build tree
    for (const QString &c : candidates)
        if (QFileInfo(c + QStringLiteral("/config.json")).isFile())
            return QDir::cleanPath(QFileInfo(c).absoluteFilePath());
    return {};
}

bool resolveModelFolder(const QString &arg, QString &dir, QString *error)
{
    if (!isBundledModelArg(arg)) // hf:ORG/NAME and ollama:NAME[:TAG] resolved, anything else as it is
        return resolveLocalModel(arg, dir, error);
    dir = bundledModelDir(arg);
    if (dir.isEmpty() && error)
        *error = QStringLiteral("%1: this installation has no such bundled model (share/attnviz/models/%2 "
                                "beside the program is missing); open a model folder instead")
                     .arg(arg, folderName(arg));
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
