// SPDX-License-Identifier: GPL-3.0-or-later
// The model stores as the program sees them (core: attnviz/modelstores.h): the roots from the
// environment plus the folders the user added (QSettings "models/folders", shared by the window's
// Model ▸ On this computer and `attnviz model list --add-folder`), and a spec resolved with them.
#pragma once

#include "attnviz/modelstores.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace attnviz {

// The folders the user added, absolute and clean, in the order added.
QStringList userModelFolders();
// Adds (or removes) one; false when it was already there (not there).
bool addUserModelFolder(const QString &folder);
bool removeUserModelFolder(const QString &folder);

// modelStoreRoots of the environment, with the user's folders and `extra` as folder roots.
std::vector<StoreRoot> localModelRoots(const QStringList &extra = {});

// `source` with hf:/ollama: specs resolved (modelstores.h: resolveModelSpec); anything else as it is.
// False with `error` (one line naming the spec and where it was looked for) when it cannot be.
bool resolveLocalModel(const QString &source, QString &path, QString *error);

} // namespace attnviz
