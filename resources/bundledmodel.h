// SPDX-License-Identifier: GPL-3.0-or-later
// Where the bundled trained models live on disk, and the names that the window, `--model`,
// `model info|run`, `tokenize --model` and `export --model` accept for them: "bundled" is attnviz-tiny 2
// (a Llama: rotary positions, grouped-query attention, RMSNorm, SwiGLU; resources/models/attnviz-tiny-2),
// "bundled-gpt2" the first attnviz-tiny (a GPT-2; resources/models/attnviz-tiny), "bundled-dates" attnviz-dates
// (a small T5 that writes human-written dates as ISO dates; resources/models/attnviz-dates). Unlike the word vectors
// (compiled in), each is a model folder the loader reads like any other: installed as
// share/attnviz/models/NAME beside the program's bin/, or, when run from a build tree, the source tree's copy.
#pragma once

#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"

#include <QString>

#include <memory>

namespace attnviz {

// "bundled": what a user types for the bundled model (attnviz-tiny 2).
inline const QString kBundledModelArg = QStringLiteral("bundled");
// "bundled-gpt2": the first bundled model (attnviz-tiny, a GPT-2), which the seed-tiny lessons open.
inline const QString kBundledGpt2Arg = QStringLiteral("bundled-gpt2");
// "bundled-dates": attnviz-dates, the encoder-decoder model of the cross-attention lesson.
inline const QString kBundledDatesArg = QStringLiteral("bundled-dates");
// Whether `arg` names one of the bundled models.
bool isBundledModelArg(const QString &arg);
// How menus and messages name one: "attnviz-tiny 2 (bundled)", "attnviz-tiny GPT-2 (bundled)",
// "attnviz-dates T5 (bundled)".
QString bundledModelTitle(const QString &arg = kBundledModelArg);
// The folder holding its config.json etc.; empty when `arg` names no bundled model or neither an
// installed copy nor the source tree has it.
QString bundledModelDir(const QString &arg = kBundledModelArg);
// `arg` as a model folder: "bundled", "bundled-gpt2", "bundled-dates" -> bundledModelDir(arg); hf:/ollama: specs -> the folder or file
// they name (localmodels.h); anything else unchanged. False, with `error` saying why, when "bundled"
// is asked for and this installation has none, or a spec names no model.
bool resolveModelFolder(const QString &arg, QString &dir, QString *error);
// Opens `arg` ("bundled", a spec or a model folder) with openPretrained (pretrained.h); its Status names the
// file and the tensor or field (Cancelled when `progress` returned false).
Status openModelSource(const QString &arg, std::unique_ptr<Model> &out, const LoadProgress &progress = {});

} // namespace attnviz
