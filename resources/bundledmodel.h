// SPDX-License-Identifier: GPL-3.0-or-later
// Where the bundled trained model (attnviz-tiny, resources/models/attnviz-tiny) lives on disk, and the
// name "bundled" that the window, `--model`, `model info|run`, `tokenize --model` and `export --model`
// accept for it. Unlike the word vectors (compiled in), the model is a model folder the loader reads
// like any other: installed as share/attnviz/models/attnviz-tiny beside the program's bin/, or, when
// run from a build tree, the source tree's copy.
#pragma once

#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"

#include <QString>

#include <memory>

namespace attnviz {

// "bundled": what a user types for the bundled model.
inline const QString kBundledModelArg = QStringLiteral("bundled");
// "attnviz-tiny (bundled)": how menus and messages name it.
QString bundledModelTitle();
// The folder holding config.json etc.; empty when neither an installed copy nor the source tree has it.
QString bundledModelDir();
// `arg` as a model folder: "bundled" -> bundledModelDir(); hf:/ollama: specs -> the folder or file
// they name (localmodels.h); anything else unchanged. False, with `error` saying why, when "bundled"
// is asked for and this installation has none, or a spec names no model.
bool resolveModelFolder(const QString &arg, QString &dir, QString *error);
// Opens `arg` ("bundled", a spec or a model folder) with openPretrained (pretrained.h); its Status names the
// file and the tensor or field (Cancelled when `progress` returned false).
Status openModelSource(const QString &arg, std::unique_ptr<Model> &out, const LoadProgress &progress = {});

} // namespace attnviz
