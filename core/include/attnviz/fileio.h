// SPDX-License-Identifier: GPL-3.0-or-later
// Reading files defensively: every reader of attnviz (cases, vectors, safetensors, model folders,
// tokenizer files, sessions) opens its input through here, so that a directory, a FIFO, /dev/zero
// or a file larger than the reader's cap gets one clear message instead of a hang or an abort.
#pragma once

#include "attnviz/status.h"

#include <cstdint>
#include <string>

namespace attnviz {

// Checks that `path` names a regular file (symbolic links followed) and returns its size.
// Errors: "PATH: no such file", "PATH: is a directory", "PATH: not a regular file".
Status regularFileSize(const std::string &path, uint64_t &size);

// Reads a whole regular file of at most `cap` bytes into `out`. A larger file is refused with a
// message naming the cap ("PATH: 3.2 GB, more than the 1 GB this reader accepts"); `out` is
// untouched on error.
Status readRegularFile(const std::string &path, uint64_t cap, std::string &out);

// JSON text checked as the core's one hardened JSON reader checks what it parses (jsonread.h):
// syntax, nesting deeper than 64 levels, a key given twice in one object, a number beyond float64.
// For the readers that parse with another library (the window's sessions and projections files,
// with QJsonDocument): they check first, so that every JSON attnviz reads meets the same limits.
// Nothing is built while checking. Errors (ParseError) name `name`:
//   "NAME: settings.numHeads: duplicate key (a field may be given once)"
//   "NAME: input.sentence: nested deeper than 64 levels"
//   "NAME: malformed JSON: parse error at line 1, column 3: ..."
Status checkJsonText(const std::string &text, const std::string &name);

// readRegularFile (at most `cap` bytes), then checkJsonText; every message names `path`.
Status readCheckedJsonFile(const std::string &path, uint64_t cap, std::string &out);

// "1.5 GB", "300 KB", "12 bytes": sizes in messages.
std::string describeBytes(uint64_t bytes);

// "20,000": counts in messages.
std::string describeCount(int64_t count);

} // namespace attnviz
