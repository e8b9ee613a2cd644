// SPDX-License-Identifier: GPL-3.0-or-later
// The command-line verbs of the one attnviz program.
#pragma once

#include <QList>
#include <QStringList>

namespace attnviz::cli {

// Each takes the arguments after the verb's name (argv[0] first) and returns the exit code:
// 0 ok, 1 failure while running, 2 bad input (nothing written).
int compute(const QStringList &args);
int bench(const QStringList &args);
int tokenize(const QStringList &args); // wordcommands.cpp
int vectors(const QStringList &args);  // wordcommands.cpp
int model(const QStringList &args);             // modelcommands.cpp: model info / model run
int modelList(const QStringList &args);         // modellist.cpp: model list
int tokenizeWithModel(const QStringList &args); // modelcommands.cpp: tokenize --model DIR
int benchModel(const QStringList &args);        // modelcommands.cpp: bench --model DIR / --seeded
int generateText(const QStringList &args);       // readcommands.cpp: generate --model DIR --text T
int patch(const QStringList &args);              // patchcommands.cpp: patch --model M --clean T --corrupted T ...
int heads(const QStringList &args);              // headcommands.cpp: heads --model M --corpus FILE
// The --seeded shapes for messages: "gpt2-small, bert-base, smollm2-135m ..." (modelcommands.cpp).
QString seededShapeList();
} // namespace attnviz::cli

class QCommandLineOption;
class QCommandLineParser;
class QJsonObject;
#include "attnviz/model.h"
#include <string>
#include <utility>
#include <vector>
namespace attnviz::cli {
// `model run --lens`: the logit lens grid of a trace as JSON (readcommands.cpp); an encoder-decoder
// model's decoder by sub-layer (seq2seqreads.h).
template <typename T>
Status lensJson(const Model &model, const Trace<T> &trace, QJsonObject &out);
// `bench --reads`: the lens column, the norm-weighted switch, attribution, the lens grid and a
// generated token, timed on a `tokens`-token text (readcommands.cpp); rows of (what, median ms).
Status benchReads(Model &model, int tokens, int repeat, std::vector<std::pair<std::string, double>> &rows);
// `--ablate L.H[:zero|mean]` (model run, generate, export; modelcommands.cpp): the option, its help
// ending with `then` (what the output then is), and its values as edits of attn.hook_z (layer L's
// query head H at every position) checked against the model; one line naming the value otherwise.
QCommandLineOption ablateOption(const QString &then);
Status ablations(const QStringList &values, const ModelInfo &info, std::vector<Intervention> &out);
// `--src-lang CODE --tgt-lang CODE` (model run, generate, export; modelcommands.cpp): an mBART
// folder's languages (encoderdecoder.h: setSeq2SeqLanguages), the folder's own where one is not
// given; refused in one line for a code the folder does not know or a model without codes.
QList<QCommandLineOption> languageOptions();
Status applyLanguages(const QCommandLineParser &p, Model &model);
} // namespace attnviz::cli
namespace attnviz::cli {
// tokenize --vocab/--merges/--wordpiece (subwordcommands.cpp): a checkpoint's subword tokenizer.
void addSubwordOptions(QCommandLineParser &p);
bool wantsSubword(const QCommandLineParser &p);
int tokenizeSubword(const QCommandLineParser &p);

} // namespace attnviz::cli
