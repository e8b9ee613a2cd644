// SPDX-License-Identifier: GPL-3.0-or-later
// The pieces the store scan and the spec resolver share (storeparts.h): Hugging Face snapshots,
// Ollama's names, and a model folder described from its config.json and safetensors headers.
#include "storeparts.h"

#include "attnviz/architecture.h"
#include "attnviz/fileio.h"
#include "attnviz/subword.h"
#include "attnviz/tensorarchive.h"

#include "../formats/jsonread.h"

#include <algorithm>
#include <cctype>

namespace attnviz::detail {

namespace {

constexpr uint64_t kListConfigBytes = 1ull << 20; // what a list reads of a config.json

// A name read from a file or typed by the user that becomes one path component.
bool safeComponent(const std::string &s)
{
    if (s.empty() || s == "." || s == ".." || s.size() > 255)
        return false;
    return std::none_of(s.begin(), s.end(), [](char c) { return c == '/' || c == '\\' || c == '\0'; });
}

std::vector<std::string> split(const std::string &s, char sep)
{
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        const size_t p = s.find(sep, start);
        parts.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos)
            return parts;
        start = p + 1;
    }
}

std::string trimmed(const std::string &s)
{
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return s.substr(b, e - b);
}

} // namespace

bool endsWithGguf(const std::string &name)
{
    if (name.size() < 5)
        return false;
    std::string ext = name.substr(name.size() - 5);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".gguf";
}

std::string relativeMessage(const std::string &message, const std::string &prefix)
{
    const std::string p = prefix + "/";
    return message.compare(0, p.size(), p) == 0 ? message.substr(p.size()) : message;
}

std::string hfRepoFolder(const std::string &repo)
{
    std::string out = "models--";
    for (char c : repo)
        if (c == '/')
            out += "--";
        else
            out += c;
    return out;
}

bool hfSnapshot(const StoreRootGuard &guard, const fs::path &repoDir, fs::path &snapshot, std::string &why)
{
    const Resolved snapshots = guard.resolve(repoDir / "snapshots");
    if (snapshots.kind != Found::Dir) {
        why = "snapshots/: " + (snapshots.kind == Found::Missing ? std::string("missing") : snapshots.why);
        return false;
    }
    const Resolved ref = guard.resolve(repoDir / "refs" / "main");
    if (ref.kind == Found::File) {
        const std::string rev = trimmed(readHead(ref.target, 256));
        const bool plausible = safeComponent(rev) && std::all_of(rev.begin(), rev.end(), [](char c) {
                                   return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                               });
        if (!plausible) {
            why = "refs/main: " + quoteText(rev) + " is not a revision";
            return false;
        }
        const Resolved snap = guard.resolve(snapshots.target / rev);
        if (snap.kind != Found::Dir) {
            why = "refs/main names snapshot " + rev + ", which is " +
                  (snap.kind == Found::Missing ? std::string("missing") : snap.why);
            return false;
        }
        snapshot = snap.target;
        return true;
    }
    if (ref.kind != Found::Missing) {
        why = "refs/main: " + ref.why;
        return false;
    }
    std::vector<fs::path> entries;
    bool cut = false;
    if (!guard.list(snapshots.target, entries, cut, why))
        return false;
    std::vector<fs::path> dirs;
    for (const fs::path &e : entries)
        if (const Resolved r = guard.resolve(e); r.kind == Found::Dir)
            dirs.push_back(r.target);
    if (dirs.size() == 1) {
        snapshot = dirs.front();
        return true;
    }
    why = dirs.empty() ? std::string("no snapshot")
                       : "no refs/main and " + std::to_string(dirs.size()) + " snapshots (open one of the folders under " +
                             snapshots.target.string() + ")";
    return false;
}

bool ollamaManifestPath(const std::string &nameIn, std::string &relative)
{
    std::string name = nameIn, tag = "latest";
    const size_t colon = name.rfind(':'), slash = name.rfind('/');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
        tag = name.substr(colon + 1);
        name = name.substr(0, colon);
    }
    std::vector<std::string> parts = split(name, '/');
    if (parts.size() == 1)
        parts.insert(parts.begin(), {"registry.ollama.ai", "library"});
    else if (parts.size() == 2)
        parts.insert(parts.begin(), "registry.ollama.ai");
    else if (parts.size() != 3)
        return false;
    parts.push_back(tag);
    for (const std::string &p : parts)
        if (!safeComponent(p) || p.find(':') != std::string::npos)
            return false;
    relative = parts[0] + "/" + parts[1] + "/" + parts[2] + "/" + parts[3];
    return true;
}

