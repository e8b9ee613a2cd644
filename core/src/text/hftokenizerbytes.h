// SPDX-License-Identifier: GPL-3.0-or-later
// Private to the core: what GPT-2's byte-level BPE (bytelevelbpe.cpp) and the tokenizer.json reader
// (hftokenizer.cpp) share: GPT-2's byte <-> printable-character table and how a chip shows a
// token's bytes.
#pragma once

#include "unicodetext.h"

#include <array>
#include <cstdio>
#include <string>

namespace attnviz::bytelevel {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are mapped in order to U+0100, U+0101, ... so that every byte is a visible character.
inline std::array<char32_t, 256> bytesToUnicode()
{
    std::array<char32_t, 256> table{};
    auto printable = [](int b) {
        return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int n = 0;
    for (int b = 0; b < 256; ++b)
        table[size_t(b)] = printable(b) ? char32_t(b) : char32_t(256 + n++);
    return table;
}

// One character as a chip shows it: a space as "␣", a newline as "↵", a tab as "⇥", other
// control characters as \xNN; `bytes` are the character's own bytes.
inline void appendDisplayChar(std::string &out, char32_t cp, const std::string &bytes)
{
    if (cp == ' ') {
        out += "\u2423";
    } else if (cp == '\n') {
        out += "\u21B5";
    } else if (cp == '\t') {
        out += "\u21E5";
    } else if (cp < 0x20 || cp == 0x7F) {
        for (const char b : bytes) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(uint8_t(b)));
            out += hex;
        }
    } else {
        out += bytes;
    }
}

// What a chip shows for a token's bytes: the text with appendDisplayChar's markers, and bytes that
// are only part of a UTF-8 character as \xNN.
inline std::string displayBytes(const std::string &bytes)
{
    std::string out;
    for (const unicode::Char &c : unicode::decodeUtf8(bytes)) {
        const bool illFormed =
            c.cp == 0xFFFD && !(c.end - c.begin == 3 && bytes.compare(c.begin, 3, "\xEF\xBF\xBD") == 0);
        const std::string own = bytes.substr(c.begin, c.end - c.begin);
        if (illFormed) {
            for (const char b : own) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(uint8_t(b)));
                out += hex;
            }
        } else {
            appendDisplayChar(out, c.cp, own);
        }
    }
    return out;
}

} // namespace attnviz::bytelevel
