// SPDX-License-Identifier: GPL-3.0-or-later
// Private to the core: UTF-8 text as code points that remember the bytes they came from, and the
// Unicode facts the subword tokenizers need (general categories, White_Space, Python's isspace,
// Python's per-character str.lower, NFC / NFD), all answered by ICU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::unicode {

// One code point and the byte range [begin, end) of the source text it stands for. After a
// normalization that composes several code points, each result covers all of their bytes.
struct Char {
    char32_t cp = 0;
    uint32_t begin = 0, end = 0;
};

// Bytes that are not well-formed UTF-8 decode to U+FFFD (one per maximal ill-formed subpart, as
// Python's errors="replace" and the WHATWG decoder do), covering exactly those bytes.
std::vector<Char> decodeUtf8(std::string_view text, uint32_t offset = 0);
void appendUtf8(std::string &out, char32_t cp);

bool isLetter(char32_t c);              // \p{L}
bool isNumber(char32_t c);              // \p{N}
bool isWhiteSpace(char32_t c);          // Unicode White_Space: regex's \s
bool isPythonSpace(char32_t c);         // Python's str.isspace: Zs, or bidi class WS, B, S
bool isSpaceSeparator(char32_t c);      // Zs
bool isOtherCategory(char32_t c);       // C*: Cc Cf Cs Co Cn
bool isPunctuationCategory(char32_t c); // P*
bool isNonSpacingMark(char32_t c);      // Mn

// Python's str.lower() of this one character (full case mapping, no context): appended to `out`
// with the range of `c`.
void appendLower(const Char &c, std::vector<Char> &out);

enum class Form { NFC, NFD };
// Normalizes `in` into `out` (appended), keeping byte ranges: the text is cut where the
// normalizer says no character interacts across the cut, each piece is normalized alone.
void normalize(Form form, const std::vector<Char> &in, std::vector<Char> &out);

} // namespace attnviz::unicode
