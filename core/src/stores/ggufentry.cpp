// SPDX-License-Identifier: GPL-3.0-or-later
// One GGUF file as a row of the store list (storeparts.h: describeGgufFile): its magic number, then
// ggufSummary (gguf.h), which reads the header, metadata and tensor infos only.
#include "storeparts.h"

#include "attnviz/gguf.h"

namespace attnviz::detail {

void describeGgufFile(const fs::path &file, LocalModel &m)
{
    m.path = file.string();
    m.bytes = StoreRootGuard::sizeOf(file);
    if (readHead(file, 4) != "GGUF") {
        m.reason = "not a GGUF file (it does not begin with \"GGUF\")";
        return;
    }
    m.format = "gguf";
    GgufSummary s;
    if (Status st = ggufSummary(m.path, s); !st) {
        // "PATH: field: why" -> "field: why": the row already says which file
        const std::string prefix = m.path + ": ";
        m.reason = st.message.compare(0, prefix.size(), prefix) == 0 ? st.message.substr(prefix.size()) : st.message;
        return;
    }
    m.family = s.architecture;
    m.parameters = s.parameters;
    m.precision = s.fileType;
    m.supported = s.supported;
    m.reason = s.reason;
}

} // namespace attnviz::detail
