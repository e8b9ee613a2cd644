// SPDX-License-Identifier: GPL-3.0-or-later
// The user's model folders in QSettings and the store roots built from them and the environment.
#include "localmodels.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace attnviz {

namespace {

const QString kFoldersKey = QStringLiteral("models/folders");

QString cleanFolder(const QString &folder) { return QDir::cleanPath(QFileInfo(folder).absoluteFilePath()); }

} // namespace

QStringList userModelFolders() { return QSettings().value(kFoldersKey).toStringList(); }

bool addUserModelFolder(const QString &folderIn)
{
    const QString folder = cleanFolder(folderIn);
    QStringList list = userModelFolders();
    if (list.contains(folder))
        return false;
    list << folder;
    QSettings().setValue(kFoldersKey, list);
    return true;
}

bool removeUserModelFolder(const QString &folderIn)
{
    QStringList list = userModelFolders();
    if (list.removeAll(cleanFolder(folderIn)) == 0 && list.removeAll(folderIn) == 0)
        return false;
    QSettings().setValue(kFoldersKey, list);
    return true;
}

std::vector<StoreRoot> localModelRoots(const QStringList &extra)
{
    std::vector<std::string> folders;
    for (const QString &f : userModelFolders() + extra)
        folders.push_back(cleanFolder(f).toStdString());
    return modelStoreRoots(modelStoreEnvironment(), folders);
}

bool resolveLocalModel(const QString &source, QString &path, QString *error)
{
    std::string resolved;
    const Status st = resolveModelSpec(source.toStdString(), localModelRoots(), resolved);
    if (!st) {
        if (error)
            *error = QString::fromStdString(st.message);
        return false;
    }
    path = QString::fromStdString(resolved);
    return true;
}

} // namespace attnviz
