// SPDX-License-Identifier: GPL-3.0-or-later
// The model specs hf:ORG/NAME and ollama:NAME[:TAG] (modelstores.h: resolveModelSpec), resolved
// through the same roots, guards and layouts as the scan, so that what `model list` shows is what
// `--model` opens.
#include "attnviz/modelstores.h"

#include "attnviz/fileio.h"

#include "storeparts.h"

namespace attnviz {

using namespace detail;

namespace {

Status notFound(const std::string &spec, const std::string &what, const std::vector<std::string> &looked)
{
    std::string m = quoteText(spec, 200) + ": " + what + " (looked ";
    if (looked.empty()) {
        m += "nowhere: no root of this store is set; see HF_HUB_CACHE, HF_HOME, OLLAMA_MODELS and HOME";
    } else {
        m += looked.size() == 1 ? "for " : "for each of ";
        for (size_t i = 0; i < looked.size(); ++i)
            m += (i ? ", " : "") + looked[i];
    }
    return Status::error(StatusCode::IoError, printable(m + ")"));
}

Status resolveHf(const std::string &spec, const std::vector<StoreRoot> &roots, std::string &path)
{
    std::string repo = spec.substr(3), file;
    if (const size_t slash = repo.rfind('/'); slash != std::string::npos && endsWithGguf(repo.substr(slash + 1))) {
        file = repo.substr(slash + 1);
        repo = repo.substr(0, slash);
    }
    bool valid = !repo.empty() && repo.size() <= 200 && repo.find("--") == std::string::npos;
    size_t slashes = 0;
    for (char c : repo) {
        slashes += c == '/';
        valid = valid && c != '\\' && c != '\0' && c > ' ';
    }
    valid = valid && slashes <= 1 && repo.front() != '/' && repo.back() != '/' && repo.find("..") == std::string::npos;
    if (!valid)
        return Status::error(StatusCode::InvalidInput,
                             quoteText(spec, 200) + ": not a Hugging Face repository (hf:ORG/NAME or hf:ORG/NAME/FILE.gguf)");
    const std::string folder = hfRepoFolder(repo);
    std::vector<std::string> looked;
    for (const StoreRoot &root : roots) {
        if (root.store != ModelStore::HuggingFace)
            continue;
        looked.push_back(root.path + "/" + folder);
        const StoreRootGuard guard(root.path);
        if (!guard.exists())
            continue;
        const Resolved r = guard.resolve(guard.root() / folder);
        if (r.kind == Found::Missing)
            continue;
        if (r.kind != Found::Dir)
            return Status::error(StatusCode::IoError, printable(looked.back() + ": " + r.why));
        fs::path snapshot;
        std::string why;
        if (!hfSnapshot(guard, r.target, snapshot, why))
            return Status::error(StatusCode::IoError, printable(quoteText(spec, 200) + ": " + looked.back() + ": " + why));
        if (!file.empty()) {
            const Resolved f = guard.resolve(snapshot / file);
            if (f.kind != Found::File)
                return Status::error(StatusCode::IoError,
                                     printable((snapshot / file).string() + ": " + (f.kind == Found::Missing ? "no such file" : f.why)));
            path = f.target.string();
            return Status::success();
        }
        if (const Resolved c = guard.resolve(snapshot / "config.json"); c.kind == Found::File) {
            if (!folderInside(guard, snapshot, why))
                return Status::error(StatusCode::IoError,
                                     printable(why.compare(0, 1, "/") == 0 ? why : (snapshot / why).string()));
            path = snapshot.string();
            return Status::success();
        } else if (c.kind != Found::Missing) {
            return Status::error(StatusCode::IoError, printable((snapshot / "config.json").string() + ": " + c.why));
        }
        // A repository of GGUF files: the one there is, or the names to choose from.
        std::vector<fs::path> entries;
        bool cut = false;
        if (!guard.list(snapshot, entries, cut, why))
            return Status::error(StatusCode::IoError, printable(why));
        std::vector<std::string> ggufs;
        std::string only;
        for (const fs::path &e : entries)
            if (endsWithGguf(e.filename().string()))
                if (const Resolved g = guard.resolve(e); g.kind == Found::File) {
                    ggufs.push_back("hf:" + repo + "/" + e.filename().string());
                    only = g.target.string();
                }
        if (ggufs.size() == 1) {
            path = only;
            return Status::success();
        }
        if (ggufs.empty())
            return Status::error(StatusCode::IoError,
                                 printable(snapshot.string() + ": no config.json and no .gguf file (nothing attnviz opens)"));
        std::string list;
        for (const std::string &g : ggufs)
            list += (list.empty() ? "" : ", ") + g;
        return Status::error(StatusCode::InvalidInput,
                             printable(quoteText(spec, 200) + ": " + std::to_string(ggufs.size()) + " .gguf files; name one: " + list));
    }
    return notFound(spec, "not in the Hugging Face cache", looked);
}

Status resolveOllama(const std::string &spec, const std::vector<StoreRoot> &roots, std::string &path)
{
    std::string relative;
    if (!ollamaManifestPath(spec.substr(7), relative))
        return Status::error(StatusCode::InvalidInput,
                             quoteText(spec, 200) + ": not an Ollama model name (ollama:NAME, ollama:NAME:TAG, "
                                                    "ollama:NAMESPACE/NAME:TAG)");
    std::vector<std::string> looked;
    for (const StoreRoot &root : roots) {
        if (root.store != ModelStore::Ollama)
            continue;
        const std::string manifest = root.path + "/manifests/" + relative;
        looked.push_back(manifest);
        const StoreRootGuard guard(root.path);
        if (!guard.exists())
            continue;
        const Resolved r = guard.resolve(guard.root() / "manifests" / relative);
        if (r.kind == Found::Missing)
            continue;
        if (r.kind != Found::File)
            return Status::error(StatusCode::IoError, printable(manifest + ": " + r.why));
        std::string text;
        OllamaManifest m;
        if (Status st = readRegularFile(r.target.string(), 1 << 20, text); !st)
            return st;
        if (Status st = parseOllamaManifest(text, manifest, m); !st)
            return st;
        const std::string blob = ollamaBlobName(m.layers[size_t(m.model)].digest);
        const Resolved b = guard.resolve(guard.root() / "blobs" / blob);
        if (b.kind != Found::File)
            return Status::error(StatusCode::IoError,
                                 printable(root.path + "/blobs/" + blob + ": " +
                                         (b.kind == Found::Missing ? std::string("missing") : b.why) +
                                         " (the model layer " + manifest + " names)"));
        path = b.target.string();
        return Status::success();
    }
    return notFound(spec, "no such model in Ollama's store", looked);
}

} // namespace

Status resolveModelSpec(const std::string &spec, const std::vector<StoreRoot> &roots, std::string &path)
{
    if (spec.compare(0, 3, "hf:") == 0)
        return resolveHf(spec, roots, path);
    if (spec.compare(0, 7, "ollama:") == 0)
        return resolveOllama(spec, roots, path);
    path = spec;
    return Status::success();
}

} // namespace attnviz
