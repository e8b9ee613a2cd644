// SPDX-License-Identifier: GPL-3.0-or-later
// StoreRootGuard (storefs.h): std::filesystem with error codes throughout (a scan never throws), links
// resolved with canonical() and checked against the root's canonical path component by component.
#include "storefs.h"

#include <algorithm>
#include <fstream>
#include <system_error>

namespace attnviz::detail {

StoreRootGuard::StoreRootGuard(const std::string &root)
    : m_shown(root)
{
    std::error_code ec;
    const fs::path c = fs::canonical(fs::path(root), ec);
    if (!ec && fs::is_directory(c, ec) && !ec) {
        m_root = c;
        m_exists = true;
    }
}

bool StoreRootGuard::inside(const fs::path &canonical) const
{
    if (!m_exists)
        return false;
    auto r = m_root.begin(), p = canonical.begin();
    for (; r != m_root.end(); ++r, ++p) {
        if (r->empty() && std::next(r) == m_root.end()) // a trailing separator
            return true;
        if (p == canonical.end() || *r != *p)
            return false;
    }
    return true;
}

Resolved StoreRootGuard::resolve(const fs::path &path) const
{
    Resolved out;
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(path, ec);
    if (ec || link.type() == fs::file_type::not_found) {
        out.why = ec && ec != std::errc::no_such_file_or_directory ? "cannot be read (" + ec.message() + ")" : "missing";
        out.kind = ec && ec != std::errc::no_such_file_or_directory ? Found::Unreadable : Found::Missing;
        return out;
    }
    fs::path target = path;
    if (link.type() == fs::file_type::symlink) {
        target = fs::canonical(path, ec);
        if (ec == std::errc::too_many_symbolic_link_levels) {
            out.kind = Found::Loop;
            out.why = "a symbolic link loop";
            return out;
        }
        if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
            out.kind = Found::Missing;
            out.why = "a symbolic link to a file that is missing";
            return out;
        }
        if (ec) {
            out.kind = Found::Unreadable;
            out.why = "cannot be read (" + ec.message() + ")";
            return out;
        }
        if (!inside(target)) {
            out.kind = Found::Outside;
            out.why = "a symbolic link out of " + m_shown + " (not followed)";
            return out;
        }
    }
    const fs::file_status st = fs::status(target, ec);
    if (ec) {
        out.kind = Found::Unreadable;
        out.why = "cannot be read (" + ec.message() + ")";
        return out;
    }
    out.target = target;
    // `why` also for a file and a folder: a caller that wanted the other kind says what it found.
    if (st.type() == fs::file_type::regular) {
        out.kind = Found::File;
        out.why = "a file, not a folder";
    } else if (st.type() == fs::file_type::directory) {
        out.kind = Found::Dir;
        out.why = "a folder, not a file";
    } else {
        out.kind = Found::Other;
        out.why = "not a regular file";
    }
    return out;
}

bool StoreRootGuard::list(const fs::path &dir, std::vector<fs::path> &entries, bool &cut, std::string &error) const
{
    entries.clear();
    cut = false;
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::none, ec), end;
    if (ec) {
        error = dir.string() + ": cannot be listed (" + ec.message() + ")";
        return false;
    }
    for (; it != end; it.increment(ec)) {
        if (entries.size() == kMaxStoreEntries) {
            cut = true;
            break;
        }
        entries.push_back(it->path());
    }
    if (ec) {
        error = dir.string() + ": cannot be listed (" + ec.message() + ")";
        return false;
    }
    std::sort(entries.begin(), entries.end());
    return true;
}

uint64_t StoreRootGuard::sizeOf(const fs::path &file)
{
    std::error_code ec;
    const uintmax_t n = fs::file_size(file, ec);
    return ec ? 0 : uint64_t(n);
}

std::string readHead(const fs::path &file, size_t max)
{
    std::ifstream in(file, std::ios::binary);
    std::string s(max, '\0');
    in.read(s.data(), std::streamsize(max));
    s.resize(size_t(std::max<std::streamsize>(in.gcount(), 0)));
    return s;
}

} // namespace attnviz::detail
