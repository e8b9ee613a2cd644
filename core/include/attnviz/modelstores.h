// SPDX-License-Identifier: GPL-3.0-or-later
// The models already on this machine: the Hugging Face cache (models--ORG--NAME/snapshots/REV, the
// revision refs/main names), Ollama's store (manifests/HOST/NAMESPACE/NAME/TAG naming a GGUF blob
// under blobs/), LM Studio's models folder (PUBLISHER/REPO/*.gguf) and folders the user adds (.gguf
// files and model folders with a config.json). A scan reads only manifests, config.json, safetensors
// headers and GGUF headers, and never follows a symbolic link out of the root it was found under
// (the Hugging Face cache's snapshot links into its own blobs/ stay inside). The model specs
// `hf:ORG/NAME` and `ollama:NAME[:TAG]` name such models wherever a model folder is accepted;
// resolveModelSpec turns one into the folder or file to open.
#pragma once

#include "attnviz/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz {

enum class ModelStore { HuggingFace, Ollama, LmStudio, Folder };

// "Hugging Face", "Ollama", "LM Studio", "folder"
const char *modelStoreName(ModelStore store);

struct StoreRoot {
    ModelStore store = ModelStore::Folder;
    std::string path;
};

// Where the stores are looked for: the environment's values (modelStoreEnvironment), or a test's.
struct StoreEnvironment {
    std::string home;         // $HOME
    std::string xdgCacheHome; // $XDG_CACHE_HOME
    std::string hfHubCache;   // $HF_HUB_CACHE (else the older $HUGGINGFACE_HUB_CACHE)
    std::string hfHome;       // $HF_HOME
    std::string ollamaModels; // $OLLAMA_MODELS
    bool systemOllama = true; // also /usr/share/ollama/.ollama/models (Ollama's Linux service)
};
StoreEnvironment modelStoreEnvironment();

// The roots in the order they are scanned and searched:
//   Hugging Face  $HF_HUB_CACHE, else $HF_HOME/hub, else ${XDG_CACHE_HOME:-$HOME/.cache}/huggingface/hub
//   Ollama        $OLLAMA_MODELS, else $HOME/.ollama/models; then /usr/share/ollama/.ollama/models
//   LM Studio     $HOME/.lmstudio/models, $HOME/.cache/lm-studio/models
//   folders       `folders`, as given
// Roots that do not exist are kept (a scan skips them; a spec not found lists them).
std::vector<StoreRoot> modelStoreRoots(const StoreEnvironment &env, const std::vector<std::string> &folders = {});

// One model found.
struct LocalModel {
    std::string name;      // "Qwen/Qwen3-0.6B", "qwen3:0.6b", "lmstudio-community/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q4_K_M"
    std::string spec;      // what --model takes: "hf:Qwen/Qwen3-0.6B", "ollama:qwen3:0.6b", else the path
    std::string path;      // the model folder or the GGUF file it opens
    ModelStore store = ModelStore::Folder;
    std::string root;      // the root it was found under
    std::string format;    // "safetensors", "gguf", "" when not known
    std::string family;    // config.json's model_type or GGUF's general.architecture ("" unknown)
    int64_t parameters = 0; // counted from the tensors' shapes; 0 unknown
    uint64_t bytes = 0;    // on disk: the files themselves (links resolved), never a size a file claims
    std::string precision; // "BF16", "F16+F32", "Q4_K_M"; "" unknown
    bool supported = false; // attnviz can compute it
    std::string reason;    // why not, when !supported: one line
};

struct StoreScan {
    std::vector<LocalModel> models;     // by root order, then name
    std::vector<std::string> problems;  // roots or folders that could not be read, one line each
};

// Scans `roots`. Reads headers only; cut at 4,096 entries a folder and 6 levels below a root.
StoreScan scanModelStores(const std::vector<StoreRoot> &roots);

// "494M", "1.24B", "135M", "9.2K"; "" for 0.
std::string describeParameters(int64_t parameters);

// "ORG/NAME" for a folder of the Hugging Face cache's layout (.../models--ORG--NAME/snapshots/REV),
// else "": how a model opened from the cache is named (its folder's own name is a revision hash).
std::string hfCacheRepo(const std::string &dir);

// True for "hf:..." and "ollama:...".
bool isModelSpec(const std::string &source);

// Resolves a spec to what openPretrained opens:
//   hf:ORG/NAME            the snapshot refs/main names (the only snapshot where there is no refs/main);
//                          a snapshot with no config.json and one .gguf file: that file
//   hf:ORG/NAME/FILE.gguf  that file of the snapshot
//   ollama:NAME[:TAG]      the model blob of manifests/registry.ollama.ai/library/NAME/TAG (tag
//                          "latest" when none); NAMESPACE/NAME and HOST/NAMESPACE/NAME as Ollama names them
// Anything else is returned unchanged. Errors (IoError, InvalidInput) are one line naming the spec and
// where it was looked for: "ollama:qwen3:4b: no such model (looked for
// /home/u/.ollama/models/manifests/registry.ollama.ai/library/qwen3/4b, ...)".
Status resolveModelSpec(const std::string &spec, const std::vector<StoreRoot> &roots, std::string &path);

// Ollama's manifest (manifests/HOST/NAMESPACE/NAME/TAG): an OCI image manifest whose layers name blobs.
struct OllamaLayer {
    std::string mediaType; // "application/vnd.ollama.image.model", "...template", "...params" ...
    std::string digest;    // "sha256:" and 64 lower-case hex digits (checked: it becomes a file name)
    uint64_t size = 0;     // as the manifest claims it (compared with the blob, never trusted)
};
struct OllamaManifest {
    std::vector<OllamaLayer> layers;
    int model = -1; // the first layer of media type application/vnd.ollama.image.model
};
// Parses a manifest's text; `name` begins every message ("NAME: layers[2].digest: ..."). A manifest
// without a model layer is refused. `out` is untouched on error.
Status parseOllamaManifest(const std::string &text, const std::string &name, OllamaManifest &out);
// "sha256:abc..." -> "sha256-abc..." (the blob's file name).
std::string ollamaBlobName(const std::string &digest);

} // namespace attnviz
