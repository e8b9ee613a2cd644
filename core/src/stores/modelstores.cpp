// SPDX-License-Identifier: GPL-3.0-or-later
// The scan of the model stores (modelstores.h): where each store lives, and one walker per layout —
// the Hugging Face cache's repositories, Ollama's manifests, and a plain folder tree (LM Studio's
// PUBLISHER/REPO/*.gguf and the user's folders) — each bounded by its root (storefs.h).
#include "attnviz/modelstores.h"

#include "attnviz/fileio.h"

#include "storeparts.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace attnviz {

using namespace detail;

const char *modelStoreName(ModelStore store)
{
    switch (store) {
    case ModelStore::HuggingFace: return "Hugging Face";
    case ModelStore::Ollama: return "Ollama";
    case ModelStore::LmStudio: return "LM Studio";
    case ModelStore::Folder: break;
    }
    return "folder";
}

StoreEnvironment modelStoreEnvironment()
{
    const auto env = [](const char *name) {
        const char *v = std::getenv(name);
        return std::string(v ? v : "");
    };
    StoreEnvironment e;
    e.home = env("HOME");
    e.xdgCacheHome = env("XDG_CACHE_HOME");
    e.hfHubCache = env("HF_HUB_CACHE");
    if (e.hfHubCache.empty())
        e.hfHubCache = env("HUGGINGFACE_HUB_CACHE");
    e.hfHome = env("HF_HOME");
    e.ollamaModels = env("OLLAMA_MODELS");
    return e;
}

std::vector<StoreRoot> modelStoreRoots(const StoreEnvironment &env, const std::vector<std::string> &folders)
{
    std::vector<StoreRoot> roots;
    const auto add = [&](ModelStore s, const std::string &p) {
        if (!p.empty())
            roots.push_back({s, p});
    };
    const std::string home = env.home;
    if (!env.hfHubCache.empty())
        add(ModelStore::HuggingFace, env.hfHubCache);
    else if (!env.hfHome.empty())
        add(ModelStore::HuggingFace, env.hfHome + "/hub");
    else if (!env.xdgCacheHome.empty())
        add(ModelStore::HuggingFace, env.xdgCacheHome + "/huggingface/hub");
    else if (!home.empty())
        add(ModelStore::HuggingFace, home + "/.cache/huggingface/hub");
    if (!env.ollamaModels.empty())
        add(ModelStore::Ollama, env.ollamaModels);
    else if (!home.empty())
        add(ModelStore::Ollama, home + "/.ollama/models");
    if (env.systemOllama)
        add(ModelStore::Ollama, "/usr/share/ollama/.ollama/models");
    if (!home.empty()) {
        add(ModelStore::LmStudio, home + "/.lmstudio/models");
        add(ModelStore::LmStudio, home + "/.cache/lm-studio/models");
    }
    for (const std::string &f : folders)
        add(ModelStore::Folder, f);
    return roots;
}

std::string describeParameters(int64_t n)
{
    if (n <= 0)
        return std::string();
    char buf[32];
    const auto fmt = [&](double v, const char *unit) {
        std::snprintf(buf, sizeof buf, v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v, unit);
        std::string s = buf;
        // "1.50B" -> "1.5B", "2.00B" -> "2B": the digits that say something
        const size_t dot = s.find('.');
        if (dot != std::string::npos) {
            size_t end = s.find_first_not_of("0123456789", dot + 1);
            size_t last = end;
            while (last > dot + 1 && s[last - 1] == '0')
                --last;
            if (last == dot + 1)
                --last;
            s.erase(last, end - last);
        }
        return s;
    };
    if (n >= 1000000000)
        return fmt(double(n) / 1e9, "B");
    if (n >= 1000000)
        return fmt(double(n) / 1e6, "M");
    if (n >= 1000)
        return fmt(double(n) / 1e3, "K");
    return std::to_string(n);
}

std::string hfCacheRepo(const std::string &dir)
{
    const fs::path p = fs::path(dir).lexically_normal();
    const fs::path rev = p.has_filename() ? p : p.parent_path();
    const fs::path snapshots = rev.parent_path(), repo = snapshots.parent_path();
    const std::string folder = repo.filename().string();
    if (snapshots.filename() != "snapshots" || folder.compare(0, 8, "models--") != 0 || folder.size() == 8)
        return std::string();
    std::string name = folder.substr(8);
    for (size_t at; (at = name.find("--")) != std::string::npos;)
        name.replace(at, 2, "/");
    return name;
}

bool isModelSpec(const std::string &source)
{
    return source.compare(0, 3, "hf:") == 0 || source.compare(0, 7, "ollama:") == 0;
}

namespace {

// Below a root, the deepest a walk goes (LM Studio's PUBLISHER/REPO/FILE is 3).
constexpr int kMaxDepth = 6;

struct Walk {
    const StoreRootGuard &guard;
    const StoreRoot &root;
    StoreScan &out;

