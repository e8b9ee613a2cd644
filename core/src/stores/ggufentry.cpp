// SPDX-License-Identifier: GPL-3.0-or-later
// One GGUF file as a row of the store list (storeparts.h: describeGgufFile): its magic number checked
// here; what it holds is read from its header only.
#include "storeparts.h"

namespace attnviz::detail {

void describeGgufFile(const fs::path &file, LocalModel &m)
{
    m.path = file.string();
    m.bytes = StoreRootGuard::sizeOf(file);
    const std::string magic = readHead(file, 4);
    if (magic != "GGUF") {
        m.reason = "not a GGUF file (it does not begin with \"GGUF\")";
        return;
    }
    m.format = "gguf";
    m.reason = "GGUF files are not read by this build";
}

} // namespace attnviz::detail
