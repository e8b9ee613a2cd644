// SPDX-License-Identifier: GPL-3.0-or-later
// Walking a model store without leaving it: every path met under a root is resolved (symbolic links
// followed) and accepted only when it lands inside the root's own canonical path; a link loop, a
// dangling link and a link out of the root each come back as what they are, with the words for it.
// Folder listings are sorted and capped, so that a huge or hostile folder costs a bounded time.
// Private to the core (stores/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace attnviz::detail {

namespace fs = std::filesystem;

// Entries read from one folder; more are reported as cut.
constexpr size_t kMaxStoreEntries = 4096;

enum class Found {
    Missing,  // no such file (or a link to one that is gone)
    File,     // a regular file inside the root
    Dir,      // a folder inside the root
    Other,    // a FIFO, a device, a socket
    Outside,  // a link whose target lies outside the root (not followed)
    Loop,     // a link that never ends
    Unreadable,
};

struct Resolved {
    Found kind = Found::Missing;
    fs::path target; // canonical (links resolved) for File and Dir
    // What it is, for a caller that wanted another kind: "a folder, not a file", "a symbolic link
    // out of ROOT (not followed)".
    std::string why;
};

class StoreRootGuard {
public:
    // `root` may itself be a link (a cache moved to another disk): its canonical path is the bound.
    explicit StoreRootGuard(const std::string &root);
    bool exists() const { return m_exists; }
    const fs::path &root() const { return m_root; }
    const std::string &shown() const { return m_shown; } // the root as given, for messages

    bool inside(const fs::path &canonical) const;
    Resolved resolve(const fs::path &path) const;
    // The entries of `dir` (a resolved folder), sorted by name, at most kMaxStoreEntries of them.
    // False with `error` when it cannot be listed; `cut` when there were more.
    bool list(const fs::path &dir, std::vector<fs::path> &entries, bool &cut, std::string &error) const;
    // The size of a resolved regular file as the file system says it (0 when it cannot say).
    static uint64_t sizeOf(const fs::path &file);

private:
    fs::path m_root;
    std::string m_shown;
    bool m_exists = false;
};

// Reads at most `max` bytes from the start of a resolved regular file (magic numbers, refs/main).
std::string readHead(const fs::path &file, size_t max);

} // namespace attnviz::detail
