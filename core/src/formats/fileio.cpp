// SPDX-License-Identifier: GPL-3.0-or-later
// Defensive whole-file reading (fileio.h): stat before open, regular files only, a cap checked
// against the size on disk and again while reading (a file may grow between the two).
#include "attnviz/fileio.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace attnviz {

namespace {

// The bytes of a UTF-8 character at text[i] that a terminal would act on rather than show: the C1
// controls U+0080..U+009F (U+009B is an 8-bit CSI, as ESC [ is) and the bidirectional overrides
// and isolates U+202A..U+202E, U+2066..U+2069 (which reorder what follows); 0 for any other.
size_t controlCharacter(std::string_view text, size_t i, char32_t &cp)
{
    const auto at = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
    if (at(0) == 0xC2 && at(1) >= 0x80 && at(1) <= 0x9F) {
        cp = char32_t(at(1));
        return 2;
    }
    if (at(0) == 0xE2 &&
        ((at(1) == 0x80 && at(2) >= 0xAA && at(2) <= 0xAE) || (at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9))) {
        cp = char32_t(0x2000 | (at(1) & 0x3F) << 6 | (at(2) & 0x3F));
        return 3;
    }
    return 0;
}

// Appends `text` with control bytes (< 0x20, 0x7f) as \xNN and the control characters above as
// \uNNNN, stopping before `max` bytes of input; returns how many input bytes were taken (never
// half of a UTF-8 character).
size_t appendEscaped(std::string &out, std::string_view text, size_t max)
{
    size_t n = std::min(text.size(), max);
    if (n < text.size())
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80)
            --n; // text[n] continues a character: cut before the character
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        char hex[12];
        char32_t cp = 0;
        if (c < 0x20 || c == 0x7f) {
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else if (const size_t len = controlCharacter(text.substr(0, n), i, cp); len > 0) {
            std::snprintf(hex, sizeof hex, "\\u%04x", unsigned(cp));
            out += hex;
            i += len - 1;
        } else {
            out += char(c);
        }
    }
    return n;
}

} // namespace

std::string quoteText(std::string_view text, size_t max)
{
    std::string out = "\"";
    const size_t taken = appendEscaped(out, text, max);
    out += '"';
    if (taken < text.size())
        out += "... (" + describeBytes(text.size()) + ")";
    return out;
}

std::string printable(std::string_view message, size_t max)
{
    std::string out;
    out.reserve(std::min(message.size(), max) + 32);
    const size_t taken = appendEscaped(out, message, max);
    if (taken < message.size())
        out += "... (" + describeBytes(message.size()) + " in all)";
    return out;
}

std::string describeBytes(uint64_t bytes)
{
    char buf[64];
    if (bytes >= 1000ull * 1000 * 1000)
        std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / 1e9);
    else if (bytes >= 1000ull * 1000)
        std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / 1e6);
    else if (bytes >= 1000)
        std::snprintf(buf, sizeof buf, "%.1f KB", double(bytes) / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    return buf;
}

std::string describeCount(int64_t count)
{
    std::string s = std::to_string(count);
    for (int i = int(s.size()) - 3; i > (count < 0 ? 1 : 0); i -= 3)
        s.insert(size_t(i), ",");
    return s;
}

Status regularFileSize(const std::string &path, uint64_t &size)
{
    if (path.empty())
        return Status::error(StatusCode::IoError, "(an empty path): names no file");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT)
            return Status::error(StatusCode::IoError, path + ": no such file");
        return Status::error(StatusCode::IoError, path + ": " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode))
        return Status::error(StatusCode::IoError, path + ": is a directory, not a file");
    if (!S_ISREG(st.st_mode))
        return Status::error(StatusCode::IoError,
                             path + ": not a regular file (a device, pipe or socket is never read)");
    size = uint64_t(st.st_size);
    return {};
}

Status readRegularFile(const std::string &path, uint64_t cap, std::string &out)
{
    uint64_t size = 0;
    if (Status s = regularFileSize(path, size); !s.ok())
        return s;
    auto tooLarge = [&](uint64_t n) {
        return Status::error(StatusCode::InvalidInput, path + ": " + describeBytes(n) + ", more than the "
                                                           + describeBytes(cap) + " this reader accepts");
    };
    if (size > cap)
        return tooLarge(size);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Status::error(StatusCode::IoError, path + ": cannot open: " + std::strerror(errno));
    std::string data;
    data.resize(size_t(size));
    in.read(data.data(), std::streamsize(size));
    if (uint64_t(in.gcount()) != size)
        return Status::error(StatusCode::IoError, path + ": read " + std::to_string(in.gcount()) + " of "
                                                      + std::to_string(size) + " bytes");
    if (in.peek() != std::char_traits<char>::eof())
        return Status::error(StatusCode::IoError, path + ": the file grew while it was being read");
    out = std::move(data);
    return {};
}

} // namespace attnviz
