// SPDX-License-Identifier: GPL-3.0-or-later
// The command-line verbs of the one attnviz program.
#pragma once

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
// The --seeded shapes for messages: "gpt2-small, bert-base, smollm2-135m ..." (modelcommands.cpp).
QString seededShapeList();
} // namespace attnviz::cli

class QCommandLineParser;
namespace attnviz::cli {
// tokenize --vocab/--merges/--wordpiece (subwordcommands.cpp): a checkpoint's subword tokenizer.
void addSubwordOptions(QCommandLineParser &p);
bool wantsSubword(const QCommandLineParser &p);
int tokenizeSubword(const QCommandLineParser &p);

} // namespace attnviz::cli
