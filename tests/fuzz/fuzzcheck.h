// SPDX-License-Identifier: GPL-3.0-or-later
// What every fuzz target asserts besides "no crash, no sanitizer report": a reader that refuses its
// input says why in one line that starts with the name it was given ("NAME: ..." or "NAME:LINE: ...").
#pragma once

#include "attnviz/embeddings.h"
#include "attnviz/status.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdlib.h>
#include <unistd.h>
#include <string>
#include <system_error>
#include <vector>

namespace attnviz::fuzz {

inline std::string bytes(const uint8_t *data, size_t size) { return std::string(reinterpret_cast<const char *>(data), size); }

// A refusal is one line that starts with `prefix`, with no terminal escape in it (text from the
// input is quoted escaped: quoteText, printable).
inline void expectOneLineStarting(const Status &st, const std::string &prefix)
{
    if (st.ok())
        return;
    if (st.message.rfind(prefix, 0) != 0 || st.message.find('\n') != std::string::npos ||
        st.message.find('\x1b') != std::string::npos) {
        std::fprintf(stderr, "fuzz: a refusal that is not one escaped line starting with %s:\n%s\n", prefix.c_str(),
                     st.message.c_str());
        std::abort();
    }
}

inline void expectOneLine(const Status &st, const std::string &name)
{
    if (st.ok())
        return;
    // "NAME: why", or "NAME (what of it was read): why"
    const bool named = st.message.rfind(name + ":", 0) == 0 || st.message.rfind(name + " (", 0) == 0;
    if (!named || st.message.find('\n') != std::string::npos) {
        std::fprintf(stderr, "fuzz: a refusal that is not one line naming %s:\n%s\n", name.c_str(), st.message.c_str());
        std::abort();
    }
}

// A reader given a folder names a file inside it.
inline void expectOneLineUnder(const Status &st, const std::string &dir) { expectOneLineStarting(st, dir + "/"); }

// A fresh folder for the model-folder targets (the readers take folders and paths, not bytes),
// removed with what it holds when the target exits (libFuzzer ends a timed run with exit()); a crash
// leaves it, beside the artifact, for looking at.
inline std::string scratchFolder()
{
    static std::vector<std::string> made;
    char name[] = "/tmp/attnviz-fuzz-XXXXXX";
    const char *dir = ::mkdtemp(name);
    if (!dir)
        std::abort();
    if (made.empty())
        std::atexit([] {
            for (const std::string &d : made) {
                std::error_code ec;
                std::filesystem::remove_all(d, ec);
            }
        });
    made.push_back(dir);
    return dir;
}

inline void writeFile(const std::string &path, const uint8_t *data, size_t size)
{
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
        std::abort();
}

inline std::string readFile(const std::string &path)
{
    std::string out;
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (!f)
        std::abort();
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        out.append(buf, n);
    std::fclose(f);
    return out;
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
