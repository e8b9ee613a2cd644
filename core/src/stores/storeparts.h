// SPDX-License-Identifier: GPL-3.0-or-later
// What the scan (modelstores.cpp) and the spec resolver (modelspec.cpp) share: finding a Hugging Face
// repository's snapshot, Ollama's names and manifest paths, and describing one GGUF file or one model
// folder from its headers. Private to the core (stores/).
#pragma once

#include "attnviz/modelstores.h"

#include "storefs.h"

#include <string>
#include <vector>

namespace attnviz::detail {

// The folders a repository name maps onto: "Qwen/Qwen3-0.6B" -> "models--Qwen--Qwen3-0.6B".
std::string hfRepoFolder(const std::string &repo);

// The snapshot refs/main names inside `repoDir` (resolved, inside the root), else the only snapshot.
// False with `why` ("no refs/main and 2 snapshots", "refs/main names snapshot abc, which is missing").
bool hfSnapshot(const StoreRootGuard &guard, const fs::path &repoDir, fs::path &snapshot, std::string &why);

// An Ollama model name as the user types it, split: "qwen3:0.6b" -> registry.ollama.ai/library/qwen3/0.6b,
// "me/m" -> registry.ollama.ai/me/m/latest, "hf.co/org/repo:Q4_K_M" -> hf.co/org/repo/Q4_K_M.
// False for a name that cannot be one (empty parts, "..", more than three parts).
bool ollamaManifestPath(const std::string &name, std::string &relative);
// The other way: manifests' HOST/NAMESPACE/NAME/TAG as Ollama shows it ("qwen3:0.6b").
std::string ollamaShownName(const std::string &host, const std::string &ns, const std::string &name,
                            const std::string &tag);

// Describes a resolved GGUF file (format, family, parameters, precision, supported or why not) from its
// header; `m.bytes` is the file's size. Marks a file that does not start with "GGUF" unsupported.
void describeGgufFile(const fs::path &file, LocalModel &m);

// Describes a model folder with a config.json (family from model_type, parameters and precision from
// the safetensors headers, supported when config, weights and a tokenizer file are there); `m.bytes`
// sums the folder's own files except .gguf ones. Every file checked is resolved inside `guard`.
void describeModelFolder(const StoreRootGuard &guard, const fs::path &dir, LocalModel &m);

// Whether every entry of a model folder that is not a .gguf file resolves inside `guard` (a link out
// of the root, a loop or a missing blob is refused, naming the file: "model.safetensors: a symbolic
// link out of ROOT (not followed)"). Adds the sizes of the regular files to `bytes` when given.
bool folderInside(const StoreRootGuard &guard, const fs::path &dir, std::string &why, uint64_t *bytes = nullptr,
                  bool *tokenizer = nullptr);

bool endsWithGguf(const std::string &name);

// `message` without a leading "PREFIX/" (messages shown beside the model they are about).
std::string relativeMessage(const std::string &message, const std::string &prefix);

} // namespace attnviz::detail
