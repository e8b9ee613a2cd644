// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: an Ollama manifest, parsed (parseOllamaManifest), then placed in a scratch Ollama
// store as manifests/registry.ollama.ai/library/m/latest and scanned (scanModelStores) and resolved
// (resolveModelSpec "ollama:m"). The store holds the blob the seeds' model layer names, so a manifest
// that parses reaches the blob checks. Whatever the manifest says, the scan lists exactly that one
// model, its reason one line, and the spec resolves inside the store or is refused in one line.
#include "fuzzcheck.h"

#include "attnviz/modelstores.h"

#include <filesystem>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string root = [] {
        const std::string d = fuzz::scratchFolder();
        const std::string manifests = d + "/manifests/registry.ollama.ai/library/m";
        std::error_code ec;
        std::filesystem::create_directories(manifests, ec);
        std::filesystem::create_directories(d + "/blobs", ec);
        if (ec)
            std::abort();
        static const uint8_t gguf[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
        fuzz::writeFile(d + "/blobs/sha256-527ee9a8eac07fc69af277c264ea5bf5c0f037c442b5c3336c18aa10d2096bd6", gguf,
                        sizeof gguf);
        return d;
    }();
    OllamaManifest m;
    const Status parsed = parseOllamaManifest(fuzz::bytes(data, size), "M", m);
    fuzz::expectOneLine(parsed, "M");
    if (parsed && (m.model < 0 || size_t(m.model) >= m.layers.size()))
        std::abort();

    const std::string manifest = root + "/manifests/registry.ollama.ai/library/m/latest";
    fuzz::writeFile(manifest, data, size);
    const std::vector<StoreRoot> roots = {{ModelStore::Ollama, root}};
    const StoreScan scan = scanModelStores(roots);
    if (scan.models.size() != 1 || scan.models[0].name != "m:latest" ||
        scan.models[0].reason.find('\n') != std::string::npos || (!parsed && scan.models[0].supported))
        std::abort();
    std::string path;
    const Status resolved = resolveModelSpec("ollama:m", roots, path);
    fuzz::expectOneLineStarting(resolved, "");
    if (resolved && path.rfind(root + "/blobs/sha256-", 0) != 0)
        std::abort();
    return 0;
}
