// SPDX-License-Identifier: GPL-3.0-or-later
// Ollama's manifests (modelstores.h: parseOllamaManifest): an OCI image manifest, read with the core's
// checked JSON reader. A digest becomes a file name under blobs/, so it must be exactly "sha256:" and
// 64 lower-case hex digits: nothing from the file ever reaches a path otherwise.
#include "attnviz/modelstores.h"

#include "../formats/jsonread.h"

#include <limits>

namespace attnviz {

namespace {

constexpr const char *kModelMediaType = "application/vnd.ollama.image.model";

bool isDigest(const std::string &d)
{
    if (d.size() != 7 + 64 || d.compare(0, 7, "sha256:") != 0)
        return false;
    for (size_t i = 7; i < d.size(); ++i)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
            return false;
    return true;
}

} // namespace

std::string ollamaBlobName(const std::string &digest)
{
    std::string s = digest;
    if (s.size() > 6 && s.compare(0, 7, "sha256:") == 0)
        s[6] = '-';
    return s;
}

Status parseOllamaManifest(const std::string &text, const std::string &name, OllamaManifest &out)
{
    nlohmann::json j;
    if (Status st = detail::parseJson(text, name, j, "JSON", 16); !st)
        return st;
    const auto bad = [&](const std::string &field, const std::string &what) {
        return Status::error(StatusCode::ParseError, detail::oneLine(name + ": " + field + ": " + what));
    };
    if (!j.is_object())
        return Status::error(StatusCode::ParseError, name + ": not a JSON object (an Ollama manifest is one)");
    const auto layers = j.find("layers");
    if (layers == j.end())
        return bad("layers", "missing");
    if (!layers->is_array())
        return bad("layers", "not an array");
    OllamaManifest m;
    for (size_t i = 0; i < layers->size(); ++i) {
        const nlohmann::json &l = (*layers)[i];
        const std::string at = "layers[" + std::to_string(i) + "]";
        if (!l.is_object())
            return bad(at, "not an object");
        const auto mt = l.find("mediaType"), dg = l.find("digest"), sz = l.find("size");
        if (mt == l.end() || !mt->is_string())
            return bad(at + ".mediaType", mt == l.end() ? "missing" : "not a string");
        if (dg == l.end() || !dg->is_string())
            return bad(at + ".digest", dg == l.end() ? "missing" : "not a string");
        OllamaLayer layer;
        layer.mediaType = mt->get<std::string>();
        layer.digest = dg->get<std::string>();
        if (!isDigest(layer.digest))
            return bad(at + ".digest", quoteText(layer.digest, 80) + " is not sha256: and 64 hex digits");
        if (sz != l.end()) {
            if (sz->is_number_unsigned())
                layer.size = sz->get<uint64_t>();
            else if (sz->is_number_integer() || sz->is_number_float())
                return bad(at + ".size", "not a count of bytes");
            else
                return bad(at + ".size", "not a number");
        }
        if (m.model < 0 && layer.mediaType == kModelMediaType)
            m.model = int(m.layers.size());
        m.layers.push_back(std::move(layer));
    }
    if (m.model < 0)
        return bad("layers", std::string("no layer of media type ") + kModelMediaType);
    out = std::move(m);
    return Status::success();
}

} // namespace attnviz
