// SPDX-License-Identifier: GPL-3.0-or-later
// What every fuzz target asserts besides "no crash, no sanitizer report": a reader that refuses its
// input says why in one line that starts with the name it was given ("NAME: ..." or "NAME:LINE: ...").
#pragma once

#include "attnviz/embeddings.h"
#include "attnviz/status.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attnviz::fuzz {

inline std::string bytes(const uint8_t *data, size_t size) { return std::string(reinterpret_cast<const char *>(data), size); }

inline void expectOneLine(const Status &st, const std::string &name)
{
    if (st.ok())
        return;
    if (st.message.rfind(name + ":", 0) != 0 || st.message.find('\n') != std::string::npos) {
        std::fprintf(stderr, "fuzz: a refusal that is not one line naming %s:\n%s\n", name.c_str(), st.message.c_str());
        std::abort();
    }
}

// The three embedding-table targets: parse in one format, then look a sentence up in what loaded.
inline int fuzzTable(const uint8_t *data, size_t size, const std::string &name, EmbeddingFormat format)
{
    EmbeddingTable t;
    const Status st = parseEmbeddings(bytes(data, size), name, t, format);
    expectOneLine(st, name);
    if (st)
        (void)embedSentence(t, "the ship and the crew");
    return 0;
}

} // namespace attnviz::fuzz
