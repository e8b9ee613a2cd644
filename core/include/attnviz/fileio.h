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

// "1.5 GB", "300 KB", "12 bytes": sizes in messages.
std::string describeBytes(uint64_t bytes);

// "20,000": counts in messages.
std::string describeCount(int64_t count);

} // namespace attnviz
