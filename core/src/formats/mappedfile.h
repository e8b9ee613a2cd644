// SPDX-License-Identifier: GPL-3.0-or-later
// A regular file mapped read-only (private to the core): the safetensors archive and the GGUF
// reader map their files through here, checked as fileio.h checks every file (a directory, a FIFO
// or /dev/zero refused by name).
#pragma once

#include "attnviz/status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace attnviz::detail {

struct MappedFile {
    std::string path;
    const unsigned char *data = nullptr; // null for an empty file
    uint64_t size = 0;
    MappedFile() = default;
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;
    ~MappedFile();
    // Errors name the path ("PATH: cannot map: ...").
    static Status map(const std::string &path, std::unique_ptr<MappedFile> &out);
};

} // namespace attnviz::detail
