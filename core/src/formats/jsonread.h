// SPDX-License-Identifier: GPL-3.0-or-later
// Parsing untrusted JSON inside the core (case files, safetensors headers, the model-folder and
// tokenizer readers; checkJsonText of fileio.h gives the same checks to the window's readers):
// nlohmann-json with a nesting limit, duplicate keys refused, and
// every exception the library can throw turned into one Status line that names the source.
// Private to the core: nlohmann-json is not part of attnviz's public headers.
#pragma once

#include "attnviz/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace attnviz::detail {

// Nesting no attnviz file needs; deeper input is refused before anything recurses over it
// (nlohmann's own dump(), comparison and copy are recursive).
constexpr int kMaxJsonDepth = 64;

// Parses `text`. Errors (code ParseError), each "NAME: ...":
//   "malformed JSON: parse error at line 1, column 3: ..."      (syntax, from nlohmann)
//   "malformed JSON: number overflow parsing '1e999'"            (out-of-range numbers)
//   "config.num_heads: duplicate key (a field may be given once)"
//   "inputs.query: nested deeper than 64 levels"
// `out` is untouched on error.
// `what` names the text in syntax errors ("JSON", "JSON header").
Status parseJson(const std::string &text, const std::string &name, nlohmann::json &out, const char *what = "JSON",
                 int maxDepth = kMaxJsonDepth);

// The one way a JSON file is read: readRegularFile (a regular file of at most `cap` bytes, fileio.h)
// then parseJson, every message naming `path`. Model folders' config.json, tokenizer_config.json,
// vocab.json and model.safetensors.index.json, and case files, all come through here.
Status readJsonFile(const std::string &path, uint64_t cap, nlohmann::json &out, int maxDepth = kMaxJsonDepth);

// `message` with control bytes (a line break in a key or a string from the file) written as \xNN,
// so that an error stays one line whatever the file holds; printable() of status.h.
std::string oneLine(std::string message);

// nlohmann's exception text without its "[json.exception.type_error.302] " prefix.
std::string jsonMessage(const nlohmann::json::exception &e);

} // namespace attnviz::detail