    LocalModel row(const std::string &name) const
    {
        LocalModel m;
        m.name = name;
        m.store = root.store;
        m.root = root.path;
        return m;
    }

    void cutNote(const fs::path &dir) const
    {
        out.problems.push_back(dir.string() + ": more than " + describeCount(int64_t(kMaxStoreEntries)) +
                               " entries; the rest were not read");
    }

    bool list(const fs::path &dir, std::vector<fs::path> &entries) const
    {
        bool cut = false;
        std::string error;
        if (!guard.list(dir, entries, cut, error)) {
            out.problems.push_back(error);
            return false;
        }
        if (cut)
            cutNote(dir);
        return true;
    }

    // A link the walk does not follow, listed with why (so that a model linked in from elsewhere is
    // seen, and the user learns why it is greyed).
    void unfollowed(const std::string &name, const fs::path &path, const Resolved &r) const
    {
        LocalModel m = row(name);
        m.path = path.string();
        m.reason = r.why;
        out.models.push_back(std::move(m));
    }
};

// The Hugging Face cache: models--ORG--NAME/ (datasets--, spaces-- and .locks are not models).
void scanHuggingFace(const Walk &w)
{
    std::vector<fs::path> entries;
    if (!w.list(w.guard.root(), entries))
        return;
    for (const fs::path &e : entries) {
        const std::string folder = e.filename().string();
        if (folder.compare(0, 8, "models--") != 0 || folder.size() == 8)
            continue;
        const std::string repo = hfCacheRepo((e / "snapshots" / "x").string());
        const Resolved r = w.guard.resolve(e);
        if (r.kind != Found::Dir) {
            if (r.kind != Found::File && r.kind != Found::Other)
                w.unfollowed(repo, e, r);
            continue;
        }
        fs::path snapshot;
        std::string why;
        if (!hfSnapshot(w.guard, r.target, snapshot, why)) {
            LocalModel m = w.row(repo);
            m.spec = "hf:" + repo;
            m.path = r.target.string();
            m.reason = why;
            w.out.models.push_back(std::move(m));
            continue;
        }
        std::vector<fs::path> files;
        if (!w.list(snapshot, files))
            continue;
        bool config = false, any = false;
        for (const fs::path &f : files) {
            const std::string file = f.filename().string();
            if (file == "config.json")
                config = true;
            if (!endsWithGguf(file))
                continue;
            any = true;
            LocalModel m = w.row(repo + "/" + file);
            m.spec = "hf:" + m.name;
            const Resolved g = w.guard.resolve(f);
            if (g.kind == Found::File) {
                describeGgufFile(g.target, m);
            } else {
                m.path = f.string();
                m.format = "gguf";
                m.reason = g.why;
            }
            w.out.models.push_back(std::move(m));
        }
        if (config || !any) {
            LocalModel m = w.row(repo);
            m.spec = "hf:" + repo;
            if (config) {
                describeModelFolder(w.guard, snapshot, m);
            } else {
                m.path = snapshot.string();
                m.reason = "no config.json or .gguf file in snapshot " + snapshot.filename().string();
            }
            w.out.models.push_back(std::move(m));
        }
    }
}

// Ollama: manifests/HOST/NAMESPACE/NAME/TAG, each naming its model blob under blobs/.
void scanOllama(const Walk &w)
{
    const Resolved manifests = w.guard.resolve(w.guard.root() / "manifests");
    if (manifests.kind != Found::Dir)
        return;
    const fs::path blobs = w.guard.root() / "blobs";
    std::set<fs::path> seen; // folders reached twice through links inside the root are read once
    std::vector<fs::path> hosts, namespaces, names, tags;
    if (!w.list(manifests.target, hosts))
        return;
    const auto dirOf = [&](const fs::path &p, fs::path &dir) {
        const Resolved r = w.guard.resolve(p);
        if (r.kind != Found::Dir || !seen.insert(r.target).second)
            return false;
        dir = r.target;
        return true;
    };
    for (const fs::path &h : hosts) {
        fs::path hd;
        if (!dirOf(h, hd) || !w.list(hd, namespaces))
            continue;
        for (const fs::path &n : namespaces) {
            fs::path nd;
            if (!dirOf(n, nd) || !w.list(nd, names))
                continue;
            for (const fs::path &m : names) {
                fs::path md;
                if (!dirOf(m, md) || !w.list(md, tags))
                    continue;
                for (const fs::path &t : tags) {
                    const std::string tag = t.filename().string();
                    if (tag.empty() || tag[0] == '.')
                        continue;
                    LocalModel row = w.row(ollamaShownName(h.filename().string(), n.filename().string(),
                                                          m.filename().string(), tag));
                    row.spec = "ollama:" + row.name;
                    const std::string shownManifest = relativeMessage(t.string(), w.guard.root().string());
                    row.path = t.string();
                    const Resolved r = w.guard.resolve(t);
                    if (r.kind != Found::File) {
                        row.reason = shownManifest + ": " + r.why;
                        w.out.models.push_back(std::move(row));
                        continue;
                    }
                    std::string text;
                    OllamaManifest manifest;
                    Status st = readRegularFile(r.target.string(), 1 << 20, text);
                    if (st)
                        st = parseOllamaManifest(text, shownManifest, manifest);
                    if (!st) {
                        row.reason = relativeMessage(st.message, w.guard.root().string());
                        w.out.models.push_back(std::move(row));
                        continue;
                    }
                    // Every layer's blob counts toward the size on disk; the model layer is described.
                    uint64_t bytes = 0;
                    std::string why;
                    for (size_t i = 0; i < manifest.layers.size(); ++i) {
                        const OllamaLayer &layer = manifest.layers[i];
                        const std::string blob = ollamaBlobName(layer.digest);
                        const Resolved b = w.guard.resolve(blobs / blob);
                        if (b.kind != Found::File) {
                            if (int(i) == manifest.model)
                                why = "blobs/" + blob + ": " + b.why + " (the model layer of " + shownManifest + ")";
                            continue;
                        }
                        const uint64_t size = StoreRootGuard::sizeOf(b.target);
                        bytes += size;
                        if (int(i) != manifest.model)
                            continue;
                        describeGgufFile(b.target, row);
                        if (layer.size != size)
                            why = "blobs/" + blob + ": " + describeBytes(size) + " on disk, the manifest says " +
                                  describeBytes(layer.size) + " (an unfinished download?)";
                    }
                    row.bytes = bytes;
                    if (!why.empty()) {
                        row.supported = false;
                        row.reason = why;
                    }
                    w.out.models.push_back(std::move(row));
                }
            }
        }
    }
}

// A plain tree: a folder with a config.json is one model (not looked into further); every .gguf
// file is one model; links out of the root and link loops are listed with why they are not followed.
void scanTree(const Walk &w, const fs::path &dir, const std::string &relative, int depth, std::set<fs::path> &seen)
{
    if (!seen.insert(dir).second)
        return;
    const std::string here = relative.empty() ? dir.filename().string() : relative;
    if (const Resolved c = w.guard.resolve(dir / "config.json"); c.kind == Found::File) {
        LocalModel m = w.row(here);
        describeModelFolder(w.guard, dir, m);
        m.spec = m.path;
        w.out.models.push_back(std::move(m));
        return;
    }
    std::vector<fs::path> entries;
    if (!w.list(dir, entries))
        return;
    for (const fs::path &e : entries) {
        const std::string file = e.filename().string();
        if (file.empty() || file[0] == '.')
            continue;
        const std::string rel = relative.empty() ? file : relative + "/" + file;
        const Resolved r = w.guard.resolve(e);
        if (r.kind == Found::Dir) {
            if (depth < kMaxDepth)
                scanTree(w, r.target, rel, depth + 1, seen);
        } else if (r.kind == Found::File) {
            if (!endsWithGguf(file))
                continue;
            LocalModel m = w.row(rel.substr(0, rel.size() - 5));
            describeGgufFile(r.target, m);
            m.spec = m.path;
            w.out.models.push_back(std::move(m));
        } else if (r.kind == Found::Outside || r.kind == Found::Loop || (r.kind == Found::Missing && endsWithGguf(file))) {
            w.unfollowed(endsWithGguf(rel) ? rel.substr(0, rel.size() - 5) : rel, e, r);
        }
    }
}

} // namespace

StoreScan scanModelStores(const std::vector<StoreRoot> &roots)
{
    StoreScan out;
    std::set<fs::path> scanned; // a root given twice (OLLAMA_MODELS naming the default) is read once
    for (const StoreRoot &root : roots) {
        const StoreRootGuard guard(root.path);
        if (!guard.exists() || !scanned.insert(guard.root()).second)
            continue;
        const size_t first = out.models.size();
        const Walk w{guard, root, out};
        switch (root.store) {
        case ModelStore::HuggingFace: scanHuggingFace(w); break;
        case ModelStore::Ollama: scanOllama(w); break;
        case ModelStore::LmStudio:
        case ModelStore::Folder: {
            std::set<fs::path> seen;
            scanTree(w, guard.root(), std::string(), 0, seen);
            break;
        }
        }
        for (size_t i = first; i < out.models.size(); ++i)
            out.models[i].name = printable(out.models[i].name);
        std::stable_sort(out.models.begin() + std::ptrdiff_t(first), out.models.end(),
                         [](const LocalModel &a, const LocalModel &b) { return a.name < b.name; });
    }
    return out;
}

} // namespace attnviz