std::string ollamaShownName(const std::string &host, const std::string &ns, const std::string &name, const std::string &tag)
{
    std::string shown;
    if (host != "registry.ollama.ai")
        shown = host + "/" + ns + "/";
    else if (ns != "library")
        shown = ns + "/";
    return shown + name + ":" + tag;
}

bool folderInside(const StoreRootGuard &guard, const fs::path &dir, std::string &why, uint64_t *bytes, bool *tokenizer)
{
    std::vector<fs::path> entries;
    bool cut = false;
    if (!guard.list(dir, entries, cut, why))
        return false;
    // Every file the reader may open is checked here first: a link out of the root or into a loop,
    // or a blob an unfinished download left missing, is the reason, and nothing is opened through it.
    why.clear();
    for (const fs::path &e : entries) {
        const std::string file = e.filename().string();
        const Resolved r = guard.resolve(e);
        // a folder named like a tokenizer file counts too: opening then says what is wrong with it
        if (tokenizer && (r.kind == Found::File || r.kind == Found::Dir))
            *tokenizer = *tokenizer || file == "tokenizer.json" || file == "vocab.json" || file == "vocab.txt";
        if (r.kind == Found::File) {
            if (bytes && !endsWithGguf(file))
                *bytes += StoreRootGuard::sizeOf(r.target);
        } else if (r.kind != Found::Dir && why.empty() && !endsWithGguf(file)) {
            why = file + ": " + r.why;
        }
    }
    return why.empty();
}

void describeModelFolder(const StoreRootGuard &guard, const fs::path &dir, LocalModel &m)
{
    m.format = "safetensors";
    m.path = dir.string();
    std::string broken;
    bool tokenizer = false;
    folderInside(guard, dir, broken, &m.bytes, &tokenizer);
    // A list reads config.json only up to a budget (real ones are kilobytes): a larger one is said
    // to be skipped, not parsed once per repository that links to it.
    const uint64_t configBytes = StoreRootGuard::sizeOf(dir / "config.json");
    if (configBytes > kListConfigBytes) {
        m.reason = "config.json: " + describeBytes(configBytes) + ", more than the " +
                   describeBytes(kListConfigBytes) + " a list reads of one (not read)";
        return;
    }
    // The family even where attnviz cannot compute it (model_type as config.json writes it).
    nlohmann::json config;
    if (readJsonFile((dir / "config.json").string(), 10ull * 1000 * 1000, config).ok() && config.is_object()) {
        const auto t = config.find("model_type");
        if (t != config.end() && t->is_string())
            m.family = printable(t->get<std::string>().substr(0, 64));
    }
    if (!broken.empty()) {
        m.reason = broken;
        return;
    }
    Architecture arch;
    if (Status st = readArchitecture(m.path, arch); !st) {
        m.reason = relativeMessage(st.message, m.path);
        return;
    }
    m.family = arch.family;
    TensorArchive weights;
    if (Status st = weights.openFolder(m.path); !st) {
        m.reason = relativeMessage(st.message, m.path);
        return;
    }
    for (const auto &[name, e] : weights.entries())
        m.parameters += int64_t(e.count);
    m.precision = weights.dtypeSummary();
    if (arch.encoderDecoder) { // its SentencePiece or byte-level BPE files are read when it opens
        m.supported = true;
        return;
    }
    if (!tokenizer) {
        m.reason = "no tokenizer.json, vocab.json or vocab.txt";
        return;
    }
    // the tokenizer opening would read (pretrained.cpp): tokenizer.json, but GPT-2's own files and a
    // masked model's vocab.txt where they are there too
    const auto has = [&](const char *name) {
        std::error_code ec;
        return fs::exists(dir / name, ec);
    };
    if (has("tokenizer.json") && !(arch.family == "gpt2" && has("vocab.json") && has("merges.txt")) &&
        !(arch.head == LmHead::MaskedLm && has("vocab.txt"))) {
        if (std::string why = hfTokenizerProblem(m.path); !why.empty()) {
            m.reason = why;
            return;
        }
    }
    m.supported = true;
}

} // namespace attnviz::detail
